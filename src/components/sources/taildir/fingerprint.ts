import type { PositionalReader } from "../../../io/read-only-file.ts";

/** Bytes from offset 0 that identify a file's content. */
export const HEAD_BYTES = 256;
/** Bytes of the last line before the committed position that anchor that position. */
export const TAIL_BYTES = 256;

/**
 * What identifies the content of a file up to its committed position, small enough to store
 * with every commit: hashes of its first bytes and of the bytes that end at `tailEnd` (the end
 * of the last line read, just before the position). A copy made by copytruncate has the same
 * fingerprint; a file truncated and written again does not.
 */
export interface Fingerprint {
  headLen: number;
  head: string;
  tailEnd: number;
  tailLen: number;
  tail: string;
}

/** MurmurHash3's 32-bit finalizer: spreads every input bit over the output. */
function fmix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * A 53-bit hash of bytes as base-36 text: an FNV-1a lane and a multiply-rotate lane, each
 * finalized. Not for security, only to tell contents apart; the same on every runtime.
 */
export function hashBytes(bytes: Uint8Array, start = 0, end = bytes.length): string {
  const len = end - start;
  let a = 0x811c9dc5 ^ len;
  let b = Math.imul(len, 0x9e3779b1) | 0;
  for (let i = start; i < end; i++) {
    const x = bytes[i];
    a = Math.imul(a ^ x, 0x01000193);
    b = Math.imul(b + x + 1, 0x9e3779b1);
    b = (b << 13) | (b >>> 19);
  }
  const lo = fmix32(a ^ b);
  const hi = fmix32(b + Math.imul(a, 0x27d4eb2f)) & 0x1fffff;
  return (hi * 4294967296 + lo).toString(36);
}

/** `headLen:head:tailEnd:tailLen:tail`, the form kept in state records. */
export function formatFingerprint(fp: Fingerprint): string {
  return `${fp.headLen}:${fp.head}:${fp.tailEnd}:${fp.tailLen}:${fp.tail}`;
}

export function parseFingerprint(text: unknown): Fingerprint | null {
  if (typeof text !== "string") return null;
  const p = text.split(":");
  if (p.length !== 5) return null;
  const [headLen, tailEnd, tailLen] = [Number(p[0]), Number(p[2]), Number(p[3])];
  if (![headLen, tailEnd, tailLen].every((n) => Number.isSafeInteger(n) && n >= 0) || tailLen > tailEnd) return null;
  return { headLen, head: p[1], tailEnd, tailLen, tail: p[4] };
}

/** Reads up to `length` bytes at `offset` (fewer at the end of the file). */
export async function readRange(handle: PositionalReader, offset: number, length: number): Promise<Uint8Array> {
  const buf = new Uint8Array(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await handle.read(buf, got, length - got, offset + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === length ? buf : buf.subarray(0, got);
}

/** True when the open file holds the fingerprinted bytes at the same offsets. */
export async function holdsFingerprint(handle: PositionalReader, fp: Fingerprint): Promise<boolean> {
  if (fp.headLen > 0) {
    const head = await readRange(handle, 0, fp.headLen);
    if (head.length !== fp.headLen || hashBytes(head) !== fp.head) return false;
  }
  if (fp.tailLen > 0) {
    const tail = await readRange(handle, fp.tailEnd - fp.tailLen, fp.tailLen);
    if (tail.length !== fp.tailLen || hashBytes(tail) !== fp.tail) return false;
  }
  return true;
}
