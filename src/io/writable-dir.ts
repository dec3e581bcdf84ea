/**
 * Whether a process may keep files in a directory, and file-system errors said without the
 * internal file names Node puts in its messages (a lock's or a snapshot's temp file): callers
 * name the file the user configured.
 */
import { type Stats, accessSync, constants, statSync } from "node:fs";
import path from "node:path";

const REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "read-only file system",
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  ENOTDIR: "a part of the path is not a directory",
  EISDIR: "is a directory",
  ENOENT: "no such file or directory",
  EIO: "input/output error",
};

/** A file-system error's cause in words, with its code ("permission denied (EACCES)"); other errors' messages as they are. */
export function ioReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code && REASONS[code]) return `${REASONS[code]} (${code})`;
  return code ?? (err as Error).message;
}

/**
 * Why this process could not create files in `dir` (creating it and its missing parents
 * first), or null when it could: checked on the nearest part of the path that exists.
 */
export function unwritableDirectory(dir: string): string | null {
  let existing = path.resolve(dir);
  for (;;) {
    let st: Stats | undefined;
    try {
      st = statSync(existing);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Missing, or under a file: the nearest existing part says which.
      if (code !== "ENOENT" && code !== "ENOTDIR") return `cannot look at ${existing}: ${ioReason(err)}`;
    }
    if (st) {
      if (!st.isDirectory()) return `${existing} is not a directory`;
      break;
    }
    const parent = path.dirname(existing);
    if (parent === existing) return `no part of ${dir} exists`;
    existing = parent;
  }
  try {
    accessSync(existing, constants.W_OK | constants.X_OK);
    return null;
  } catch (err) {
    const which = existing === path.resolve(dir) ? existing : `${existing} (where ${dir} would be created)`;
    return `cannot write in ${which}: ${ioReason(err)}`;
  }
}
