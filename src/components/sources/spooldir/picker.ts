import { open, readdir, stat } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import type { TimerHandle } from "../../../core/clock.ts";
import type { Sleeper } from "../../../core/sleeper.ts";
import { DirectoryWatcher, type DirEventKind } from "../../../io/dir-watch.ts";
import { mapInSlices } from "../../../io/in-slices.ts";
import { compileJavaFullMatch } from "../../../java/regex.ts";
import type { Completion } from "./completion.ts";
import type { Deserializer } from "./deserializers.ts";
import { type Current, type SpoolScope, SpoolViolation } from "./scope.ts";
import { FAILED_SUFFIX, type SpoolPosition } from "./tracker.ts";

/** Quiet time after a file-system event before the spool is looked at (a file may still be being written). */
const EVENT_SETTLE_MS = 20;
/**
 * The spool is listed again (a stat and a marker check per file) when the last listing is older
 * than pollDelay or this many times as long as it took, whichever is longer; meanwhile files come
 * from that listing, and new names from file-system events are merged in. Listing before every
 * file made a backlog quadratic: 2,000 files went at 5 files/s.
 */
const RELIST_SPACING_FACTOR = 20;
/** Files a listing checks at once (stat, markers; see mapInSlices). */
const CHECK_SLICE = 64;

/** A file that may be read next, from a listing or a file-system event. */
export interface Candidate {
  path: string;
  mtimeMs: number;
  name: string;
}

/**
 * Which file is read next: the spool's candidates (matching the patterns, not completed, not
 * set aside) in consumeOrder, from a listing kept between looks and merged with the names
 * file-system events report; a file is opened only if it is the one a saved position names, or
 * not a file already completed under its name.
 */
export class FilePicker {
  private readonly include: RegExp;
  private readonly ignore: RegExp;
  private readonly watchers = new Map<string, DirectoryWatcher>();
  private settleTimer: TimerHandle | null = null;
  private firstEventAt: number | null = null;
  /** A file-system event ended (or came during) the last look: look again before sleeping. */
  wakePending = false;
  /** Candidates of the last listing not tried yet, the next one last (taking one is a pop). */
  private queue: Candidate[] = [];
  /** Paths that file-system events named since the last look. */
  private readonly reported = new Set<string>();
  /** An event without a name, or a new directory: the next look lists the spool again. */
  private relistDue = true;
  private listedAt = -Infinity;
  private listMs = 0;
  /** Files whose open failed (path -> error), tried after the others. */
  private readonly unopenable = new Map<string, string>();

  /** `list`: one listing of the spool (see candidates). */
  constructor(
    private readonly scope: SpoolScope,
    private readonly completion: Completion,
    private readonly sleeper: Sleeper,
    private readonly random: () => number,
    private readonly list: () => Promise<Candidate[]>,
  ) {
    this.include = compileJavaFullMatch(scope.options.includePattern, "includePattern");
    this.ignore = compileJavaFullMatch(scope.options.ignorePattern, "ignorePattern");
  }

  /**
   * Watches a directory of the spool for new files (file-system events), so a file moved in
   * is picked up at once instead of at the next poll; polling every pollDelay stays the
   * fallback where no events come. `dir` is as the listing names it, so events name files the
   * same way.
   */
  watch(dir: string): void {
    const abs = path.resolve(dir);
    let w = this.watchers.get(abs);
    if (!w) {
      w = new DirectoryWatcher(abs, (kind, name) => this.onDirEvent(dir, kind, name));
      this.watchers.set(abs, w);
    }
    const failedBefore = w.failure;
    if (!w.start() && w.failure !== failedBefore) this.scope.logger.warn(`${this.scope.name}: no file-system events for ${abs} (${w.failure}); polling it every ${this.scope.options.pollDelay} ms`);
  }

