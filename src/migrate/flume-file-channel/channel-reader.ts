/**
 * Opens a stopped Apache Flume 1.11 file channel read-only and computes its pending events:
 * lists and checks the data files and their metadata, picks the checkpoint as Flume would (the
 * checkpoint, else a complete backup, else none: a full replay), replays the log over it
 * (replay.ts) and reads the events back by pointer. Nothing in Flume's directories is written.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { type CheckpointLoad, type FlumeCheckpoint, backupComplete, loadCheckpoint } from "./checkpoint.ts";
import { DamagedMetadataError, FlumeMigrationError, MissingLogFileError, UnsupportedFlumeFormatError } from "./errors.ts";
import { FORMAT_VERSION, META_SUFFIX, type PointerKey, listNames, parseLogFileName, pointerFile, pointerOffset } from "./format.ts";
import { LogEventReader, LogFileScanner, type LogFileStats } from "./log-reader.ts";
import { type LogFileMeta, decodeLogFileMeta } from "./messages.ts";
import { ProtobufError } from "./protobuf.ts";
import { type ReplayStats, replay } from "./replay.ts";
import type { FlumeEventData } from "./messages.ts";

export interface FlumeChannelDirs {
  checkpointDir: string;
  dataDirs: readonly string[];
  backupCheckpointDir?: string;
}

export interface FlumeLogFile {
  id: number;
  path: string;
  metaPath: string;
  meta: LogFileMeta;
  stats: LogFileStats;
  /** Pending events whose Put is in this file. */
  pending: number;
}

export interface CheckpointChoice {
  /** Which checkpoint the replay started from; "none" is Flume's full replay of every data file. */
  used: "checkpoint" | "backup" | "none";
  dir: string | null;
  writeOrderID: number;
  /** Events the checkpoint's queue held. */
  queueSize: number;
  /** Checkpoints looked at and not used, with the reason. */
  rejected: { dir: string; reason: string }[];
}

export interface FlumeChannelSnapshot {
  dirs: FlumeChannelDirs;
  logFiles: FlumeLogFile[];
  checkpoint: CheckpointChoice;
  /** The pending events in channel order (the order a Flume sink would take them). */
  pending: PointerKey[];
  replay: ReplayStats;
  /** Every file read. */
  filesRead: string[];
}

function readLogMeta(metaPath: string, id: number): LogFileMeta {
  let meta: LogFileMeta;
  try {
    meta = decodeLogFileMeta(readFileSync(metaPath));
  } catch (err) {
    if (err instanceof ProtobufError) throw new DamagedMetadataError(metaPath, err.message);
    throw err;
  }
  if (meta.version !== FORMAT_VERSION) throw new UnsupportedFlumeFormatError(`${metaPath} is of log format version ${meta.version}; only version ${FORMAT_VERSION} (Flume 1.4 and later) is supported`);
  if (meta.logFileID !== id) throw new DamagedMetadataError(metaPath, `it belongs to log file ${meta.logFileID}, not to log-${id}`);
  if (meta.encrypted) throw new UnsupportedFlumeFormatError(`${path.dirname(metaPath)}: log-${id} is encrypted (encryption.* settings); encrypted Flume data files cannot be migrated`);
  return meta;
}

/** The data files of all dataDirs, by id, each with its checked metadata. */
function listLogFiles(dataDirs: readonly string[]): { files: Omit<FlumeLogFile, "stats" | "pending">[]; read: string[] } {
  const byId = new Map<number, Omit<FlumeLogFile, "stats" | "pending">>();
  const read: string[] = [];
  for (const dir of dataDirs) {
    for (const name of listNames(dir)) {
      const id = parseLogFileName(name);
      if (id === null) continue;
      const file = path.join(dir, name);
      const metaPath = file + META_SUFFIX;
      if (!existsSync(metaPath)) {
        // Flume creates the data file just before its metadata: an empty one was never used.
        if (statSync(file).size === 0) continue;
        throw new UnsupportedFlumeFormatError(`${file} has no ${name}${META_SUFFIX}: not a Flume 1.4+ (log format 3) data file, or its metadata was lost`);
      }
      const other = byId.get(id);
      if (other) throw new FlumeMigrationError(`two data files with id ${id}: ${other.path} and ${file}; are the dataDirs of two channels mixed?`);
      byId.set(id, { id, path: file, metaPath, meta: readLogMeta(metaPath, id) });
      read.push(metaPath, file);
    }
  }
  return { files: [...byId.values()].sort((a, b) => a.id - b.id), read };
}

