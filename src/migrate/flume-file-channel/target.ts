/**
 * Where a migration may write. The rule: every target directory is missing, empty, or holds
 * only a Flume TS file channel's own files (`checkpoint`, `checkpoint.tmp`, `log-N`,
 * `in_use.lock`); none is, contains or lies inside a Flume directory being read; and the
 * Flume TS channel found there, once opened, holds no event. So a migration never mixes its
 * events into other data, and an interrupted one is noticed (its target is not empty) instead
 * of being completed twice.
 */
import { statSync } from "node:fs";
import path from "node:path";
import { MigrationTargetError } from "./errors.ts";
import { findFlumeFiles } from "./detect.ts";
import { LOCK_FILE, listNames, parseLogFileName } from "./format.ts";

export interface TargetDirs {
  checkpointDir: string;
  dataDirs: readonly string[];
}

const TS_CHECKPOINT_NAMES = new Set(["checkpoint", "checkpoint.tmp", LOCK_FILE]);

function within(inner: string, outer: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** Throws MigrationTargetError when the target breaks the rule above (before it is opened). */
export function checkTarget(target: TargetDirs, sourceDirs: readonly string[]): void {
  const targets = [target.checkpointDir, ...target.dataDirs];
  if (new Set(targets.map((d) => path.resolve(d))).size !== targets.length) {
    throw new MigrationTargetError(`--to-checkpointDir and --to-dataDirs must be distinct directories (${targets.join(", ")})`);
  }
  for (const t of targets) {
    for (const s of sourceDirs) {
      if (within(path.resolve(t), path.resolve(s)) || within(path.resolve(s), path.resolve(t))) {
        throw new MigrationTargetError(`the target directory ${t} overlaps the Flume directory ${s}; the migration never writes into Flume's directories: choose a directory outside them`);
      }
    }
  }
  const file = targets.find((d) => statSync(d, { throwIfNoEntry: false })?.isDirectory() === false);
  if (file) throw new MigrationTargetError(`the target ${file} is a file, not a directory`);
  const flume = findFlumeFiles([target.checkpointDir], target.dataDirs);
  if (flume) throw new MigrationTargetError(`the target directory ${flume.dir} holds an Apache Flume file channel (${flume.names.join(", ")}); migrate into a new, empty directory`);
  const foreign = (dir: string, allowed: (name: string) => boolean) => {
    const other = listNames(dir).filter((n) => !allowed(n) && !n.startsWith(`${LOCK_FILE}.`));
    if (other.length > 0) {
      throw new MigrationTargetError(
        `the target directory ${dir} is not empty and not a Flume TS file channel directory (it has ${other.slice(0, 3).join(", ")}${other.length > 3 ? ", ..." : ""}); migrate into a new or empty directory`,
      );
    }
  };
  foreign(target.checkpointDir, (n) => TS_CHECKPOINT_NAMES.has(n));
  for (const d of target.dataDirs) foreign(d, (n) => n === LOCK_FILE || parseLogFileName(n) !== null);
}
