/**
 * src/io/crc32c.ts as it was before slicing-by-16 (slicing-by-8 over eight arrays): what the tests
 * compare the current one with, and scripts/bench/_crc32c.ts measures it against.
 */
const POLY = 0x82f63b78;

const [T0, T1, T2, T3, T4, T5, T6, T7] = (() => {
  const t: Int32Array[] = [new Int32Array(256)];
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[0][i] = c;
  }
  for (let s = 1; s < 8; s++) {
    t.push(new Int32Array(256));
    for (let i = 0; i < 256; i++) t[s][i] = (t[s - 1][i] >>> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
})();

export function crc32cSlicingBy8(bytes: Uint8Array, from = 0, to = bytes.length): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let c = -1;
  let i = from;
  while (to - i >= 8) {
    const a = c ^ view.getInt32(i, true);
    const b = view.getInt32(i + 4, true);
    c = T7[a & 0xff] ^ T6[(a >>> 8) & 0xff] ^ T5[(a >>> 16) & 0xff] ^ T4[a >>> 24] ^ T3[b & 0xff] ^ T2[(b >>> 8) & 0xff] ^ T1[(b >>> 16) & 0xff] ^ T0[b >>> 24];
    i += 8;
  }
  while (i < to) c = T0[(c ^ bytes[i++]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}
