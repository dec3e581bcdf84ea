/**
 * Checkpoints: a snapshot of the queue so a restart replays only the log written after it.
 *
 * File `checkpoint` in checkpointDir (and in backupCheckpointDir with useDualCheckpoints),
 * little-endian:
 *
 *   0   "FLTSCKP1" (8 bytes)
 *   8   u32 format version (1)
 *   12  u32 crc32 of bytes [16, end)
 *   16  f64 log segment id where replay starts
 *   24  f64 log offset in that segment where replay starts
 *   32  f64 next event sequence number
 *   40  f64 next transaction id
 *   48  u32 entry count N
 *   52  u32 source position count P
 *   56  N x f64 sequence numbers, then N x u32 segment ids, then N x u32 offsets (queue order,
 *       events taken by open transactions first)
 *   ..  P x (u16 source length, source, u32 position length, position), UTF-8
 *
 * It is written to `checkpoint.tmp`, fsynced and renamed over the old one, so a crash leaves
 * either the old or the new checkpoint, never a torn one.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { crc32 } from "../../../io/crc32.ts";
import { writeFileAtomic, writeFileAtomicSync } from "../../../io/atomic-write.ts";
import { positionEntriesSize, readPositionEntries, writePositionEntries } from "./format.ts";

const MAGIC = "FLTSCKP1";
const VERSION = 1;
const FIXED = 56;
export const CHECKPOINT_FILE = "checkpoint";

export interface CheckpointData {
  logSegment: number;
  logOffset: number;
  nextSeq: number;
  nextTxid: number;
  count: number;
  seqs: Float64Array;
  segs: Uint32Array;
  offs: Uint32Array;
  positions: Map<string, string>;
}

export function encodeCheckpoint(c: CheckpointData): Buffer {
  const posBytes = positionEntriesSize(c.positions);
  const n = c.count;
  const buf = Buffer.allocUnsafe(FIXED + n * 16 + posBytes);
  buf.write(MAGIC, 0, "latin1");
  buf.writeUInt32LE(VERSION, 8);
  buf.writeDoubleLE(c.logSegment, 16);
  buf.writeDoubleLE(c.logOffset, 24);
  buf.writeDoubleLE(c.nextSeq, 32);
  buf.writeDoubleLE(c.nextTxid, 40);
  buf.writeUInt32LE(n, 48);
  buf.writeUInt32LE(c.positions.size, 52);
  let p = FIXED;
  buf.set(new Uint8Array(c.seqs.buffer, c.seqs.byteOffset, n * 8), p);
  p += n * 8;
  buf.set(new Uint8Array(c.segs.buffer, c.segs.byteOffset, n * 4), p);
  p += n * 4;
  buf.set(new Uint8Array(c.offs.buffer, c.offs.byteOffset, n * 4), p);
  p += n * 4;
  writePositionEntries(buf, p, c.positions);
  buf.writeUInt32LE(crc32(buf, 16), 12);
  return buf;
}

export function decodeCheckpoint(buf: Buffer): CheckpointData | { error: string } {
  if (buf.length < FIXED || buf.toString("latin1", 0, 8) !== MAGIC) return { error: "not a Flume TS checkpoint (bad magic or too short)" };
  if (buf.readUInt32LE(8) !== VERSION) return { error: `unsupported checkpoint version ${buf.readUInt32LE(8)}` };
  if (crc32(buf, 16) !== buf.readUInt32LE(12)) return { error: "checksum mismatch" };
  const n = buf.readUInt32LE(48);
  const pcount = buf.readUInt32LE(52);
  if (FIXED + n * 16 > buf.length) return { error: "entry count exceeds file size" };
  const seqs = new Float64Array(n);
  const segs = new Uint32Array(n);
  const offs = new Uint32Array(n);
  let p = FIXED;
  new Uint8Array(seqs.buffer).set(buf.subarray(p, p + n * 8));
  p += n * 8;
  new Uint8Array(segs.buffer).set(buf.subarray(p, p + n * 4));
  p += n * 4;
  new Uint8Array(offs.buffer).set(buf.subarray(p, p + n * 4));
  p += n * 4;
  const positions = new Map<string, string>();
  readPositionEntries(buf, p, pcount, positions);
  return {
    logSegment: buf.readDoubleLE(16),
    logOffset: buf.readDoubleLE(24),
    nextSeq: buf.readDoubleLE(32),
    nextTxid: buf.readDoubleLE(40),
    count: n,
    seqs,
    segs,
    offs,
    positions,
  };
}

/** Writes a checkpoint atomically and durably (see src/io/atomic-write.ts); `blocking`: on the calling thread. */
export async function writeCheckpointFile(dir: string, bytes: Buffer, blocking = false): Promise<void> {
  if (blocking) writeFileAtomicSync(path.join(dir, CHECKPOINT_FILE), bytes);
  else await writeFileAtomic(path.join(dir, CHECKPOINT_FILE), bytes);
}

export type CheckpointLoad = { data: CheckpointData; from: string } | { data: null; problems: string[] };

/** Loads the newest readable checkpoint from the given directories, in order of preference. */
export function loadCheckpoint(dirs: readonly string[]): CheckpointLoad {
  const problems: string[] = [];
  for (const dir of dirs) {
    const file = path.join(dir, CHECKPOINT_FILE);
    if (!existsSync(file)) continue;
    let decoded: CheckpointData | { error: string };
    try {
      decoded = decodeCheckpoint(readFileSync(file));
    } catch (err) {
      decoded = { error: (err as Error).message };
    }
    if ("error" in decoded) {
      problems.push(`${file}: ${decoded.error}`);
      continue;
    }
    return { data: decoded, from: file };
  }
  return { data: null, problems };
}
