/**
 * Reads a segment file record by record, checking lengths and checksums. Used by replay and by
 * `flume channel inspect`. Reads in large chunks: one syscall per chunk, not per record.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
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
  /** "torn": the tail of an interrupted write; "corrupt": damage with data after it. */
  kind: "torn" | "corrupt";
  offset: number;
  reason: string;
}

export interface ScanResult {
  id: number | null;
  size: number;
  /** End of the last record that parsed. */
  validEnd: number;
  /** End of the last COMMIT record (or of the header): a safe truncation point. */
  lastCommitEnd: number;
  records: number;
  damage: ScanDamage | null;
}

function allZero(fd: number, from: number, to: number): boolean {
  const buf = Buffer.allocUnsafe(Math.min(CHUNK, to - from));
  for (let pos = from; pos < to; ) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, to - pos), pos);
    if (n <= 0) break;
    for (let i = 0; i < n; i++) if (buf[i] !== 0) return false;
    pos += n;
  }
  return true;
}

/**
 * Scans one segment from `start` (default: just after the header), calling onRecord for each
 * record whose checksum matches. Damage does not throw: it is returned for the caller to judge
 * (a torn tail is normal after a crash in the newest segment, damage elsewhere is not).
 */
export function scanSegment(path: string, onRecord: (r: ScannedRecord) => void, start?: number): ScanResult {
  const fd = openSync(path, "r");
  try {
    const size = fstatSync(fd).size;
    const result: ScanResult = { id: null, size, validEnd: 0, lastCommitEnd: 0, records: 0, damage: null };
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
      const want = Math.min(buf.length, size - from);
      let got = 0;
      while (got < want) {
        const n = readSync(fd, buf, got, want - got, from + got);
        if (n <= 0) break;
        got += n;
      }
      bufStart = from;
      bufEnd = from + got;
    };
    while (pos < size) {
      const damage = (kind: "torn" | "corrupt", reason: string): void => {
        // Zeros to the end of the file are an interrupted write too (a crash after the file grew).
        if (kind === "corrupt" && allZero(fd, pos, size)) kind = "torn";
        result.damage = { kind, offset: pos, reason };
      };
      if (size - pos < RECORD_HEADER_SIZE) {
        damage("torn", `incomplete record header (${size - pos} bytes before end of file)`);
        break;
      }
      if (pos + RECORD_HEADER_SIZE > bufEnd) fill(pos, RECORD_HEADER_SIZE);
      let at = pos - bufStart;
      const len = buf.readUInt32LE(at);
      const check = buf.readUInt32LE(at + 4);
      if ((~len >>> 0) !== check || len > MAX_RECORD_PAYLOAD) {
        damage("corrupt", `bad record length field`);
        break;
      }
      const end = pos + RECORD_HEADER_SIZE + len;
      if (end > size) {
        damage("torn", `record of ${len} bytes extends past end of file`);
        break;
      }
      if (end > bufEnd) {
        fill(pos, RECORD_HEADER_SIZE + len);
        at = 0;
      }
      const crc = buf.readUInt32LE(at + 8);
      if (checksumOf(buf, at, len) !== crc) {
        damage(end === size ? "torn" : "corrupt", `checksum mismatch`);
        break;
      }
      const type = buf[at + 12];
      if (type < RecordType.PUT || type > RecordType.ROLLBACK) {
        damage("corrupt", `unknown record type ${type}`);
        break;
      }
      result.records++;
      onRecord({
        type,
        txid: buf.readDoubleLE(at + 16),
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
