/**
 * Who holds a POSIX (fcntl) lock on a file, from /proc/locks (Linux). Java's FileChannel.tryLock
 * takes such a lock, which is how Apache Flume holds its channel directories' `in_use.lock`;
 * Node cannot query fcntl locks itself, but /proc/locks lists each with the holder's pid and
 * the file's device and inode.
 */
import { readFileSync, readdirSync, readlinkSync, realpathSync, statSync } from "node:fs";
import path from "node:path";

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

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The holder of a POSIX lock on `file` other than this process: its pid (null when it is in
 * another pid namespace), `undefined` when nobody holds one, "unknown" when the system does not
 * tell (no readable /proc/locks). `procLocks` is for tests.
 */
export function posixLockHolder(file: string, procLocks = "/proc/locks"): { pid: number | null } | undefined | "unknown" {
  const st = statSync(file, { bigint: true, throwIfNoEntry: false });
  if (!st) return undefined;
  let kernel: KernelLock[];
  try {
    kernel = parseProcLocks(readFileSync(procLocks, "utf8"));
  } catch {
    return "unknown";
  }
  const { major, minor } = devParts(st.dev);
  const real = realpathSync(file);
  for (const k of kernel) {
    if (k.inode !== st.ino || k.pid === process.pid) continue;
    const sameDevice = k.major === major && k.minor === minor;
    if (!sameDevice && !(k.pid > 0 && hasOpen(k.pid, real))) continue;
    // Locks of processes in other pid namespaces show no usable pid: still held.
    if (k.pid <= 0) return { pid: null };
    if (processAlive(k.pid)) return { pid: k.pid };
  }
  return undefined;
}
