/**
 * Flume 1.11's file channel messages (flume-file-channel/src/main/proto/filechannel.proto),
 * decoded from the protobuf wire format. Field numbers and types, as declared there:
 *
 *   Checkpoint       1 version sfixed32, 2 writeOrderID sfixed64, 3 queueSize sfixed32,
 *                    4 queueHead sfixed32, 5 activeLogs ActiveLog (repeated)
 *   ActiveLog        1 logFileID sfixed32, 2 count sfixed32
 *   LogFileMetaData  1 version sfixed32, 2 logFileID sfixed32, 3 checkpointPosition sfixed64,
 *                    4 checkpointWriteOrderID sfixed64, 5 encryption LogFileEncryption (optional),
 *                    6 backupCheckpointPosition sfixed64 (optional), 7 backupCheckpointWriteOrderID
 *                    sfixed64 (optional)
 *   TransactionEventHeader  1 type sfixed32, 2 transactionID sfixed64, 3 writeOrderID sfixed64
 *   Put              1 event FlumeEvent, 2 checksum sfixed64 (optional: CRC32 of the body)
 *   FlumeEvent       1 headers FlumeEventHeader (repeated), 2 body bytes
 *   FlumeEventHeader 1 key string, 2 value string (optional)
 *   Take             1 fileID sfixed32, 2 offset sfixed32
 *   Commit           1 type sfixed32 (the record type the transaction committed: PUT or TAKE)
 *   Rollback, TransactionEventFooter: no fields
 *
 * Required fields that are missing make the message invalid, as in protobuf-java; unknown
 * fields are skipped.
 */
import { crc32 } from "node:zlib";
import { ProtoReader, ProtobufError, WireType, delimited } from "./protobuf.ts";

export interface ActiveLog {
  logFileID: number;
  count: number;
}

/** `checkpoint.meta`. */
export interface CheckpointMeta {
  version: number;
  writeOrderID: number;
  queueSize: number;
  queueHead: number;
  activeLogs: ActiveLog[];
}

/** `log-N.meta`. */
export interface LogFileMeta {
  version: number;
  logFileID: number;
  checkpointPosition: number;
  checkpointWriteOrderID: number;
  encrypted: boolean;
  backupCheckpointPosition: number;
  backupCheckpointWriteOrderID: number;
}

export interface TransactionEventHeader {
  type: number;
  transactionID: number;
  writeOrderID: number;
}

export interface FlumeEventData {
  headers: Record<string, string>;
  body: Uint8Array;
}

/** A field of fixed width: its name, type and whether the message needs it. */
interface FixedField<K extends string> {
  name: K;
  type: "sfixed32" | "sfixed64";
  required: boolean;
}

/**
 * Decodes a message whose fields are fixed-width numbers, declared by `fields` (absent ones
 * read 0). Other fields go to `other`, which returns false for those it does not know
 * (skipped, as proto2 readers skip unknown fields).
 */
