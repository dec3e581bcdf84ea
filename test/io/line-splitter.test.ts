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
