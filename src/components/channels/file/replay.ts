/**
 * Recovery on start: the newest good checkpoint, then the log written after it. Also used
 * read-only by `flume channel inspect`.
 */
import { existsSync, readdirSync, truncateSync, unlinkSync } from "node:fs";
import path from "node:path";
import { ChannelException } from "../../../core/errors.ts";
import type { Logger } from "../../../core/logger.ts";
import { loadCheckpoint } from "./checkpoint.ts";
import {
  RecordType,
  type TakeRange,
  decodePositions,
  decodePutHeader,
  decodeTakeRanges,
  eventLengthAt,
  parseSegmentFileName,
} from "./format.ts";
import { type ScanResult, type ScannedRecord, scanSegment } from "./segment-scan.ts";

const COMPACT_EVERY_TAKES = 1 << 20;

export interface SegmentInfo {
  id: number;
  path: string;
  dir: string;
  /** Bytes of valid data (after any torn tail was cut). */
  size: number;
}

export function listSegments(dataDirs: readonly string[]): SegmentInfo[] {
  const byId = new Map<number, SegmentInfo>();
  for (const dir of dataDirs) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      const id = parseSegmentFileName(name);
      if (id === null) continue;
      const file = path.join(dir, name);
      const other = byId.get(id);
      if (other) throw new ChannelException(`two data files with the same segment id ${id}: ${other.path} and ${file}; dataDirs of two channels overlap?`);
      byId.set(id, { id, path: file, dir, size: 0 });
    }
  }
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

/** Growable columns of (seq, segment, offset). */
class Entries {
  seqs: Float64Array;
  segs: Uint32Array;
  offs: Uint32Array;
  count = 0;
  constructor(cap: number) {
    this.seqs = new Float64Array(Math.max(cap, 1024));
    this.segs = new Uint32Array(this.seqs.length);
    this.offs = new Uint32Array(this.seqs.length);
  }
  push(seq: number, seg: number, off: number): void {
    if (this.count === this.seqs.length) {
      const cap = this.seqs.length * 2;
      const s = new Float64Array(cap);
      s.set(this.seqs);
      const g = new Uint32Array(cap);
      g.set(this.segs);
      const o = new Uint32Array(cap);
      o.set(this.offs);
      this.seqs = s;
      this.segs = g;
      this.offs = o;
    }
    this.seqs[this.count] = seq;
    this.segs[this.count] = seg;
    this.offs[this.count] = off;
    this.count++;
  }
}

export interface RecoveredState {
  count: number;
  seqs: Float64Array;
  segs: Uint32Array;
  offs: Uint32Array;
  positions: Map<string, string>;
  nextSeq: number;
  nextTxid: number;
  segments: SegmentInfo[];
  checkpointUsed: string | null;
  /** The lowest id a new segment may take: replay must never skip a segment written later. */
  minNewSegmentId: number;
  /** Records read from the log after the checkpoint. */
  replayedRecords: number;
  committedTransactions: number;
  /** Set when the newest segment ended in a torn write that was (or, read-only, would be) cut. */
  tornTail: { file: string; offset: number; bytes: number; reason: string } | null;
  scans: { segment: SegmentInfo; scan: ScanResult }[];
}

export interface RecoverOptions {
  dataDirs: readonly string[];
  checkpointDirs: readonly string[];
  logger: Logger;
  /** False for read-only inspection: nothing on disk changes. */
  repair: boolean;
  channel: string;
}

/** Binary search in merged, sorted take ranges. */
function isTaken(ranges: TakeRange[], seq: number): boolean {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = ranges[mid];
    if (seq < r.first) hi = mid - 1;
    else if (seq >= r.first + r.count) lo = mid + 1;
    else return true;
  }
  return false;
}