function decodeFixed<K extends string>(
  buf: Buffer,
  start: number,
  end: number,
  message: string,
  fields: Record<number, FixedField<K>>,
  other: (field: number, wire: number, r: ProtoReader) => boolean = () => false,
): Record<K, number> {
  const r = new ProtoReader(buf, start, end);
  const out = {} as Record<K, number>;
  for (const f of Object.values<FixedField<K>>(fields)) out[f.name] = 0;
  const seen = new Set<number>();
  while (!r.done()) {
    const { field, wire } = r.tag();
    const spec = fields[field];
    if (spec) {
      r.expect(wire, spec.type === "sfixed32" ? WireType.FIXED32 : WireType.FIXED64, spec.name);
      out[spec.name] = spec.type === "sfixed32" ? r.fixed32() : r.fixed64();
      seen.add(field);
    } else if (!other(field, wire, r)) r.skip(wire);
  }
  const missing = Object.entries<FixedField<K>>(fields)
    .filter(([n, f]) => f.required && !seen.has(Number(n)))
    .map(([, f]) => f.name);
  if (missing.length > 0) throw new ProtobufError(`${message} lacks its required field${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
  return out;
}

const i32 = <K extends string>(name: K, required = true): FixedField<K> => ({ name, type: "sfixed32", required });
const i64 = <K extends string>(name: K, required = true): FixedField<K> => ({ name, type: "sfixed64", required });

/** Decodes a whole `checkpoint.meta` file (one delimited Checkpoint message). */
export function decodeCheckpointMeta(file: Buffer): CheckpointMeta {
  const m = delimited(file, 0, file.length);
  const activeLogs: ActiveLog[] = [];
  const fields = { 1: i32("version"), 2: i64("writeOrderID"), 3: i32("queueSize"), 4: i32("queueHead") };
  const out = decodeFixed(file, m.start, m.end, "Checkpoint", fields, (field, wire, r) => {
    if (field !== 5) return false;
    r.expect(wire, WireType.BYTES, "activeLogs");
    const { start, end } = r.bytesRange();
    activeLogs.push(decodeFixed(file, start, end, "ActiveLog", { 1: i32("logFileID"), 2: i32("count") }));
    return true;
  });
  return { ...out, activeLogs };
}

/** Decodes a whole `log-N.meta` file (one delimited LogFileMetaData message). */
export function decodeLogFileMeta(file: Buffer): LogFileMeta {
  const m = delimited(file, 0, file.length);
  let encrypted = false;
  const fields = {
    1: i32("version"),
    2: i32("logFileID"),
    3: i64("checkpointPosition"),
    4: i64("checkpointWriteOrderID"),
    6: i64("backupCheckpointPosition", false),
    7: i64("backupCheckpointWriteOrderID", false),
  };
  const out = decodeFixed(file, m.start, m.end, "LogFileMetaData", fields, (field, wire, r) => {
    if (field !== 5) return false;
    r.expect(wire, WireType.BYTES, "encryption");
    r.bytesRange();
    encrypted = true;
    return true;
  });
  return { ...out, encrypted };
}

export function decodeTransactionEventHeader(buf: Buffer, start: number, end: number): TransactionEventHeader {
  return decodeFixed(buf, start, end, "TransactionEventHeader", { 1: i32("type"), 2: i64("transactionID"), 3: i64("writeOrderID") });
}

/** Sets a header as Java's HashMap.put would (a repeated key: the last value wins). */
function setHeader(headers: Record<string, string>, key: string, value: string): void {
  if (key === "__proto__") Object.defineProperty(headers, key, { value, enumerable: true, writable: true, configurable: true });
  else headers[key] = value;
}

/** A FlumeEventHeader into headers; with headers null only its framing and key are checked. */
function decodeEventHeader(buf: Buffer, start: number, end: number, headers: Record<string, string> | null): void {
  const r = new ProtoReader(buf, start, end);
  let key: string | null = null;
  let value = "";
  while (!r.done()) {
    const { field, wire } = r.tag();
    if (field !== 1 && field !== 2) {
      r.skip(wire);
      continue;
    }
    r.expect(wire, WireType.BYTES, field === 1 ? "key" : "value");
    if (headers === null) {
      r.bytesRange();
      if (field === 1) key = "";
    } else if (field === 1) key = r.string();
    else value = r.string();
  }
  if (key === null) throw new ProtobufError("FlumeEventHeader lacks its required field key");
  if (headers !== null) setHeader(headers, key, value);
}

/**
 * A Put's FlumeEvent, checked against the Put's CRC32 checksum when it has one (Flume 1.11
 * always writes it). With `withEvent` false only the structure and the checksum are checked
 * and nothing is copied (replay needs only where the event is).
 */
export function decodePut(buf: Buffer, start: number, end: number, withEvent: boolean): FlumeEventData | null {
  const r = new ProtoReader(buf, start, end);
  let event: { start: number; end: number } | null = null;
  let checksum: number | null = null;
  while (!r.done()) {
    const { field, wire } = r.tag();
    if (field === 1) {
      r.expect(wire, WireType.BYTES, "event");
      event = r.bytesRange();
    } else if (field === 2) {
      r.expect(wire, WireType.FIXED64, "checksum");
      checksum = r.fixed64();
    } else r.skip(wire);
  }
  if (event === null) throw new ProtobufError("Put lacks its required field event");
  const headers: Record<string, string> | null = withEvent ? {} : null;
  let body: { start: number; end: number } | null = null;
  const e = new ProtoReader(buf, event.start, event.end);
  while (!e.done()) {
    const { field, wire } = e.tag();
    if (field === 1) {
      e.expect(wire, WireType.BYTES, "headers");
      const h = e.bytesRange();
      decodeEventHeader(buf, h.start, h.end, headers);
    } else if (field === 2) {
      e.expect(wire, WireType.BYTES, "body");
      body = e.bytesRange();
    } else e.skip(wire);
  }
  if (body === null) throw new ProtobufError("FlumeEvent lacks its required field body");
  if (checksum !== null) {
    const actual = crc32(buf.subarray(body.start, body.end));
    if (actual !== checksum) throw new ProtobufError(`the event body's CRC32 is ${actual} but the record says ${checksum}`);
  }
  if (!withEvent || headers === null) return null;
  const copy = new Uint8Array(body.end - body.start);
  copy.set(buf.subarray(body.start, body.end));
  return { headers, body: copy };
}

export function decodeTake(buf: Buffer, start: number, end: number): { fileID: number; offset: number } {
  return decodeFixed(buf, start, end, "Take", { 1: i32("fileID"), 2: i32("offset") });
}

/** Commit's type: the record type (PUT or TAKE) its transaction committed. */
export function decodeCommit(buf: Buffer, start: number, end: number): number {
  return decodeFixed(buf, start, end, "Commit", { 1: i32("type") }).type;
}

/** Rollback and TransactionEventFooter have no fields: only their framing is checked. */
export function decodeEmpty(buf: Buffer, start: number, end: number): void {
  const r = new ProtoReader(buf, start, end);
  while (!r.done()) r.skip(r.tag().wire);
}
