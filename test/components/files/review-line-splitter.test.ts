import { expect, test } from "bun:test";
import { LineSplitter } from "../../../src/components/sources/line-splitter.ts";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

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
