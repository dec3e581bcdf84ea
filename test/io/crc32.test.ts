import { expect, test } from "bun:test";
import { crc32 as zlibCrc32 } from "node:zlib";
import { crc32 } from "../../src/io/crc32.ts";

test("crc32 of any range equals zlib's crc32 of that range (short ranges summed here, long ones natively)", () => {
  const bytes = new Uint8Array(5000);
  let x = 12345;
  for (let i = 0; i < bytes.length; i++) bytes[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  for (const [start, end] of [[0, 0], [0, 1], [3, 10], [7, 15], [100, 355], [1, 257], [0, 5000], [17, 4999]]) {
    expect(crc32(bytes, start, end)).toBe(zlibCrc32(bytes.subarray(start, end)));
  }
  expect(crc32(new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
});
