import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { STAT_SLICE, mapInSlices } from "../../../io/in-slices.ts";

export interface FoundFile {
  path: string;
  size: number;
}

/**
 * Finds files by inode in their directories (a file renamed to a name that does not match, or
 * gone), listing each directory once for all the files looked for in it: files let go together
 * (a cleanup deleting hundreds of idle logs) would otherwise list and stat it once each.
 * Made for one look at the files; a later look makes a new one.
 */
export class InodeFinder {
  private readonly dirs = new Map<string, Promise<Map<number, FoundFile>>>();

  find(dir: string, inode: number): Promise<FoundFile | null> {
    let listing = this.dirs.get(dir);
    if (!listing) {
      listing = this.list(dir);
      this.dirs.set(dir, listing);
    }
    return listing.then((files) => files.get(inode) ?? null);
  }

  /** The directory's regular files by inode (the first name of a file with several). */
  async list(dir: string): Promise<Map<number, FoundFile>> {
    const files = new Map<number, FoundFile>();
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return files;
    }
    const paths = names.map((n) => path.join(dir, n));
    // Gone since the listing: null.
    const stats = await mapInSlices(paths, STAT_SLICE, (p) => stat(p).catch(() => null));
    for (let i = 0; i < paths.length; i++) {
      const s = stats[i];
      if (s?.isFile() && !files.has(s.ino)) files.set(s.ino, { path: paths[i], size: s.size });
    }
    return files;
  }
}
