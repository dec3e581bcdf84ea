/**
 * Reads Kafka's RecordBatch v2 (magic 2) out of a Fetch response, for the Kafka source and
 * channel: one small object a record (key and value are views of the response, headers only
 * when the record has some), instead of the client library's batch objects, record objects and
 * per-record message copies with headers Maps and commit closures (measured: two fifths of the
 * source's CPU). The batch layout is in record-batch.ts, which writes it.
 *
 * What the Java consumer does, done here too: the CRC32C of each batch is checked; records
 * before the fetch offset (a batch is sent whole) are skipped; control batches (transaction
 * markers) are skipped; under read_committed, the batches of aborted transactions are skipped
 * (the aborted transactions the broker listed, closed by their ABORT markers); a batch cut at
 * the end of the response (the broker fills fetch.max.bytes with whole batches, then part of
 * the next) is left for the next fetch. Compressed batches are inflated with the library's
 * codecs.
 */
import { KafkaCorruptRecordError } from "./errors.ts";

/** What the records of one record batch share: where they are from and the buffer their values are in. */
export class BatchOrigin {
  constructor(
    readonly topic: string,
    readonly partition: number,
    /** The leader epoch the batch was written in: what the offset commit passes on. */
    readonly leaderEpoch: number,
    /** The buffer the values are in (the fetch response, or an inflated batch). */
    readonly bytes: Buffer,
    /** The batch's first offset (in errors). */
    readonly baseOffset: number,
  ) {}

  /** Where the batch is, for errors. */
  where(): string {
    return `topic ${this.topic} partition ${this.partition} offset ${this.baseOffset}`;
  }
}

/**
 * A fetched record: where it is, its timestamp, key (null when absent), value and headers (null
 * when none). The value is made a view only when asked (`value`): the Kafka source copies it
 * from where it lies (`bytes`, `valueAt`, `valueLength`) without one. What the records of a batch
 * share is in one object (`origin`): 7 fields a record instead of 11 (the reader allocated one
 * such record per record read: its size was most of its cost).
 */
export class FetchedRecord {
  constructor(
    readonly origin: BatchOrigin,
    readonly offset: number,
    readonly timestamp: number,
    readonly key: Buffer | null,
    readonly valueAt: number,
    /** An absent (null) value reads as an empty one, as Flume reads it. */
    readonly valueLength: number,
    readonly headers: [Buffer, Buffer][] | null,
  ) {}

  get topic(): string {
    return this.origin.topic;
  }

  get partition(): number {
    return this.origin.partition;
  }

  /** The buffer the value is in (the fetch response, or an inflated batch). */
  get bytes(): Buffer {
    return this.origin.bytes;
  }

  /** The leader epoch the batch was written in: what the offset commit passes on. */
  get leaderEpoch(): number {
    return this.origin.leaderEpoch;
  }

  /** The value: a view of `bytes`. */
  get value(): Buffer {
    return this.origin.bytes.subarray(this.valueAt, this.valueAt + this.valueLength);
  }
}

export interface AbortedTransaction {
  producerId: number;
  firstOffset: number;
}

/** What the batches of one partition in one Fetch response are read with. */
export interface PartitionFetch {
  topic: string;
  partition: number;
  /** The offset fetched from: records below it (in the first batch) are skipped. */
  fetchOffset: number;
  /** isolation.level = read_committed: the aborted transactions the broker listed for this partition. */
  aborted: readonly AbortedTransaction[] | null;
  readCommitted: boolean;
}

export interface PartitionRead {
  /** Where the next fetch of the partition starts: past the last whole batch read. */
  next: number;
  /** Bytes of the keys and values read. */
  bytes: number;
}

/** Inflates the records of a compressed batch (attributes & 7: 1 gzip, 2 snappy, 3 lz4, 4 zstd). */
export type Inflate = (codec: number, compressed: Buffer) => Buffer;
/** CRC32C of bytes[from, to). */
export type Crc32c = (bytes: Buffer, from: number, to: number) => number;

