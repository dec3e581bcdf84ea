import { stat } from "node:fs/promises";
import path from "node:path";
import type { Channel } from "../../../core/channel.ts";
import type { Fingerprint } from "./fingerprint.ts";
import { InodeFinder } from "./inodes.ts";
import type { MatchedFile } from "./matcher.ts";
import { POSITION_RESET_COUNTER } from "./options.ts";
import type { PositionKeeper } from "./positions.ts";
import type { Rotation, TakeUp } from "./rotation.ts";
import type { TaildirScope } from "./scope.ts";
import { mergeState } from "./state.ts";
import type { TailFile } from "./tail-file.ts";
import type { FileEvents } from "./watching.ts";

/**
 * While a source reads on after batch limits, a look at every file (a stat each) that no
 * file-system event asked for waits this many times as long as the last one took, so that
 * polling costs a busy tailer a few percent of its time: at 4,000 files a look took 100-200 ms,
 * and one every 500 ms (CONTINUE_WITHOUT_LOOK_MS in reader.ts) more than doubled the CPU time of reading them.
 */
const SCAN_SPACING_FACTOR = 20;

/** A file matching a group's pattern. */
interface Matched {
  group: string;
  file: MatchedFile;
}

/**
 * Finding the files: at start each saved record is placed on its file (found by inode, also
 * after a rename out of the pattern); later looks list the directories again (or only stat the
 * files events named) for new files, renames, rotations, truncations, growth and deletions.
 */
export class Discovery {
  private lastFullScan = -Infinity;
  /** How long the last look at every file took (ms). */
  private lastFullScanMs = 0;

  constructor(
    private readonly scope: TaildirScope,
    private readonly positions: PositionKeeper,
    private readonly rotation: Rotation,
    private readonly events: FileEvents,
  ) {}

  private async listMatched(): Promise<Matched[]> {
    const { matchers, options, logger, name } = this.scope;
    const out: Matched[] = [];
    const now = this.scope.clock.now();
    for (const m of matchers) {
      try {
        for (const file of await m.match(now)) {
          // Never tail our own state files (a pattern like .* in their directory).
          if (file.path.startsWith(options.positionFile)) continue;
          out.push({ group: m.group, file });
        }
      } catch (err) {
        logger.error(`${name}: I/O error while listing ${m.directory}: ${(err as Error).message}`);
      }
    }
    return out;
  }

