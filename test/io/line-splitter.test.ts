import { describe, expect, test } from "bun:test";
import { LineSplitter } from "../../src/io/line-splitter.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

function run(splitter: LineSplitter, chunks: string[]): string[] {
  const out: string[] = [];
  for (const c of chunks) {
    splitter.feed(enc.encode(c));
    for (let line = splitter.next(); line !== null; line = splitter.next()) out.push(dec.decode(line));
  }
  return out;
}

describe("LineSplitter", () => {
  test("lines across chunk boundaries, CRLF stripped when asked, offset counts consumed bytes", () => {
    const s = new LineSplitter({ stripCR: true });
    expect(run(s, ["ab", "c\r\nde", "f\n\ng"])).toEqual(["abc", "def", ""]);
    expect(s.offset).toBe(10);
    expect(s.pending).toBe(1);
    expect(dec.decode(s.flush() ?? new Uint8Array())).toBe("g");
    expect(s.offset).toBe(11);
  });

  test("lines inside a chunk are views of it (no copy)", () => {
    const s = new LineSplitter();
    const chunk = enc.encode("one\ntwo\n");
    s.feed(chunk);
    const line = s.next() as Uint8Array;
    expect(line.buffer).toBe(chunk.buffer);
  });

  test("split policy emits an overlong line in pieces, nothing lost", () => {
    const s = new LineSplitter({ maxLineLength: 4, overlong: "split" });
    expect(run(s, ["abcdefghij\nxy\n"])).toEqual(["abcd", "efgh", "ij", "xy"]);
    expect(s.offset).toBe(14);
  });

  test("split policy bounds an unfinished line too", () => {
    const s = new LineSplitter({ maxLineLength: 4 });
    expect(run(s, ["abc", "def", "gh"])).toEqual(["abcd"]);
    expect(s.pending).toBe(4);
    expect(run(s, ["i"])).toEqual(["efgh"]);
    expect(s.pending).toBe(1);
  });

  test("truncate policy keeps the first bytes and drops the rest of the line", () => {
    let warned = 0;
    const s = new LineSplitter({ maxLineLength: 3, overlong: "truncate", onOverlong: () => warned++ });
    expect(run(s, ["abcdef", "ghi\nok\n"])).toEqual(["abc", "ok"]);
    expect(s.offset).toBe(13);
    expect(warned).toBe(1);
  });

  test("cuts at a UTF-8 character boundary", () => {
    const s = new LineSplitter({ maxLineLength: 4 });
    expect(run(s, ["aééb\n"])).toEqual(["aé", "éb"]);
  });
});

const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("LineSplitter across many chunks", () => {
  test("a line carried over many small chunks is whole (CRLF across chunks too), pieces of an unfinished overlong line are exact, offset counts every byte", () => {
    const s = new LineSplitter({ maxLineLength: 1000, stripCR: true });
    const input = `${"a".repeat(250)}\r\n${"b".repeat(2500)}\nend-without-newline`;
    const bytes = new TextEncoder().encode(input);
    const out: string[] = [];
    // 7-byte chunks: every line spans many feeds; the CR and LF land in different chunks.
    for (let i = 0; i < bytes.length; i += 7) {
      s.feed(bytes.slice(i, i + 7));
      for (let l = s.next(); l !== null; l = s.next()) out.push(text(l));
    }
    const last = s.flush();
    if (last) out.push(text(last));
    expect(out).toEqual(["a".repeat(250), "b".repeat(1000), "b".repeat(1000), "b".repeat(500), "end-without-newline"]);
    expect(s.offset).toBe(bytes.length);
    expect(s.pending).toBe(0);
  });
});

describe("LineSplitter.nextSpan (lines as ranges, for sources that defer the view)", () => {
  function spans(splitter: LineSplitter, chunks: Uint8Array[]): { lines: string[]; inChunk: number } {
    const lines: string[] = [];
    let inChunk = 0;
    for (const c of chunks) {
      splitter.feed(c);
      while (splitter.nextSpan()) {
        lines.push(text(splitter.spanBytes.subarray(splitter.spanStart, splitter.spanEnd)));
        if (splitter.spanBytes === c) inChunk++;
      }
    }
    return { lines, inChunk };
  }

  const cases: [string, ConstructorParameters<typeof LineSplitter>[0], string[]][] = [
    ["plain lines and an empty one", {}, ["one\ntwo\n\nthr", "ee\nfour\n"]],
    ["CRLF", { stripCR: true }, ["a\r\nb\r", "\nc\r\n\r\n"]],
    ["overlong, split", { maxLineLength: 4 }, ["abcdefghij\nxy\n", "abcdef", "gh\n"]],
    ["overlong, truncate", { maxLineLength: 3, overlong: "truncate" }, ["abcdef", "ghi\nok\nlonger\n"]],
    ["UTF-8 cuts", { maxLineLength: 4 }, ["aééb\nxé\n"]],
  ];
  for (const [name, options, chunks] of cases) {
    test(`${name}: the same lines and offsets as next()`, () => {
      const a = new LineSplitter(options);
      const b = new LineSplitter(options);
      const viaNext = run(a, chunks);
      const viaSpan = spans(b, chunks.map((c) => enc.encode(c))).lines;
      expect(viaSpan).toEqual(viaNext);
      expect(b.offset).toBe(a.offset);
      expect(b.pending).toBe(a.pending);
    });
  }

  test("a line inside a chunk is a range of the chunk itself; a line across chunks is its own array", () => {
    const s = new LineSplitter();
    const first = enc.encode("one\ntw");
    const { lines, inChunk } = spans(s, [first, enc.encode("o\nthree\n")]);
    expect(lines).toEqual(["one", "two", "three"]);
    expect(inChunk).toBe(2);
  });

  test("reset and flush let go of the last line's chunk", () => {
    const s = new LineSplitter();
    s.feed(enc.encode("x\n"));
    expect(s.nextSpan()).toBe(true);
    s.reset(0);
    expect(s.spanBytes.length).toBe(0);
    s.feed(enc.encode("y\nz"));
    expect(s.nextSpan()).toBe(true);
    expect(text(s.flush() as Uint8Array)).toBe("z");
    expect(s.spanBytes.length).toBe(0);
  });
});

