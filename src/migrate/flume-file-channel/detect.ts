/**
 * Tells Apache Flume's file channel files apart from Flume TS's: both name data files `log-N`,
 * but only Flume writes `log-N.meta` beside them and `checkpoint.meta` / `inflightputs` /
 * `inflighttakes` in the checkpoint directory. The Flume TS file channel checks this before it
 * touches its directories, so pointing it at a Flume channel gives a clear, final error that
 * names the migrate command instead of a "bad magic" retried forever.
 */
import { ChannelException } from "../../core/errors.ts";
import { CHECKPOINT_META_FILE, INFLIGHT_PUTS_FILE, INFLIGHT_TAKES_FILE, META_SUFFIX, listNames, parseLogFileName } from "./format.ts";

export interface FlumeFormatEvidence {
  dir: string;
  /** The names that give it away, e.g. ["log-1", "log-1.meta"]. */
  names: string[];
}

/** The first directory that holds Flume's files, or null. */
export function findFlumeFiles(checkpointDirs: readonly string[], dataDirs: readonly string[]): FlumeFormatEvidence | null {
  for (const dir of dataDirs) {
    const names = new Set(listNames(dir));
    for (const name of [...names].sort()) {
      if (parseLogFileName(name) !== null && names.has(name + META_SUFFIX)) return { dir, names: [name, name + META_SUFFIX] };
    }
  }
  for (const dir of checkpointDirs) {
    const names = listNames(dir)
      .filter((n) => n === CHECKPOINT_META_FILE || n === INFLIGHT_PUTS_FILE || n === INFLIGHT_TAKES_FILE)
      .sort();
    if (names.length > 0) return { dir, names };
  }
  return null;
}

/** The command that migrates a Flume channel with these directories. */
export function migrateCommand(checkpointDir: string, dataDirs: readonly string[], backupCheckpointDir?: string): string {
  const backup = backupCheckpointDir ? ` --backupCheckpointDir ${backupCheckpointDir}` : "";
  return `flume channel migrate --from-flume --checkpointDir ${checkpointDir} --dataDirs ${dataDirs.join(",")}${backup} --to-checkpointDir NEW_CHECKPOINT_DIR --to-dataDirs NEW_DATA_DIR`;
}

/**
 * A Flume TS file channel configured on Apache Flume's directories. Not retryable: it stays
 * true until the configuration changes, so the supervisor gives up at once.
 */
export class FlumeFormatChannelError extends ChannelException {
  readonly retryable = false;

  constructor(
    readonly channel: string,
    readonly evidence: FlumeFormatEvidence,
    checkpointDir: string,
    dataDirs: readonly string[],
    backupCheckpointDir?: string,
  ) {
    super(
      `file channel ${channel}: ${evidence.dir} holds an Apache Flume file channel (${evidence.names.join(", ")}), which Flume TS cannot open as it is; ` +
        `nothing was changed and its events are still there. To keep them, stop the Flume agent and copy them into a new Flume TS channel: ` +
        `\`${migrateCommand(checkpointDir, dataDirs, backupCheckpointDir)}\`, then set checkpointDir and dataDirs of ${channel} to the new directories`,
    );
  }
}

/** Throws FlumeFormatChannelError when a channel's directories hold Flume's files. */
export function refuseFlumeFormat(channel: string, checkpointDir: string, dataDirs: readonly string[], backupCheckpointDir?: string): void {
  const ckptDirs = backupCheckpointDir ? [checkpointDir, backupCheckpointDir] : [checkpointDir];
  const found = findFlumeFiles(ckptDirs, dataDirs);
  if (found) throw new FlumeFormatChannelError(channel, found, checkpointDir, dataDirs, backupCheckpointDir);
}

