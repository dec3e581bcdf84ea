import { open, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { ConfigurationError } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import { createPart, defineComponent, type ComponentContext } from "../component.ts";
import { compileJavaFullMatch } from "../../java/regex.ts";
import { BaseSource } from "./base.ts";
import type { Cut, DecodeErrorPolicy, Deserializer, DeserializerFactory } from "./spooldir/deserializers.ts";
import { isSupportedInputCharset } from "./spooldir/deserializers.ts";
import type { SpoolPosition } from "./spooldir/tracker.ts";
import { FAILED_SUFFIX, Tracker, parsePosition } from "./spooldir/tracker.ts";
import { syncDirectory } from "../../io/atomic-write.ts";
import { mapInSlices } from "../../io/in-slices.ts";
import { DirectoryWatcher, type DirEventKind } from "../../io/dir-watch.ts";
import { LockHeldError, OwnerLock, directoryLockFile } from "../../io/owner-lock.ts";
import type { TimerHandle } from "../../core/clock.ts";
import { Sleeper } from "../../core/sleeper.ts";

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

/** The tracker directory a configuration names: inside the spool unless absolute. */
function trackerDirOf(spoolDir: string, trackerDir: string, ctx: Pick<ComponentContext, "storagePath">): string {
  return path.resolve(path.isAbsolute(trackerDir) ? ctx.storagePath(trackerDir) : path.join(spoolDir, trackerDir));
}

export interface SpoolDirOptions {
  spoolDir: string;
  fileSuffix: string;
  deletePolicy: "never" | "immediate";
  trackingPolicy: "rename" | "tracker_dir";
  trackerDir: string;
  consumeOrder: "oldest" | "youngest" | "random";
  pollDelay: number;
  batchSize: number;
  maxBackoff: number;
  includePattern: string;
  ignorePattern: string;
  recursiveDirectorySearch: boolean;
  deserializer: DeserializerFactory;
  inputCharset: string;
  decodeErrorPolicy: DecodeErrorPolicy;
  fileHeader: boolean;
  fileHeaderKey: string;
  basenameHeader: boolean;
  basenameHeaderKey: string;
}

/** A file that may be read next, from a listing or a file-system event. */
interface Candidate {
  path: string;
  mtimeMs: number;
  name: string;
}

/** The file being read: identity at pickup, committed position, open deserializer. */
interface Current {
  path: string;
  ino: number;
  size: number;
  mtimeMs: number;
  pos: number;
  handle: FileHandle;
  deserializer: Deserializer;
  /** Nothing was read from it yet in this run (Flume sends one empty event for an empty file). */
  firstRead: boolean;
}

/** A file that breaks the spooling rules; it is set aside, the source goes on. */
class SpoolViolation extends Error {}

/**
 * Flume's spooling directory source: reads each file dropped into a directory, then renames it
 * with fileSuffix (or records it in the tracker directory, or deletes it). A file is marked
 * done only after all its events are committed. The committed position is kept in a meta file
 * (and stored with the events in a durable channel), so a restart resumes where the last
 * committed batch ended. A file that changed after pickup, a reused name or undecodable input
 * gets an error naming the file and is set aside (a FAILED marker in the tracker directory);
 * the source keeps serving the other files.
 */
export class SpoolDirectorySource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private readonly tracker: Tracker;
  private readonly include: RegExp;
  private readonly ignore: RegExp;
  private current: Current | null = null;
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly sleeper: Sleeper;
  /** Position handed over by a durable channel at start, preferred over the meta file. */
  private channelPosition: SpoolPosition | null = null;
  /** Some channel of this source stores positions with its commits (a file channel). */
  private durable = false;
  /** Files whose open failed (path -> error), tried after the others. */
  private readonly unopenable = new Map<string, string>();

  private readonly random: () => number;
  private lock: OwnerLock | null = null;
  private readonly watchers = new Map<string, DirectoryWatcher>();
  private settleTimer: TimerHandle | null = null;
  private firstEventAt: number | null = null;
  /** A file-system event ended (or came during) the last look: look again before sleeping. */
  private wakePending = false;
  /** Candidates of the last listing not tried yet, the next one last (taking one is a pop). */
  private queue: Candidate[] = [];
  /** Paths that file-system events named since the last look. */
  private readonly reported = new Set<string>();
  /** An event without a name, or a new directory: the next look lists the spool again. */
  private relistDue = true;
  private listedAt = -Infinity;
  private listMs = 0;

  constructor(
    ctx: ComponentContext,
    readonly options: SpoolDirOptions,
  ) {
    super(ctx, { maxBackoff: options.maxBackoff });
    this.random = ctx.random;
    this.sleeper = new Sleeper(ctx.clock);
    this.tracker = new Tracker(path.resolve(options.spoolDir), trackerDirOf(options.spoolDir, options.trackerDir, ctx));
    this.include = compileJavaFullMatch(options.includePattern, "includePattern");
    this.ignore = compileJavaFullMatch(options.ignorePattern, "ignorePattern");
  }

  async start(): Promise<void> {
    this.logger.info(`SpoolDirectorySource source starting with directory: ${this.options.spoolDir}`);
    const dir = this.options.spoolDir;
    let s;
    try {
      s = await stat(dir);
    } catch {
      throw new ConfigurationError("spoolDir", `Directory does not exist: ${path.resolve(dir)}`, this.name);
    }
    if (!s.isDirectory()) throw new ConfigurationError("spoolDir", `Path is not a directory: ${path.resolve(dir)}`, this.name);
    if (this.options.trackingPolicy === "rename") await this.canary();
    await this.tracker.init();
    try {
      this.lock = OwnerLock.acquire(directoryLockFile(this.tracker.dir), `tracker directory ${this.tracker.dir} of spooldir source ${this.name}`, `flume-ts spooldir source ${this.name}`);
    } catch (err) {
      if (err instanceof LockHeldError) throw new ConfigurationError("trackerDir", err.message, this.name);
      throw err;
    }
    if (this.lock.tookOverFrom) this.logger.warn(`${this.name}: took over ${this.lock.file} from process ${this.lock.tookOverFrom.pid}, which is no longer running`);
    this.channelPosition = this.durablePosition();
    this.durable = this.getChannelProcessor()
      .getChannels()
      .some((c) => c.durable === true);
    this.beginStart();
    this.running = true;
    this.state = "START";
    this.watch(dir);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.sleeper.wake();
    this.emitter.stop();
    await this.loop;
    this.loop = null;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    if (this.settleTimer) this.clock.clearTimeout(this.settleTimer);
    this.settleTimer = null;
    if (this.current) {
      await this.current.handle.close().catch(() => {});
      this.current = null;
    }
    this.lock?.release();
    this.lock = null;
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`SpoolDir source ${this.name} stopped. Metrics: ${JSON.stringify(this.counter.snapshot())}`);
  }

  /** Checks that files in the spool directory can be created and removed (they get renamed). */
  private async canary(): Promise<void> {
    const p = path.join(this.options.spoolDir, `.flume-spooldir-perm-check-${process.pid}-${Math.random().toString(36).slice(2)}.canary`);
    try {
      await writeFile(p, "testing flume file permissions\n");
      await rm(p);
    } catch (err) {
      throw new ConfigurationError("spoolDir", `Unable to read and modify files in the spooling directory: ${this.options.spoolDir}: ${(err as Error).message}`, this.name);
    }
  }

  private durablePosition(): SpoolPosition | null {
    for (const channel of this.getChannelProcessor().getChannels()) {
      if (!channel.durable || !channel.sourcePosition) continue;
      const value = channel.sourcePosition(this.name);
      if (value === undefined) continue;
      const p = parsePosition(value);
      if (p) return p;
    }
    return null;
  }

  /**
   * Watches a directory of the spool for new files (file-system events), so a file moved in
   * is picked up at once instead of at the next poll; polling every pollDelay stays the
   * fallback where no events come. `dir` is as the listing names it, so events name files the
   * same way.
   */
  private watch(dir: string): void {
    const abs = path.resolve(dir);
    let w = this.watchers.get(abs);
    if (!w) {
      w = new DirectoryWatcher(abs, (kind, name) => this.onDirEvent(dir, kind, name));
      this.watchers.set(abs, w);
    }
    const failedBefore = w.failure;
    if (!w.start() && w.failure !== failedBefore) this.logger.warn(`${this.name}: no file-system events for ${abs} (${w.failure}); polling it every ${this.options.pollDelay} ms`);
  }

  private onDirEvent(dir: string, kind: DirEventKind, name: string | null): void {
    if (!this.running) return;
    // Our own renames (x -> x.COMPLETED) and hidden files (the tracker directory) are no news.
    if (name !== null && (name.startsWith(".") || name.endsWith(this.options.fileSuffix))) return;
    if (kind === "change" && this.current) return; // the file being read, or one still being written
    if (name === null) this.relistDue = true;
    else this.reported.add(path.join(dir, name));
    const now = this.clock.now();
    this.firstEventAt ??= now;
    // A file may still be being written: wait until the directory was quiet for a moment, but
    // never longer than a poll would.
    if (this.settleTimer) {
      if (now - this.firstEventAt >= this.options.pollDelay) return;
      this.clock.clearTimeout(this.settleTimer);
    }
    this.settleTimer = this.clock.setTimeout(() => {
      this.settleTimer = null;
      this.firstEventAt = null;
      this.wakePending = true;
      this.sleeper.wake();
    }, EVENT_SETTLE_MS);
  }

  private async run(): Promise<void> {
    await Promise.resolve();
    while (this.running) {
      try {
        this.wakePending = false;
        const worked = await this.step();
        // An event that came while we looked may be about a file the look missed.
        if (!worked && this.running && !this.wakePending) await this.sleeper.sleep(this.options.pollDelay);
      } catch (err) {
        this.emitter.failed(err, "unexpected error in the spooling directory source (will retry)");
        if (this.running) await this.sleeper.sleep(this.options.pollDelay);
      }
    }
  }

  /** Reads and commits one batch (opening the next file if needed); false when idle. */
  private async step(): Promise<boolean> {
    if (!this.current) {
      this.current = await this.nextFile();
      if (!this.current) return false;
    }
    const cur = this.current;
    let cut: Cut;
    try {
      cut = await cur.deserializer.read(this.options.batchSize);
    } catch (err) {
      this.counter.inc("EventReadFail");
      await this.setAside(cur, `read error at byte ${cur.pos}: ${(err as Error).message}`);
      return true;
    }
    if (cut.events.length === 0 && cur.firstRead && cut.atEnd && cur.size === 0) {
      cut.events.push({ headers: {}, body: new Uint8Array(0) });
    }
    cur.firstRead = false;
    if (cut.events.length > 0) {
      this.annotate(cur, cut.events);
      const committed = await this.commit(cur, cut);
      if (!committed) return true; // stopped while retrying: nothing more to do
    }
    if (cut.error) {
      this.counter.inc("EventReadFail");
      await this.setAside(cur, `undecodable input at byte ${cut.error.offset}: ${cut.error.message} (inputCharset ${this.options.inputCharset}, decodeErrorPolicy ${this.options.decodeErrorPolicy})`);
      return true;
    }
    if (cut.atEnd) await this.complete(cur);
    return true;
  }

  private annotate(cur: Current, events: Event[]): void {
    const o = this.options;
    if (!o.fileHeader && !o.basenameHeader) return;
    const abs = path.resolve(cur.path);
    const base = path.basename(cur.path);
    for (const e of events) {
      if (o.fileHeader) e.headers[o.fileHeaderKey] = abs;
      if (o.basenameHeader) e.headers[o.basenameHeaderKey] = base;
    }
  }

  /** Commits a batch (retried until it commits); false when the source stopped first. */
  private async commit(cur: Current, cut: Cut): Promise<boolean> {
    const position: SpoolPosition = { file: path.resolve(cur.path), ino: cur.ino, size: cur.size, mtimeMs: cur.mtimeMs, pos: cut.endPos };
    const stored = this.durable ? { source: this.name, value: JSON.stringify(position) } : undefined;
    if (!(await this.emitter.deliver(cut.events, { position: stored }))) return false;
    cur.pos = cut.endPos;
    await this.tracker.writePosition(position);
    return true;
  }

  /** Candidate files: not hidden, not completed, not set aside, matching the patterns. */
  private async candidates(): Promise<{ path: string; mtimeMs: number; name: string }[]> {
    const out: { path: string; mtimeMs: number; name: string }[] = [];
    const trackerAbs = path.resolve(this.tracker.dir);
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        this.counter.inc("GenericProcessingFail");
        this.logger.error(`${this.name}: I/O error while listing ${dir}: ${(err as Error).message}`);
        return;
      }
      const files: string[] = [];
      for (const e of entries) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (this.options.recursiveDirectorySearch && !e.name.startsWith(".") && !this.ignore.test(e.name) && path.resolve(p) !== trackerAbs) {
            if (this.running) this.watch(p);
            await walk(p);
          }
        } else if (e.isFile()) files.push(p);
      }
      for (const c of await mapInSlices(files, CHECK_SLICE, (p) => this.candidateAt(p, path.basename(p)))) if (c) out.push(c);
    };
    await walk(this.options.spoolDir);
    return out;
  }

  /** The file at `p` as a candidate, or null: hidden, completed, set aside, not matched, gone, or a directory. */
  private async candidateAt(p: string, name: string): Promise<Candidate | null> {
    if (name.startsWith(".") || name.endsWith(this.options.fileSuffix)) return null;
    if (!this.include.test(name) || this.ignore.test(name)) return null;
    if (await this.tracker.exists(this.tracker.marker(p, FAILED_SUFFIX))) return null;
    try {
      const s = await stat(p);
      if (!s.isFile()) return null;
      if (this.options.trackingPolicy === "tracker_dir") {
        const done = await this.completedIdentity(p);
        if (done === "none") {
          // not completed yet
        } else if (done === null || (done.ino === s.ino && done.size === s.size && done.mtimeMs === s.mtimeMs)) {
          return null; // completed (a marker without identity is from an older version)
        } else {
          await this.markFailed(p, `File name has been re-used with different files: ${p} is not the file completed under that name (inode ${done.ino}, ${done.size} bytes; now inode ${s.ino}, ${s.size} bytes)`);
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
    if (this.options.consumeOrder === "random") {
      for (let i = candidates.length - 1; i > 0; i--) {
        const j = Math.floor(this.random() * (i + 1));
        [candidates[i], candidates[j]] = [candidates[j], candidates[i]];
      }
    } else {
      const sign = this.options.consumeOrder === "oldest" ? 1 : -1;
      candidates.sort((a, b) => (a.mtimeMs !== b.mtimeMs ? sign * (a.mtimeMs - b.mtimeMs) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
    // Stable: one unreadable file does not hold up the others; it is tried again once they are done.
    candidates.sort((a, b) => Number(this.unopenable.has(a.path)) - Number(this.unopenable.has(b.path)));
  }

  /** Lists the spool again: the queue is what it holds now, in reading order. */
  private async relist(): Promise<void> {
    const started = this.clock.now();
    this.relistDue = false;
    this.reported.clear();
    const candidates = await this.candidates();
    this.order(candidates);
    this.queue = candidates.reverse();
    this.listedAt = this.clock.now();
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
      if (this.options.recursiveDirectorySearch && (await stat(p).then((s) => s.isDirectory(), () => false))) {
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

  private async nextFile(): Promise<Current | null> {
    const saved = this.channelPosition ?? (await this.tracker.readPosition());
    this.channelPosition = null;
    const stale = this.clock.now() - this.listedAt >= Math.max(this.options.pollDelay, RELIST_SPACING_FACTOR * this.listMs);
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
    let handle: FileHandle;
    try {
      handle = await open(p, "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        this.counter.inc("GenericProcessingFail");
        const message = (err as Error).message;
        // Logged once per file and reason, not at every poll.
        if (this.unopenable.get(p) !== message) this.logger.error(`${this.name}: Exception opening file: ${p}: ${message}; the other files are read meanwhile`);
        this.unopenable.set(p, message);
      }
      return null;
    }
    this.unopenable.delete(p);
    const s = await handle.stat();
    const cur: Current = { path: p, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, pos: 0, handle, deserializer: null as unknown as Deserializer, firstRead: true };
    try {
      if (this.options.trackingPolicy === "rename" && this.options.deletePolicy === "never") {
        const dest = `${p}${this.options.fileSuffix}`;
        if (await this.tracker.exists(dest)) throw new SpoolViolation(`File name has been re-used with different files. Spooling assumptions violated for ${dest}`);
      }
      if (saved && saved.file === path.resolve(p)) {
        if (saved.ino !== s.ino) throw new SpoolViolation(`File name has been re-used with different files: ${p} is not the file that was being read (inode ${saved.ino}, now ${s.ino})`);
        if (saved.size !== s.size || saved.mtimeMs !== s.mtimeMs) {
          throw new SpoolViolation(`File has been modified since being read: ${p} (size ${saved.size} -> ${s.size}); ${saved.pos} bytes of it were delivered`);
        }
        cur.pos = saved.pos;
        cur.firstRead = false;
        this.logger.info(`${this.name}: resuming ${p} at byte ${saved.pos} of ${s.size}`);
      } else if (saved) {
        // The meta file belongs to a file that is gone (completed by hand, deleted): start fresh.
        await this.tracker.clearPosition();
      }
    } catch (err) {
      if (!(err instanceof SpoolViolation)) throw err;
      await this.setAside(cur, err.message);
      return null;
    }
    cur.deserializer = this.makeDeserializer(handle, cur);
    this.logger.info(`${this.name}: Preparing to read ${p} (${s.size} bytes)`);
    return cur;
  }

  private makeDeserializer(handle: FileHandle, cur: Current): Deserializer {
    const o = this.options;
    const warn = (message: string) => this.logger.warn(`${this.name}: ${message}`);
    return o.deserializer.open({ handle, pos: cur.pos, size: cur.size, path: cur.path, inputCharset: o.inputCharset, decodeErrorPolicy: o.decodeErrorPolicy, warn });
  }

  /** Every event of the file is committed: check it did not change, then roll or delete it. */
  private async complete(cur: Current): Promise<void> {
    this.current = null;
    await cur.handle.close().catch(() => {});
    let s;
    try {
      s = await stat(cur.path);
    } catch {
      this.logger.warn(`${this.name}: ${cur.path} disappeared after being read completely`);
      await this.forgetDurablePosition(cur);
      await this.tracker.clearPosition();
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
    if (this.durable) await this.tracker.syncPosition().catch((err: Error) => this.logger.warn(`${this.name}: could not flush ${this.tracker.metaFile}: ${err.message}`));
    await this.forgetDurablePosition(cur);
    try {
      if (this.options.deletePolicy === "immediate") {
        this.logger.info(`${this.name}: Preparing to delete file ${cur.path}`);
        await rm(cur.path);
        await this.syncSpoolDir(cur);
      } else if (this.options.trackingPolicy === "rename") {
        const dest = `${cur.path}${this.options.fileSuffix}`;
        if (await this.tracker.exists(dest)) throw new SpoolViolation(`File name has been re-used with different files. Spooling assumptions violated for ${dest}`);
        this.logger.info(`${this.name}: Preparing to move file ${cur.path} to ${dest}`);
        await rename(cur.path, dest);
        await this.syncSpoolDir(cur);
      } else {
        const marker = this.tracker.marker(cur.path, this.options.fileSuffix);
        if (await this.tracker.exists(marker)) throw new SpoolViolation(`File name has been re-used with different files. Spooling assumptions violated for ${marker}`);
        this.logger.info(`${this.name}: Preparing to create tracker file for ${cur.path} at ${marker}`);
        // The file's identity, so a new file under the same name is told apart from it.
        await this.tracker.createMarker(marker, JSON.stringify({ ino: cur.ino, size: cur.size, mtimeMs: cur.mtimeMs }), this.durable);
      }
    } catch (err) {
      await this.setAside(cur, (err as Error).message, true);
      return;
    }
    await this.tracker.clearPosition();
  }

  /** Makes a completed file's rename (or removal) durable for a durable channel; a lost one has it read again. */
  private async syncSpoolDir(cur: Current): Promise<void> {
    if (!this.durable) return;
    await syncDirectory(path.dirname(cur.path)).catch((err: Error) => this.logger.warn(`${this.name}: could not flush directory ${path.dirname(cur.path)}: ${err.message}`));
  }

  /**
   * Tells a durable channel that this source is done with the file. Otherwise the channel keeps
   * the file's last position, and after a restart a new file under the same name (or the same
   * file once its FAILED marker is removed) would be taken for it: set aside as reused or
   * modified, or resumed mid-file. The marker is no position, so the meta file decides.
   */
  private async forgetDurablePosition(cur: Current): Promise<void> {
    if (!this.durable) return;
    try {
      await this.getChannelProcessor().processEventBatch([], { source: this.name, value: JSON.stringify({ done: path.resolve(cur.path) }) });
    } catch (err) {
      this.logger.warn(`${this.name}: could not record in the channel that ${cur.path} is done: ${(err as Error).message}`);
    }
  }

  /**
   * For trackingPolicy tracker_dir: "none" when the file has no COMPLETED marker, else the
   * identity the marker records (null for an empty marker of an older version).
   */
  private async completedIdentity(file: string): Promise<"none" | { ino: number; size: number; mtimeMs: number } | null> {
    let text: string;
    try {
      text = await readFile(this.tracker.marker(file, this.options.fileSuffix), "utf8");
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
  private async markFailed(file: string, reason: string): Promise<void> {
    const marker = this.tracker.marker(file, FAILED_SUFFIX);
    this.counter.inc("GenericProcessingFail");
    this.logger.error(`${this.name}: ${reason}. The file ${file} is set aside (not deleted); remove ${marker} to read it again.`);
    try {
      await this.tracker.createMarker(marker, `${reason}\n`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") this.logger.error(`${this.name}: could not write ${marker}: ${(err as Error).message}`);
    }
  }

  /**
   * Records the file as set aside (a FAILED marker holding the reason) and moves on. The file
   * itself is left as it is; deleting the marker makes the source read it again.
   */
  private async setAside(cur: Current, reason: string, closed = false): Promise<void> {
    if (this.current === cur) this.current = null;
    if (!closed) await cur.handle.close().catch(() => {});
    await this.markFailed(cur.path, reason);
    const saved = await this.tracker.readPosition();
    if (saved && saved.file === path.resolve(cur.path)) await this.tracker.clearPosition();
    await this.forgetDurablePosition(cur);
  }
}

export const definition = defineComponent({
  kind: "source",
  type: "spooldir",
  aliases: ["org.apache.flume.source.SpoolDirectorySource"],
  doc: "Reads files dropped into a directory, then renames (or deletes) each once all its events are committed.",
  props: {
    spoolDir: { type: "path", required: true, doc: "Directory to read files from" },
    fileSuffix: { type: "string", default: ".COMPLETED", doc: "Suffix appended to completely read files" },
    deletePolicy: { type: "enum", values: ["never", "immediate"], default: "never", doc: "When to delete completed files: never or immediate" },
    trackingPolicy: { type: "enum", values: ["rename", "tracker_dir"], default: "rename", doc: "rename completed files, or record them in trackerDir (tracker_dir)" },
    trackerDir: { type: "path", default: ".flumespool", doc: "Directory for metadata (relative paths are inside spoolDir)" },
    consumeOrder: { type: "enum", values: ["oldest", "youngest", "random"], default: "oldest", doc: "Order in which files are read, by modification time" },
    pollDelay: { type: "int", default: 500, min: 1, doc: "Milliseconds between polls for new files" },
    batchSize: { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Events per channel transaction" },
    maxBackoff: { type: "int", default: 4000, min: 1, doc: "Longest wait (ms) between retries when the channel is full (the first is 100 ms, doubling)" },
    includePattern: { type: "string", default: "^.*$", doc: "Regex of file names to read" },
    ignorePattern: { type: "string", default: "^$", doc: "Regex of file names to skip" },
    recursiveDirectorySearch: { type: "boolean", default: false, doc: "Also read files in subdirectories" },
    deserializer: {
      type: "string",
      default: "LINE",
      names: { kind: "deserializer", settings: "deserializerSettings" },
      doc: "LINE (one event per line), BLOB (one event per file), a deserializer class name, or the module of a custom one",
    },
    bufferMaxLineLength: { type: "int", min: 1, doc: "The old name of deserializer.maxLineLength (LINE), used when that is not set" },
    inputCharset: { type: "string", default: "UTF-8", doc: "Charset of the files (UTF-8, US-ASCII, ISO-8859-x, windows-125x)" },
    decodeErrorPolicy: { type: "enum", values: ["FAIL", "REPLACE", "IGNORE"], default: "FAIL", doc: "On undecodable input: FAIL (set the file aside), REPLACE (U+FFFD) or IGNORE" },
    fileHeader: { type: "boolean", default: false, doc: "Add the file's absolute path as a header" },
    fileHeaderKey: { type: "string", default: "file", doc: "Header name for fileHeader" },
    basenameHeader: { type: "boolean", default: false, doc: "Add the file's name as a header" },
    basenameHeaderKey: { type: "string", default: "basename", doc: "Header name for basenameHeader" },
  },
  groups: { deserializerSettings: { prefix: "deserializer.", doc: "The deserializer's properties, e.g. deserializer.maxLineLength (LINE), deserializer.maxBlobLength (BLOB)" } },
  claims(config, ctx) {
    const dir = trackerDirOf(config.spoolDir, config.trackerDir, ctx);
    return [{ file: directoryLockFile(dir), what: `tracker directory ${dir}` }];
  },
  create(config, ctx) {
    for (const e of validate(config)) throw new ConfigurationError(e.key, e.message, ctx.name);
    return new SpoolDirectorySource(ctx, {
      spoolDir: config.spoolDir,
      fileSuffix: config.fileSuffix,
      deletePolicy: config.deletePolicy as "never" | "immediate",
      trackingPolicy: config.trackingPolicy as "rename" | "tracker_dir",
      trackerDir: config.trackerDir,
      consumeOrder: config.consumeOrder as "oldest" | "youngest" | "random",
      pollDelay: config.pollDelay,
      batchSize: config.batchSize,
      maxBackoff: config.maxBackoff,
      includePattern: config.includePattern,
      ignorePattern: config.ignorePattern,
      recursiveDirectorySearch: config.recursiveDirectorySearch,
      deserializer: createPart<DeserializerFactory>(ctx, "deserializer", "deserializer", config.deserializer, deserializerSettings(config)),
      inputCharset: config.inputCharset,
      decodeErrorPolicy: config.decodeErrorPolicy as DecodeErrorPolicy,
      fileHeader: config.fileHeader,
      fileHeaderKey: config.fileHeaderKey,
      basenameHeader: config.basenameHeader,
      basenameHeaderKey: config.basenameHeaderKey,
    });
  },
  validate,
});

/** The deserializer's settings: those under `deserializer.`, and the old bufferMaxLineLength for LINE's maxLineLength. */
function deserializerSettings(config: { bufferMaxLineLength: number | undefined; deserializerSettings: Readonly<Record<string, string>> }): Readonly<Record<string, string>> {
  const old = config.bufferMaxLineLength;
  return old === undefined ? config.deserializerSettings : { maxLineLength: String(old), ...config.deserializerSettings };
}

function validate(config: { fileSuffix: string; inputCharset: string; includePattern: string; ignorePattern: string }): { key: string; message: string }[] {
  const errors: { key: string; message: string }[] = [];
  if (config.fileSuffix === "") {
    errors.push({ key: "fileSuffix", message: "must not be empty: files ending in it count as completed, and every name ends in the empty string" });
  }
  if (!isSupportedInputCharset(config.inputCharset)) {
    errors.push({ key: "inputCharset", message: `unsupported charset "${config.inputCharset}": lines are cut at byte 0x0A, so it must be UTF-8, US-ASCII, ISO-8859-x or windows-125x` });
  }
  for (const key of ["includePattern", "ignorePattern"] as const) {
    try {
      compileJavaFullMatch(config[key], key);
    } catch (err) {
      errors.push({ key, message: (err as Error).message });
    }
  }
  return errors;
}