  /** Startup: match files, then place each at its saved position, found by inode. */
  async restore(channels: readonly Channel[]): Promise<void> {
    const { files, missing, verifiedCopy, matchers, logger, name } = this.scope;
    const { journal, channel, resetBecause } = await this.positions.savedState(channels);
    const merged = mergeState(journal, channel);
    for (const note of merged.notes) logger.warn(`${name}: ${note}`);
    this.positions.seq = merged.seq;
    const matched = await this.listMatched();
    const byInode = new Map<number, Matched>();
    for (const m of matched) if (!byInode.has(m.file.inode)) byInode.set(m.file.inode, m);
    const groupOfDir = (dir: string) => matchers.find((m) => m.directory === dir)?.group ?? matchers[0].group;

    // Every record first, then the checks (a copy's original must be known when it is checked).
    const placed: { tf: TailFile; fp: Fingerprint | null }[] = [];
    const inodes = new InodeFinder();
    for (const r of merged.records) {
      const m = byInode.get(r.inode);
      let tf: TailFile;
      if (m) {
        tf = this.scope.openFile(m.file.path, r.inode, m.group, r.copyOf === undefined ? r.pos : 0);
        tf.size = m.file.size;
      } else {
        // Not matched any more: rotated away by rename? Look for the inode in its directory.
        const found = await inodes.find(path.dirname(r.file), r.inode);
        if (!found) {
          logger.info(`Missing file: ${r.file}, inode: ${r.inode}, pos: ${r.pos}`);
          if (r.copyOf === undefined && r.fp) missing.set(r.inode, r);
          continue;
        }
        tf = this.scope.openFile(found.path, r.inode, groupOfDir(path.dirname(r.file)), r.copyOf === undefined ? r.pos : 0);
        tf.size = found.size;
        tf.matched = false;
        if (r.copyOf === undefined) logger.info(`${name}: ${r.file} (inode ${r.inode}) was rotated to ${found.path}; reading it to its end from pos ${r.pos}`);
      }
      tf.seq = r.seq;
      if (r.copyOf !== undefined) {
        tf.shadowOf = r.copyOf;
        verifiedCopy.set(r.inode, r.pos);
      } else if (r.fp) tf.adoptFingerprint(r.fp);
      files.set(r.inode, tf);
      placed.push({ tf, fp: r.fp });
    }
    // Copies whose original is not tracked any more: continue them where the original was.
    for (const { tf } of placed) {
      if (tf.shadowOf === null || files.has(tf.shadowOf)) continue;
      const original = missing.get(tf.shadowOf);
      const fp = original?.fp ?? null;
      const full = fp !== null && tf.size >= fp.tailEnd && (await tf.holds(fp));
      this.rotation.releaseShadow(tf, original ? original.pos : 0, full ? fp : null, "is gone");
    }
    for (const { tf, fp } of placed) {
      if (tf.shadowOf !== null || tf.pos === 0) continue;
      // Smaller than the position, or other content: truncated (and rewritten) while we were down.
      if (tf.size < tf.pos || (fp && !(await tf.holds(fp)))) await this.rotation.handleShrink(tf, tf.size);
      // The head's bytes, to fingerprint later positions (and the whole fingerprint if none was saved).
      else await tf.loadFingerprint();
    }
    let takenUp = 0;
    for (const m of matched) {
      if (files.has(m.file.inode)) continue;
      await this.takeUp(m);
      takenUp++;
    }
    if (resetBecause !== null) this.reportReset(resetBecause, takenUp);
  }

  /** A start without the positions a damaged file held: said once, loudly, and counted. */
  private reportReset(why: string, files: number): void {
    this.scope.counter.inc(POSITION_RESET_COUNTER);
    const where = this.scope.options.skipToEnd
      ? "from their end (skipToEnd): lines written while the agent was stopped are skipped"
      : "from their start: lines delivered before are delivered again";
    this.scope.logger.error(`${this.scope.name}: ${why}; starting without positions: ${files} matched file(s) will be read ${where} (positionFile.onCorrupt = fail refuses to start instead)`);
  }

  /** Tracks a file seen for the first time (see Rotation.takeUpNewFile); records it before it is read. */
  private async takeUp(m: Matched): Promise<void> {
    const take: TakeUp = this.scope.options.skipToEnd ? { pos: m.file.size, shadowOf: null, verified: 0 } : await this.rotation.takeUpNewFile(m.file);
    const tf = this.scope.openFile(m.file.path, m.file.inode, m.group, take.pos);
    tf.shadowOf = take.shadowOf;
    tf.size = m.file.size;
    if (take.shadowOf !== null) this.scope.verifiedCopy.set(tf.inode, take.verified);
    this.scope.files.set(m.file.inode, tf);
    if (tf.pos > 0 && tf.shadowOf === null) await tf.loadFingerprint();
    this.positions.recordChange(tf);
    // Before the original is read on: its position points into the content written after the truncation.
    const original = take.truncatedOriginal;
    if (original && this.scope.files.get(original.inode) === original) await this.rotation.handleShrink(original, await original.currentSize());
  }

