/**
 * CRC32C (Castagnoli): HDFS keeps one per 512-byte chunk (dfs.checksum.type CRC32C), Kafka one per
 * record batch. No runtime offers it natively (zlib's crc32 is the other polynomial).
 *
 * Slicing-by-16 in JS over one flat table (scripts/bench/_crc32c.ts; MB/s at 512 B and 110 KB,
 * Bun with the agent's BUN_JSC_useFTLJIT=false): 1.8 and 2.15 GB/s, where slicing-by-8 over
 * eight arrays made 1.45 and 1.75, the Kafka client's WebAssembly 1.7 and 1.4, hash-wasm's 1.1
 * and 2.1. WebAssembly of our own (four slicing-by-8 chains side by side) made 2.5 and 3.3, but
 * compiling any WebAssembly pages the engine's wasm compilers in: +5-7 MB of the Kafka agents'
 * peak RSS, for 7% of the source's CPU an event. Under Bun on x86-64, useHardwareCrc32c puts the
 * CPU's own instruction in the tables' place (crc32c-sse42.ts: 9.8 GB/s, 4 KB). The same
 * instruction compiled at start by the TinyCC in bun:ffi made 6.0 GB/s but added 3-5 MB to the
 * Kafka agents' peak RSS.
 */
const POLY = 0x82f63b78;

/**
 * The sixteen 256-entry tables end to end: entry 256 * k + b is the CRC state of byte b followed
 * by k zero bytes (k = 0: the bytewise table). One array, so one bounds check per lookup and a
 * constant offset, faster under JSC's DFG than sixteen arrays.
 */
const T = (() => {
  const t = new Int32Array(16 * 256);
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[b] = c;
  }
  for (let i = 256; i < t.length; i++) t[i] = (t[i - 256] >>> 8) ^ t[t[i - 256] & 0xff];
  return t;
})();

/** CRC32C of bytes[from, to). */
export type Crc32c = (bytes: Uint8Array, from: number, to: number) => number;

let impl: Crc32c = crc32cTables;
let hardware: Promise<boolean> | null = null;

/** The CRC32C of bytes[from, to): with the CPU's instruction once useHardwareCrc32c found it, else from the tables. */
export function crc32c(bytes: Uint8Array, from = 0, to = bytes.length): number {
  return impl(bytes, from, to);
}

/**
 * Computes CRC32C with the CPU's instruction from now on where there is one (Bun on x86-64
 * Linux with SSE 4.2); true if so. Called by the loaders of what checksums much (the Kafka
 * client, the HDFS client). The instruction replaces the tables only after it gave their results.
 */
export function useHardwareCrc32c(): Promise<boolean> {
  hardware ??= import("./crc32c-sse42.ts")
    .then(({ loadSse42Crc32c }) => loadSse42Crc32c())
    .then((native) => {
      if (!native || !agrees(native)) return false;
      impl = native;
      return true;
    })
    .catch(() => false);
  return hardware;
}

/** Whether `crc` gives the tables' results: the check value, and every length up to 40 at an odd offset. */
function agrees(crc: Crc32c): boolean {
  const digits = new TextEncoder().encode("123456789");
  if (crc(digits, 0, digits.length) !== 0xe3069283) return false;
  const bytes = Uint8Array.from({ length: 64 }, (_, i) => (i * 131 + 7) & 0xff);
  for (let n = 0; n <= 40; n++) if (crc(bytes, 3, 3 + n) !== crc32cTables(bytes, 3, 3 + n)) return false;
  return true;
}

/**
 * The CRC32C of bytes[from, to) from the tables. Sixteen bytes a step, read as four little-endian words through a
 * DataView (a third faster than byte by byte); the first word's bytes, xored with the state, look
 * up the tables of 15..12 zeros after them, the last word's those of 3..0.
 */
export function crc32cTables(bytes: Uint8Array, from = 0, to = bytes.length): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let c = -1;
  let i = from;
  while (to - i >= 16) {
    const a = c ^ view.getInt32(i, true);
    const b = view.getInt32(i + 4, true);
    const d = view.getInt32(i + 8, true);
    const e = view.getInt32(i + 12, true);
    c =
      T[3840 + (a & 0xff)] ^ T[3584 + ((a >>> 8) & 0xff)] ^ T[3328 + ((a >>> 16) & 0xff)] ^ T[3072 + (a >>> 24)] ^
      T[2816 + (b & 0xff)] ^ T[2560 + ((b >>> 8) & 0xff)] ^ T[2304 + ((b >>> 16) & 0xff)] ^ T[2048 + (b >>> 24)] ^
      T[1792 + (d & 0xff)] ^ T[1536 + ((d >>> 8) & 0xff)] ^ T[1280 + ((d >>> 16) & 0xff)] ^ T[1024 + (d >>> 24)] ^
      T[768 + (e & 0xff)] ^ T[512 + ((e >>> 8) & 0xff)] ^ T[256 + ((e >>> 16) & 0xff)] ^ T[e >>> 24];
    i += 16;
  }
  while (i < to) c = T[(c ^ bytes[i++]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}
