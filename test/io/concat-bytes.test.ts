// concatBytes: chunks as one buffer, without a copy for a single chunk.
import { describe, expect, test } from "bun:test";
import { concatBytes } from "../../src/io/concat-bytes.ts";

describe("concatBytes", () => {
  test("joins the parts in order, with or without the total given", () => {
    const parts = [Uint8Array.of(1, 2), Uint8Array.of(), Uint8Array.of(3)];
    expect([...concatBytes(parts)]).toEqual([1, 2, 3]);
    expect([...concatBytes(parts, 3)]).toEqual([1, 2, 3]);
  });

  test("a single part is returned as it is, not copied", () => {
    const only = Uint8Array.of(7, 8);
    expect(concatBytes([only])).toBe(only);
  });

  test("no parts give an empty buffer", () => {
    expect(concatBytes([]).length).toBe(0);
  });
});
