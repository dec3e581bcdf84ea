/**
 * Reads a Flume 1.11 checkpoint (format.ts) and decides whether it can be trusted. Flume's own
 * rules (EventQueueBackingStoreFactory, EventQueueBackingStoreFile(V3), FlumeEventQueue) make a
 * checkpoint bad when: `checkpoint.meta` exists without `checkpoint`; the checkpoint has no
 * meta file (a V2 checkpoint); its version is not 3; its marker says the last checkpoint did
 * not complete; the meta file does not decode or has another version; the write order ids of
 * the meta file and the checkpoint differ; an inflight file's MD5 does not match. Flume then
 * replays the whole log, and so does the migration. A few checks Flume leaves to a later crash
 * are added: queue size and head within the capacity, no empty or negative pointer in the
 * queue, and the per-file event counts in the meta file matching the queue.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import {
  BACKUP_COMPLETE_FILE,
  CHECKPOINT_COMPLETE,
  CHECKPOINT_FILE,
  CHECKPOINT_HEADER_LONGS,
  CHECKPOINT_META_FILE,
  FORMAT_VERSION,
  INDEX_CHECKPOINT_MARKER,
  INDEX_VERSION,
  INDEX_WRITE_ORDER_ID,
  INFLIGHT_PUTS_FILE,
  INFLIGHT_TAKES_FILE,
  MAX_FILE_ID,
  type PointerKey,
  pointerFromLong,
  pointerKey,
} from "./format.ts";
import { type ActiveLog, decodeCheckpointMeta } from "./messages.ts";
import { ProtobufError } from "./protobuf.ts";

/** A checkpoint that passed every check. */
export interface FlumeCheckpoint {
  dir: string;
  writeOrderID: number;
  capacity: number;
  queueHead: number;
  /** The queue from its head: the channel order of the events the checkpoint holds. */
  queue: PointerKey[];
  activeLogs: ActiveLog[];
  /** Puts written but not committed at checkpoint time, per transaction id. */
  inflightPuts: Map<number, PointerKey[]>;
  /** Events taken but not committed at checkpoint time, per transaction id. */
  inflightTakes: Map<number, PointerKey[]>;
  /** The files read, for the report. */
  files: string[];
}

export type CheckpointLoad = { checkpoint: FlumeCheckpoint } | { rejected: string; files: string[] };

/** Why a checkpoint cannot be used; the loader turns it into `rejected`. */
class BadCheckpoint extends Error {}

function pointerOf(value: bigint, where: string): PointerKey {
  const { fileID, offset } = pointerFromLong(value);
  if (value === 0n) throw new BadCheckpoint(`${where} is empty (0)`);
  if (offset < 0 || fileID < 0 || fileID > MAX_FILE_ID) throw new BadCheckpoint(`${where} is not a valid event pointer (file ${fileID}, offset ${offset})`);
  return pointerKey(fileID, offset);
}

/**
 * An inflight file: MD5 (16 bytes) of the rest, then longs: transaction id, count, pointers.
 * Flume writes its buffer whole after the checksum, so 16 zero bytes trail it, read as a
 * transaction 0 with no events, as Flume reads them.
 */
function readInflights(file: string): Map<number, PointerKey[]> {
  const out = new Map<number, PointerKey[]>();
  if (!existsSync(file)) return out; // Flume creates it empty
  const bytes = readFileSync(file);
  if (bytes.length === 0) return out;
  if (bytes.length < 16) throw new BadCheckpoint(`${file} is ${bytes.length} bytes, shorter than its MD5 checksum`);
  const rest = bytes.subarray(16);
  const md5 = createHash("md5").update(rest).digest();
  if (!md5.equals(bytes.subarray(0, 16))) throw new BadCheckpoint(`the MD5 checksum of ${file} does not match its content`);
  const longs = Math.floor(rest.length / 8);
  let i = 0;
  while (i + 2 <= longs) {
    const txid = rest.readBigInt64BE(i * 8);
    const count = rest.readBigInt64BE(i * 8 + 8);
    i += 2;
    if (count < 0n || count > BigInt(longs - i)) throw new BadCheckpoint(`${file} lists ${count} events for transaction ${txid}, more than the file holds`);
    if (count === 0n) continue;
    const id = Number(txid);
    const list = out.get(id) ?? [];
    for (let k = 0; k < Number(count); k++, i++) list.push(pointerOf(rest.readBigInt64BE(i * 8), `an event of transaction ${txid} in ${file}`));
    out.set(id, list);
  }
  return out;
}

