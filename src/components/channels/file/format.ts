/**
 * The file channel's on-disk record format (ours, not Flume's Java format).
 *
 * A data directory holds append-only segment files named `log-<id>` (id: decimal, ever growing
 * across all data directories). All numbers are little-endian.
 *
 *   segment header (16 bytes): "FLTSSEG1" (8 ASCII bytes), u32 segment id, u32 format version (1)
 *
 * followed by records, each:
 *
 *   offset 0   u32  payload length L
 *   offset 4   u32  ~L (bitwise complement: a damaged length is told apart from a torn write)
 *   offset 8   u32  crc32 of bytes [12, 24 + L)  (type, padding, txid and payload)
 *   offset 12  u8   type: 1 PUT, 2 TAKE, 3 POSITION, 4 COMMIT (5 ROLLBACK is reserved: nothing
 *                   is written before a commit, so a rollback never needs a record)
 *   offset 13  3 bytes zero
 *   offset 16  f64  transaction id (unique and increasing within the channel)
 *   offset 24  payload (L bytes)
 *
 * Payloads:
 *   PUT       f64 first event sequence number, u32 event count, then per event (its sequence
 *             number is first + index): u32 event length E (bytes after the next field),
 *             u32 crc32 of those E bytes (so a take checks the one event it reads),
 *             u16 header count, per header: u16 key length, key (UTF-8), u32 value length,
 *             value (UTF-8); then u32 body length, body.
 *   TAKE      u32 range count, per range: f64 first sequence number, u32 count.
 *   POSITION  u32 count, per entry: u16 source length, source (UTF-8), u32 position length,
 *             position (UTF-8).
 *   COMMIT    u32 put count, u32 take count.
 *
 * A transaction is written at commit as one contiguous write: [PUT] [TAKE] [POSITION] COMMIT,
 * all with the same txid. Replay applies a transaction only when its COMMIT record is read, so
 * a write torn by a crash leaves no partial transaction behind. An event's location is
 * (segment id, file offset of its u32 event length).
 *
 * Recovery (replay.ts): a bad record (length check, checksum or type) in the newest segment
 * with no valid record after it (checksum matching, transaction id not older than the records
 * before it) is a torn write: after a power loss the unsynced tail may hold zeros or stale
 * non-zero blocks. It is cut off (back to the end of its last COMMIT) with a warning naming the
 * file, offset and bytes dropped. Any other bad record stops the channel with an error naming
 * the file and offset. A
 * segment is deleted once it holds no pending event and lies wholly before the newest
 * checkpoint's log position (checkpoint.ts), so replay never needs it again.
 */
import { crc32 } from "../../../io/crc32.ts";
import { ChannelException } from "../../../core/errors.ts";
import { bodyEvent, bodyLength, copyBody, readHeaders, type Event } from "../../../core/event.ts";

export const SEGMENT_MAGIC = "FLTSSEG1";
export const SEGMENT_VERSION = 1;
export const SEGMENT_HEADER_SIZE = 16;
export const RECORD_HEADER_SIZE = 24;
/** Larger claimed lengths are treated as damage, not as data. */
export const MAX_RECORD_PAYLOAD = 1024 * 1024 * 1024;

export const RecordType = {
  PUT: 1,
  TAKE: 2,
  POSITION: 3,
  COMMIT: 4,
  ROLLBACK: 5,
} as const;
export type RecordTypeCode = (typeof RecordType)[keyof typeof RecordType];

export const RECORD_TYPE_NAMES: Record<number, string> = { 1: "PUT", 2: "TAKE", 3: "POSITION", 4: "COMMIT", 5: "ROLLBACK" };

export function segmentFileName(id: number): string {
  return `log-${id}`;
}