  /**
   * Re-lists and re-stats: new files, rotations, truncations, growth, idleness. `busy`: the
   * source is going on after a batch limit (it has more to read), not back from a sleep.
   */
  async updateFiles(busy: boolean): Promise<void> {
    const { files, logger, name } = this.scope;
    const events = this.events;
    const maxBackoffSleep = this.scope.options.maxBackoffSleep;
    const now = this.scope.clock.now();
    const sinceFull = now - this.lastFullScan;
    // A look no event asked for is the polling fallback (directories without events, and files
    // whose changes send none: NFS, some FUSE and container mounts); a busy source spaces them.
    const spacing = busy ? Math.min(maxBackoffSleep, SCAN_SPACING_FACTOR * this.lastFullScanMs) : 0;
    const pollDue = (!events.eventSeen || !events.watching) && sinceFull >= spacing;
    const full = events.fullScanDue || pollDue || sinceFull >= maxBackoffSleep;
    const dirty = events.takeDirty();
    events.eventSeen = false;
    if (!full) {
      for (const p of dirty) {
        const tf = events.trackedAt(p);
        if (!tf) {
          events.fullScanDue = true;
          continue;
        }
        let s;
        try {
          s = await stat(p);
        } catch {
          events.fullScanDue = true; // gone: a rename event follows, or the next full look sees it
          continue;
        }
        if (s.ino !== tf.inode) {
          events.fullScanDue = true;
          continue;
        }
        await this.rotation.updateTracked(tf, s.size, now);
      }
      if (!events.fullScanDue) return;
    }
    events.fullScanDue = false;
    this.lastFullScan = now;
    if (!events.watching) events.start();
    const matched = await this.listMatched();
    const seen = new Set<number>();
    const fresh: Matched[] = [];
    for (const m of matched) {
      if (seen.has(m.file.inode)) continue;
      seen.add(m.file.inode);
      const tf = files.get(m.file.inode);
      if (!tf) {
        fresh.push(m);
        continue;
      }
      // Renamed to another matching name: same inode, same content, same position.
      if (tf.path !== m.file.path) {
        tf.path = m.file.path;
        this.positions.recordChange(tf);
      }
      tf.matched = true;
      await this.rotation.updateTracked(tf, m.file.size, now);
    }
    const inodes = new InodeFinder();
    for (const tf of [...files.values()]) {
      if (seen.has(tf.inode) || !files.has(tf.inode)) continue;
      // Rotated away (or deleted): keep reading through the open descriptor until drained.
      if (tf.matched) {
        tf.matched = false;
        tf.lastActive = now;
        logger.info(`${name}: ${tf.path} (inode ${tf.inode}) no longer matches; reading it to its end`);
      }
      if (!tf.isOpen) {
        const found = await inodes.find(path.dirname(tf.path), tf.inode);
        if (!found) {
          await this.retire(tf, "deleted");
          continue;
        }
        if (tf.path !== found.path) {
          tf.path = found.path;
          this.positions.recordChange(tf);
        }
        await this.rotation.updateTracked(tf, found.size, now);
      } else {
        await this.rotation.updateTracked(tf, await tf.currentSize(), now);
      }
    }
    // Taking up new files is left out: a start with thousands of them is not what a look costs.
    this.lastFullScanMs = this.scope.clock.now() - now;
    for (const m of fresh) {
      if (files.has(m.file.inode)) continue; // already taken up as a copytruncate copy
      // An empty new file may be a copy just begun: decide once it has content.
      if (m.file.size === 0 && !this.scope.options.skipToEnd) continue;
      await this.takeUp(m);
    }
  }

  /** Lets go of a file rotated away and drained, or deleted: its shadows start, its record goes. */
  async retire(tf: TailFile, why: string): Promise<void> {
    await this.rotation.releaseShadows(tf, tf.pos, tf.fingerprint(), why === "deleted" ? "was deleted" : "was rotated away");
    this.scope.files.delete(tf.inode);
    this.scope.verifiedCopy.delete(tf.inode);
    this.positions.recordGone(tf);
    void tf.release();
    this.scope.logger.info(`Closed file: ${tf.path}, inode: ${tf.inode}, pos: ${tf.pos} (${why})`);
  }
}
