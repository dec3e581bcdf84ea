/**
 * Writing small state files (checkpoints, positions, meta files, markers) so that a crash or a
 * power loss leaves the old content or the new one, never a torn or empty file: write a
 * temporary file, flush it, rename it over the old one, flush the directory. A rename alone is
 * atomic but not durable (after a power loss the new name may point at an empty file, or the
 * rename may be gone). I/O errors are thrown, never swallowed: an EIO here means the state on
 * disk is not what the caller believes.
 */
import { closeSync, fdatasyncSync, fsyncSync, mkdirSync, openSync, renameSync, writeFileSync } from "node:fs";
import { mkdir, open, rename } from "node:fs/promises";
import path from "node:path";

export interface AtomicWriteOptions {
  /** Flush the file and the directory before returning (default true). */
  durable?: boolean;
  /** With durable: also flush the directory (default true; false when a later write in it does). */
  syncDirectory?: boolean;
}

/** Replaces `file` with `data` atomically (and, by default, durably). */
export async function writeFileAtomic(file: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const durable = options.durable ?? true;
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  await writeFileFully(tmp, data, "w", durable);
  await rename(tmp, file);
  if (durable && (options.syncDirectory ?? true)) await syncDirectory(path.dirname(file));
}

/** writeFileAtomic on the calling thread (durable), for callers whose I/O must finish before they go on. */
export function writeFileAtomicSync(file: string, data: string | Uint8Array): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeFileSync(fd, data);
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  syncDirectorySync(path.dirname(file));
}

/** Creates or replaces `file` with `data` and flushes it to disk (flag "wx": must not exist). */
export async function writeFileDurably(file: string, data: string | Uint8Array, flag: "w" | "wx" = "w"): Promise<void> {
  await writeFileFully(file, data, flag, true);
}

async function writeFileFully(file: string, data: string | Uint8Array, flag: "w" | "wx", flush: boolean): Promise<void> {
  const h = await open(file, flag);
  try {
    await h.writeFile(data);
    if (flush) await h.datasync();
  } finally {
    await h.close();
  }
}

/** Filesystems that cannot flush a directory say so this way; the rename is still atomic there. */
function unsupported(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "EINVAL" || code === "ENOTSUP" || code === "EISDIR";
}

/** Makes the names created, renamed or removed in `dir` durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const h = await open(dir, "r");
  try {
    await h.sync();
  } catch (err) {
    if (!unsupported(err)) throw err;
  } finally {
    await h.close();
  }
}

/** The same, synchronously (for code that runs between two writes of its own). */
export function syncDirectorySync(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } catch (err) {
    if (!unsupported(err)) throw err;
  } finally {
    closeSync(fd);
  }
}

/** Flushes an existing file's content to disk; a missing file is nothing to flush. */
export async function syncExistingFile(file: string): Promise<boolean> {
  let h;
  try {
    h = await open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
  try {
    await h.datasync();
  } finally {
    await h.close();
  }
  return true;
}
