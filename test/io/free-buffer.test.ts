import { describe, expect, test } from "bun:test";
import { freeNow } from "../../src/io/free-buffer.ts";

describe("freeNow", () => {
  test("a view that is all of its buffer is emptied (its memory given back)", () => {
    const whole = new Uint8Array(256 * 1024).fill(7);
    const part = whole.subarray(0, 10);
    freeNow(whole);
    expect(whole.buffer.byteLength).toBe(0);
    expect(whole.length).toBe(0);
    expect(part.length).toBe(0);
  });

  test("a view of part of a buffer is left alone: others may still read the rest", () => {
    const buf = new Uint8Array(1024).fill(1);
    freeNow(buf.subarray(0, 512));
    freeNow(buf.subarray(512));
    expect(buf.length).toBe(1024);
    expect(buf[1023]).toBe(1);
  });
});
