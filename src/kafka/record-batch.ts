/**
 * Kafka's RecordBatch v2 (magic 2) and the Produce request body, written by hand for the
 * producer's hot path. The client library builds each record in a growable writer of its own
 * and concatenates them (measured: a quarter of the Kafka sink's CPU at 1000 records a batch,
 * most of its garbage); here a partition's records are sized first and written into one buffer,
 * the CRC32C over it at the end. Only uncompressed, non-transactional batches (what the sink and
 * the channel send unless compression.type is set): anything else stays the library's.
 *
 * Batch: baseOffset i64, batchLength i32, partitionLeaderEpoch i32, magic i8, crc u32 (CRC32C of
 * what follows), attributes i16, lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64,
 * producerId i64, producerEpoch i16, baseSequence i32, count i32, then each record: length
 * varint, attributes i8, timestampDelta varlong, offsetDelta varint, key (varint length, -1 for
 * none), value, headers (varint count, each key and value with varint lengths).
 */
import type { Event } from "../core/event.ts";
import { crc32c as ourCrc32c } from "../io/crc32c.ts";
import { writeFlumeEvent } from "./flume-event.ts";
// Kafka's varints are Avro's zig-zag longs.
import { longSize, writeLongAt } from "../rpc/binary.ts";

/** A record as the library's Producer hands it to the Produce API (after its serializers and partitioner). */
export interface ProduceMessage {
  topic: string;
  partition?: number;
  key?: Buffer | null;
  value?: Uint8Array | null;
  headers?: Map<Buffer, Buffer> | null;
  timestamp?: bigint | number;
  /**
   * In place of value: this event as an AvroFlumeEvent (flume-event.ts), written straight into
   * the batch (no buffer of its own, no view per event); eventSize is its flumeEventSize.
   */
  flumeEvent?: Event;
  eventSize?: number;
}

export interface BatchProducer {
  producerId?: bigint;
  producerEpoch?: number;
  /** The idempotent producer's next sequence of each `topic:partition` (the library's NumericMap). */
  sequences?: { getWithDefault(key: string, fallback: number): number };
}

/**
 * CRC32C of a whole buffer: ours (src/io/crc32c.ts: the CPU's instruction where it has one,
 * else tables) unless given. Measured on a 125 kB batch in the compiled binary: our tables 1.4
 * GB/s, the client's WebAssembly one 1.4 GB/s (its native one, which only loads from the
 * sources, 3.4 GB/s); taking ours keeps the client's WebAssembly unloaded (src/kafka/wasm-codecs.ts).
 */
export type Crc32c = (bytes: Buffer) => number;

const crcOurs: Crc32c = (b) => ourCrc32c(b, 0, b.length);

const BATCH_HEADER = 61;
/** From baseOffset to the CRC: what the CRC does not cover. */
const CRC_FROM = 21;

function writeUvarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 128) {
    buf[pos++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

/** Below 2^30 in magnitude, a zig-zag varint fits in 31 bits: sized and written with 32-bit integer operations. */
const SMALL = 0x40000000;

/** Bytes a zig-zag varint of n takes (Kafka's varint). */
function varintSize(n: number): number {
  if (n < -SMALL || n >= SMALL) return longSize(n);
  const z = (n << 1) ^ (n >> 31);
  return z < 0x80 ? 1 : z < 0x4000 ? 2 : z < 0x200000 ? 3 : z < 0x10000000 ? 4 : 5;
}

/** Writes n as a zig-zag varint at pos; returns the position after it. */
function writeVarint(buf: Buffer, pos: number, n: number): number {
  if (n < -SMALL || n >= SMALL) return writeLongAt(buf, pos, n);
  let z = (n << 1) ^ (n >> 31);
  while (z >= 0x80) {
    buf[pos++] = (z & 0x7f) | 0x80;
    z >>>= 7;
  }
  buf[pos++] = z;
  return pos;
}

function bytesSize(b: Uint8Array | null | undefined): number {
  return b ? varintSize(b.length) + b.length : 1;
}

function writeBytes(buf: Buffer, pos: number, b: Uint8Array | null | undefined): number {
  if (!b) {
    buf[pos] = 1; // zigzag(-1)
    return pos + 1;
  }
  pos = writeVarint(buf, pos, b.length);
  buf.set(b, pos);
  return pos + b.length;
}

function timestampOf(m: ProduceMessage, now: number): number {
  return m.timestamp === undefined ? now : Number(m.timestamp);
}

/** The body size of each record (from attributes on), kept between the sizing and the writing pass. */
let sizes = new Int32Array(1024);

/** A record's value size: its FlumeEvent's, its bytes', or -1 for none. */
function valueSize(m: ProduceMessage): number {
  if (m.flumeEvent) return m.eventSize!;
  return m.value ? m.value.length : -1;
}

/**
 * One uncompressed RecordBatch v2 of `messages` (all of one topic-partition, in order). The
 * timestamp of a message without one is now.
 */
export function encodeRecordBatch(messages: readonly ProduceMessage[], producer: BatchProducer = {}, firstSequence = -1, now = Date.now(), crc: Crc32c = crcOurs): Buffer {
  const n = messages.length;
  if (sizes.length < n) sizes = new Int32Array(n * 2);
  const base = timestampOf(messages[0], now);
  let max = base;
  let total = BATCH_HEADER;
  for (let i = 0; i < n; i++) {
    const m = messages[i];
    const ts = timestampOf(m, now);
    if (ts > max) max = ts;
    const v = valueSize(m);
    let size = 1 + varintSize(ts - base) + varintSize(i) + bytesSize(m.key) + (v < 0 ? 1 : varintSize(v) + v);
    const headers = m.headers;
    if (headers && headers.size > 0) {
      size += varintSize(headers.size);
      for (const [k, v] of headers) size += bytesSize(k) + bytesSize(v);
    } else size += 1;
    sizes[i] = size;
    total += varintSize(size) + size;
  }
  const buf = Buffer.allocUnsafe(total);
  buf.writeBigInt64BE(0n, 0);
  buf.writeInt32BE(total - 12, 8);
  buf.writeInt32BE(-1, 12); // partitionLeaderEpoch: the broker sets it
  buf[16] = 2; // magic
  buf.writeInt16BE(0, 21); // attributes: no compression, create time, not transactional
  buf.writeInt32BE(n - 1, 23);
  buf.writeBigInt64BE(BigInt(base), 27);
  buf.writeBigInt64BE(BigInt(max), 35);
  buf.writeBigInt64BE(producer.producerId ?? -1n, 43);
  buf.writeInt16BE(producer.producerEpoch ?? -1, 51);
  buf.writeInt32BE(firstSequence, 53);
  buf.writeInt32BE(n, 57);
  let pos = BATCH_HEADER;
  for (let i = 0; i < n; i++) {
    const m = messages[i];
    pos = writeVarint(buf, pos, sizes[i]);
    buf[pos++] = 0;
    pos = writeVarint(buf, pos, timestampOf(m, now) - base);
    pos = writeVarint(buf, pos, i);
    pos = writeBytes(buf, pos, m.key);
    if (m.flumeEvent) {
      pos = writeVarint(buf, pos, m.eventSize!);
      const end = writeFlumeEvent(buf, pos, m.flumeEvent);
      if (end !== pos + m.eventSize!) throw new Error(`an AvroFlumeEvent of ${end - pos} bytes where ${m.eventSize} were sized`);
      pos = end;
    } else pos = writeBytes(buf, pos, m.value);
    const headers = m.headers;
    if (headers && headers.size > 0) {
      pos = writeVarint(buf, pos, headers.size);
      for (const [k, v] of headers) {
        pos = writeBytes(buf, pos, k);
        pos = writeBytes(buf, pos, v);
      }
    } else buf[pos++] = 0;
  }
  buf.writeUInt32BE(crc(buf.subarray(CRC_FROM)), 17);
  return buf;
}

/** Messages grouped by topic, then partition, each group in its order. */
function groupByTopicPartition(messages: readonly ProduceMessage[]): Map<string, Map<number, readonly ProduceMessage[]>> {
  if (onePartition(messages)) return new Map([[messages[0].topic, new Map([[messages[0].partition ?? 0, messages]])]]);
  const topics = new Map<string, Map<number, ProduceMessage[]>>();
  for (const m of messages) {
    let partitions = topics.get(m.topic);
    if (!partitions) topics.set(m.topic, (partitions = new Map()));
    const p = m.partition ?? 0;
    const list = partitions.get(p);
    if (list) list.push(m);
    else partitions.set(p, [m]);
  }
  return topics;
}

/** Whether every message goes to the first one's topic-partition (a sink's usual batch): then they need no copy into groups. */
function onePartition(messages: readonly ProduceMessage[]): boolean {
  if (messages.length === 0) return false;
  const { topic, partition = 0 } = messages[0];
  for (let i = 1; i < messages.length; i++) {
    const m = messages[i];
    if (m.topic !== topic || (m.partition ?? 0) !== partition) return false;
  }
  return true;
}

/**
 * The body of a Produce request (versions 3 to 11; from 9 on in the flexible encoding):
 * transactional_id (null), acks, timeout_ms, then per topic its name and per partition its
 * index and one record batch. In pieces, which the connection copies once into the request.
 */
export function encodeProduceRequest(version: number, acks: number, timeoutMs: number, messages: readonly ProduceMessage[], producer: BatchProducer = {}, crc: Crc32c = crcOurs): Buffer[] {
  const flexible = version >= 9;
  const now = Date.now();
  const topics = groupByTopicPartition(messages);
  const parts: Buffer[] = [];
  const head = Buffer.allocUnsafe(16);
  let p = 0;
  if (flexible) head[p++] = 0;
  else p = head.writeInt16BE(-1, p);
  p = head.writeInt16BE(acks, p);
  p = head.writeInt32BE(timeoutMs, p);
  p = flexible ? writeUvarint(head, p, topics.size + 1) : head.writeInt32BE(topics.size, p);
  parts.push(head.subarray(0, p));
  for (const [topic, partitions] of topics) {
    const name = Buffer.from(topic, "utf8");
    const t = Buffer.allocUnsafe(name.length + 16);
    let q = flexible ? writeUvarint(t, 0, name.length + 1) : t.writeInt16BE(name.length, 0);
    t.set(name, q);
    q += name.length;
    q = flexible ? writeUvarint(t, q, partitions.size + 1) : t.writeInt32BE(partitions.size, q);
    parts.push(t.subarray(0, q));
    for (const [partition, list] of partitions) {
      const firstSequence = producer.sequences ? producer.sequences.getWithDefault(`${topic}:${partition}`, 0) : -1;
      const batch = encodeRecordBatch(list, producer, firstSequence, now, crc);
      const pp = Buffer.allocUnsafe(16);
      let r = pp.writeInt32BE(partition, 0);
      r = flexible ? writeUvarint(pp, r, batch.length + 1) : pp.writeInt32BE(batch.length, r);
      parts.push(pp.subarray(0, r), batch);
      if (flexible) parts.push(TAGS);
    }
    if (flexible) parts.push(TAGS);
  }
  if (flexible) parts.push(TAGS);
  return parts;
}

/** An empty tagged-field buffer (flexible versions). */
const TAGS = Buffer.from([0]);
