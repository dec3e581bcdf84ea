import { describe, expect, test } from "bun:test";
import { LineSplitter } from "../../../src/components/sources/line-splitter.ts";

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