describe("LineSplitter.cutInChunk (a batch of lines in one call, as TAILDIR reads them)", () => {
  /** Lines (and the offset after each) as a reader cuts them: cutInChunk first, nextSpan where it stops. */
  function cut(splitter: LineSplitter, chunks: string[], maxLines: number, maxBytes = Infinity) {
    const lines: string[] = [];
    const ends: number[] = [];
    const batches: number[] = [];
    for (const c of chunks) {
      splitter.feed(enc.encode(c));
      for (;;) {
        const out: string[] = [];
        const n = splitter.cutInChunk(out, maxLines, maxBytes, (b, s, e) => text(b.subarray(s, e)));
        expect(n).toBe(out.length);
        if (n > 0) {
          expect(splitter.cutBytes).toBe(out.reduce((sum, l) => sum + enc.encode(l).length, 0));
          // The last line cut is left as the span, with where it starts.
          expect(text(splitter.spanBytes.subarray(splitter.spanStart, splitter.spanEnd))).toBe(out[out.length - 1]);
          ends.push(splitter.spanOffset + (splitter.spanEnd - splitter.spanStart));
          lines.push(...out);
          batches.push(out.length);
          continue;
        }
        if (!splitter.nextSpan()) break;
        lines.push(text(splitter.spanBytes.subarray(splitter.spanStart, splitter.spanEnd)));
        batches.push(-1);
      }
    }
    return { lines, ends, batches };
  }

  const cases: [string, ConstructorParameters<typeof LineSplitter>[0], string[]][] = [
    ["plain lines, an empty one, a line across chunks", {}, ["one\ntwo\n\nthr", "ee\nfour\nfive\nsix\n"]],
    ["CRLF", { stripCR: true }, ["a\r\nb\r", "\nc\r\n\r\nd\n"]],
    ["overlong, split", { maxLineLength: 4 }, ["ab\nabcdefghij\nxy\n", "abcdef", "gh\nok\n"]],
    ["overlong, truncate", { maxLineLength: 3, overlong: "truncate" }, ["abcdef", "ghi\nok\nlonger\nyes\n"]],
  ];
  for (const [name, options, chunks] of cases) {
    test(`${name}: the same lines and offsets as next()`, () => {
      const a = new LineSplitter(options);
      const b = new LineSplitter(options);
      const viaNext = run(a, chunks);
      const { lines } = cut(b, chunks, 2);
      expect(lines).toEqual(viaNext);
      expect(b.offset).toBe(a.offset);
      expect(b.pending).toBe(a.pending);
    });
  }

  test("up to maxLines lines, none once maxBytes were cut; the end offset of each batch's last line", () => {
    const s = new LineSplitter();
    const { lines, ends, batches } = cut(s, ["aaaa\nbb\ncccccc\nd\ne\n"], 3, 6);
    expect(lines).toEqual(["aaaa", "bb", "cccccc", "d", "e"]);
    // 4 + 2 bytes reach maxBytes 6: a batch ends there; then "cccccc" alone; then the rest.
    expect(batches).toEqual([2, 1, 2]);
    expect(ends).toEqual([7, 14, 18]);
  });

  test("it leaves to nextSpan a line carried over from the previous chunk, and cuts the lines after it", () => {
    const s = new LineSplitter();
    const { lines, batches } = cut(s, ["x\nhalf", " line\ny\nz\n"], 10);
    expect(lines).toEqual(["x", "half line", "y", "z"]);
    expect(batches).toEqual([1, -1, 2]);
  });

  test("an empty line alone is a line cut (0 bytes), not nothing", () => {
    const s = new LineSplitter();
    s.feed(enc.encode("\nx"));
    const out: number[] = [];
    expect(s.cutInChunk(out, 1, Infinity, (_b, start, end) => end - start)).toBe(1);
    expect(out).toEqual([0]);
    expect(s.cutBytes).toBe(0);
    expect(s.offset).toBe(1);
    expect(s.cutInChunk(out, 1, Infinity, (_b, start, end) => end - start)).toBe(0);
  });
});
