/**
 * Reads a segment file record by record, checking lengths and checksums. Used by replay and by
 * `flume channel inspect`. Reads in large chunks: one syscall per chunk, not per record.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { readFullySync } from "../../../io/read-fully.ts";
import {
  MAX_RECORD_PAYLOAD,
  RECORD_HEADER_SIZE,
  RecordType,
  SEGMENT_HEADER_SIZE,
  checksumOf,
  decodeSegmentHeader,
} from "./format.ts";

const CHUNK = 8 * 1024 * 1024;

export interface ScannedRecord {
  type: number;
  txid: number;
  /** File offset of the record header. */
  offset: number;
  /** File offset of the payload. */
  payloadOffset: number;
  payload: Buffer;
}

/** Why scanning stopped before the end of the file. */
export interface ScanDamage {
  /**
   * "torn": nothing valid follows, as at the end of an interrupted write (after a power loss
   * that tail may hold zeros or any stale bytes); "corrupt": a valid record follows the damage.
   */
  kind: "torn" | "corrupt";
  offset: number;
  reason: string;
  /** For "corrupt": where the first valid record after the damage starts. */
  nextRecord?: number;
}

export interface ScanResult {
  id: number | null;
  /** Where the file's data ends: its size, less any zeros written ahead of the data. */
  size: number;
  /** End of the last record that parsed. */
  validEnd: number;
  /** End of the last COMMIT record (or of the header): a safe truncation point. */
  lastCommitEnd: number;
  records: number;
  /** The newest transaction id read in this segment (or the minTxid passed in). */
  maxTxid: number;
  damage: ScanDamage | null;
}

/**
 * Where the first record that could be real starts in [from, size), or -1. A candidate must have
 * a consistent length field, a known type, zero padding, a matching checksum and a transaction
 * id no older than `minTxid` (txids grow in file order, so an older one is a stale block left by
 * a deleted data file, not data written after the damage). Slides byte by byte because the
 * damaged record's own length cannot be trusted; random bytes fail the length check at once.
 */
function findRecordAfter(fd: number, from: number, size: number, minTxid: number): number {
  const buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(size - from, RECORD_HEADER_SIZE)));
  let record: Buffer | null = null;
  for (let base = from; base + RECORD_HEADER_SIZE <= size; ) {
    const got = readFullySync(fd, buf, Math.min(buf.length, size - base), base);
    const last = got - RECORD_HEADER_SIZE; // candidates whose header lies wholly in this chunk
    if (last < 0) break;
    for (let i = 0; i <= last; i++) {
      const len = buf.readUInt32LE(i);
      if ((~len >>> 0) !== buf.readUInt32LE(i + 4) || len > MAX_RECORD_PAYLOAD) continue;
      const type = buf[i + 12];
      if (type < RecordType.PUT || type > RecordType.ROLLBACK || buf[i + 13] !== 0 || buf[i + 14] !== 0 || buf[i + 15] !== 0) continue;
      const txid = buf.readDoubleLE(i + 16);
      if (!Number.isSafeInteger(txid) || txid < minTxid) continue;
      const at = base + i;
      if (at + RECORD_HEADER_SIZE + len > size) continue;
      let holder: Buffer = buf;
      let start = i;
      if (i + RECORD_HEADER_SIZE + len > got) {
        // A record longer than what this chunk holds: read it on its own (rare: only candidates
        // that passed every check above get here).
        if (!record || record.length < RECORD_HEADER_SIZE + len) record = Buffer.allocUnsafe(RECORD_HEADER_SIZE + len);
        if (readSync(fd, record, 0, RECORD_HEADER_SIZE + len, at) !== RECORD_HEADER_SIZE + len) continue;
        holder = record;
        start = 0;
      }
      if (checksumOf(holder, start, len) === holder.readUInt32LE(start + 8)) return at;
    }
    base += last + 1;
  }
  return -1;
}

/**
 * Whether the file holds only zero bytes from `from` to its end, `held` being bytes of it from
 * `from` already read: space a running channel wrote ahead of its data (see SegmentLog).
 */
function zeroTail(fd: number, held: Uint8Array, from: number, size: number): boolean {
  for (let i = 0; i < held.length; i++) if (held[i] !== 0) return false;
  const buf = Buffer.allocUnsafe(Math.min(64 * 1024, Math.max(0, size - from - held.length)));
  for (let at = from + held.length; at < size; ) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, size - at), at);
    if (n <= 0) return false;
    for (let i = 0; i < n; i++) if (buf[i] !== 0) return false;
    at += n;
  }
  return true;
}

