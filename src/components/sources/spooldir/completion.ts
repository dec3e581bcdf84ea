import { readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { syncDirectory } from "../../../io/atomic-write.ts";
import { type Current, type SpoolScope, SpoolViolation } from "./scope.ts";
import { FAILED_SUFFIX } from "./tracker.ts";

/** The identity a tracker_dir COMPLETED marker records of the file it marks. */
export interface CompletedIdentity {
  ino: number;
  size: number;
  mtimeMs: number;
}

/**
 * What becomes of a file: once every event of it is committed it is renamed with fileSuffix,
 * deleted (deletePolicy immediate) or marked COMPLETED in the tracker directory
 * (trackingPolicy tracker_dir); a file that breaks the spooling rules is set aside with a
 * FAILED marker holding the reason.
 */
export class Completion {
  constructor(private readonly scope: SpoolScope) {}

  /** Every event of the file is committed: check it did not change, then roll or delete it. */
  async complete(cur: Current): Promise<void> {
    const { tracker, options, logger, name } = this.scope;
    this.scope.current = null;
    await cur.handle.close().catch(() => {});
    let s;
    try {
      s = await stat(cur.path);
    } catch {
      logger.warn(`${name}: ${cur.path} disappeared after being read completely`);
      await this.forgetDurablePosition(cur);
      await tracker.clearPosition();
      return;
    }
    if (s.ino !== cur.ino || s.size !== cur.size || s.mtimeMs !== cur.mtimeMs) {
      const what = s.size !== cur.size ? `File has changed size since being read: ${cur.path} (${cur.size} -> ${s.size} bytes)` : `File has been modified since being read: ${cur.path}`;
      await this.setAside(cur, `${what}; all ${cur.size} bytes it had at pickup were delivered, later changes were not`, true);
      return;
    }
    // With a durable channel, the meta file (at the file's end) must survive a power loss before
    // the channel forgets, and the file's completion is made durable. Without one, a power loss
    // loses the channel's events anyway and a lost completion only has the file read again, as
    // in Flume, which flushes none of it. Those fsyncs held up the next file's pickup, and the
    // application writing into the spool, by hundreds of ms on a busy disk.
    if (this.scope.durable) await tracker.syncPosition().catch((err: Error) => logger.warn(`${name}: could not flush ${tracker.metaFile}: ${err.message}`));
    await this.forgetDurablePosition(cur);
    try {
      if (options.deletePolicy === "immediate") {
        logger.info(`${name}: Preparing to delete file ${cur.path}`);
        await rm(cur.path);
        await this.syncSpoolDir(cur);
      } else if (options.trackingPolicy === "rename") {
        const dest = `${cur.path}${options.fileSuffix}`;
        if (await tracker.exists(dest)) throw new SpoolViolation(`File name has been re-used with different files. Spooling assumptions violated for ${dest}`);
        logger.info(`${name}: Preparing to move file ${cur.path} to ${dest}`);
        await rename(cur.path, dest);
        await this.syncSpoolDir(cur);
      } else {
        const marker = tracker.marker(cur.path, options.fileSuffix);
        if (await tracker.exists(marker)) throw new SpoolViolation(`File name has been re-used with different files. Spooling assumptions violated for ${marker}`);
        logger.info(`${name}: Preparing to create tracker file for ${cur.path} at ${marker}`);
        // The file's identity, so a new file under the same name is told apart from it.
        await tracker.createMarker(marker, JSON.stringify({ ino: cur.ino, size: cur.size, mtimeMs: cur.mtimeMs }), this.scope.durable);
      }
    } catch (err) {
      await this.setAside(cur, (err as Error).message, true);
      return;
    }
    await tracker.clearPosition();
  }

  /** Makes a completed file's rename (or removal) durable for a durable channel; a lost one has it read again. */
  private async syncSpoolDir(cur: Current): Promise<void> {
    if (!this.scope.durable) return;
    await syncDirectory(path.dirname(cur.path)).catch((err: Error) => this.scope.logger.warn(`${this.scope.name}: could not flush directory ${path.dirname(cur.path)}: ${err.message}`));
  }

  /**
   * Tells a durable channel that this source is done with the file. Otherwise the channel keeps
   * the file's last position, and after a restart a new file under the same name (or the same
   * file once its FAILED marker is removed) would be taken for it: set aside as reused or
   * modified, or resumed mid-file. The marker is no position, so the meta file decides.
   */
  private async forgetDurablePosition(cur: Current): Promise<void> {
    const name = this.scope.name;
    if (!this.scope.durable) return;
    try {
      await this.scope.processor().processEventBatch([], { source: name, value: JSON.stringify({ done: path.resolve(cur.path) }) });
    } catch (err) {
      this.scope.logger.warn(`${name}: could not record in the channel that ${cur.path} is done: ${(err as Error).message}`);
    }
  }

  /**
   * For trackingPolicy tracker_dir: "none" when the file has no COMPLETED marker, else the
   * identity the marker records (null for an empty marker of an older version).
   */
  async completedIdentity(file: string): Promise<"none" | CompletedIdentity | null> {
    let text: string;
    try {
      text = await readFile(this.scope.tracker.marker(file, this.scope.options.fileSuffix), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return "none";
      return null;
    }
    try {
      const o = JSON.parse(text) as { ino?: unknown; size?: unknown; mtimeMs?: unknown };
      if (typeof o.ino === "number" && typeof o.size === "number" && typeof o.mtimeMs === "number") return { ino: o.ino, size: o.size, mtimeMs: o.mtimeMs };
    } catch {
      // empty or foreign content
    }
    return null;
  }

  /** Logs why a file is set aside and writes its FAILED marker (holding the reason). */
  async markFailed(file: string, reason: string): Promise<void> {
    const { tracker, logger, name } = this.scope;
    const marker = tracker.marker(file, FAILED_SUFFIX);
    this.scope.counter.inc("GenericProcessingFail");
    logger.error(`${name}: ${reason}. The file ${file} is set aside (not deleted); remove ${marker} to read it again.`);
    try {
      await tracker.createMarker(marker, `${reason}\n`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") logger.error(`${name}: could not write ${marker}: ${(err as Error).message}`);
    }
  }

  /**
   * Records the file as set aside (a FAILED marker holding the reason) and moves on. The file
   * itself is left as it is; deleting the marker makes the source read it again.
   */
  async setAside(cur: Current, reason: string, closed = false): Promise<void> {
    if (this.scope.current === cur) this.scope.current = null;
    if (!closed) await cur.handle.close().catch(() => {});
    await this.markFailed(cur.path, reason);
    const saved = await this.scope.tracker.readPosition();
    if (saved && saved.file === path.resolve(cur.path)) await this.scope.tracker.clearPosition();
    await this.forgetDurablePosition(cur);
  }
}
