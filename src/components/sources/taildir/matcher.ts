import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { compileJavaFullMatch } from "../../../java/regex.ts";
import { STAT_SLICE, mapInSlices } from "../../../io/in-slices.ts";

/** A file that matched a group's pattern, with what stat said about it. */
export interface MatchedFile {
  path: string;
  inode: number;
  size: number;
  mtimeMs: number;
}

/**
 * One TAILDIR file group: a directory and a regular expression on file names (the last path
 * element of `filegroups.<g>`), as Flume's TaildirMatcher. The directory listing is cached
 * until the directory's mtime changes (cachePatternMatching); the files themselves are
 * stat'ed on every call, since appends do not change the directory.
 */
export class FileGroupMatcher {
  readonly directory: string;
  private readonly regex: RegExp;
  private cachedNames: string[] | null = null;
  private lastDirMtime = -1;
  private lastCheck = -1;

  constructor(
    readonly group: string,
    readonly pattern: string,
    private readonly cache: boolean,
  ) {
    this.directory = path.dirname(path.resolve(pattern));
    this.regex = compileJavaFullMatch(path.basename(pattern), `filegroups.${group}`);
  }

  /** True when a file of this name in the directory belongs to the group. */
  matchesName(name: string): boolean {
    return this.regex.test(name);
  }

  /** The next match() lists the directory again (a file-system event said names changed). */
  invalidate(): void {
    this.cachedNames = null;
  }

  /** Matching regular files, oldest modification first (as Flume). */
  async match(nowMs: number): Promise<MatchedFile[]> {
    const dirStat = await stat(this.directory);
    const dirMtime = Math.floor(dirStat.mtimeMs / 1000) * 1000;
    // A directory changed within the current second may change again unseen: list again.
    if (!this.cache || this.cachedNames === null || this.lastDirMtime < dirMtime || !(dirMtime < this.lastCheck)) {
      const names = await readdir(this.directory);
      this.cachedNames = names.filter((n) => this.regex.test(n));
      this.lastDirMtime = dirMtime;
      this.lastCheck = Math.floor(nowMs / 1000) * 1000;
    }
    const paths = this.cachedNames.map((name) => path.join(this.directory, name));
    // Deleted since the listing: null.
    const stats = await mapInSlices(paths, STAT_SLICE, (p) => stat(p).catch(() => null));
    const out: MatchedFile[] = [];
    for (let i = 0; i < paths.length; i++) {
      const s = stats[i];
      if (s?.isFile()) out.push({ path: paths[i], inode: s.ino, size: s.size, mtimeMs: s.mtimeMs });
    }
    out.sort((a, b) => a.mtimeMs - b.mtimeMs);
    return out;
  }
}