export const BATCH_HEADER = 61;
const CRC_FROM = 21;
const COMPRESSION = 0x07;
const LOG_APPEND_TIME = 0x08;
const TRANSACTIONAL = 0x10;
const CONTROL = 0x20;
const EMPTY: Buffer = Buffer.alloc(0);

/** Read position in the buffer being decoded (one decode at a time: no tuple per varint). */
let at = 0;

/** A zig-zag varint (or varlong up to 2^53). Up to 4 bytes (28 bits) in integer arithmetic: the lengths, deltas and sizes of records. */
function varint(b: Uint8Array): number {
  let byte = b[at++];
  if (byte < 0x80) return (byte >>> 1) ^ -(byte & 1);
  let z = byte & 0x7f;
  byte = b[at++];
  z |= (byte & 0x7f) << 7;
  if (byte < 0x80) return (z >>> 1) ^ -(z & 1);
  byte = b[at++];
  z |= (byte & 0x7f) << 14;
  if (byte < 0x80) return (z >>> 1) ^ -(z & 1);
  byte = b[at++];
  z |= (byte & 0x7f) << 21;
  if (byte < 0x80) return (z >>> 1) ^ -(z & 1);
  let scale = 2 ** 28;
  do {
    byte = b[at++];
    z += (byte & 0x7f) * scale;
    scale *= 128;
  } while (byte >= 0x80 && scale < 2 ** 63);
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
}

/** Where a batch is, for errors (a function, not a closure a batch). */
function whereIs(p: PartitionFetch, baseOffset: number): string {
  return `topic ${p.topic} partition ${p.partition} offset ${baseOffset}`;
}

function int64(b: Buffer, pos: number): number {
  return b.readInt32BE(pos) * 4294967296 + b.readUInt32BE(pos + 4);
}

/**
 * Reads the record batches in buf[from, to) of one partition, appending its records to `out`.
 * Throws KafkaCorruptRecordError (naming topic, partition and offset) for a batch that does not
 * check; the records read before it are in `out`, and the returned position is not given then.
 */
