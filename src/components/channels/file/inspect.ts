/**
 * Read-only report on a file channel's data directories, for `flume channel inspect`: the
 * segments, their records and checksum status, the pending events and the lock holder.
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { MemoryLogger } from "../../../core/logger.ts";
import { directoryLockFile, type LockState, lockState } from "../../../io/owner-lock.ts";
import { CHECKPOINT_FILE } from "./checkpoint.ts";
import { RecordType, decodePutHeader, decodeTakeRanges, parseSegmentFileName } from "./format.ts";
import { listSegments, recover } from "./replay.ts";
import { type ScanDamage, scanSegment } from "./segment-scan.ts";

export interface SegmentReport {
  file: string;
  id: number | null;
  size: number;
  records: number;
  /** Committed transactions in this segment. */
  transactions: number;
  puts: number;
  takes: number;
  /** Records after the last COMMIT (a transaction torn by a crash). */
  uncommittedRecords: number;
  damage: ScanDamage | null;
  /** True when the damage is a torn tail of the newest segment: cut on the next start, no loss. */
  repairable: boolean;
}

export interface InspectReport {
  dataDirs: string[];
  segments: SegmentReport[];
  pending: number | null;
  pendingSource: string;
  pendingError: string | null;
  locks: ({ dir: string } & LockState)[];
  /** Damage that stops the channel from starting. */
  damaged: boolean;
}

/**
 * Why `dir` is not a file channel data directory, or null when it is one: it holds data files
 * (log-<id>), or nothing but the lock (a channel that wrote nothing yet). Anything else (a
 * checkpoint directory, a wrong path) would otherwise read as an empty, healthy channel.
 */
export function notADataDirectory(dir: string): string | null {
  const names = readdirSync(dir);
  const lock = path.basename(directoryLockFile(dir));
  if (names.some((n) => parseSegmentFileName(n) !== null) || names.every((n) => n === lock)) return null;
  if (names.includes(CHECKPOINT_FILE)) {
    return `${dir} is a checkpoint directory (it holds ${CHECKPOINT_FILE}), not a data directory: give the channel's dataDirs, and this one as --checkpointDir`;
  }
  const shown = names.slice(0, 5).join(", ") + (names.length > 5 ? `, ... (${names.length} entries)` : "");
  return `${dir} is not a file channel data directory: it holds no data files (log-<id>) but ${shown}`;
}

export function inspectChannel(dataDirs: string[], checkpointDir?: string): InspectReport {
  const segments: SegmentReport[] = [];
  const infos = listSegments(dataDirs);
  let maxTxid = 0;
  infos.forEach((info, i) => {
    const rep: SegmentReport = { file: info.path, id: null, size: 0, records: 0, transactions: 0, puts: 0, takes: 0, uncommittedRecords: 0, damage: null, repairable: false };
    let pendingRecords = 0;
    let pendingPuts = 0;
    let pendingTakes = 0;
    const scan = scanSegment(info.path, (r) => {
      if (r.type === RecordType.COMMIT) {
        rep.transactions++;
        rep.puts += pendingPuts;
        rep.takes += pendingTakes;
        pendingRecords = pendingPuts = pendingTakes = 0;
        return;
      }
      pendingRecords++;
      if (r.type === RecordType.PUT) pendingPuts += decodePutHeader(r.payload).count;
      else if (r.type === RecordType.TAKE) for (const t of decodeTakeRanges(r.payload)) pendingTakes += t.count;
    }, { minTxid: maxTxid });
    maxTxid = Math.max(maxTxid, scan.maxTxid);
    rep.id = scan.id;
    rep.size = scan.size;
    rep.records = scan.records;
    rep.uncommittedRecords = pendingRecords;
    rep.damage = scan.damage;
    rep.repairable = scan.damage !== null && scan.damage.kind === "torn" && i === infos.length - 1;
    segments.push(rep);
  });

  let pending: number | null = null;
  let pendingError: string | null = null;
  const pendingSource = checkpointDir ? `checkpoint in ${checkpointDir} plus the log after it` : "the log alone; pass --checkpointDir for the exact figure";
  try {
    const r = recover({ dataDirs, checkpointDirs: checkpointDir ? [checkpointDir] : [], logger: new MemoryLogger(), repair: false, channel: "inspect" });
    pending = r.count;
  } catch (err) {
    pendingError = (err as Error).message;
  }

  const locks: InspectReport["locks"] = [];
  for (const dir of checkpointDir ? [...dataDirs, checkpointDir] : dataDirs) {
    const file = directoryLockFile(dir);
    if (!existsSync(file)) continue;
    locks.push({ dir, ...lockState(file) });
  }
  const damaged = segments.some((s) => s.damage !== null && !s.repairable) || pendingError !== null;
  return { dataDirs, segments, pending, pendingSource, pendingError, locks, damaged };
}

export function formatReport(r: InspectReport): string {
  const lines: string[] = [];
  lines.push(`file channel data in ${r.dataDirs.join(", ")}`);
  if (r.segments.length === 0) lines.push("no data files (log-<id>) found");
  else {
    const rows = [["segment", "bytes", "records", "transactions", "puts", "takes", "checksums"]];
    for (const s of r.segments) {
      let status = "ok";
      if (s.damage) {
        status = s.repairable
          ? `torn tail at offset ${s.damage.offset} (${s.damage.reason}; cut off on next start, no committed event lost)`
          : `DAMAGED at offset ${s.damage.offset}: ${s.damage.reason}${s.damage.nextRecord !== undefined ? ` (valid record follows at offset ${s.damage.nextRecord})` : ""}`;
      } else if (s.uncommittedRecords > 0) status = `ok (${s.uncommittedRecords} records of an uncommitted transaction at the end)`;
      rows.push([path.basename(s.file), String(s.size), String(s.records), String(s.transactions), String(s.puts), String(s.takes), status]);
    }
    const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
    for (const row of rows) lines.push(row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]))).join("  "));
  }
  if (r.pending !== null) lines.push(`pending events: ${r.pending} (from ${r.pendingSource})`);
  else lines.push(`pending events: unknown: ${r.pendingError}`);
  for (const l of r.locks) lines.push(`lock: ${directoryLockFile(l.dir)} ${lockText(l)}`);
  lines.push(r.damaged ? "status: DAMAGED" : "status: OK");
  return lines.join("\n");
}

/** A lock as `flume run` would judge it: a live holder refuses a start, a dead one's lock is taken over. */
function lockText(l: LockState): string {
  if (l.owner === null) return "names no process (stale: the next start takes it over)";
  const holder = `process ${l.owner.pid}${l.owner.what ? ` (${l.owner.what})` : ""}`;
  return l.alive ? `held by ${holder}, which is running` : `left by ${holder}, which is no longer running (stale: the next start takes it over)`;
}
