/**
 * A directory lock that a dead process does not hold forever: `in_use.lock` (Flume's name)
 * holding the owner's pid, created atomically by hard-linking a fully written temp file. A lock
 * whose pid no longer runs is stale and taken over.
 */
import { linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ChannelException } from "../../../core/errors.ts";

export const LOCK_FILE = "in_use.lock";

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readOwner(file: string): number | null {
  try {
    const pid = Number(readFileSync(file, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

export class DirLock {
  private constructor(readonly file: string) {}

  /** Takes the lock on dir or throws a ChannelException naming the process that holds it. */
  static acquire(dir: string, channel: string): DirLock {
    const file = path.join(dir, LOCK_FILE);
    const tmp = path.join(dir, `${LOCK_FILE}.${process.pid}.tmp`);
    writeFileSync(tmp, `${process.pid}\n`);
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          linkSync(tmp, file);
          return new DirLock(file);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        }
        const owner = readOwner(file);
        if (owner !== null && (owner === process.pid || processAlive(owner))) {
          throw new ChannelException(
            `file channel ${channel}: directory ${dir} is in use by process ${owner}${owner === process.pid ? " (this process: is another channel configured with the same directory?)" : ""}; ` +
              `stop that agent or give this channel its own checkpointDir and dataDirs (lock file ${file}; if process ${owner} is not a Flume agent, delete that file)`,
          );
        }
        // Stale: its owner is gone (or never wrote its pid, which our link protocol rules out).
        try {
          unlinkSync(file);
        } catch {
          // Someone else removed it first; try again.
        }
      }
      throw new ChannelException(`file channel ${channel}: could not take the lock ${file}; another process keeps creating it`);
    } finally {
      try {
        unlinkSync(tmp);
      } catch {
        // already gone
      }
    }
  }

  release(): void {
    if (readOwner(this.file) !== process.pid) return;
    try {
      unlinkSync(this.file);
    } catch {
      // already gone
    }
  }
}
