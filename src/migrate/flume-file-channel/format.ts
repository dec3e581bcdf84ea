/**
 * Facts about Apache Flume 1.11's file channel on disk (format V3), from its sources
 * (LogFile, LogFileV3, TransactionEventRecord, EventQueueBackingStoreFile(V3), FlumeEventQueue,
 * Serialization, Log).
 *
 * Data directory: `log-N` data files, each with a `log-N.meta` (LogFileMetaData, messages.ts).
 * A data file has no header: it is a sequence of operations, each starting with one byte:
 *   0x7f OP_RECORD  then a big-endian int32 length L and L bytes: a delimited
 *                   TransactionEventHeader, a delimited Put/Take/Rollback/Commit message and a
 *                   delimited (empty) TransactionEventFooter;
 *   0x00 OP_NOOP    a record blanked by Flume's integrity tool: int32 length, L bytes, skipped;
 *   0x80 OP_EOF     end of the data: Flume preallocates files in 1 MiB steps filled with 0x80.
 * An event's pointer is (log file id, offset of its record's OP_RECORD byte).
 *
 * Checkpoint directory: `checkpoint` is an array of big-endian longs: a header of 1029 longs
 * (0: version 3, 1: write order id, 4: marker, 0 once a checkpoint completed), then `capacity`
 * slots of a ring: queue element i is in slot (queueHead + i) % capacity and holds
 * (fileID << 32) | offset. `checkpoint.meta` (Checkpoint) has queueSize, queueHead and the
 * same write order id. `inflightputs` / `inflighttakes`: an MD5 of the rest, then longs:
 * per open transaction its id, a count and that many pointers.
 */
import { readdirSync } from "node:fs";

export const OP_RECORD = 0x7f;
export const OP_NOOP = 0x00;
export const OP_EOF = 0x80;

/** TransactionEventRecord.Type. */
export const RecordType = { PUT: 1, TAKE: 2, ROLLBACK: 3, COMMIT: 4 } as const;
export type RecordTypeCode = (typeof RecordType)[keyof typeof RecordType];
export const RECORD_TYPE_NAMES: Record<number, string> = { 1: "Put", 2: "Take", 3: "Rollback", 4: "Commit" };

/** Flume's replay order for records with the same write order and transaction id (LogRecord). */
export const REPLAY_RANK: Record<number, number> = { 2: 0, 1: 1, 3: 2, 4: 3 };

export const FORMAT_VERSION = 3;
export const CHECKPOINT_HEADER_LONGS = 1029;
export const INDEX_VERSION = 0;
export const INDEX_WRITE_ORDER_ID = 1;
export const INDEX_CHECKPOINT_MARKER = 4;
export const CHECKPOINT_COMPLETE = 0;

export const CHECKPOINT_FILE = "checkpoint";
export const CHECKPOINT_META_FILE = "checkpoint.meta";
export const INFLIGHT_PUTS_FILE = "inflightputs";
export const INFLIGHT_TAKES_FILE = "inflighttakes";
/** Written last by Flume's backup of a checkpoint (useDualCheckpoints): the backup is whole. */
export const BACKUP_COMPLETE_FILE = "backupComplete";
export const LOCK_FILE = "in_use.lock";
export const META_SUFFIX = ".meta";

/** Parses `log-N`; null for every other name (`log-N.meta` included). */
export function parseLogFileName(name: string): number | null {
  const m = /^log-(\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
}

/**
 * An event pointer as one number: fileID * 2^32 + offset, exact for file ids below 2^21 (Flume
 * numbers its files from 1; two million files would take decades of rolls).
 */
export type PointerKey = number;
const TWO_32 = 2 ** 32;
export const MAX_FILE_ID = 2 ** 21 - 1;

export function pointerKey(fileID: number, offset: number): PointerKey {
  return fileID * TWO_32 + offset;
}

export function pointerFile(key: PointerKey): number {
  return Math.floor(key / TWO_32);
}

export function pointerOffset(key: PointerKey): number {
  return key % TWO_32;
}

/** Flume's long form of a pointer, as stored in the checkpoint and the inflight files. */
export function pointerFromLong(value: bigint): { fileID: number; offset: number } {
  return { fileID: Number(BigInt.asIntN(32, value >> 32n)), offset: Number(BigInt.asIntN(32, value)) };
}

/** The names in dir, or an empty list when it does not exist. */
export function listNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}