/** Flume's choice: the checkpoint; if it is bad, a backup Flume finished writing; else none. */
function chooseCheckpoint(dirs: FlumeChannelDirs): { checkpoint: FlumeCheckpoint | null; choice: CheckpointChoice; read: string[] } {
  const rejected: { dir: string; reason: string }[] = [];
  const read: string[] = [];
  const attempt = (dir: string): FlumeCheckpoint | null => {
    const load: CheckpointLoad = loadCheckpoint(dir);
    if ("checkpoint" in load) {
      read.push(...load.checkpoint.files);
      return load.checkpoint;
    }
    read.push(...load.files);
    rejected.push({ dir, reason: load.rejected });
    return null;
  };
  const summary = (used: CheckpointChoice["used"], c: FlumeCheckpoint | null) => ({
    checkpoint: c,
    choice: { used, dir: c?.dir ?? null, writeOrderID: c?.writeOrderID ?? 0, queueSize: c?.queue.length ?? 0, rejected },
    read,
  });
  const primary = attempt(dirs.checkpointDir);
  if (primary) return summary("checkpoint", primary);
  const backup = dirs.backupCheckpointDir;
  if (backup !== undefined) {
    if (!backupComplete(backup)) rejected.push({ dir: backup, reason: `no backupComplete file in ${backup}: Flume never finished a backup there` });
    else {
      const c = attempt(backup);
      if (c) return summary("backup", c);
    }
  }
  return summary("none", null);
}

/** Throws unless every pointer the checkpoint holds is in a known data file. */
function requireFilesOf(checkpoint: FlumeCheckpoint, known: ReadonlySet<number>, dataDirs: readonly string[]): void {
  const missing = new Map<number, number>();
  const check = (key: PointerKey) => {
    const id = pointerFile(key);
    if (!known.has(id)) missing.set(id, (missing.get(id) ?? 0) + 1);
  };
  checkpoint.queue.forEach(check);
  for (const list of checkpoint.inflightPuts.values()) list.forEach(check);
  for (const list of checkpoint.inflightTakes.values()) list.forEach(check);
  if (missing.size > 0) {
    const what = [...missing].map(([id, n]) => `${n} in log-${id}`).join(", ");
    throw new MissingLogFileError(
      `the checkpoint in ${checkpoint.dir} holds events in data files that are not in ${dataDirs.join(",")} (${what}); add the data directory that holds them to --dataDirs or restore the files`,
    );
  }
}

/** Reads a stopped Flume channel and computes its pending events. Throws the errors of errors.ts. */
export function readFlumeChannel(dirs: FlumeChannelDirs): FlumeChannelSnapshot {
  const listed = listLogFiles(dirs.dataDirs);
  const { checkpoint, choice, read } = chooseCheckpoint(dirs);
  if (checkpoint) requireFilesOf(checkpoint, new Set(listed.files.map((f) => f.id)), dirs.dataDirs);
  const scanners: LogFileScanner[] = [];
  try {
    for (const f of listed.files) scanners.push(new LogFileScanner(f.path, f.id));
    const result = replay(scanners, checkpoint);
    const perFile = new Map<number, number>();
    for (const key of result.pending) perFile.set(pointerFile(key), (perFile.get(pointerFile(key)) ?? 0) + 1);
    const known = new Set(listed.files.map((f) => f.id));
    const lost = result.pending.filter((k) => !known.has(pointerFile(k)));
    if (lost.length > 0) throw new MissingLogFileError(`${lost.length} pending events are in data file log-${pointerFile(lost[0])}, which is not in ${dirs.dataDirs.join(",")}`);
    const logFiles = listed.files.map((f, i) => ({ ...f, stats: scanners[i].stats, pending: perFile.get(f.id) ?? 0 }));
    return { dirs, logFiles, checkpoint: choice, pending: result.pending, replay: result.stats, filesRead: [...read, ...listed.read] };
  } finally {
    for (const s of scanners) s.close();
  }
}

/** Reads the pending events of a snapshot by pointer; close() when done. */
export class FlumeEventSource {
  private readonly reader: LogEventReader;

  constructor(snapshot: FlumeChannelSnapshot) {
    this.reader = new LogEventReader(new Map(snapshot.logFiles.map((f) => [f.id, f.path])));
  }

  read(key: PointerKey): FlumeEventData {
    return this.reader.read(pointerFile(key), pointerOffset(key));
  }

  close(): void {
    this.reader.close();
  }
}