/** Parses `log-<id>`; null for other files. */
export function parseSegmentFileName(name: string): number | null {
  const m = /^log-(\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
}

export function encodeSegmentHeader(id: number): Buffer {
  const b = Buffer.alloc(SEGMENT_HEADER_SIZE);
  b.write(SEGMENT_MAGIC, 0, "latin1");
  b.writeUInt32LE(id, 8);
  b.writeUInt32LE(SEGMENT_VERSION, 12);
  return b;
}

/** Returns the id stored in a segment header, or an error message. */
export function decodeSegmentHeader(b: Buffer): { id: number } | { error: string } {
  if (b.length < SEGMENT_HEADER_SIZE) return { error: `header is ${b.length} bytes, expected ${SEGMENT_HEADER_SIZE}` };
  if (b.toString("latin1", 0, 8) !== SEGMENT_MAGIC) return { error: "not a Flume TS file channel segment (bad magic)" };
  const version = b.readUInt32LE(12);
  if (version !== SEGMENT_VERSION) return { error: `unsupported segment format version ${version}` };
  return { id: b.readUInt32LE(8) };
}

/** Everything one committing transaction writes, encoded once on the caller's turn. */
export interface EncodedTransaction {
  bytes: Buffer;
  /** Offset of each put event inside `bytes` (add the write's file offset for its location). */
  eventOffsets: Uint32Array;
}

export interface TakeRange {
  first: number;
  count: number;
}

function writeHeader(buf: Buffer, at: number, type: RecordTypeCode, txid: number, payloadLength: number): void {
  buf.writeUInt32LE(payloadLength, at);
  buf.writeUInt32LE(~payloadLength >>> 0, at + 4);
  buf.writeUInt32LE(0, at + 12);
  buf[at + 12] = type;
  buf.writeDoubleLE(txid, at + 16);
}

function sealRecord(buf: Buffer, at: number, payloadLength: number): void {
  buf.writeUInt32LE(crc32(buf, at + 12, at + RECORD_HEADER_SIZE + payloadLength), at + 8);
}

/** Bytes before an event's header count: its length and its checksum. */
export const EVENT_PREFIX = 8;

function eventSize(e: Event): number {
  let size = 2 + 4 + bodyLength(e);
  let count = 0;
  const headers = readHeaders(e);
  for (const key in headers) {
    const kLen = Buffer.byteLength(key);
    if (kLen > 0xffff) throw new ChannelException(`an event header name is ${kLen} bytes long; the file channel stores names up to 65535 bytes`);
    size += 2 + kLen + 4 + Buffer.byteLength(headers[key]);
    count++;
  }
  if (count > 0xffff) throw new ChannelException(`an event has ${count} headers; the file channel stores up to 65535 per event`);
  return size;
}

/** Groups sequence numbers into runs of consecutive numbers (takes are mostly contiguous). */
export function toRanges(seqs: ArrayLike<number>, count: number): TakeRange[] {
  const ranges: TakeRange[] = [];
  let i = 0;
  while (i < count) {
    const first = seqs[i];
    let n = 1;
    while (i + n < count && seqs[i + n] === first + n) n++;
    ranges.push({ first, count: n });
    i += n;
  }
  return ranges;
}

/** Encodes one transaction as PUT/TAKE/POSITION records followed by its COMMIT record. */
export function encodeTransaction(
  txid: number,
  firstSeq: number,
  puts: readonly Event[],
  takes: readonly TakeRange[],
  takeCount: number,
  positions: ReadonlyMap<string, string> | null,
  alloc: (size: number) => Buffer = Buffer.allocUnsafe,
): EncodedTransaction {
  let total = RECORD_HEADER_SIZE + 8; // COMMIT
  let putPayload = 0;
  if (puts.length > 0) {
    putPayload = 12;
    for (let i = 0; i < puts.length; i++) putPayload += EVENT_PREFIX + eventSize(puts[i]);
    total += RECORD_HEADER_SIZE + putPayload;
  }
  const takePayload = takes.length > 0 ? 4 + takes.length * 12 : 0;
  if (takePayload > 0) total += RECORD_HEADER_SIZE + takePayload;
  let posPayload = 0;
  if (positions && positions.size > 0) {
    posPayload = 4 + positionEntriesSize(positions);
    total += RECORD_HEADER_SIZE + posPayload;
  }
  if (putPayload > MAX_RECORD_PAYLOAD || posPayload > MAX_RECORD_PAYLOAD) {
    throw new ChannelException(`a transaction of ${total} bytes is larger than the file channel's limit of ${MAX_RECORD_PAYLOAD} bytes; use smaller batches`);
  }

  const buf = alloc(total);
  const eventOffsets = new Uint32Array(puts.length);
  let at = 0;
  if (puts.length > 0) {
    writeHeader(buf, at, RecordType.PUT, txid, putPayload);
    let p = at + RECORD_HEADER_SIZE;
    buf.writeDoubleLE(firstSeq, p);
    buf.writeUInt32LE(puts.length, p + 8);
    p += 12;
    for (let i = 0; i < puts.length; i++) {
      const e = puts[i];
      eventOffsets[i] = p;
      const start = p;
      p += EVENT_PREFIX;
      let headerCount = 0;
      const countAt = p;
      p += 2;
      const headers = readHeaders(e);
      for (const key in headers) {
        headerCount++;
        const kLen = buf.write(key, p + 2, "utf8");
        buf.writeUInt16LE(kLen, p);
        p += 2 + kLen;
        const vLen = buf.write(headers[key], p + 4, "utf8");
        buf.writeUInt32LE(vLen, p);
        p += 4 + vLen;
      }
      buf.writeUInt16LE(headerCount, countAt);
      // A line's body is copied from its read without a view of it made (a view per event was a fifth of this channel's CPU).
      const bodyLen = bodyLength(e);
      buf.writeUInt32LE(bodyLen, p);
      p += 4;
      copyBody(e, buf, p);
      p += bodyLen;
      buf.writeUInt32LE(p - start - EVENT_PREFIX, start);
      buf.writeUInt32LE(crc32(buf, start + EVENT_PREFIX, p), start + 4);
    }
    sealRecord(buf, at, putPayload);
    at = p;
  }
  if (takePayload > 0) {
    writeHeader(buf, at, RecordType.TAKE, txid, takePayload);
    let p = at + RECORD_HEADER_SIZE;
    buf.writeUInt32LE(takes.length, p);
    p += 4;
    for (const r of takes) {
      buf.writeDoubleLE(r.first, p);
      buf.writeUInt32LE(r.count, p + 8);
      p += 12;
    }
    sealRecord(buf, at, takePayload);
    at = p;
  }
  if (posPayload > 0 && positions) {
    writeHeader(buf, at, RecordType.POSITION, txid, posPayload);
    let p = at + RECORD_HEADER_SIZE;
    buf.writeUInt32LE(positions.size, p);
    p = writePositionEntries(buf, p + 4, positions);
    sealRecord(buf, at, posPayload);
    at = p;
  }
  writeHeader(buf, at, RecordType.COMMIT, txid, 8);
  buf.writeUInt32LE(puts.length, at + RECORD_HEADER_SIZE);
  buf.writeUInt32LE(takeCount, at + RECORD_HEADER_SIZE + 4);
  sealRecord(buf, at, 8);
  return { bytes: buf, eventOffsets };
}

/**
 * Decodes the event whose u32 length field is at `at` in `buf`. Returns null when the buffer
 * does not hold the whole event (the caller reads more), "corrupt" when its checksum fails.
 * The body is a copy, so `buf` can be reused.
 */
export function decodeEventAt(buf: Buffer, at: number, end: number): Event | null | "corrupt" {
  if (at + EVENT_PREFIX > end) return null;
  const len = buf.readUInt32LE(at);
  const stop = at + EVENT_PREFIX + len;
  if (stop > end) return null;
  if (crc32(buf, at + EVENT_PREFIX, stop) !== buf.readUInt32LE(at + 4)) return "corrupt";
  let p = at + EVENT_PREFIX;
  const headerCount = buf.readUInt16LE(p);
  p += 2;
  // No headers: an event of bodyEvent, which makes its empty headers object only if read.
  let headers: Record<string, string> | null = null;
  if (headerCount > 0) {
    headers = {};
    for (let i = 0; i < headerCount; i++) {
      const kLen = buf.readUInt16LE(p);
      const key = buf.toString("utf8", p + 2, p + 2 + kLen);
      p += 2 + kLen;
      const vLen = buf.readUInt32LE(p);
      headers[key] = buf.toString("utf8", p + 4, p + 4 + vLen);
      p += 4 + vLen;
    }
  }
  const bodyLen = buf.readUInt32LE(p);
  const body = new Uint8Array(bodyLen);
  // A short body is copied by hand: a subarray for set() costs more than the copy.
  if (bodyLen <= 128) for (let i = 0, q = p + 4; i < bodyLen; i++, q++) body[i] = buf[q];
  else body.set(buf.subarray(p + 4, p + 4 + bodyLen));
  return headers === null ? bodyEvent(body) : { headers, body };
}

/** The total bytes an event occupies at its location. */
export function eventLengthAt(buf: Buffer, at: number): number {
  return EVENT_PREFIX + buf.readUInt32LE(at);
}

export function decodeTakeRanges(payload: Buffer): TakeRange[] {
  const n = payload.readUInt32LE(0);
  const out: TakeRange[] = new Array(n);
  for (let i = 0, p = 4; i < n; i++, p += 12) out[i] = { first: payload.readDoubleLE(p), count: payload.readUInt32LE(p + 8) };
  return out;
}

export function decodePositions(payload: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  readPositionEntries(payload, 4, payload.readUInt32LE(0), out);
  return out;
}

/*
 * Source positions as a POSITION record and a checkpoint both store them: per entry u16 source
 * length, source, u32 position length, position (UTF-8, little-endian).
 */

/** Bytes the entries of `positions` take. */
export function positionEntriesSize(positions: ReadonlyMap<string, string>): number {
  let size = 0;
  for (const [k, v] of positions) size += 2 + Buffer.byteLength(k) + 4 + Buffer.byteLength(v);
  return size;
}

/** Writes the entries of `positions` at `p`; returns the offset after them. */
export function writePositionEntries(buf: Buffer, p: number, positions: ReadonlyMap<string, string>): number {
  for (const [k, v] of positions) {
    const kLen = buf.write(k, p + 2, "utf8");
    buf.writeUInt16LE(kLen, p);
    p += 2 + kLen;
    const vLen = buf.write(v, p + 4, "utf8");
    buf.writeUInt32LE(vLen, p);
    p += 4 + vLen;
  }
  return p;
}

/** Reads `count` entries at `p` into `out`; returns the offset after them. */
export function readPositionEntries(buf: Buffer, p: number, count: number, out: Map<string, string>): number {
  for (let i = 0; i < count; i++) {
    const kLen = buf.readUInt16LE(p);
    const k = buf.toString("utf8", p + 2, p + 2 + kLen);
    p += 2 + kLen;
    const vLen = buf.readUInt32LE(p);
    out.set(k, buf.toString("utf8", p + 4, p + 4 + vLen));
    p += 4 + vLen;
  }
  return p;
}

/** Header of a PUT payload: first sequence number and event count. */
export function decodePutHeader(payload: Buffer): { firstSeq: number; count: number } {
  return { firstSeq: payload.readDoubleLE(0), count: payload.readUInt32LE(8) };
}

export function checksumOf(buf: Buffer, recordStart: number, payloadLength: number): number {
  return crc32(buf, recordStart + 12, recordStart + RECORD_HEADER_SIZE + payloadLength);
}
