/**
 * `flume channel inspect --from-flume`: what a migration of an Apache Flume file channel would
 * copy (the checkpoint used, per data file figures, the pending events, the first and last of
 * them), computed exactly as the migration computes it; read-only, and allowed while the agent
 * runs (the report then says the figures may change).
 */
import path from "node:path";
import type { FlumeChannelDirs, FlumeChannelSnapshot } from "./channel-reader.ts";
import { DamagedMetadataError, DamagedRecordError, FlumeMigrationError, MissingLogFileError } from "./errors.ts";
import { type LockCheck, checkFlumeLocks } from "./lock.ts";
import type { FlumeEventData } from "./messages.ts";
import { type VerifiedSnapshot, sourceDirs, verifySnapshot } from "./migrate.ts";

export interface FlumeInspectReport {
  dirs: FlumeChannelDirs;
  locks: LockCheck;
  verified: VerifiedSnapshot | null;
  /** Why the channel cannot be read; a migration would refuse too. */
  error: { damaged: boolean; message: string } | null;
}

export function inspectFlumeChannel(dirs: FlumeChannelDirs, opts: { procLocks?: string } = {}): FlumeInspectReport {
  const locks = checkFlumeLocks(sourceDirs(dirs), opts.procLocks);
  const stale = locks.locks.filter((l) => l.state === "stale").map((l) => l.file);
  try {
    return { dirs, locks, verified: verifySnapshot(dirs, stale), error: null };
  } catch (err) {
    if (!(err instanceof FlumeMigrationError)) throw err;
    const damaged = err instanceof DamagedRecordError || err instanceof DamagedMetadataError || err instanceof MissingLogFileError;
    return { dirs, locks, verified: null, error: { damaged, message: err.message } };
  }
}

function describeEvent(e: FlumeEventData): string {
  const body = new TextDecoder().decode(e.body);
  const shown = body.length > 100 ? `${body.slice(0, 100)}...` : body;
  return `headers ${JSON.stringify(e.headers)} body ${JSON.stringify(shown)} (${e.body.length} bytes)`;
}

function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]))).join("  "));
}

function checkpointLines(s: FlumeChannelSnapshot): string[] {
  const c = s.checkpoint;
  const lines = c.rejected.map((r) => `checkpoint not used: ${r.reason}`);
  if (c.used === "none") lines.push("checkpoint: none usable; the whole log is replayed, as Flume does");
  else lines.push(`checkpoint: ${c.used === "backup" ? "backup " : ""}${c.dir} (write order id ${c.writeOrderID}, ${c.queueSize} events queued), then the log written after it`);
  return lines;
}

function snapshotLines(v: VerifiedSnapshot): string[] {
  const s = v.snapshot;
  const lines = checkpointLines(s);
  if (s.logFiles.length === 0) lines.push("no data files (log-N with log-N.meta) found");
  else {
    const rows = [["file", "data bytes", "records", "puts", "takes", "commits", "rollbacks", "pending events"]];
    for (const f of s.logFiles) {
      const st = f.stats;
      rows.push([path.basename(f.path), String(st.dataEnd), String(st.records), String(st.puts), String(st.takes), String(st.commits), String(st.rollbacks), String(f.pending)]);
    }
    lines.push(...table(rows));
  }
  const rs = s.replay;
  lines.push(
    `replay: ${rs.records} records read, ${rs.coveredByCheckpoint} covered by the checkpoint, ${rs.commits} commits and ${rs.rollbacks} rollbacks after it` +
      (rs.openTransactions > 0 ? `, ${rs.openTransactions} transactions never committed (${rs.uncommittedPuts} puts, not migrated)` : "") +
      (rs.restoredTakes > 0 ? `, ${rs.restoredTakes} taken but uncommitted events back in the queue` : "") +
      (rs.unmatchedTakes > 0 ? `, ${rs.unmatchedTakes} takes of events not in the channel` : ""),
  );
  lines.push(`events to migrate: ${s.pending.length} (${v.bodyBytes} bytes of bodies)`);
  if (v.first) lines.push(`first event: ${describeEvent(v.first)}`);
  if (v.last && s.pending.length > 1) lines.push(`last event: ${describeEvent(v.last)}`);
  return lines;
}

export function formatFlumeReport(r: FlumeInspectReport): string {
  const d = r.dirs;
  const lines = [`Apache Flume file channel: checkpointDir ${d.checkpointDir}, dataDirs ${d.dataDirs.join(",")}${d.backupCheckpointDir ? `, backupCheckpointDir ${d.backupCheckpointDir}` : ""}`];
  if (r.verified) lines.push(...snapshotLines(r.verified));
  for (const l of r.locks.locks.filter((k) => k.state !== "unknown")) {
    lines.push(
      l.state === "held"
        ? `lock: ${l.file} is held by ${l.pid === null ? "a running process" : `process ${l.pid}`}: the agent is running, so these figures may change (migrate refuses until it stops)`
        : `lock: ${l.file} is left over from an agent that did not exit cleanly (no process holds it)`,
    );
  }
  if (r.locks.unknown) lines.push(`lock: ${r.locks.unknown}`);
  if (r.error) lines.push(`status: ${r.error.damaged ? "DAMAGED" : "NOT READABLE"}: ${r.error.message}`);
  else lines.push("status: OK");
  return lines.join("\n");
}