export function readRecordBatches(buf: Buffer, from: number, to: number, p: PartitionFetch, out: FetchedRecord[], crc: Crc32c, inflate: Inflate): PartitionRead {
  let next = p.fetchOffset;
  let bytes = 0;
  let pos = from;
  // read_committed: producers whose open transaction (listed as aborted) began at or before the batch.
  let abortedProducers: Set<number> | null = null;
  let abortedAt = 0;
  const aborted = p.readCommitted && p.aborted && p.aborted.length > 0 ? [...p.aborted].sort((a, c) => a.firstOffset - c.firstOffset) : null;
  while (to - pos >= 12) {
    const batchLength = buf.readInt32BE(pos + 8);
    const end = pos + 12 + batchLength;
    // The last batch cut short: read with the next fetch.
    if (end > to || to - pos < BATCH_HEADER) break;
    const baseOffset = int64(buf, pos);
    const magic = buf[pos + 16];
    if (magic !== 2) throw new KafkaCorruptRecordError(`a record batch of magic ${magic} at ${whereIs(p, baseOffset)}: only magic 2 (Kafka 0.11 on) is read; the topic holds records of a message format older than Kafka 0.11`);
    if (batchLength < BATCH_HEADER - 12) throw new KafkaCorruptRecordError(`a record batch of ${batchLength} bytes at ${whereIs(p, baseOffset)}: shorter than its header`);
    const expected = buf.readUInt32BE(pos + 17);
    const actual = crc(buf, pos + CRC_FROM, end);
    if (actual !== expected) throw new KafkaCorruptRecordError(`a corrupt record batch at ${whereIs(p, baseOffset)}: CRC32C ${actual} where the batch says ${expected}`);
    const attributes = buf.readInt16BE(pos + 21);
    const lastOffset = baseOffset + buf.readInt32BE(pos + 23);
    const producerId = int64(buf, pos + 43);
    const count = buf.readInt32BE(pos + 57);
    const start = pos;
    const recordsAt = pos + BATCH_HEADER;
    pos = end;
    if (lastOffset >= next) next = lastOffset + 1;
    if (lastOffset < p.fetchOffset) continue;
    if (p.readCommitted && producerId >= 0) {
      if (aborted) {
        while (abortedAt < aborted.length && aborted[abortedAt].firstOffset <= lastOffset) (abortedProducers ??= new Set()).add(aborted[abortedAt++].producerId);
      }
      if (attributes & CONTROL) {
        // An ABORT marker (control record key: version i16, type i16 = 0) closes the producer's aborted transaction.
        if (abortedProducers && count > 0 && isAbortMarker(buf, recordsAt, end)) abortedProducers.delete(producerId);
        continue;
      }
      if (attributes & TRANSACTIONAL && abortedProducers?.has(producerId)) continue;
    }
    if (attributes & CONTROL) continue;
    const codec = attributes & COMPRESSION;
    let records = buf;
    let rFrom = recordsAt;
    let rTo = end;
    if (codec !== 0) {
      try {
        records = inflate(codec, buf.subarray(recordsAt, end));
      } catch (err) {
        throw new KafkaCorruptRecordError(`a compressed record batch (codec ${codec}) at ${whereIs(p, baseOffset)} could not be inflated: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      rFrom = 0;
      rTo = records.length;
    }
    const logAppend = (attributes & LOG_APPEND_TIME) !== 0;
    // LogAppendTime: the broker's time, in maxTimestamp, is every record's.
    const baseTimestamp = int64(buf, start + (logAppend ? 35 : 27));
    const origin = new BatchOrigin(p.topic, p.partition, buf.readInt32BE(start + 12), records, baseOffset);
    bytes += readRecords(origin, rFrom, rTo, count, baseTimestamp, logAppend, p.fetchOffset, out);
  }
  return { next, bytes };
}

/** Whether the control batch's first record is an ABORT marker. */
function isAbortMarker(buf: Buffer, from: number, end: number): boolean {
  at = from;
  varint(buf); // length
  at++; // attributes
  varint(buf); // timestamp delta
  varint(buf); // offset delta
  const keyLength = varint(buf);
  return keyLength >= 4 && at + 4 <= end && buf.readInt16BE(at + 2) === 0;
}

function readRecords(origin: BatchOrigin, from: number, to: number, count: number, baseTimestamp: number, logAppend: boolean, fetchOffset: number, out: FetchedRecord[]): number {
  const b = origin.bytes;
  const baseOffset = origin.baseOffset;
  let bytes = 0;
  at = from;
  for (let i = 0; i < count; i++) {
    const length = varint(b);
    const end = at + length;
    if (length < 0 || end > to) throw new KafkaCorruptRecordError(`record ${i} of the batch at ${origin.where()} runs past its batch (${length} bytes)`);
    at++; // attributes: unused
    const timestampDelta = varint(b);
    const offset = baseOffset + varint(b);
    let key: Buffer | null = null;
    const keyLength = varint(b);
    if (keyLength >= 0) key = b.subarray(at, (at += keyLength));
    let valueLength = varint(b);
    const valueAt = at;
    if (valueLength > 0) at += valueLength;
    else valueLength = 0;
    const headerCount = varint(b);
    let headers: [Buffer, Buffer][] | null = null;
    if (headerCount > 0) {
      headers = new Array(headerCount);
      for (let h = 0; h < headerCount; h++) {
        const kl = varint(b);
        const k = kl > 0 ? b.subarray(at, (at += kl)) : EMPTY;
        const vl = varint(b);
        const v = vl > 0 ? b.subarray(at, (at += vl)) : EMPTY;
        headers[h] = [k, v];
      }
    }
    if (at !== end) throw new KafkaCorruptRecordError(`record ${i} of the batch at ${origin.where()} (offset ${offset}) is ${length} bytes long but its fields take ${at - end + length}`);
    // A batch is sent whole: its records before the offset fetched were read already.
    if (offset < fetchOffset) continue;
    bytes += valueLength + (key === null ? 0 : key.length);
    out.push(new FetchedRecord(origin, offset, logAppend ? baseTimestamp : baseTimestamp + timestampDelta, key, valueAt, valueLength, headers));
  }
  return bytes;
}