export interface ScanOptions {
  /** Offset to start at (default: just after the header). */
  start?: number;
  /**
   * The newest transaction id read before this segment (0 if none): a record after damage with
   * an older id cannot have been written after it.
   */
  minTxid?: number;
}

/**
 * Scans one segment from `start` (default: just after the header), calling onRecord for each
 * record whose checksum matches. Damage does not throw: it is returned for the caller to judge
 * (a torn tail is normal after a crash in the newest segment, damage elsewhere is not). Damage
 * at X is "torn" when no valid record starts anywhere after X: only a write that never
 * completed leaves nothing valid behind it, while damage in written data has records after it.
 */
export function scanSegment(path: string, onRecord: (r: ScannedRecord) => void, options: ScanOptions = {}): ScanResult {
  const { start } = options;
  const fd = openSync(path, "r");
  try {
    const size = fstatSync(fd).size;
    const result: ScanResult = { id: null, size, validEnd: 0, lastCommitEnd: 0, records: 0, maxTxid: options.minTxid ?? 0, damage: null };
    const head = Buffer.alloc(SEGMENT_HEADER_SIZE);
    const headLen = readSync(fd, head, 0, SEGMENT_HEADER_SIZE, 0);
    const decoded = decodeSegmentHeader(head.subarray(0, headLen));
    if ("error" in decoded) {
      result.damage = { kind: headLen < SEGMENT_HEADER_SIZE ? "torn" : "corrupt", offset: 0, reason: decoded.error };
      return result;
    }
    result.id = decoded.id;
    let pos = start ?? SEGMENT_HEADER_SIZE;
    result.validEnd = pos;
    result.lastCommitEnd = pos;
    let buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(size - pos, RECORD_HEADER_SIZE)));
    let bufStart = pos;
    let bufEnd = pos; // file offsets covered by buf
    const fill = (from: number, need: number): void => {
      if (need > buf.length) buf = Buffer.allocUnsafe(need);
      const got = readFullySync(fd, buf, Math.min(buf.length, size - from), from);
      bufStart = from;
      bufEnd = from + got;
    };
    while (pos < size) {
      if (pos + Math.min(RECORD_HEADER_SIZE, size - pos) > bufEnd) fill(pos, RECORD_HEADER_SIZE);
      // A zero byte where a length field starts: damage, or the zeros written ahead (SegmentLog).
      if (bufEnd > pos && buf[pos - bufStart] === 0 && zeroTail(fd, buf.subarray(pos - bufStart, bufEnd - bufStart), pos, size)) {
        result.size = pos;
        break;
      }
      const damage = (reason: string): void => {
        const next = findRecordAfter(fd, pos + 1, size, Math.max(result.maxTxid, 1));
        result.damage = next < 0 ? { kind: "torn", offset: pos, reason } : { kind: "corrupt", offset: pos, reason, nextRecord: next };
      };
      if (size - pos < RECORD_HEADER_SIZE) {
        damage(`incomplete record header (${size - pos} bytes before end of file)`);
        break;
      }
      if (pos + RECORD_HEADER_SIZE > bufEnd) fill(pos, RECORD_HEADER_SIZE);
      let at = pos - bufStart;
      const len = buf.readUInt32LE(at);
      const check = buf.readUInt32LE(at + 4);
      if ((~len >>> 0) !== check || len > MAX_RECORD_PAYLOAD) {
        damage(`bad record length field`);
        break;
      }
      const end = pos + RECORD_HEADER_SIZE + len;
      if (end > size) {
        damage(`record of ${len} bytes extends past end of file`);
        break;
      }
      if (end > bufEnd) {
        fill(pos, RECORD_HEADER_SIZE + len);
        at = 0;
      }
      const crc = buf.readUInt32LE(at + 8);
      if (checksumOf(buf, at, len) !== crc) {
        damage(`checksum mismatch`);
        break;
      }
      const type = buf[at + 12];
      if (type < RecordType.PUT || type > RecordType.ROLLBACK) {
        damage(`unknown record type ${type}`);
        break;
      }
      result.records++;
      const txid = buf.readDoubleLE(at + 16);
      if (txid > result.maxTxid) result.maxTxid = txid;
      onRecord({
        type,
        txid,
        offset: pos,
        payloadOffset: pos + RECORD_HEADER_SIZE,
        payload: buf.subarray(at + RECORD_HEADER_SIZE, at + RECORD_HEADER_SIZE + len),
      });
      pos = end;
      result.validEnd = pos;
      if (type === RecordType.COMMIT) result.lastCommitEnd = pos;
    }
    return result;
  } finally {
    closeSync(fd);
  }
}