/** Reads and checks the checkpoint in dir. Never throws for a bad checkpoint: says why instead. */
export function loadCheckpoint(dir: string): CheckpointLoad {
  const checkpointFile = path.join(dir, CHECKPOINT_FILE);
  const metaFile = path.join(dir, CHECKPOINT_META_FILE);
  const files: string[] = [];
  try {
    const hasCheckpoint = existsSync(checkpointFile) && statSync(checkpointFile).size > 0;
    const hasMeta = existsSync(metaFile);
    if (!hasCheckpoint && !hasMeta) throw new BadCheckpoint(`there is no checkpoint in ${dir}`);
    if (!hasCheckpoint) throw new BadCheckpoint(`${metaFile} exists but ${checkpointFile} does not: the last checkpoint did not complete`);
    if (!hasMeta) throw new BadCheckpoint(`${checkpointFile} has no ${CHECKPOINT_META_FILE}: not a version 3 checkpoint`);

    const ckpt = readFileSync(checkpointFile);
    files.push(checkpointFile);
    if (ckpt.length % 8 !== 0 || ckpt.length / 8 <= CHECKPOINT_HEADER_LONGS) {
      throw new BadCheckpoint(`${checkpointFile} is ${ckpt.length} bytes, not a header of ${CHECKPOINT_HEADER_LONGS} longs and at least one slot`);
    }
    const long = (i: number) => ckpt.readBigInt64BE(i * 8);
    const capacity = ckpt.length / 8 - CHECKPOINT_HEADER_LONGS;
    const version = long(INDEX_VERSION);
    if (version !== BigInt(FORMAT_VERSION)) throw new BadCheckpoint(`${checkpointFile} has version ${version}, expected ${FORMAT_VERSION}`);
    const marker = long(INDEX_CHECKPOINT_MARKER);
    if (marker !== BigInt(CHECKPOINT_COMPLETE)) throw new BadCheckpoint(`${checkpointFile} is marked incomplete: the agent stopped while writing it`);

    files.push(metaFile);
    let meta;
    try {
      meta = decodeCheckpointMeta(readFileSync(metaFile));
    } catch (err) {
      if (err instanceof ProtobufError) throw new BadCheckpoint(`${metaFile} does not decode: ${err.message}`);
      throw err;
    }
    if (meta.version !== FORMAT_VERSION) throw new BadCheckpoint(`${metaFile} has version ${meta.version}, expected ${FORMAT_VERSION}`);
    const writeOrderID = long(INDEX_WRITE_ORDER_ID);
    if (BigInt(meta.writeOrderID) !== writeOrderID) {
      throw new BadCheckpoint(`${checkpointFile} has write order id ${writeOrderID} but ${metaFile} has ${meta.writeOrderID}: they are from different checkpoints`);
    }
    if (meta.queueSize < 0 || meta.queueSize > capacity) throw new BadCheckpoint(`${metaFile} says the queue holds ${meta.queueSize} events, outside the capacity ${capacity}`);
    if (meta.queueHead < 0 || meta.queueHead >= capacity) throw new BadCheckpoint(`${metaFile} puts the queue head at ${meta.queueHead}, outside the capacity ${capacity}`);

    const queue: PointerKey[] = new Array(meta.queueSize);
    const perFile = new Map<number, number>();
    for (let i = 0; i < meta.queueSize; i++) {
      const slot = (meta.queueHead + i) % capacity;
      const key = pointerOf(long(CHECKPOINT_HEADER_LONGS + slot), `queue element ${i} (slot ${slot}) of ${checkpointFile}`);
      queue[i] = key;
      const id = Math.floor(key / 2 ** 32);
      perFile.set(id, (perFile.get(id) ?? 0) + 1);
    }
    const counted = new Map(meta.activeLogs.map((a) => [a.logFileID, a.count]));
    for (const id of new Set([...perFile.keys(), ...counted.keys()])) {
      if ((perFile.get(id) ?? 0) !== (counted.get(id) ?? 0)) {
        throw new BadCheckpoint(`${metaFile} counts ${counted.get(id) ?? 0} events in log-${id} but the queue holds ${perFile.get(id) ?? 0}`);
      }
    }

    const putsFile = path.join(dir, INFLIGHT_PUTS_FILE);
    const takesFile = path.join(dir, INFLIGHT_TAKES_FILE);
    const inflightPuts = readInflights(putsFile);
    const inflightTakes = readInflights(takesFile);
    for (const f of [putsFile, takesFile]) if (existsSync(f)) files.push(f);
    return {
      checkpoint: { dir, writeOrderID: Number(writeOrderID), capacity, queueHead: meta.queueHead, queue, activeLogs: meta.activeLogs, inflightPuts, inflightTakes, files },
    };
  } catch (err) {
    if (err instanceof BadCheckpoint) return { rejected: err.message, files };
    throw err;
  }
}

/** Whether dir holds a backup that Flume finished writing (its `backupComplete` marker). */
export function backupComplete(dir: string): boolean {
  return existsSync(path.join(dir, BACKUP_COMPLETE_FILE));
}
