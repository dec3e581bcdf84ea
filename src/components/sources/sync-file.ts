import { open } from "node:fs/promises";

/**
 * Durability helpers for small state files (positions, meta, markers). A rename is atomic but
 * not durable: after a power loss the new name may point at an empty file, or the rename may
 * be gone. Write + fdatasync before the rename, fsync of the directory after it.
 */

/** Creates or replaces `file` with `content` and flushes it to disk (flag "wx": must not exist). */
export async function writeFileSynced(file: string, content: string, flag: "w" | "wx" = "w"): Promise<void> {
  const h = await open(file, flag);
  try {
    await h.writeFile(content);
    await h.datasync();
  } finally {
    await h.close();
  }
}

/** Makes the names created, renamed or removed in `dir` durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const h = await open(dir, "r");
  try {
    await h.sync();
  } finally {
    await h.close();
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
