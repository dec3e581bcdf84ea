/**
 * CRC32C (Castagnoli): HDFS keeps one per 512-byte chunk (dfs.checksum.type CRC32C), Kafka one per
 * record batch.
 * Slicing-by-8 over eight 256-entry tables: no runtime offers CRC32C natively (zlib's crc32 is
 * the other polynomial).
 */
const POLY = 0x82f63b78;

const T = (() => {
  const t = new Uint32Array(8 * 256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[i] = c >>> 0;
  }
  for (let i = 0; i < 256; i++) {
    for (let s = 1; s < 8; s++) t[s * 256 + i] = (t[(s - 1) * 256 + i] >>> 8) ^ t[t[(s - 1) * 256 + i] & 0xff];
  }
  return t;
})();

/** The CRC32C of bytes[from, to). */
export function crc32c(bytes: Uint8Array, from = 0, to = bytes.length): number {
  let c = 0xffffffff;
  let i = from;
  while (to - i >= 8) {
    const a = c ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
    c =
      T[7 * 256 + (a & 0xff)] ^
      T[6 * 256 + ((a >>> 8) & 0xff)] ^
      T[5 * 256 + ((a >>> 16) & 0xff)] ^
      T[4 * 256 + (a >>> 24)] ^
      T[3 * 256 + bytes[i + 4]] ^
      T[2 * 256 + bytes[i + 5]] ^
      T[256 + bytes[i + 6]] ^
      T[bytes[i + 7]];
    i += 8;
  }
  while (i < to) c = T[(c ^ bytes[i++]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