export function recover(opts: RecoverOptions): RecoveredState {
  const { logger, channel } = opts;
  let segments = listSegments(opts.dataDirs);
  const loaded = loadCheckpoint(opts.checkpointDirs);
  let ckpt = loaded.data;
  if (!loaded.data) {
    for (const p of loaded.problems) logger.warn(`file channel ${channel}: ignoring unreadable checkpoint ${p}; replaying the whole log instead`);
  }
  const known = new Set(segments.map((s) => s.id));
  if (ckpt) {
    for (let i = 0; i < ckpt.count; i++) {
      if (!known.has(ckpt.segs[i])) {
        throw new ChannelException(
          `file channel ${channel}: checkpoint ${"from" in loaded ? loaded.from : ""} refers to data file log-${ckpt.segs[i]}, which is missing from dataDirs ${opts.dataDirs.join(",")}; restore that file or point dataDirs at the directories that hold it`,
        );
      }
    }
  }

  const entries = new Entries(ckpt ? ckpt.count + 1024 : 1024);
  let nextSeq = 0;
  let nextTxid = 1;
  const positions = new Map<string, string>();
  if (ckpt) {
    entries.seqs.set(ckpt.seqs);
    entries.segs.set(ckpt.segs);
    entries.offs.set(ckpt.offs);
    entries.count = ckpt.count;
    nextSeq = ckpt.nextSeq;
    nextTxid = ckpt.nextTxid;
    for (const [k, v] of ckpt.positions) positions.set(k, v);
  }
  let takes: TakeRange[] = [];
  let takenSinceCompact = 0;

  /**
   * Drops the events whose take was read so far. Takes always follow their puts in the log, so
   * this is valid at any commit boundary; doing it every million takes keeps replay memory
   * bounded by the pending events, not by everything written since the checkpoint.
   */
  const compact = (): void => {
    if (takes.length === 0) return;
    takes.sort((a, b) => a.first - b.first);
    const merged: TakeRange[] = [];
    for (const r of takes) {
      const last = merged[merged.length - 1];
      if (last && r.first <= last.first + last.count) {
        const end = Math.max(last.first + last.count, r.first + r.count);
        last.count = end - last.first;
      } else merged.push({ first: r.first, count: r.count });
    }
    let w = 0;
    for (let i = 0; i < entries.count; i++) {
      const seq = entries.seqs[i];
      if (isTaken(merged, seq)) continue;
      entries.seqs[w] = seq;
      entries.segs[w] = entries.segs[i];
      entries.offs[w] = entries.offs[i];
      w++;
    }
    entries.count = w;
    takes = [];
    takenSinceCompact = 0;
  };

  // The transaction being read: its PUT events go into `entries` at once (no copy of the
  // payload) and are dropped again (count reset to `mark`) if its COMMIT never comes.
  let pendingTxid = -1;
  let mark = entries.count;
  let pendingSmall: { type: number; payload: Buffer }[] = [];
  let pendingNextSeq = 0;
  let replayedRecords = 0;
  let committedTransactions = 0;
  let currentSegment = 0;

  const discard = (): void => {
    entries.count = mark;
    pendingSmall = [];
    pendingTxid = -1;
  };

  const onRecord = (r: ScannedRecord): void => {
    replayedRecords++;
    if (r.txid >= nextTxid) nextTxid = r.txid + 1;
    if (r.txid !== pendingTxid) {
      discard();
      pendingTxid = r.txid;
    }
    switch (r.type) {
      case RecordType.PUT: {
        const { firstSeq, count } = decodePutHeader(r.payload);
        let p = 12;
        for (let k = 0; k < count; k++) {
          entries.push(firstSeq + k, currentSegment, r.payloadOffset + p);
          p += eventLengthAt(r.payload, p);
        }
        pendingNextSeq = Math.max(pendingNextSeq, firstSeq + count);
        break;
      }
      case RecordType.TAKE:
      case RecordType.POSITION:
        // The scanner reuses its buffer: keep a copy until the COMMIT decides.
        pendingSmall.push({ type: r.type, payload: Buffer.from(r.payload) });
        break;
      case RecordType.COMMIT:
        for (const rec of pendingSmall) {
          if (rec.type === RecordType.TAKE) {
            for (const range of decodeTakeRanges(rec.payload)) {
              takes.push(range);
              takenSinceCompact += range.count;
            }
          }
          else for (const [k, v] of decodePositions(rec.payload)) positions.set(k, v);
        }
        if (pendingNextSeq > nextSeq) nextSeq = pendingNextSeq;
        committedTransactions++;
        pendingSmall = [];
        pendingTxid = -1;
        if (takenSinceCompact >= COMPACT_EVERY_TAKES) compact();
        mark = entries.count;
        break;
    }
  };

  const scans: { segment: SegmentInfo; scan: ScanResult }[] = [];
  let tornTail: RecoveredState["tornTail"] = null;
  const startSeg = ckpt ? ckpt.logSegment : -1;
  const kept: SegmentInfo[] = [];
  let maxTxid = 0; // newest txid read so far: records written later never carry an older one
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    const isLast = i === segments.length - 1;
    currentSegment = seg.id;
    discard();
    const scanning = seg.id >= startSeg;
    const start = ckpt && seg.id === ckpt.logSegment ? ckpt.logOffset : undefined;
    const scan = scanning
      ? scanSegment(seg.path, onRecord, { start, minTxid: maxTxid })
      : scanSegment(seg.path, () => {}, { start: Number.MAX_SAFE_INTEGER });
    maxTxid = Math.max(maxTxid, scan.maxTxid);
    scans.push({ segment: seg, scan });
    if (scan.id === null) {
      // A segment whose header never made it to disk: the crash came right after creating it.
      if (isLast && scan.damage?.kind === "torn") {
        tornTail = { file: seg.path, offset: 0, bytes: scan.size, reason: scan.damage.reason };
        logger.warn(`file channel ${channel}: removing ${seg.path}: its header was torn by a crash (${scan.damage.reason})`);
        if (opts.repair) unlinkSync(seg.path);
        continue;
      }
      throw new ChannelException(`file channel ${channel}: data file ${seg.path} at offset 0: ${scan.damage?.reason ?? "unreadable header"}`);
    }
    if (scan.id !== seg.id) {
      throw new ChannelException(`file channel ${channel}: data file ${seg.path} at offset 0: its header says segment ${scan.id}; was it renamed?`);
    }
    if (ckpt && seg.id === ckpt.logSegment && scan.size < ckpt.logOffset) {
      throw new ChannelException(
        `file channel ${channel}: data file ${seg.path} is ${scan.size} bytes but the checkpoint says ${ckpt.logOffset} bytes were written; the file was truncated after the checkpoint`,
      );
    }
    seg.size = scan.size;
    if (scanning && scan.damage) {
      if (!isLast || scan.damage.kind === "corrupt") {
        throw new ChannelException(
          `file channel ${channel}: data file ${seg.path} is damaged at offset ${scan.damage.offset}: ${scan.damage.reason}` +
            (scan.damage.nextRecord !== undefined ? ` (a valid record follows at offset ${scan.damage.nextRecord}, so this is not a torn write)` : isLast ? "" : " (not the newest data file, so this is not a torn write)") +
            `; ` +
            `run \`flume channel inspect ${seg.dir} --verify\` for details; the events before that offset are intact`,
        );
      }
    }
    if (scanning && isLast && (scan.damage || scan.lastCommitEnd < scan.size)) {
      const cutAt = scan.lastCommitEnd;
      const reason = scan.damage ? `${scan.damage.reason} at offset ${scan.damage.offset}` : "a transaction without its commit record";
      tornTail = { file: seg.path, offset: cutAt, bytes: scan.size - cutAt, reason };
      logger.warn(`file channel ${channel}: cutting off ${scan.size - cutAt} bytes at the end of ${seg.path} from offset ${cutAt} (torn by a crash: ${reason}); no committed event is lost`);
      if (opts.repair) truncateSync(seg.path, cutAt);
      seg.size = cutAt;
    }
    kept.push(seg);
  }
  discard();
  segments = kept;

  compact();
  const count = entries.count;
  return {
    count,
    seqs: entries.seqs,
    segs: entries.segs,
    offs: entries.offs,
    positions,
    nextSeq,
    nextTxid,
    segments,
    checkpointUsed: "from" in loaded ? loaded.from : null,
    minNewSegmentId: ckpt ? ckpt.logSegment + 1 : 1,
    replayedRecords,
    committedTransactions,
    tornTail,
    scans,
  };
}
