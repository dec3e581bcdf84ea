/**
 * Reads Flume's `log-N` data files (format in format.ts), read-only: LogFileScanner walks one
 * file record by record (replay), LogEventReader reads the events that pointers name
 * (migration). Both read in large chunks, not one syscall per record, and report damage as a
 * DamagedRecordError naming the file and the offset of the record.
 */
import { closeSync, fstatSync, openSync } from "node:fs";
import { readFullySync } from "../../io/read-fully.ts";
import { DamagedRecordError, MissingLogFileError } from "./errors.ts";
import { OP_EOF, OP_NOOP, OP_RECORD, RECORD_TYPE_NAMES, RecordType, type RecordTypeCode } from "./format.ts";
import {
  type FlumeEventData,
  decodeCommit,
  decodeEmpty,
  decodePut,
  decodeTake,
  decodeTransactionEventHeader,
} from "./messages.ts";
import { ProtobufError, delimited } from "./protobuf.ts";

/** Reads start at 64 KiB and double up to 4 MiB: replay holds one window per data file. */
const FIRST_READ = 64 * 1024;
const CHUNK = 4 * 1024 * 1024;
/** Data files LogEventReader keeps open at once. */
const OPEN_FILES = 16;
/** OP byte and int32 length. */
const RECORD_PREFIX = 5;

export interface LogRecord {
  /** Offset of the record's OP_RECORD byte: the second half of a pointer to it. */
  offset: number;
  type: RecordTypeCode;
  transactionID: number;
  writeOrderID: number;
  /** For a Take: the pointer of the event taken. */
  take?: { fileID: number; offset: number };
  /** For a Commit: the type of record its transaction committed (PUT or TAKE). */
  commitType?: number;
  /** For a Put read with its event. */
  event?: FlumeEventData;
}

/**
 * Decodes the L bytes of one record in buf[start, end). Throws ProtobufError (or a plain Error
 * for a wrong record type) that the caller turns into a DamagedRecordError.
 */
function decodeRecord(buf: Buffer, start: number, end: number, offset: number, withEvent: boolean): LogRecord {
  const h = delimited(buf, start, end);
  const header = decodeTransactionEventHeader(buf, h.start, h.end);
  const b = delimited(buf, h.end, end);
  const record: LogRecord = { offset, type: header.type as RecordTypeCode, transactionID: header.transactionID, writeOrderID: header.writeOrderID };
  switch (header.type) {
    case RecordType.PUT: {
      const event = decodePut(buf, b.start, b.end, withEvent);
      if (event) record.event = event;
      break;
    }
    case RecordType.TAKE:
      record.take = decodeTake(buf, b.start, b.end);
      break;
    case RecordType.ROLLBACK:
      decodeEmpty(buf, b.start, b.end);
      break;
    case RecordType.COMMIT:
      record.commitType = decodeCommit(buf, b.start, b.end);
      if (record.commitType !== RecordType.PUT && record.commitType !== RecordType.TAKE) throw new ProtobufError(`Commit of unknown type ${record.commitType}`);
      break;
    default:
      throw new ProtobufError(`unknown record type ${header.type}`);
  }
  const f = delimited(buf, b.end, end);
  decodeEmpty(buf, f.start, f.end);
  if (f.end !== end) throw new ProtobufError(`${end - f.end} bytes follow the record's footer`);
  return record;
}

/** Per-file figures a scan collects (for `inspect --from-flume` and the migration report). */
export interface LogFileStats {
  records: number;
  puts: number;
  takes: number;
  commits: number;
  rollbacks: number;
  /** Records blanked by Flume's integrity tool (skipped, as Flume does). */
  noops: number;
  /** Where the data ends (the first OP_EOF byte, or the file size). */
  dataEnd: number;
  size: number;
}

/** A read-only file with a read-ahead window. */
class WindowedFile {
  private readonly fd: number;
  readonly size: number;
  private buf = Buffer.alloc(0);
  private start = 0;
  private end = 0;
  private readSize = FIRST_READ;

  constructor(readonly path: string) {
    this.fd = openSync(path, "r");
    this.size = fstatSync(this.fd).size;
  }

  /**
   * Makes file bytes [pos, pos + n) available (fewer at the end of the file) and returns the
   * buffer and the index of pos in it.
   */
  view(pos: number, n: number): { buf: Buffer; at: number; available: number } {
    if (pos < this.start || pos + n > this.end) {
      const want = Math.min(Math.max(this.readSize, n), this.size - pos);
      this.readSize = Math.min(this.readSize * 2, CHUNK);
      if (this.buf.length < want) this.buf = Buffer.allocUnsafe(want);
      const got = readFullySync(this.fd, this.buf, want, pos);
      this.start = pos;
      this.end = pos + got;
    }
    return { buf: this.buf, at: pos - this.start, available: this.end - pos };
  }

