/**
 * Whether an Apache Flume agent still holds a channel directory. Flume creates `in_use.lock`
 * in each directory and takes Java's FileChannel.tryLock on it: on Linux a POSIX (fcntl)
 * lock, which Node cannot query directly but which /proc/locks lists with the holder's pid and
 * the file's device and inode. The file itself stays behind when the JVM is killed, so its
 * presence alone proves nothing.
 */
import { readFileSync, readdirSync, readlinkSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { processAlive } from "../../components/channels/file/dir-lock.ts";
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

interface KernelLock {
  pid: number;
  major: number;
  minor: number;
  inode: bigint;
}

/** Parses /proc/locks lines: `1: POSIX  ADVISORY  WRITE 1234 fd:01:567 0 EOF` (blocked waiters have `->` after the id). */
export function parseProcLocks(text: string): KernelLock[] {
  const out: KernelLock[] = [];
  for (const line of text.split("\n")) {
    const words = line.trim().split(/\s+/).filter((w) => w !== "->");
    if (words.length < 6) continue;
    const m = /^([0-9a-f]+):([0-9a-f]+):(\d+)$/i.exec(words[5]);
    if (!m) continue;
    out.push({ pid: Number(words[4]), major: Number.parseInt(m[1], 16), minor: Number.parseInt(m[2], 16), inode: BigInt(m[3]) });
  }
  return out;
}

/** glibc's major()/minor() of a dev_t. */
function devParts(dev: bigint): { major: number; minor: number } {
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  return { major: Number(major), minor: Number(minor) };
}

/** Whether process pid has `file` open (for a device number /proc/locks and stat disagree on, as on btrfs). */
function hasOpen(pid: number, file: string): boolean {
  try {
    const fdDir = `/proc/${pid}/fd`;
    return readdirSync(fdDir).some((fd) => {
      try {
        return readlinkSync(path.join(fdDir, fd)) === file;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

/** Looks at the `in_use.lock` of each directory. `procLocks` is for tests. */
export function checkFlumeLocks(dirs: readonly string[], procLocks = "/proc/locks"): LockCheck {
  const files = dirs.map((d) => path.join(d, LOCK_FILE)).filter((f) => statSync(f, { throwIfNoEntry: false }) !== undefined);
  if (files.length === 0) return { locks: [], unknown: null };
  let kernel: KernelLock[];
  try {
    kernel = parseProcLocks(readFileSync(procLocks, "utf8"));
  } catch {
    return { locks: files.map((file) => ({ file, state: "unknown", pid: null })), unknown: `${procLocks} cannot be read, so whether a Flume agent holds ${files.join(", ")} cannot be told` };
  }
  const locks = files.map((file): LockState => {
    const st = statSync(file, { bigint: true });
    const { major, minor } = devParts(st.dev);
    const real = realpathSync(file);
    for (const k of kernel) {
      if (k.inode !== st.ino) continue;
      const sameDevice = k.major === major && k.minor === minor;
      if (!sameDevice && !(k.pid > 0 && hasOpen(k.pid, real))) continue;
      // Locks of processes in other pid namespaces show no usable pid: still held.
      if (k.pid <= 0) return { file, state: "held", pid: null };
      if (processAlive(k.pid)) return { file, state: "held", pid: k.pid };
    }
    return { file, state: "stale", pid: null };
  });
  return { locks, unknown: null };
}
