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

/** Throws naming the required fields of `message` that `seen` lacks. */
function requireFields(message: string, seen: Set<number>, required: Record<number, string>): void {
  const missing = Object.entries(required)
    .filter(([n]) => !seen.has(Number(n)))
    .map(([, name]) => name);
  if (missing.length > 0) throw new ProtobufError(`${message} lacks its required field${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
}

function decodeActiveLog(buf: Buffer, start: number, end: number): ActiveLog {
  const r = new ProtoReader(buf, start, end);
  const out: ActiveLog = { logFileID: 0, count: 0 };
  const seen = new Set<number>();
  while (!r.done()) {
    const { field, wire } = r.tag();
    if (field === 1 || field === 2) {
      r.expect(wire, WireType.FIXED32, field === 1 ? "logFileID" : "count");
      if (field === 1) out.logFileID = r.fixed32();
      else out.count = r.fixed32();
      seen.add(field);
    } else r.skip(wire);
  }
  requireFields("ActiveLog", seen, { 1: "logFileID", 2: "count" });
  return out;
}

/** Decodes a whole `checkpoint.meta` file (one delimited Checkpoint message). */
export function decodeCheckpointMeta(file: Buffer): CheckpointMeta {
  const m = delimited(file, 0, file.length);
  const r = new ProtoReader(file, m.start, m.end);
  const out: CheckpointMeta = { version: 0, writeOrderID: 0, queueSize: 0, queueHead: 0, activeLogs: [] };
  const seen = new Set<number>();
  while (!r.done()) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        r.expect(wire, WireType.FIXED32, "version");
        out.version = r.fixed32();
        break;
      case 2:
        r.expect(wire, WireType.FIXED64, "writeOrderID");
        out.writeOrderID = r.fixed64();
        break;
      case 3:
        r.expect(wire, WireType.FIXED32, "queueSize");
        out.queueSize = r.fixed32();
        break;
      case 4:
        r.expect(wire, WireType.FIXED32, "queueHead");
        out.queueHead = r.fixed32();
        break;
      case 5: {
        r.expect(wire, WireType.BYTES, "activeLogs");
        const { start, end } = r.bytesRange();
        out.activeLogs.push(decodeActiveLog(file, start, end));
        break;
      }
      default:
        r.skip(wire);
    }
    seen.add(field);
  }
  requireFields("Checkpoint", seen, { 1: "version", 2: "writeOrderID", 3: "queueSize", 4: "queueHead" });
  return out;
}

/** Decodes a whole `log-N.meta` file (one delimited LogFileMetaData message). */
export function decodeLogFileMeta(file: Buffer): LogFileMeta {
  const m = delimited(file, 0, file.length);
  const r = new ProtoReader(file, m.start, m.end);
  const out: LogFileMeta = {
    version: 0,
    logFileID: 0,
    checkpointPosition: 0,
    checkpointWriteOrderID: 0,
    encrypted: false,
    backupCheckpointPosition: 0,
    backupCheckpointWriteOrderID: 0,
  };
  const seen = new Set<number>();
  while (!r.done()) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        r.expect(wire, WireType.FIXED32, "version");
        out.version = r.fixed32();
        break;
      case 2:
        r.expect(wire, WireType.FIXED32, "logFileID");
        out.logFileID = r.fixed32();
        break;
      case 3:
        r.expect(wire, WireType.FIXED64, "checkpointPosition");
        out.checkpointPosition = r.fixed64();
        break;
      case 4:
        r.expect(wire, WireType.FIXED64, "checkpointWriteOrderID");
        out.checkpointWriteOrderID = r.fixed64();
        break;
      case 5:
        r.expect(wire, WireType.BYTES, "encryption");
        r.bytesRange();
        out.encrypted = true;
        break;
      case 6:
        r.expect(wire, WireType.FIXED64, "backupCheckpointPosition");
        out.backupCheckpointPosition = r.fixed64();
        break;
      case 7:
        r.expect(wire, WireType.FIXED64, "backupCheckpointWriteOrderID");
        out.backupCheckpointWriteOrderID = r.fixed64();
        break;
      default:
        r.skip(wire);
    }
    seen.add(field);
  }
  requireFields("LogFileMetaData", seen, { 1: "version", 2: "logFileID", 3: "checkpointPosition", 4: "checkpointWriteOrderID" });
  return out;
}

export function decodeTransactionEventHeader(buf: Buffer, start: number, end: number): TransactionEventHeader {
  const r = new ProtoReader(buf, start, end);
  const out: TransactionEventHeader = { type: 0, transactionID: 0, writeOrderID: 0 };
  const seen = new Set<number>();
  while (!r.done()) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        r.expect(wire, WireType.FIXED32, "type");
        out.type = r.fixed32();
        break;
      case 2:
        r.expect(wire, WireType.FIXED64, "transactionID");
        out.transactionID = r.fixed64();
        break;
      case 3:
        r.expect(wire, WireType.FIXED64, "writeOrderID");
        out.writeOrderID = r.fixed64();
        break;
      default:
        r.skip(wire);
    }
    seen.add(field);
  }
  requireFields("TransactionEventHeader", seen, { 1: "type", 2: "transactionID", 3: "writeOrderID" });
  return out;
}

/** Sets a header as Java's HashMap.put would (a repeated key: the last value wins). */
function setHeader(headers: Record<string, string>, key: string, value: string): void {
  if (key === "__proto__") Object.defineProperty(headers, key, { value, enumerable: true, writable: true, configurable: true });
  else headers[key] = value;
}

function decodeEventHeader(buf: Buffer, start: number, end: number, headers: Record<string, string> | null): void {
  const r = new ProtoReader(buf, start, end);
  let key: string | null = null;
  let value = "";
  while (!r.done()) {
    const { field, wire } = r.tag();
    if (field === 1 || field === 2) {
      r.expect(wire, WireType.BYTES, field === 1 ? "key" : "value");
      if (headers === null) r.bytesRange();
      else if (field === 1) key = r.string();
      else value = r.string();
      if (field === 1 && headers === null) key = "";
    } else r.skip(wire);
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
  const r = new ProtoReader(buf, start, end);
  const out = { fileID: 0, offset: 0 };
  const seen = new Set<number>();
  while (!r.done()) {
    const { field, wire } = r.tag();
    if (field === 1 || field === 2) {
      r.expect(wire, WireType.FIXED32, field === 1 ? "fileID" : "offset");
      if (field === 1) out.fileID = r.fixed32();
      else out.offset = r.fixed32();
      seen.add(field);
    } else r.skip(wire);
  }
  requireFields("Take", seen, { 1: "fileID", 2: "offset" });
  return out;
}

/** Commit's type: the record type (PUT or TAKE) its transaction committed. */
export function decodeCommit(buf: Buffer, start: number, end: number): number {
  const r = new ProtoReader(buf, start, end);
  let type: number | null = null;
  while (!r.done()) {
    const { field, wire } = r.tag();
    if (field === 1) {
      r.expect(wire, WireType.FIXED32, "type");
      type = r.fixed32();
    } else r.skip(wire);
  }
  if (type === null) throw new ProtobufError("Commit lacks its required field type");
  return type;
}

/** Rollback and TransactionEventFooter have no fields: only their framing is checked. */
export function decodeEmpty(buf: Buffer, start: number, end: number): void {
  const r = new ProtoReader(buf, start, end);
  while (!r.done()) r.skip(r.tag().wire);
}
