import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { syncDirectory, syncExistingFile, writeFileAtomic, writeFileDurably } from "../../../io/atomic-write.ts";

/** The identity and committed position of the file being read. */
export interface SpoolPosition {
  file: string;
  ino: number;
  size: number;
  mtimeMs: number;
  pos: number;
}

/** Our meta file (Flume's is an Avro file named .flumespool-main.meta; this one is JSON). */
export const META_FILE = ".flumespool-main.meta.json";
/** Marker suffix of files set aside after an error. */
export const FAILED_SUFFIX = ".FAILED";

export function parsePosition(text: string): SpoolPosition | null {
  try {
    const o = JSON.parse(text) as Partial<SpoolPosition>;
    if (typeof o.file === "string" && typeof o.ino === "number" && typeof o.size === "number" && typeof o.mtimeMs === "number" && typeof o.pos === "number") {
      return { file: o.file, ino: o.ino, size: o.size, mtimeMs: o.mtimeMs, pos: o.pos };
    }
  } catch {
    // A torn or foreign meta file: treated as none.
  }
  return null;
}

/**
 * The tracker directory: the meta file with the committed position of the file being read,
 * COMPLETED markers (trackingPolicy tracker_dir) and FAILED markers of files set aside.
 */
export class Tracker {
  readonly metaFile: string;
  /**
   * The meta file is known not to exist (this tracker removed it or found none): only this
   * tracker writes it, and an idle source would otherwise look for it at every poll.
   */
  private absent = false;

  constructor(
    readonly spoolDir: string,
    readonly dir: string,
  ) {
    this.metaFile = path.join(dir, META_FILE);
  }

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const s = await stat(this.dir);
    if (!s.isDirectory()) throw new Error(`Specified meta directory is not a directory: ${this.dir}`);
  }

  async readPosition(): Promise<SpoolPosition | null> {
    if (this.absent) return null;
    try {
      return parsePosition(await readFile(this.metaFile, "utf8"));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") this.absent = true;
      return null;
    }
  }

  /**
   * Written after each committed batch; atomically, so a crash leaves the old or the new one.
   * Not flushed per batch (that would cost an fsync per batch): a durable channel stores the
   * same position with the events, and syncPosition() makes it durable before it matters.
   */
  async writePosition(p: SpoolPosition): Promise<void> {
    this.absent = false;
    await writeFileAtomic(this.metaFile, JSON.stringify(p), { durable: false });
  }

  /**
   * Flushes the meta file and its name to disk: done before a file is marked done, since from
   * then on (the channel forgets the position) the meta file alone says it was read to its end.
   */
  async syncPosition(): Promise<void> {
    if (await syncExistingFile(this.metaFile)) await syncDirectory(this.dir);
  }

  async clearPosition(): Promise<void> {
    await rm(this.metaFile, { force: true });
    this.absent = true;
  }

  /** Path of a marker for a spool file (relative path kept, so subdirectories do not clash). */
  marker(file: string, suffix: string): string {
    return path.join(this.dir, `${path.relative(this.spoolDir, file)}${suffix}`);
  }

  async exists(p: string): Promise<boolean> {
    try {
      await stat(p);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * A marker lost to a power loss would have the whole file read again: `durable` flushes it and
   * its name to disk (for a durable channel, whose events would otherwise be delivered twice).
   */
  async createMarker(p: string, content = "", durable = true): Promise<void> {
    await mkdir(path.dirname(p), { recursive: true });
    if (!durable) return writeFile(p, content, { flag: "wx" });
    await writeFileDurably(p, content, "wx");
    await syncDirectory(path.dirname(p));
  }
}