  /** Stops watching (the source stops). */
  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    if (this.settleTimer) this.scope.clock.clearTimeout(this.settleTimer);
    this.settleTimer = null;
  }

  private onDirEvent(dir: string, kind: DirEventKind, name: string | null): void {
    const { clock, options } = this.scope;
    if (!this.scope.running) return;
    // Our own renames (x -> x.COMPLETED) and hidden files (the tracker directory) are no news.
    if (name !== null && (name.startsWith(".") || name.endsWith(options.fileSuffix))) return;
    if (kind === "change" && this.scope.current) return; // the file being read, or one still being written
    if (name === null) this.relistDue = true;
    else this.reported.add(path.join(dir, name));
    const now = clock.now();
    this.firstEventAt ??= now;
    // A file may still be being written: wait until the directory was quiet for a moment, but
    // never longer than a poll would.
    if (this.settleTimer) {
      if (now - this.firstEventAt >= options.pollDelay) return;
      clock.clearTimeout(this.settleTimer);
    }
    this.settleTimer = clock.setTimeout(() => {
      this.settleTimer = null;
      this.firstEventAt = null;
      this.wakePending = true;
      this.sleeper.wake();
    }, EVENT_SETTLE_MS);
  }

  /** Candidate files: not hidden, not completed, not set aside, matching the patterns. */
  async candidates(): Promise<Candidate[]> {
    const { options, tracker, counter, logger, name } = this.scope;
    const out: Candidate[] = [];
    const trackerAbs = path.resolve(tracker.dir);
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        counter.inc("GenericProcessingFail");
        logger.error(`${name}: I/O error while listing ${dir}: ${(err as Error).message}`);
        return;
      }
      const files: string[] = [];
      for (const e of entries) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (options.recursiveDirectorySearch && !e.name.startsWith(".") && !this.ignore.test(e.name) && path.resolve(p) !== trackerAbs) {
            if (this.scope.running) this.watch(p);
            await walk(p);
          }
        } else if (e.isFile()) files.push(p);
      }
      for (const c of await mapInSlices(files, CHECK_SLICE, (p) => this.candidateAt(p, path.basename(p)))) if (c) out.push(c);
    };
    await walk(options.spoolDir);
    return out;
  }

  /** The file at `p` as a candidate, or null: hidden, completed, set aside, not matched, gone, or a directory. */
  private async candidateAt(p: string, name: string): Promise<Candidate | null> {
    const { options, tracker } = this.scope;
    if (name.startsWith(".") || name.endsWith(options.fileSuffix)) return null;
    if (!this.include.test(name) || this.ignore.test(name)) return null;
    if (await tracker.exists(tracker.marker(p, FAILED_SUFFIX))) return null;
    try {
      const s = await stat(p);
      if (!s.isFile()) return null;
      if (options.trackingPolicy === "tracker_dir") {
        const done = await this.completion.completedIdentity(p);
        if (done === "none") {
          // not completed yet
        } else if (done === null || (done.ino === s.ino && done.size === s.size && done.mtimeMs === s.mtimeMs)) {
          return null; // completed (a marker without identity is from an older version)
        } else {
          await this.completion.markFailed(p, `File name has been re-used with different files: ${p} is not the file completed under that name (inode ${done.ino}, ${done.size} bytes; now inode ${s.ino}, ${s.size} bytes)`);
          return null;
        }
      }
      return { path: p, mtimeMs: s.mtimeMs, name };
    } catch {
      return null; // gone since the listing or the event
    }
  }

  /** Puts candidates in reading order: consumeOrder, and files that could not be opened last. */
  private order(candidates: Candidate[]): void {
    const consumeOrder = this.scope.options.consumeOrder;
    if (consumeOrder === "random") {
      for (let i = candidates.length - 1; i > 0; i--) {
        const j = Math.floor(this.random() * (i + 1));
        [candidates[i], candidates[j]] = [candidates[j], candidates[i]];
      }
    } else {
      const sign = consumeOrder === "oldest" ? 1 : -1;
      candidates.sort((a, b) => (a.mtimeMs !== b.mtimeMs ? sign * (a.mtimeMs - b.mtimeMs) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
    // Stable: one unreadable file does not hold up the others; it is tried again once they are done.
    candidates.sort((a, b) => Number(this.unopenable.has(a.path)) - Number(this.unopenable.has(b.path)));
  }

  /** Lists the spool again: the queue is what it holds now, in reading order. */
  private async relist(): Promise<void> {
    const clock = this.scope.clock;
    const started = clock.now();
    this.relistDue = false;
    this.reported.clear();
    const candidates = await this.list();
    this.order(candidates);
    this.queue = candidates.reverse();
    this.listedAt = clock.now();
    this.listMs = this.listedAt - started;
  }

  /** Adds the files events named since the last look that are candidates and not queued yet. */
  private async mergeReported(): Promise<void> {
    if (this.reported.size === 0) return;
    const reported = [...this.reported];
    this.reported.clear();
    const found: Candidate[] = [];
    for (const p of reported) {
      // A new directory is walked (and watched) by a listing.
      if (this.scope.options.recursiveDirectorySearch && (await stat(p).then((s) => s.isDirectory(), () => false))) {
        this.relistDue = true;
        continue;
      }
      // Most names are of files this source just renamed or deleted: gone, so no candidate.
      const c = await this.candidateAt(p, path.basename(p));
      if (c) found.push(c);
    }
    if (found.length === 0) return;
    const queued = new Set(this.queue.map((c) => c.path));
    const added = found.filter((c) => !queued.has(c.path));
    if (added.length === 0) return;
    this.queue.push(...added);
    this.order(this.queue);
    this.queue.reverse();
  }

  /**
   * The next file to read, opened, or null when there is none. `handedOver`: the position a
   * durable channel handed over at start, preferred over the meta file.
   */
  async next(handedOver: SpoolPosition | null): Promise<Current | null> {
    const saved = handedOver ?? (await this.scope.tracker.readPosition());
    const stale = this.scope.clock.now() - this.listedAt >= Math.max(this.scope.options.pollDelay, RELIST_SPACING_FACTOR * this.listMs);
    if (saved || this.relistDue || this.queue.length === 0 || stale) await this.relist();
    else await this.mergeReported();
    const at = saved ? this.queue.findIndex((c) => path.resolve(c.path) === saved.file) : -1;
    if (at >= 0) {
      const [resume] = this.queue.splice(at, 1);
      return this.openFile(resume.path, saved);
    }
    for (let c = this.queue.pop(); c !== undefined; c = this.queue.pop()) {
      const cur = await this.openFile(c.path, saved);
      if (cur) return cur;
    }
    return null;
  }

  private async openFile(p: string, saved: SpoolPosition | null): Promise<Current | null> {
    const { options, tracker, counter, logger, name } = this.scope;
    let handle: FileHandle;
    try {
      handle = await open(p, "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        counter.inc("GenericProcessingFail");
        const message = (err as Error).message;
        // Logged once per file and reason, not at every poll.
        if (this.unopenable.get(p) !== message) logger.error(`${name}: Exception opening file: ${p}: ${message}; the other files are read meanwhile`);
        this.unopenable.set(p, message);
      }
      return null;
    }
    this.unopenable.delete(p);
    const s = await handle.stat();
    const cur: Current = { path: p, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, pos: 0, handle, deserializer: null as unknown as Deserializer, firstRead: true };
    try {
      if (options.trackingPolicy === "rename" && options.deletePolicy === "never") {
        const dest = `${p}${options.fileSuffix}`;
        if (await tracker.exists(dest)) throw new SpoolViolation(`File name has been re-used with different files. Spooling assumptions violated for ${dest}`);
      }
      if (saved && saved.file === path.resolve(p)) {
        if (saved.ino !== s.ino) throw new SpoolViolation(`File name has been re-used with different files: ${p} is not the file that was being read (inode ${saved.ino}, now ${s.ino})`);
        if (saved.size !== s.size || saved.mtimeMs !== s.mtimeMs) {
          throw new SpoolViolation(`File has been modified since being read: ${p} (size ${saved.size} -> ${s.size}); ${saved.pos} bytes of it were delivered`);
        }
        cur.pos = saved.pos;
        cur.firstRead = false;
        logger.info(`${name}: resuming ${p} at byte ${saved.pos} of ${s.size}`);
      } else if (saved) {
        // The meta file belongs to a file that is gone (completed by hand, deleted): start fresh.
        await tracker.clearPosition();
      }
    } catch (err) {
      if (!(err instanceof SpoolViolation)) throw err;
      await this.completion.setAside(cur, err.message);
      return null;
    }
    cur.deserializer = this.makeDeserializer(handle, cur);
    logger.info(`${name}: Preparing to read ${p} (${s.size} bytes)`);
    return cur;
  }

  private makeDeserializer(handle: FileHandle, cur: Current): Deserializer {
    const o = this.scope.options;
    const { logger, name } = this.scope;
    const warn = (message: string) => logger.warn(`${name}: ${message}`);
    return o.deserializer.open({ handle, pos: cur.pos, size: cur.size, path: cur.path, inputCharset: o.inputCharset, decodeErrorPolicy: o.decodeErrorPolicy, warn });
  }
}
