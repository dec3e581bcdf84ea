/**
 * CRC32C (Castagnoli): HDFS keeps one per 512-byte chunk (dfs.checksum.type CRC32C), Kafka one per
 * record batch. No runtime offers it natively (zlib's crc32 is the other polynomial), and no
 * maintained package is faster (scripts/bench/_crc32c.ts: hash-wasm's, the Kafka client's
 * WebAssembly one, slicing-by-8 like ours, run at 2.1 and 1.4 GB/s).
 *
 * From 64 bytes on, WebAssembly (src/io/crc32c.wat: four slicing-by-8 chains side by side, the
 * input copied into its memory): under Bun with the agent's JIT options 3.3 GB/s against 1.75 for
 * slicing-by-8 in JS, 2.5 against 1.5 on 512 bytes; under Node 2.3 against 0.8. Below 64 bytes the
 * copy and the call cost more than they save, and slicing-by-8 in JS does it (as it does
 * everything where WebAssembly cannot load).
 */
import { CRC32C_WASM } from "./crc32c-wasm.ts";

const POLY = 0x82f63b78;

/** Tk[b]: the CRC state of byte b followed by k zero bytes (T0 is the bytewise table). */
const TABLES = (() => {
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

/** The eight tables, each its own array (plain indexes, no offset arithmetic). */
const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES;

/**
 * The CRC32C of bytes[from, to), slicing-by-8 in JS. Eight bytes a step, read as two
 * little-endian words through a DataView: a third faster than byte by byte.
 */
export function crc32cJs(bytes: Uint8Array, from = 0, to = bytes.length): number {
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

/** Inputs this long and longer go to WebAssembly. */
const WASM_FROM = 64;
/** Where the module reads its input, and how much a call takes (src/io/crc32c.wat's layout). */
const INPUT_AT = 16384;
const CHUNK = 65536;
/** The bytes the module's four chains each take of a 512-byte block. */
const QUARTER = 128;

interface Crc32cWasm {
  /** The module's memory, bytes. */
  memory: Uint8Array;
  /** The CRC state after `length` bytes at INPUT_AT, going on from `state` (neither inverted). */
  update(state: number, length: number): number;
}

/**
 * S0..S3 (256 entries each, one after the other): a CRC state moved over `zeros` zero bytes, by
 * each of its four bytes. Moving is linear in the state: each of its 32 bits moved alone, then
 * every table entry is the xor of the moved bits of its byte.
 */
function shiftTables(zeros: number): Int32Array {
  const bits = new Int32Array(32);
  for (let bit = 0; bit < 32; bit++) {
    let c = 1 << bit;
    for (let i = 0; i < zeros; i++) c = T0[c & 0xff] ^ (c >>> 8);
    bits[bit] = c;
  }
  const out = new Int32Array(1024);
  for (let k = 0; k < 4; k++) {
    for (let b = 0; b < 256; b++) {
      let v = 0;
      for (let j = 0; j < 8; j++) if (b & (1 << j)) v ^= bits[k * 8 + j];
      out[k * 256 + b] = v;
    }
  }
  return out;
}

/** The module, instantiated and its tables filled; null where WebAssembly is not available. */
function loadWasm(): Crc32cWasm | null {
  try {
    const code = Uint8Array.from(atob(CRC32C_WASM), (ch) => ch.charCodeAt(0));
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(code));
    const memory = (exports.memory as WebAssembly.Memory).buffer;
    const words = new Int32Array(memory, 0, 3 * 1024);
    TABLES.forEach((t, k) => words.set(t, k * 256));
    words.set(shiftTables(QUARTER), 2048);
    return { memory: new Uint8Array(memory), update: exports.update as Crc32cWasm["update"] };
  } catch {
    return null;
  }
}

/** Loaded on the first input long enough: agents that never check a CRC never compile it. */
let wasm: Crc32cWasm | null | undefined;

/** Whether the WebAssembly path is in use (loading it if not yet): for the tests and the benchmark. */
export function crc32cUsesWasm(): boolean {
  wasm ??= loadWasm();
  return wasm !== null;
}

/** The CRC32C of bytes[from, to). */
export function crc32c(bytes: Uint8Array, from = 0, to = bytes.length): number {
  if (to - from < WASM_FROM) return crc32cJs(bytes, from, to);
  const w = (wasm ??= loadWasm());
  if (w === null) return crc32cJs(bytes, from, to);
  let state = -1;
  while (from < to) {
    const chunk = bytes.subarray(from, Math.min(to, from + CHUNK));
    w.memory.set(chunk, INPUT_AT);
    state = w.update(state, chunk.length);
    from += CHUNK;
  }
  return ~state >>> 0;
}
