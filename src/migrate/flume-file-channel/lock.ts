/**
 * Whether an Apache Flume agent still holds a channel directory. Flume creates `in_use.lock`
 * in each directory and takes Java's FileChannel.tryLock on it: on Linux a POSIX (fcntl)
 * lock, which Node cannot query directly but which /proc/locks lists with the holder's pid and
 * the file's device and inode. The file itself stays behind when the JVM is killed, so its
 * presence alone proves nothing.
 */
import { statSync } from "node:fs";
import path from "node:path";
import { posixLockHolder } from "../../io/posix-locks.ts";
import { LOCK_FILE } from "./format.ts";

export interface LockState {
  file: string;
  /** held: a live process holds it; stale: the file exists but nobody locks it; unknown: the system does not tell. */
  state: "held" | "stale" | "unknown";
  /** The holder, when /proc/locks names it. */
  pid: number | null;
}

export interface LockCheck {
  /** One entry per directory that has an `in_use.lock`. */
  locks: LockState[];
  /** Set when the system does not tell (no readable /proc/locks): the caller must not assume the channel is stopped. */
  unknown: string | null;
}

/** Looks at the `in_use.lock` of each directory. `procLocks` is for tests. */
export function checkFlumeLocks(dirs: readonly string[], procLocks = "/proc/locks"): LockCheck {
  const files = dirs.map((d) => path.join(d, LOCK_FILE)).filter((f) => statSync(f, { throwIfNoEntry: false }) !== undefined);
  if (files.length === 0) return { locks: [], unknown: null };
  const states = files.map((file): LockState => {
    const holder = posixLockHolder(file, procLocks);
    if (holder === "unknown") return { file, state: "unknown", pid: null };
    return holder ? { file, state: "held", pid: holder.pid } : { file, state: "stale", pid: null };
  });
  const unknown = states.some((l) => l.state === "unknown") ? `${procLocks} cannot be read, so whether a Flume agent holds ${files.join(", ")} cannot be told` : null;
  return { locks: states, unknown };
}
