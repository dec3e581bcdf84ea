import { expect, test } from "bun:test";
import { crc32c } from "../../src/io/crc32c.ts";

/** The bitwise definition (reflected polynomial 0x82F63B78), to check the sliced tables against. */
function reference(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

test("crc32c: the published check values (RFC 3720's iSCSI vectors, '123456789')", () => {
  expect(crc32c(new TextEncoder().encode("123456789"))).toBe(0xe3069283);
  expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
  expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
  expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
});

test("crc32c of any range equals the bitwise definition (ranges of every length around the 8-byte slices)", () => {
  const bytes = new Uint8Array(1200);
  let x = 99;
  for (let i = 0; i < bytes.length; i++) bytes[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  for (const [from, to] of [[0, 0], [0, 1], [3, 10], [5, 13], [1, 512], [512, 1024], [0, 1200], [1190, 1200]]) {
    expect(crc32c(bytes, from, to)).toBe(reference(bytes.subarray(from, to)));
  }
});