  /** Frees the window (the file stays open). */
  release(): void {
    this.buf = Buffer.alloc(0);
    this.start = this.end = 0;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Reads the record whose OP_RECORD byte is at `offset`; returns it and the offset after it. */
function readRecordAt(file: WindowedFile, offset: number, withEvent: boolean): { record: LogRecord; next: number } {
  const damaged = (reason: string) => new DamagedRecordError(file.path, offset, reason);
  if (offset + RECORD_PREFIX > file.size) throw damaged(`the record header runs past the end of the file (${file.size} bytes)`);
  let v = file.view(offset, RECORD_PREFIX);
  const length = v.buf.readInt32BE(v.at + 1);
  if (length < 0) throw damaged(`negative record length ${length}`);
  if (offset + RECORD_PREFIX + length > file.size) throw damaged(`record length ${length} runs past the end of the file (${file.size} bytes)`);
  v = file.view(offset, RECORD_PREFIX + length);
  const start = v.at + RECORD_PREFIX;
  try {
    return { record: decodeRecord(v.buf, start, start + length, offset, withEvent), next: offset + RECORD_PREFIX + length };
  } catch (err) {
    if (err instanceof ProtobufError) throw damaged(err.message);
    throw err;
  }
}

/** Walks one data file from its start, record by record. */
export class LogFileScanner {
  private readonly file: WindowedFile;
  private pos = 0;
  private ended = false;
  readonly stats: LogFileStats;

  constructor(
    readonly path: string,
    readonly fileID: number,
  ) {
    this.file = new WindowedFile(path);
    this.stats = { records: 0, puts: 0, takes: 0, commits: 0, rollbacks: 0, noops: 0, dataEnd: this.file.size, size: this.file.size };
  }

  /** The next record, or null at the end of the data. Throws DamagedRecordError. */
  next(): LogRecord | null {
    const f = this.file;
    while (!this.ended) {
      if (this.pos >= f.size) return this.finish(f.size);
      const v = f.view(this.pos, 1);
      const op = v.buf[v.at];
      if (op === OP_EOF) {
        this.checkFill(this.pos);
        return this.finish(this.pos);
      }
      if (op === OP_NOOP) {
        if (this.pos + RECORD_PREFIX > f.size) throw new DamagedRecordError(f.path, this.pos, "a no-op record's header runs past the end of the file");
        const w = f.view(this.pos, RECORD_PREFIX);
        const length = w.buf.readInt32BE(w.at + 1);
        if (length < 0 || this.pos + RECORD_PREFIX + length > f.size) throw new DamagedRecordError(f.path, this.pos, `a no-op record's length ${length} is out of range`);
        this.stats.noops++;
        this.pos += RECORD_PREFIX + length;
        continue;
      }
      if (op !== OP_RECORD) {
        throw new DamagedRecordError(f.path, this.pos, `operation byte 0x${op.toString(16).padStart(2, "0")} is none of record (0x7f), no-op (0x00) or end of data (0x80)`);
      }
      const { record, next } = readRecordAt(f, this.pos, false);
      this.pos = next;
      this.count(record.type);
      return record;
    }
    return null;
  }

  private count(type: RecordTypeCode): void {
    const s = this.stats;
    s.records++;
    if (type === RecordType.PUT) s.puts++;
    else if (type === RecordType.TAKE) s.takes++;
    else if (type === RecordType.COMMIT) s.commits++;
    else s.rollbacks++;
  }

  private finish(at: number): null {
    this.ended = true;
    this.stats.dataEnd = at;
    this.file.release();
    return null;
  }

  /**
   * After the end marker Flume leaves only its 0x80 fill. Anything else there means the marker
   * itself is a damaged record's first byte, and Flume would silently drop what follows.
   */
  private checkFill(eof: number): void {
    const f = this.file;
    for (let pos = eof; pos < f.size; ) {
      const v = f.view(pos, Math.min(CHUNK, f.size - pos));
      const n = Math.min(v.available, f.size - pos);
      for (let i = 0; i < n; i++) {
        if (v.buf[v.at + i] !== OP_EOF) {
          throw new DamagedRecordError(
            f.path,
            eof,
            `the data ends here (byte 0x80) but byte 0x${v.buf[v.at + i].toString(16).padStart(2, "0")} at offset ${pos + i} follows: a damaged record?`,
          );
        }
      }
      pos += n;
    }
  }

  close(): void {
    this.file.close();
  }
}

/** Reads events by pointer from a set of data files. */
export class LogEventReader {
  private readonly open = new Map<number, WindowedFile>();

  constructor(private readonly paths: ReadonlyMap<number, string>) {}

  /** The event of the Put record at (fileID, offset). Throws DamagedRecordError or MissingLogFileError. */
  read(fileID: number, offset: number): FlumeEventData {
    let file = this.open.get(fileID);
    if (file) {
      // Most recently used last: the first one is closed when too many are open.
      this.open.delete(fileID);
      this.open.set(fileID, file);
    } else {
      const path = this.paths.get(fileID);
      if (path === undefined) throw new MissingLogFileError(`an event is in data file log-${fileID}, which is not in the given dataDirs; add the directory that holds it`);
      if (this.open.size >= OPEN_FILES) {
        const [oldest, f] = this.open.entries().next().value as [number, WindowedFile];
        f.close();
        this.open.delete(oldest);
      }
      file = new WindowedFile(path);
      this.open.set(fileID, file);
    }
    if (offset < 0 || offset >= file.size) throw new DamagedRecordError(file.path, offset, `an event pointer points past the end of the file (${file.size} bytes)`);
    const v = file.view(offset, 1);
    if (v.buf[v.at] !== OP_RECORD) throw new DamagedRecordError(file.path, offset, `an event pointer points at byte 0x${v.buf[v.at].toString(16).padStart(2, "0")}, not at a record (0x7f)`);
    const { record } = readRecordAt(file, offset, true);
    if (record.type !== RecordType.PUT || !record.event) {
      throw new DamagedRecordError(file.path, offset, `an event pointer points at a ${RECORD_TYPE_NAMES[record.type] ?? "unknown"} record, not at a Put`);
    }
    return record.event;
  }

  close(): void {
    for (const f of this.open.values()) f.close();
    this.open.clear();
  }
}
