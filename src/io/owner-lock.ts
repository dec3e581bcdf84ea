/**
 * One owner per data directory or state file: a lock file naming the process that holds it.
 * It records more than the pid (the process's start time and the boot id), so a lock whose
 * holder died is taken over even when the pid was reused after a reboot or the holder is an
 * unreaped zombie. Created atomically by hard-linking a fully written temp file.
 *
 * Apache Flume's file channel holds its `in_use.lock` with a POSIX (fcntl) lock; a Flume that
 * runs is seen through /proc/locks, so its directories are not taken over either.
 */
import { existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { posixLockHolder, processAlive } from "./posix-locks.ts";
import { ioReason } from "./writable-dir.ts";

/** Who holds a lock. */
export interface LockOwner {
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22). */
  startTime?: number;
  bootId?: string;
  host?: string;
  /** What the holder is (e.g. "flume-ts agent a1, file channel c1"). */
  what?: string;
}

/** A lock held by another live process. */
export class LockHeldError extends Error {
  constructor(
    readonly file: string,
    readonly owner: LockOwner,
    message: string,
  ) {
    super(message);
    this.name = "LockHeldError";
  }
}

/** The lock file could not be made (a directory the process may not write, a full disk). */
export class LockFileError extends Error {
  constructor(
    readonly file: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "LockFileError";
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** This machine's boot id (Linux); undefined elsewhere. */
export function bootId(): string | undefined {
  return readText("/proc/sys/kernel/random/boot_id")?.trim();
}

/** A process's state letter and start time from /proc/<pid>/stat, or undefined when it does not exist. */
function procStat(pid: number): { state: string; startTime: number } | undefined {
  const text = readText(`/proc/${pid}/stat`);
  if (!text) return undefined;
  // The command name (field 2) is in parentheses and may hold spaces: read after the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0], startTime: Number(fields[19]) };
}

/** Whether the process a lock names is the one that wrote it and still runs. */
export function ownerAlive(owner: LockOwner): boolean {
  const boot = bootId();
  if (owner.bootId && boot && owner.bootId !== boot) return false; // written before a reboot
  if (owner.host && owner.host !== hostname()) return processAlive(owner.pid); // cannot tell better
  const stat = procStat(owner.pid);
  if (stat === undefined) return existsSync("/proc/self/stat") ? false : processAlive(owner.pid);
  if (stat.state === "Z" || stat.state === "X") return false; // dead, not yet reaped
  if (owner.startTime !== undefined && stat.startTime !== owner.startTime) return false; // pid reused
  return true;
}

export function selfOwner(what?: string): LockOwner {
  return { pid: process.pid, startTime: procStat(process.pid)?.startTime, bootId: bootId(), host: hostname(), what };
}

/** The owner recorded in a lock file: our JSON, or a bare pid (older Flume TS and tools). */
export function readOwner(file: string): LockOwner | null {
  const text = readText(file)?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return { pid: Number(text) };
  try {
    const o = JSON.parse(text) as LockOwner;
    return Number.isInteger(o.pid) && o.pid > 0 ? o : null;
  } catch {
    return null;
  }
}

/** The pid of another process holding a POSIX (fcntl) lock on the file (Apache Flume's in_use.lock). */
function fcntlHolder(file: string): number | undefined {
  const h = posixLockHolder(file);
  return h && h !== "unknown" ? (h.pid ?? 0) : undefined;
}

function describeOwner(o: LockOwner): string {
  return `process ${o.pid}${o.what ? ` (${o.what})` : ""}${o.host && o.host !== hostname() ? ` on ${o.host}` : ""}`;
}

/**
 * Who else holds the lock file, or null when it is free or stale (nothing is changed): what
 * an agent checks for every directory it will own before it starts anything.
 */
export function otherOwner(file: string): LockOwner | null {
  const { owner, alive } = lockState(file);
  return owner && alive && owner.pid !== process.pid ? owner : null;
}

/** What a lock file says about its holder, as an agent starting now would judge it. */
export interface LockState {
  /** The recorded (or POSIX-locking) holder; null when the file names none. */
  owner: LockOwner | null;
  /** Whether that holder still runs: a start would be refused. False: the lock is stale and a start takes it over. */
  alive: boolean;
}

/**
 * Reads a lock file without changing it, judging its holder as OwnerLock.acquire does (a
 * POSIX lock, then the recorded process), so tools report what `flume run` would do.
 */
export function lockState(file: string): LockState {
  const flume = fcntlHolder(file);
  if (flume !== undefined) return { owner: { pid: flume, what: "Apache Flume, or another holder of a POSIX lock on it" }, alive: true };
  const owner = readOwner(file);
  return { owner, alive: owner !== null && ownerAlive(owner) };
}

export class OwnerLock {
  private constructor(
    readonly file: string,
    /** The dead owner whose lock was taken over, if there was one. */
    readonly tookOverFrom: LockOwner | null,
  ) {}

  /**
   * Takes the lock or throws LockHeldError naming the live holder. `what` says, in messages,
   * what is locked ("directory /var/flume/data of file channel c1").
   */
  static acquire(file: string, what: string, holder?: string): OwnerLock {
    const tmp = `${file}.${process.pid}.tmp`;
    // Errors name what is locked and its directory, never this temp file (an inner detail).
    const cannot = (err: unknown) => new LockFileError(file, `cannot take the lock for ${what}: cannot write in ${path.dirname(file)}: ${ioReason(err)}`, { cause: err });
    try {
      writeFileSync(tmp, `${JSON.stringify(selfOwner(holder))}\n`);
    } catch (err) {
      throw cannot(err);
    }
    let tookOver: LockOwner | null = null;
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const flume = fcntlHolder(file);
        if (flume !== undefined) {
          throw new LockHeldError(file, { pid: flume }, `${what} is in use by process ${flume}, which holds a lock on ${file} (a running Apache Flume?); stop it first`);
        }
        try {
          linkSync(tmp, file);
          return new OwnerLock(file, tookOver);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw cannot(err);
        }
        const owner = readOwner(file);
        if (owner && owner.pid === process.pid) {
          throw new LockHeldError(file, owner, `${what} is already in use by this process (is it configured twice?)`);
        }
        if (owner && ownerAlive(owner)) {
          throw new LockHeldError(file, owner, `${what} is in use by ${describeOwner(owner)}; stop that agent or give this one its own (lock file ${file})`);
        }
        tookOver = owner;
        try {
          unlinkSync(file);
        } catch {
          // Someone else removed it first; try again.
        }
      }
      throw new LockHeldError(file, { pid: 0 }, `could not take the lock ${file}: another process keeps creating it`);
    } finally {
      try {
        unlinkSync(tmp);
      } catch {
        // already gone
      }
    }
  }

  release(): void {
    if (readOwner(this.file)?.pid !== process.pid) return;
    try {
      unlinkSync(this.file);
    } catch {
      // already gone
    }
  }
}

/** The lock file that guards a directory (Flume's name, so Flume and Flume TS see each other's). */
export function directoryLockFile(dir: string): string {
  return path.join(dir, "in_use.lock");
}
