/**
 * `flume channel migrate --from-flume`: copies the committed, untaken events of a stopped
 * Apache Flume 1.11 file channel, in channel order, into a new Flume TS file channel through
 * its transactions. Flume's files are only read. Nothing is written until every event has been
 * read and its checksum verified, so a damaged record stops the migration before it starts.
 */
import { FileChannel, type FileChannelOptions, channelOptions, definition } from "../../components/channels/file/index.ts";
import { type Logger, silentLogger } from "../../core/logger.ts";
import { type FlumeChannelDirs, type FlumeChannelSnapshot, FlumeEventSource, readFlumeChannel } from "./channel-reader.ts";
import { FlumeChannelInUseError, FlumeMigrationError, MigrationTargetError } from "./errors.ts";
import { checkFlumeLocks } from "./lock.ts";
import type { FlumeEventData } from "./messages.ts";
import { type TargetDirs, checkTarget } from "./target.ts";

/** Events per transaction: well within the file channel's default transactionCapacity. */
export const DEFAULT_BATCH_SIZE = 1000;
/** A batch also ends at this many bytes of bodies, so huge events do not pile up in memory. */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

/**
 * A file channel on the target's directories with the file channel's own defaults (its schema),
 * as `flume run` opens a channel configured with just these directories.
 */
export function targetChannelOptions(target: TargetDirs): FileChannelOptions {
  const { options, errors } = definition.parse({ checkpointDir: target.checkpointDir, dataDirs: target.dataDirs.join(",") });
  if (errors.length > 0) throw new MigrationTargetError(`the target channel: ${errors.map((e) => `${e.key} ${e.message}`).join("; ")}`);
  return { ...channelOptions(options), dataDirs: [...target.dataDirs] };
}

/** The most events one transaction of the new channel takes: its default transactionCapacity. */
export const MAX_BATCH_SIZE = targetChannelOptions({ checkpointDir: "checkpoint", dataDirs: ["data"] }).transactionCapacity;

export interface SourceOptions {
  source: FlumeChannelDirs;
  /** Skip the lock check where /proc/locks cannot tell (the caller vouches that Flume is stopped). */
  assumeStopped?: boolean;
  /** For tests: another /proc/locks. */
  procLocks?: string;
}

export interface MigrateOptions extends SourceOptions {
  target: TargetDirs;
  batchSize?: number;
  logger?: Logger;
}

export interface VerifiedSnapshot {
  snapshot: FlumeChannelSnapshot;
  /** Bytes of the pending events' bodies. */
  bodyBytes: number;
  /** The first and last pending events (for inspect). */
  first: FlumeEventData | null;
  last: FlumeEventData | null;
  /** Lock files found that no process holds (Flume was killed). */
  staleLocks: string[];
}

export interface MigrationReport extends VerifiedSnapshot {
  migrated: number;
  transactions: number;
  target: TargetDirs;
  /** The capacity the new channel needs when it is above the default (set it in the config), else null. */
  raisedCapacity: number | null;
}

export function sourceDirs(s: FlumeChannelDirs): string[] {
  return [s.checkpointDir, ...s.dataDirs, ...(s.backupCheckpointDir ? [s.backupCheckpointDir] : [])];
}

/** Throws FlumeChannelInUseError while a Flume agent holds one of the directories. */
export function requireStopped(opts: SourceOptions): string[] {
  const check = checkFlumeLocks(sourceDirs(opts.source), opts.procLocks);
  const held = check.locks.find((l) => l.state === "held");
  if (held) throw new FlumeChannelInUseError(held.file, held.pid);
  if (check.unknown && !opts.assumeStopped) {
    throw new FlumeMigrationError(`${check.unknown}; make sure the Flume agent is stopped, then run again with --assume-stopped`);
  }
  return check.locks.filter((l) => l.state === "stale").map((l) => l.file);
}

/**
 * Reads the Flume channel and every pending event once (checking each), without writing
 * anything. Throws the errors of errors.ts.
 */
export function readAndVerify(opts: SourceOptions): VerifiedSnapshot {
  return verifySnapshot(opts.source, requireStopped(opts));
}

/** readAndVerify without the lock check. */
export function verifySnapshot(source: FlumeChannelDirs, staleLocks: string[]): VerifiedSnapshot {
  const snapshot = readFlumeChannel(source);
  const events = new FlumeEventSource(snapshot);
  try {
    let bodyBytes = 0;
    let first: FlumeEventData | null = null;
    let last: FlumeEventData | null = null;
    for (let i = 0; i < snapshot.pending.length; i++) {
      const e = events.read(snapshot.pending[i]);
      bodyBytes += e.body.length;
      if (i === 0) first = e;
      if (i === snapshot.pending.length - 1) last = e;
    }
    return { snapshot, bodyBytes, first, last, staleLocks };
  } finally {
    events.close();
  }
}

/** Migrates; resolves with what was done, rejects with the errors of errors.ts (or the channel's). */
export async function migrateFlumeChannel(opts: MigrateOptions): Promise<MigrationReport> {
  const logger = opts.logger ?? silentLogger;
  const batchSize = Math.max(1, Math.min(opts.batchSize ?? DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE));
  const staleLocks = requireStopped(opts);
  checkTarget(opts.target, sourceDirs(opts.source));
  const verified = verifySnapshot(opts.source, staleLocks);
  // Reading takes a while on a big channel: an agent started meanwhile makes the copy stale.
  requireStopped(opts);
  const { snapshot } = verified;
  const settings = targetChannelOptions(opts.target);
  // The default capacity, or one that fits every event when there are more.
  const raisedCapacity = snapshot.pending.length > settings.capacity ? snapshot.pending.length : null;
  const channel = new FileChannel("target", { ...settings, capacity: raisedCapacity ?? settings.capacity }, { logger });
  await channel.start();
  let migrated = 0;
  let transactions = 0;
  const events = new FlumeEventSource(snapshot);
  try {
    if (channel.size > 0) {
      throw new MigrationTargetError(
        `the target channel (${opts.target.checkpointDir}, ${opts.target.dataDirs.join(",")}) already holds ${channel.size} events; a migration writes only into an empty channel (if an earlier migration was interrupted, delete the target directories and run it again)`,
      );
    }
    const pending = snapshot.pending;
    for (let i = 0; i < pending.length; ) {
      const tx = channel.getTransaction();
      tx.begin();
      let bytes = 0;
      let n = 0;
      try {
        while (i < pending.length && n < batchSize && (n === 0 || bytes < MAX_BATCH_BYTES)) {
          const e = events.read(pending[i]);
          tx.put({ headers: e.headers, body: e.body });
          bytes += e.body.length;
          n++;
          i++;
        }
        await tx.commit();
      } catch (err) {
        await tx.rollback().catch(() => {});
        throw err;
      } finally {
        tx.close();
      }
      migrated += n;
      transactions++;
    }
  } catch (err) {
    if (migrated > 0) {
      const message = `${(err as Error).message}; ${migrated} of ${snapshot.pending.length} events were copied before this: delete the target directories and run the migration again`;
      throw new FlumeMigrationError(message, { cause: err });
    }
    throw err;
  } finally {
    events.close();
    await channel.stop();
  }
  return { ...verified, migrated, transactions, target: opts.target, raisedCapacity };
}
