import { mkdirSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import type { TimerHandle } from "../../core/clock.ts";
import { ConfigurationError } from "../../core/errors.ts";
import type { Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import { DirectoryWatcher, type DirEventKind } from "../../io/dir-watch.ts";
import { LockFileError, LockHeldError, OwnerLock } from "../../io/owner-lock.ts";
import { ioReason, unwritableDirectory } from "../../io/writable-dir.ts";
import { type PositionalReader, ReadOnlyFile } from "../../io/read-only-file.ts";
import { EmitError } from "../../pipeline/emitter.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import type { SourceCounter } from "../../core/counters.ts";
import { BaseSource } from "./base.ts";
import { type Fingerprint, HEAD_BYTES, TAIL_BYTES, hashBytes, holdsFingerprint, readRange } from "./taildir/fingerprint.ts";
import { InodeFinder } from "./taildir/inodes.ts";
import { FileGroupMatcher } from "./taildir/matcher.ts";
import type { MatchedFile } from "./taildir/matcher.ts";
import { type PositionEntry, readPositionFile, setAside } from "./taildir/position-file.ts";
import { type ChannelState, type FileRecord, type JournalState, StateJournal, formatChannelState, goneJson, mergeState, parseChannelState, recordJson } from "./taildir/state.ts";
import { TailFile } from "./taildir/tail-file.ts";
import type { TailBatch } from "./taildir/tail-file.ts";

export interface TaildirOptions {
  /** Group name -> path whose last element is a regex on file names. */
  filegroups: Record<string, string>;
  /** Group name -> headers added to its events. */
  headers: Record<string, Record<string, string>>;
  positionFile: string;
  skipToEnd: boolean;
  idleTimeout: number;
  writePosInterval: number;
  batchSize: number;
  maxBatchCount: number;
  fileHeader: boolean;
  fileHeaderKey: string;
  byteOffsetHeader: boolean;
  cachePatternMatching: boolean;
  maxLineLength: number;
  backoffSleepIncrement: number;
  maxBackoffSleep: number;
  /** A positionFile (or its state file) that cannot be read: set it aside and read every file anew, or refuse to start. */
  onCorrupt: "reset" | "fail";
}

/** Counts starts that found the positionFile damaged and began without its positions (files read again). */
export const POSITION_RESET_COUNTER = "PositionFileResetCount";

/** Flume's byte offset header name. */
export const BYTE_OFFSET_HEADER_KEY = "byteoffset";
/**
 * Position files in use in this process -> the source using it. Two sources on one file
 * (both left at the default path, say) would overwrite each other's positions.
 */
const positionFileOwners = new Map<string, string>();

/** Batches one process() call may cut before it returns READY, so a stop is never held up long. */
const BATCHES_PER_PROCESS = 256;
/** A durable channel's commit carries the records changed since the last snapshot; past this many, a snapshot is due. */
const CHANGED_BEFORE_SNAPSHOT = 64;
/** The state file gets a fresh snapshot when this much was appended since the last one. */
const JOURNAL_BYTES_BEFORE_SNAPSHOT = 4 * 1024 * 1024;
/** Batches (and at most this many lines) cut from a file ahead of their commits, for a channel that keeps no positions. */
const GROUP_BATCHES = 32;
const GROUP_EVENTS = 4096;
/** Longest a source goes on reading after batch limits before it looks at the files again (rotations, new files). */
const CONTINUE_WITHOUT_LOOK_MS = 500;
/**
 * While a source reads on after batch limits, a look at every file (a stat each) that no
 * file-system event asked for waits this many times as long as the last one took, so that
 * polling costs a busy tailer a few percent of its time: at 4,000 files a look took 100-200 ms,
 * and one every 500 ms (CONTINUE_WITHOUT_LOOK_MS) more than doubled the CPU time of reading them.
 */
const SCAN_SPACING_FACTOR = 20;
/** Parts of a supposed copy compared with its original, besides head and tail. */
const COPY_SAMPLES = 4;

/** The lock file held while a source uses a position file. */
export function positionLockFile(positionFile: string): string {
  return `${positionFile}.lock`;
}

/**
 * Flume's TAILDIR source: tails every file matching the groups' patterns, identifies files by
 * inode, and keeps positions in Flume's JSON position file. Unlike Flume, a position moves only
 * after the batch is committed, and what a restart needs (positions and fingerprints of every
 * tracked file, see taildir/state.ts) is stored with the commit by a durable channel, or
 * appended to the state file right after it otherwise. A file rotated away by rename is
 * drained to its end (found again by inode after a restart), and a copy made by copytruncate
 * is recognised and continued where the original was, so rotation neither loses nor repeats
 * lines. File-system events wake the source; polling with Flume's backoff stays the fallback.
 */
export class TaildirSource extends BaseSource implements PollableSource {
  readonly kind = "pollable";
  readonly backoffSleepIncrement: number;
  readonly maxBackoffSleep: number;
  private readonly matchers: FileGroupMatcher[];
  /** Tracked files by inode. */
  private readonly files = new Map<number, TailFile>();
  /** Records of files not found at start (deleted or moved away), to recognise a copy of one. */
  private readonly missing = new Map<number, FileRecord>();
  /** Bytes of a shadow (copytruncate copy) known to equal its original's, by inode. */
  private readonly verifiedCopy = new Map<number, number>();
  private readonly journal: StateJournal;
  private lock: OwnerLock | null = null;
  /** Sequence number of the last state change. */
  private seq = 0;
  /** Sequence number of the last snapshot flushed to disk (what a durable channel's records build on). */
  private durableBase = -1;
  private snapshotSeq = -1;
  /** For a durable channel: records changed and files let go since durableBase, as JSON. */
  private readonly changed = new Map<number, string>();
  private readonly gone = new Map<number, { seq: number; json: string }>();
  /** Records written ahead of the commits of a group of batches (see readGroup), until those commits are done. */
  private readonly recordedAhead = new Map<number, string>();
  private snapshotRun: Promise<void> | null = null;
  private snapshotAgain = false;
  /** A change other than a commit happened: a snapshot makes it survive a power loss too. */
  private structuralChange = false;
  private posTimer: TimerHandle | null = null;
  private started = false;
  /** Some channel of this source keeps positions (a file channel). */
  private durable = false;
  private readonly watchers = new Map<string, DirectoryWatcher>();
  private wake: (() => void) | null = null;
  /** Tracked files named by "change" events since the last look. */
  private readonly dirty = new Set<string>();
  private fullScanDue = true;
  private eventSeen = false;
  private lastFullScan = -Infinity;
  /** How long the last look at every file took (ms). */
  private lastFullScanMs = 0;
  /** The last process() stopped at a batch limit: the next one goes on without looking at the files first. */
  private continuing = false;
  private lastUpdate = -Infinity;
  private readonly byPath = new Map<string, TailFile>();
  /** Directories holding files rotated away and still being drained (their events matter too). */
  private readonly drainingDirs = new Set<string>();
  /** The file the next round of reads starts with (the one a round stopped in), so files late in the map are not starved. */
  private resumeAt: number | null = null;
  /** Why this start has no saved positions although it had some (damaged files set aside), for the log after restore. */
  private resetBecause: string | null = null;
  declare readonly counter: SourceCounter<typeof POSITION_RESET_COUNTER>;

  constructor(
    ctx: ComponentContext,
    readonly options: TaildirOptions,
  ) {
    super(ctx, {}, [POSITION_RESET_COUNTER]);
    this.backoffSleepIncrement = options.backoffSleepIncrement;
    this.maxBackoffSleep = options.maxBackoffSleep;
    this.matchers = Object.entries(options.filegroups).map(([g, p]) => new FileGroupMatcher(g, p, options.cachePatternMatching));
    this.journal = new StateJournal(options.positionFile, (m) => this.stateWriteFailed(m));
  }

  /** Committed positions of the tracked files (what the position file holds). */
  positions(): PositionEntry[] {
    const out: PositionEntry[] = [];
    for (const f of this.files.values()) if (f.shadowOf === null) out.push({ inode: f.inode, pos: f.pos, file: f.path });
    return out;
  }

  setWakeup(wake: () => void): void {
    this.wake = wake;
  }

  async start(): Promise<void> {
    this.logger.info(`${this.name} TaildirSource source starting with directory: ${JSON.stringify(this.options.filegroups)}`);
    for (const m of this.matchers) {
      try {
        const s = await stat(m.directory);
        if (!s.isDirectory()) throw new Error("not a directory");
      } catch {
        throw new ConfigurationError(`filegroups.${m.group}`, `Directory does not exist: ${m.directory}`, this.name);
      }
    }
    const positionFile = this.options.positionFile;
    const owner = positionFileOwners.get(positionFile);
    if (owner !== undefined && owner !== this.name) {
      throw new ConfigurationError("positionFile", `${positionFile} is already used by TAILDIR source ${owner}; give each TAILDIR source its own positionFile`, this.name);
    }
    try {
      mkdirSync(path.dirname(positionFile), { recursive: true });
    } catch (err) {
      throw new ConfigurationError("positionFile", `cannot create the directory ${path.dirname(positionFile)} of positionFile ${positionFile}: ${ioReason(err)}`, this.name);
    }
    try {
      this.lock = OwnerLock.acquire(positionLockFile(positionFile), `positionFile ${positionFile} of TAILDIR source ${this.name}`, `flume-ts TAILDIR source ${this.name}`);
    } catch (err) {
      if (err instanceof LockHeldError || err instanceof LockFileError) throw new ConfigurationError("positionFile", err.message, this.name);
      throw err;
    }
    if (this.lock.tookOverFrom) this.logger.warn(`${this.name}: took over ${this.lock.file} from process ${this.lock.tookOverFrom.pid}, which is no longer running`);
    positionFileOwners.set(positionFile, this.name);
    try {
      this.beginStart();
      this.durable = this.getChannelProcessor()
        .getChannels()
        .some((c) => c.durable === true);
      await this.restore();
      // Every tracked file is in the state file before any of its lines is read, so a crash
      // followed by a rotation can still find it by inode.
      await this.snapshot();
    } catch (err) {
      this.releaseOwnership();
      throw err;
    }
    this.indexPaths();
    this.started = true;
    this.state = "START";
    this.startWatching();
    this.schedulePositionWrite();
  }

  /** The runner is stopping: a batch waiting for room gives up (its lines are read again after a restart). */
  interrupt(): void {
    this.emitter.stop();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.emitter.stop();
    if (this.posTimer) this.clock.clearTimeout(this.posTimer);
    this.posTimer = null;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await this.snapshot();
    for (const f of this.files.values()) await f.release();
    this.files.clear();
    this.releaseOwnership();
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`Taildir source ${this.name} stopped. Metrics: ${JSON.stringify(this.counter.snapshot())}`);
  }

  private releaseOwnership(): void {
    this.journal.close();
    this.lock?.release();
    this.lock = null;
    if (positionFileOwners.get(this.options.positionFile) === this.name) positionFileOwners.delete(this.options.positionFile);
  }

  private stateWriteFailed(message: string): void {
    this.counter.inc("GenericProcessingFail");
    this.logger.error(`${this.name}: ${message}; after a crash, lines read since the last position write may be read again`);
  }

  // ---- file-system events ----

  private startWatching(): void {
    const dirs = new Set(this.matchers.map((m) => m.directory));
    for (const dir of dirs) {
      let w = this.watchers.get(dir);
      if (!w) {
        w = new DirectoryWatcher(dir, (kind, name) => this.onDirEvent(dir, kind, name));
        this.watchers.set(dir, w);
      }
      const failedBefore = w.failure;
      if (!w.start() && w.failure !== failedBefore) {
        this.logger.warn(`${this.name}: no file-system events for ${dir} (${w.failure}); polling it (up to every ${this.maxBackoffSleep} ms)`);
      }
    }
  }

  private get watching(): boolean {
    for (const w of this.watchers.values()) if (!w.active) return false;
    return this.watchers.size > 0;
  }

  private onDirEvent(dir: string, kind: DirEventKind, name: string | null): void {
    if (!this.started) return;
    const posDir = path.dirname(this.options.positionFile);
    const posBase = path.basename(this.options.positionFile);
    if (name !== null && dir === posDir && name.startsWith(posBase)) return; // our own writes
    const matchers = this.matchers.filter((m) => m.directory === dir);
    const relevant = name === null || matchers.some((m) => m.matchesName(name));
    if (!relevant && !this.drainingDirs.has(dir)) return;
    if (name !== null && kind === "change" && relevant) {
      const p = path.join(dir, name);
      if (this.trackedAt(p)) this.dirty.add(p);
      else this.fullScanDue = true;
    } else {
      this.fullScanDue = true;
      if (kind === "rename") for (const m of matchers) m.invalidate();
    }
    this.eventSeen = true;
    this.wake?.();
  }

  /** The matched tracked file at a path (from an index rebuilt after each look; checked on use). */
  private trackedAt(p: string): TailFile | undefined {
    const f = this.byPath.get(p);
    return f && f.path === p && f.matched && this.files.get(f.inode) === f ? f : undefined;
  }

  private indexPaths(): void {
    this.byPath.clear();
    this.drainingDirs.clear();
    for (const f of this.files.values()) {
      if (f.matched) this.byPath.set(f.path, f);
      else this.drainingDirs.add(path.dirname(f.path));
    }
  }

  // ---- state: snapshots, change records, durable commits ----

  private schedulePositionWrite(): void {
    this.posTimer = this.clock.setTimeout(() => {
      void this.snapshot().finally(() => {
        if (this.started) this.schedulePositionWrite();
      });
    }, this.options.writePosInterval);
  }

  /**
   * Writes the state file and Flume's position file (atomically, flushed) when anything
   * changed since the last time; writes never overlap, a request during one runs after it.
   */
  snapshot(): Promise<void> {
    if (this.snapshotRun) {
      this.snapshotAgain = true;
      return this.snapshotRun;
    }
    const run = async () => {
      do {
        this.snapshotAgain = false;
        await this.writeSnapshot();
      } while (this.snapshotAgain);
    };
    this.snapshotRun = run().finally(() => {
      this.snapshotRun = null;
    });
    return this.snapshotRun;
  }

  /** Kept for callers of the old name (tests, runners): writes the positions now. */
  writePositions(): Promise<void> {
    return this.snapshot();
  }

  private async writeSnapshot(): Promise<void> {
    const seq = this.seq;
    if (seq === this.snapshotSeq) return;
    const records: string[] = [];
    for (const f of this.files.values()) records.push(this.recordedAhead.get(f.inode) ?? recordJson(this.recordOf(f)));
    try {
      await this.journal.snapshot(records, seq, this.positions());
    } catch (err) {
      this.counter.inc("GenericProcessingFail");
      this.logger.error(`${this.name}: Failed writing positionFile ${this.options.positionFile} in ${path.dirname(this.options.positionFile)}: ${ioReason(err)}`);
      return;
    }
    this.snapshotSeq = seq;
    this.durableBase = seq;
    for (const [inode] of this.changed) if ((this.files.get(inode)?.seq ?? 0) <= seq) this.changed.delete(inode);
    for (const [inode, g] of this.gone) if (g.seq <= seq) this.gone.delete(inode);
  }

  private recordOf(f: TailFile, pos = f.pos, fp = f.fingerprint(), seq = f.seq): FileRecord {
    if (f.shadowOf !== null) return { inode: f.inode, pos: this.verifiedCopy.get(f.inode) ?? 0, file: f.path, fp: null, copyOf: f.shadowOf, seq };
    return { inode: f.inode, pos, file: f.path, fp, seq };
  }

  /** A file's record changed: it gets the next sequence number and is recorded. */
  private recordChange(f: TailFile, byCommit = false, committedJson?: string): void {
    this.recordedAhead.delete(f.inode);
    f.seq = ++this.seq;
    const json = committedJson ?? recordJson(this.recordOf(f));
    if (this.durable) {
      this.changed.set(f.inode, json);
      // Not while starting: a snapshot of the files placed so far would forget the others.
      if (this.changed.size > CHANGED_BEFORE_SNAPSHOT && this.started) void this.snapshot();
    }
    // A durable channel stored this commit's records already.
    if (!(byCommit && this.durable)) this.appendState(`${json}\n`);
    if (!byCommit) this.structuralChange = true;
  }

  private recordGone(f: TailFile): void {
    this.recordedAhead.delete(f.inode);
    const seq = ++this.seq;
    const json = goneJson(f.inode, seq);
    if (this.durable) {
      this.changed.delete(f.inode);
      this.gone.set(f.inode, { seq, json });
    }
    this.appendState(`${json}\n`);
    this.structuralChange = true;
  }

  private appendState(lines: string): void {
    this.journal.append(lines);
    if (this.journal.appended > JOURNAL_BYTES_BEFORE_SNAPSHOT && this.started) void this.snapshot();
  }

  /** What a durable channel stores with the commit of `batch`: every record changed since durableBase, as after the commit. */
  private channelValue(batch: TailBatch): { value: string; own: string; seq: number } {
    const f = batch.file;
    const seq = this.seq + 1;
    const own = recordJson(this.recordOf(f, batch.endPos, f.fingerprintAfter(batch), seq));
    const records: string[] = [];
    for (const [inode, json] of this.changed) if (inode !== f.inode) records.push(json);
    records.push(own);
    const gone: string[] = [];
    for (const g of this.gone.values()) gone.push(g.json);
    return { value: formatChannelState(seq, this.durableBase, records, gone), own, seq };
  }

  // ---- restore ----

  /**
   * A saved-state file that cannot be read: with onCorrupt = fail the start is refused;
   * otherwise the file is renamed aside (kept for a look, not overwritten by the next write)
   * and what happened is returned for the log.
   */
  private damaged(file: string, err: unknown): string {
    const reason = err instanceof SyntaxError ? `not valid JSON: ${err.message}` : ioReason(err);
    if (this.options.onCorrupt === "fail") {
      throw new ConfigurationError(
        "positionFile.onCorrupt",
        `${file} cannot be read (${reason}); not starting (positionFile.onCorrupt = fail): repair it, or move it away to start without positions`,
        this.name,
      );
    }
    try {
      return `${file} cannot be read (${reason}), kept as ${setAside(file, this.clock.now())}`;
    } catch (renameErr) {
      return `${file} cannot be read (${reason}) nor kept aside (${ioReason(renameErr)})`;
    }
  }

  private async savedState(): Promise<{ journal: JournalState | null; channel: ChannelState | null }> {
    let journal: JournalState | null = null;
    const damage: string[] = [];
    try {
      journal = this.journal.load();
      if (journal && journal.skipped > 0) this.logger.warn(`${this.name}: ${journal.skipped} unreadable line(s) in ${this.journal.file} ignored (a write cut short by a power loss?)`);
    } catch (err) {
      damage.push(this.damaged(this.journal.file, err));
    }
    if (!journal) {
      // Flume's position file (a first start, or one after Flume): positions without fingerprints.
      try {
        const entries = await readPositionFile(this.options.positionFile);
        if (entries.length > 0) {
          journal = { snapshotSeq: -1, seq: 0, records: new Map(entries.map((e) => [e.inode, { ...e, fp: null, seq: 0 }])), skipped: 0 };
        }
      } catch (err) {
        damage.push(this.damaged(this.options.positionFile, err));
      }
      if (journal && damage.length > 0) this.logger.warn(`${this.name}: ${damage.join("; ")}; using the positions of positionFile ${this.options.positionFile}`);
    }
    let channel: ChannelState | null = null;
    for (const c of this.getChannelProcessor().getChannels()) {
      if (!c.durable || !c.sourcePosition) continue;
      const value = c.sourcePosition(this.name);
      if (value === undefined) continue;
      try {
        const parsed = parseChannelState(value);
        if (!channel || parsed.seq > channel.seq) channel = parsed;
        this.logger.info(`${this.name}: resuming from the positions stored in channel ${c.name}`);
      } catch (err) {
        this.logger.warn(`${this.name}: ignoring the position stored in channel ${c.name}: ${(err as Error).message}`);
      }
    }
    if (!journal && damage.length > 0) {
      if (channel) this.logger.warn(`${this.name}: ${damage.join("; ")}; using the positions stored in the channel`);
      else this.resetBecause = damage.join("; ");
    }
    return { journal, channel };
  }

  private async listMatched(): Promise<{ group: string; file: MatchedFile }[]> {
    const out: { group: string; file: MatchedFile }[] = [];
    const now = this.clock.now();
    for (const m of this.matchers) {
      try {
        for (const file of await m.match(now)) {
          // Never tail our own state files (a pattern like .* in their directory).
          if (file.path.startsWith(this.options.positionFile)) continue;
          out.push({ group: m.group, file });
        }
      } catch (err) {
        this.logger.error(`${this.name}: I/O error while listing ${m.directory}: ${(err as Error).message}`);
      }
    }
    return out;
  }

  private newTailFile(p: string, inode: number, group: string, pos: number): TailFile {
    const tf = new TailFile(
      {
        path: p,
        inode,
        group,
        headers: this.options.headers[group] ?? {},
        pos,
        maxLineLength: this.options.maxLineLength,
        onOverlong: (file, length) => this.logger.warn(`${this.name}: line of ${length}+ bytes in ${file} exceeds maxLineLength ${this.options.maxLineLength}; emitting it in pieces`),
      },
      this.clock.now(),
    );
    this.logger.info(`Opening file: ${p}, inode: ${inode}, pos: ${pos}`);
    return tf;
  }

  /** Startup: match files, then place each at its saved position, found by inode. */
  private async restore(): Promise<void> {
    const { journal, channel } = await this.savedState();
    const merged = mergeState(journal, channel);
    for (const note of merged.notes) this.logger.warn(`${this.name}: ${note}`);
    this.seq = merged.seq;
    const matched = await this.listMatched();
    const byInode = new Map<number, { group: string; file: MatchedFile }>();
    for (const m of matched) if (!byInode.has(m.file.inode)) byInode.set(m.file.inode, m);
    const groupOfDir = (dir: string) => this.matchers.find((m) => m.directory === dir)?.group ?? this.matchers[0].group;

    // Every record first, then the checks (a copy's original must be known when it is checked).
    const placed: { tf: TailFile; fp: Fingerprint | null }[] = [];
    const inodes = new InodeFinder();
    for (const r of merged.records) {
      const m = byInode.get(r.inode);
      let tf: TailFile;
      if (m) {
        tf = this.newTailFile(m.file.path, r.inode, m.group, r.copyOf === undefined ? r.pos : 0);
        tf.size = m.file.size;
      } else {
        // Not matched any more: rotated away by rename? Look for the inode in its directory.
        const found = await inodes.find(path.dirname(r.file), r.inode);
        if (!found) {
          this.logger.info(`Missing file: ${r.file}, inode: ${r.inode}, pos: ${r.pos}`);
          if (r.copyOf === undefined && r.fp) this.missing.set(r.inode, r);
          continue;
        }
        tf = this.newTailFile(found.path, r.inode, groupOfDir(path.dirname(r.file)), r.copyOf === undefined ? r.pos : 0);
        tf.size = found.size;
        tf.matched = false;
        if (r.copyOf === undefined) this.logger.info(`${this.name}: ${r.file} (inode ${r.inode}) was rotated to ${found.path}; reading it to its end from pos ${r.pos}`);
      }
      tf.seq = r.seq;
      if (r.copyOf !== undefined) {
        tf.shadowOf = r.copyOf;
        this.verifiedCopy.set(r.inode, r.pos);
      } else if (r.fp) tf.adoptFingerprint(r.fp);
      this.files.set(r.inode, tf);
      placed.push({ tf, fp: r.fp });
    }
    // Copies whose original is not tracked any more: continue them where the original was.
    for (const { tf } of placed) {
      if (tf.shadowOf === null || this.files.has(tf.shadowOf)) continue;
      const original = this.missing.get(tf.shadowOf);
      const fp = original?.fp ?? null;
      const full = fp !== null && tf.size >= fp.tailEnd && (await tf.holds(fp));
      this.releaseShadow(tf, original ? original.pos : 0, full ? fp : null, "is gone");
    }
    for (const { tf, fp } of placed) {
      if (tf.shadowOf !== null || tf.pos === 0) continue;
      // Smaller than the position, or other content: truncated (and rewritten) while we were down.
      if (tf.size < tf.pos || (fp && !(await tf.holds(fp)))) await this.handleShrink(tf, tf.size);
      // The head's bytes, to fingerprint later positions (and the whole fingerprint if none was saved).
      else await tf.loadFingerprint();
    }
    let takenUp = 0;
    for (const m of matched) {
      if (this.files.has(m.file.inode)) continue;
      await this.takeUp(m);
      takenUp++;
    }
    if (this.resetBecause !== null) this.reportReset(this.resetBecause, takenUp);
    this.resetBecause = null;
  }

  /** A start without the positions a damaged file held: said once, loudly, and counted. */
  private reportReset(why: string, files: number): void {
    this.counter.inc(POSITION_RESET_COUNTER);
    const where = this.options.skipToEnd
      ? "from their end (skipToEnd): lines written while the agent was stopped are skipped"
      : "from their start: lines delivered before are delivered again";
    this.logger.error(`${this.name}: ${why}; starting without positions: ${files} matched file(s) will be read ${where} (positionFile.onCorrupt = fail refuses to start instead)`);
  }

  // ---- new files and copies ----

  /** Tracks a file seen for the first time (see takeUpNewFile); records it before it is read. */
  private async takeUp(m: { group: string; file: MatchedFile }): Promise<void> {
    const take = this.options.skipToEnd ? { pos: m.file.size, shadowOf: null, verified: 0 } : await this.takeUpNewFile(m.file);
    const tf = this.newTailFile(m.file.path, m.file.inode, m.group, take.pos);
    tf.shadowOf = take.shadowOf;
    tf.size = m.file.size;
    if (take.shadowOf !== null) this.verifiedCopy.set(tf.inode, take.verified);
    this.files.set(m.file.inode, tf);
    if (tf.pos > 0 && tf.shadowOf === null) await tf.loadFingerprint();
    this.recordChange(tf);
  }

  /**
   * How to take up a file seen for the first time: from 0, unless it is a copy (copytruncate)
   * of a tracked file: then it waits as that file's shadow until the original is truncated or
   * gone, and continues where the original was. A copy of a file known only from before a
   * restart (its record) continues at the recorded position.
   */
  private async takeUpNewFile(file: MatchedFile): Promise<{ pos: number; shadowOf: number | null; verified: number }> {
    const fresh = { pos: 0, shadowOf: null, verified: 0 };
    if (file.size === 0) return fresh;
    try {
      return await withHandle(file.path, async (h) => {
        const head = await readRange(h, 0, HEAD_BYTES);
        for (const tf of this.files.values()) {
          if (tf.inode === file.inode || tf.shadowOf !== null || tf.pos === 0) continue;
          const fp = tf.fingerprint();
          if (!fp || !headMatches(head, fp)) continue;
          // Still its old content (not truncated yet): compare what the copy holds so far.
          if ((await tf.currentSize()) >= file.size && (await this.samePrefix(h, tf, file.size))) {
            this.logger.info(`${this.name}: ${file.path} is a copy of ${tf.path} (copytruncate?); it is read from where the original is once the original is truncated or gone`);
            return { pos: 0, shadowOf: tf.inode, verified: file.size };
          }
        }
        for (const [inode, r] of this.missing) {
          const fp = r.fp;
          if (!fp || file.size < fp.tailEnd || !headMatches(head, fp) || !(await holdsFingerprint(h, fp))) continue;
          this.missing.delete(inode);
          this.logger.info(`${this.name}: ${file.path} is a copy of ${r.file}, read up to pos ${r.pos} before; continuing it there`);
          return { pos: Math.min(r.pos, file.size), shadowOf: null, verified: 0 };
        }
        return fresh;
      });
    } catch {
      return fresh;
    }
  }

  /** True when the open file's first `length` bytes look like the tracked file's (head, tail and samples between). */
  private async samePrefix(copy: PositionalReader, original: TailFile, length: number): Promise<boolean> {
    const offsets: number[] = [Math.max(0, length - TAIL_BYTES)];
    for (let i = 1; i <= COPY_SAMPLES; i++) offsets.push(Math.floor((length * i) / (COPY_SAMPLES + 1)));
    for (const at of offsets) {
      const n = Math.min(TAIL_BYTES, length - at);
      if (n <= 0) continue;
      const [a, b] = await Promise.all([readRange(copy, at, n), original.readAt(at, n)]);
      if (a.length !== n || b.length !== n || hashBytes(a) !== hashBytes(b)) return false;
    }
    return true;
  }

  /** A shadow grew: it must still equal its original's bytes, else it is a file of its own. */
  private async recheckShadow(tf: TailFile, original: TailFile): Promise<void> {
    const verified = this.verifiedCopy.get(tf.inode) ?? 0;
    if (tf.size <= verified) return;
    let same = false;
    try {
      same = (await original.currentSize()) >= tf.size && (await withHandle(tf.path, (h) => this.samePrefix(h, original, tf.size)));
    } catch {
      same = false;
    }
    if (same) {
      this.verifiedCopy.set(tf.inode, tf.size);
      this.recordChange(tf);
      return;
    }
    this.logger.info(`${this.name}: ${tf.path} is no copy of ${original.path} after all; reading it from pos 0`);
    this.unshadow(tf, 0);
  }

  private unshadow(tf: TailFile, pos: number): void {
    tf.shadowOf = null;
    this.verifiedCopy.delete(tf.inode);
    tf.rewindTo(pos);
    this.recordChange(tf);
  }

  /**
   * Starts a shadow: its original lost its content (truncated) or is gone. With the original's
   * fingerprint at its position present in the copy, the copy continues at that position;
   * otherwise after the bytes known to be the original's.
   */
  private releaseShadow(tf: TailFile, originalPos: number, fp: Fingerprint | null, why: string): void {
    const verified = this.verifiedCopy.get(tf.inode) ?? 0;
    const at = Math.min(originalPos, Math.max(verified, fp && tf.size >= fp.tailEnd ? originalPos : 0), tf.size);
    this.logger.info(`${this.name}: continuing ${tf.path}, the copy of a file that ${why}, at pos ${at}`);
    this.unshadow(tf, at);
  }

  /** Starts the shadows of `original` (it was truncated or let go); true when it had any. */
  private async releaseShadows(original: TailFile, pos: number, fp: Fingerprint | null, why: string): Promise<boolean> {
    let any = false;
    for (const tf of [...this.files.values()]) {
      if (tf.shadowOf !== original.inode) continue;
      // The fingerprint at the original's position, when the copy is long enough to hold it.
      const full = fp !== null && tf.size >= fp.tailEnd && (await tf.holds(fp));
      this.releaseShadow(tf, pos, full ? fp : null, why);
      any = true;
    }
    return any;
  }

  /**
   * A tracked file got smaller than its committed position, or its content before the
   * position changed: truncated (copytruncate, or by hand). The lines after the position may
   * survive in a copy in the same directory: its shadow, or a file found by fingerprint,
   * continues there. Then the truncated file is read from its start.
   */
  private async handleShrink(tf: TailFile, size: number): Promise<void> {
    const fp = tf.fingerprint();
    const oldPos = tf.pos;
    if (await this.releaseShadows(tf, oldPos, fp, "was truncated")) {
      this.logger.info(`${this.name}: ${tf.path} was truncated after being copied; reading it again from pos 0`);
    } else if (fp) {
      const copy = await this.findCopy(path.dirname(tf.path), tf.inode, fp, oldPos);
      if (copy) {
        const existing = this.files.get(copy.inode);
        if (existing) {
          if (existing.pos < oldPos) {
            existing.rewindTo(oldPos);
            existing.size = copy.size;
            this.recordChange(existing);
          }
        } else {
          const ctf = this.newTailFile(copy.path, copy.inode, tf.group, oldPos);
          ctf.size = copy.size;
          ctf.matched = this.matchers.some((m) => m.directory === path.dirname(copy.path) && m.matchesName(path.basename(copy.path)));
          ctf.adoptFingerprint(fp);
          this.files.set(copy.inode, ctf);
          this.recordChange(ctf);
        }
        this.logger.info(`${this.name}: ${tf.path} was truncated after being copied to ${copy.path}; continuing the copy at pos ${oldPos}`);
      } else {
        this.logger.warn(`${this.name}: Pos ${oldPos} is larger than file size ${size}! Restarting from pos 0, file: ${tf.path}, inode: ${tf.inode} (no copy of its content found; lines after pos ${oldPos} were lost by the truncation)`);
      }
    } else {
      this.logger.info(`Pos ${oldPos} is larger than file size! Restarting from pos 0, file: ${tf.path}, inode: ${tf.inode}`);
    }
    tf.rewindTo(0);
    tf.size = size;
    this.recordChange(tf);
  }

  private async findCopy(dir: string, exclude: number, fp: Fingerprint, minSize: number): Promise<{ path: string; inode: number; size: number } | null> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return null;
    }
    for (const n of names) {
      const p = path.join(dir, n);
      if (p === this.options.positionFile || p.startsWith(`${this.options.positionFile}.`)) continue;
      try {
        const s = await stat(p);
        if (!s.isFile() || s.ino === exclude || s.size < minSize) continue;
        const tracked = this.files.get(s.ino);
        if (tracked && tracked.pos >= minSize) continue;
        if (await withHandle(p, (h) => holdsFingerprint(h, fp))) return { path: p, inode: s.ino, size: s.size };
      } catch {
        // Gone since the listing.
      }
    }
    return null;
  }

  // ---- looking at the files ----

  /**
   * Re-lists and re-stats: new files, rotations, truncations, growth, idleness. `busy`: the
   * source is going on after a batch limit (it has more to read), not back from a sleep.
   */
  private async updateFiles(busy: boolean): Promise<void> {
    const now = this.clock.now();
    const sinceFull = now - this.lastFullScan;
    // A look no event asked for is the polling fallback (directories without events, and files
    // whose changes send none: NFS, some FUSE and container mounts); a busy source spaces them.
    const spacing = busy ? Math.min(this.maxBackoffSleep, SCAN_SPACING_FACTOR * this.lastFullScanMs) : 0;
    const pollDue = (!this.eventSeen || !this.watching) && sinceFull >= spacing;
    const full = this.fullScanDue || pollDue || sinceFull >= this.maxBackoffSleep;
    const dirty = [...this.dirty];
    this.dirty.clear();
    this.eventSeen = false;
    if (!full) {
      for (const p of dirty) {
        const tf = this.trackedAt(p);
        if (!tf) {
          this.fullScanDue = true;
          continue;
        }
        let s;
        try {
          s = await stat(p);
        } catch {
          this.fullScanDue = true; // gone: a rename event follows, or the next full look sees it
          continue;
        }
        if (s.ino !== tf.inode) {
          this.fullScanDue = true;
          continue;
        }
        await this.updateTracked(tf, s.size, now);
      }
      if (!this.fullScanDue) return;
    }
    this.fullScanDue = false;
    this.lastFullScan = now;
    if (!this.watching) this.startWatching();
    const matched = await this.listMatched();
    const seen = new Set<number>();
    const fresh: { group: string; file: MatchedFile }[] = [];
    for (const m of matched) {
      if (seen.has(m.file.inode)) continue;
      seen.add(m.file.inode);
      const tf = this.files.get(m.file.inode);
      if (!tf) {
        fresh.push(m);
        continue;
      }
      // Renamed to another matching name: same inode, same content, same position.
      if (tf.path !== m.file.path) {
        tf.path = m.file.path;
        this.recordChange(tf);
      }
      tf.matched = true;
      await this.updateTracked(tf, m.file.size, now);
    }
    const inodes = new InodeFinder();
    for (const tf of [...this.files.values()]) {
      if (seen.has(tf.inode) || !this.files.has(tf.inode)) continue;
      // Rotated away (or deleted): keep reading through the open descriptor until drained.
      if (tf.matched) {
        tf.matched = false;
        tf.lastActive = now;
        this.logger.info(`${this.name}: ${tf.path} (inode ${tf.inode}) no longer matches; reading it to its end`);
      }
      if (!tf.isOpen) {
        const found = await inodes.find(path.dirname(tf.path), tf.inode);
        if (!found) {
          await this.retire(tf, "deleted");
          continue;
        }
        if (tf.path !== found.path) {
          tf.path = found.path;
          this.recordChange(tf);
        }
        await this.updateTracked(tf, found.size, now);
      } else {
        await this.updateTracked(tf, await tf.currentSize(), now);
      }
    }
    // Taking up new files is left out: a start with thousands of them is not what a look costs.
    this.lastFullScanMs = this.clock.now() - now;
    for (const m of fresh) {
      if (this.files.has(m.file.inode)) continue; // already taken up as a copytruncate copy
      // An empty new file may be a copy just begun: decide once it has content.
      if (m.file.size === 0 && !this.options.skipToEnd) continue;
      await this.takeUp(m);
    }
  }

  private async updateTracked(tf: TailFile, size: number, now: number): Promise<void> {
    if (tf.shadowOf !== null) {
      const original = this.files.get(tf.shadowOf);
      tf.grew(size, now);
      if (original && size > (this.verifiedCopy.get(tf.inode) ?? 0)) await this.recheckShadow(tf, original);
      return;
    }
    if (size < tf.pos) await this.handleShrink(tf, size);
    else if (size !== tf.size && tf.pos > 0 && !(await tf.tailStillMatches())) await this.handleShrink(tf, size);
    else tf.grew(size, now);
  }

  private async retire(tf: TailFile, why: string): Promise<void> {
    await this.releaseShadows(tf, tf.pos, tf.fingerprint(), why === "deleted" ? "was deleted" : "was rotated away");
    this.files.delete(tf.inode);
    this.verifiedCopy.delete(tf.inode);
    this.recordGone(tf);
    void tf.release();
    this.logger.info(`Closed file: ${tf.path}, inode: ${tf.inode}, pos: ${tf.pos} (${why})`);
  }

  /**
   * Commits one batch, retried until the channel takes it; false when the source stopped first.
   * A batch not committed is read again from the committed position. `group.ahead`: the
   * position after the group this batch belongs to was recorded already (see readGroup).
   */
  private async commit(batch: TailBatch, group: { ahead: boolean }): Promise<boolean> {
    const f = batch.file;
    const stored = this.durable ? this.channelValue(batch) : null;
    const position = stored ? { source: this.name, value: stored.value } : undefined;
    // The channel is full and may stay so: a crash meanwhile must not skip the lines waiting.
    const onRefused = group.ahead
      ? () => {
          group.ahead = false;
          this.recordChange(f);
        }
      : undefined;
    let committed = false;
    try {
      committed = await this.emitter.deliver(batch.events, { position, onRefused });
    } finally {
      if (!committed) {
        f.rewindTo(f.pos);
        if (group.ahead) {
          group.ahead = false;
          this.recordChange(f);
        }
      }
    }
    if (!committed) return false;
    f.committed(batch, this.clock.now());
    // The record the channel stored, unless something changed meanwhile (then a fresh one).
    if (stored) this.recordChange(f, true, stored.seq === this.seq + 1 ? stored.own : undefined);
    else if (!group.ahead) this.recordChange(f);
    return true;
  }

  /**
   * Cuts up to `max` batches from a file (fewer at its end), for a channel that keeps no
   * positions: their end position is recorded once, before the first is committed, instead of
   * once per commit (a write each). A crash while they are committed loses them with the
   * channel's content, and repeats none.
   */
  private async readGroup(tf: TailFile, max: number, finalRead: boolean): Promise<TailBatch[]> {
    const offsetHeader = this.options.byteOffsetHeader ? BYTE_OFFSET_HEADER_KEY : null;
    const fileHeader = this.options.fileHeader ? this.options.fileHeaderKey : null;
    const group: TailBatch[] = [];
    let events = 0;
    while (group.length < max && events < GROUP_EVENTS) {
      const batch = await tf.readBatch(this.options.batchSize, offsetHeader, fileHeader, finalRead);
      if (batch === null) break;
      group.push(batch);
      events += batch.events.length;
      if (!batch.full) break;
    }
    return group;
  }

  /** Records a file's position and fingerprint as they will be once `last` is committed. */
  private recordAhead(last: TailBatch): void {
    const f = last.file;
    f.seq = ++this.seq;
    const json = recordJson(this.recordOf(f, last.endPos, f.fingerprintAfter(last), f.seq));
    // A snapshot taken while the group is committed must not take the state back before it.
    this.recordedAhead.set(f.inode, json);
    this.appendState(`${json}\n`);
  }

  async process(): Promise<Status> {
    if (!this.started) return "BACKOFF";
    try {
      // Going on after a batch limit needs no new look at the files, unless that is getting old.
      if (!this.continuing || this.clock.now() - this.lastUpdate >= CONTINUE_WITHOUT_LOOK_MS) {
        this.lastUpdate = this.clock.now();
        await this.updateFiles(this.continuing);
        this.indexPaths();
      }
      this.continuing = false;
      let status: Status = "BACKOFF";
      let batches = 0;
      const now = this.clock.now();
      const all = [...this.files.values()];
      const resume = this.resumeAt === null ? -1 : all.findIndex((f) => f.inode === this.resumeAt);
      const start = Math.max(0, resume);
      this.resumeAt = null;
      for (let k = 0; k < all.length; k++) {
        const index = (start + k) % all.length;
        const tf = all[index];
        if (!this.started) break;
        if (tf.shadowOf !== null || !this.files.has(tf.inode)) continue;
        const idle = now - tf.lastActive >= this.options.idleTimeout;
        // A file rotated away that stayed idle will not grow: its last line is complete now.
        const finalRead = !tf.matched && idle;
        if (batches >= BATCHES_PER_PROCESS && (tf.hasUnread() || finalRead)) {
          // This call's batches are spent between files: go on with this one at once (many
          // files of a line or two each would otherwise wait a backoff sleep per 256 files).
          status = "READY";
          this.continuing = true;
          this.resumeAt = tf.inode;
          break;
        }
        let fileBatches = 0;
        let limited = false;
        while (this.started && (tf.hasUnread() || finalRead)) {
          const room = Math.min(this.durable ? 1 : GROUP_BATCHES, this.options.maxBatchCount - fileBatches, BATCHES_PER_PROCESS - batches);
          let group: TailBatch[];
          try {
            group = await this.readGroup(tf, room, finalRead);
            tf.readError = null;
          } catch (err) {
            // One file that cannot be read (permissions, I/O error) must not hold up the others.
            const message = (err as Error).message;
            if (tf.readError !== message) this.logger.error(`${this.name}: Unable to read ${tf.path} (inode ${tf.inode}): ${message}; will try again`);
            tf.readError = message;
            this.counter.values.EventReadFail++;
            // Lines cut before the failure were not delivered: read again from the committed position.
            tf.rewindTo(tf.pos);
            await tf.close();
            break;
          }
          if (group.length === 0) break;
          const ahead = { ahead: !this.durable };
          if (ahead.ahead) this.recordAhead(group[group.length - 1]);
          for (const batch of group) if (!(await this.commit(batch, ahead))) return "BACKOFF";
          this.recordedAhead.delete(tf.inode);
          batches += group.length;
          fileBatches += group.length;
          if (!group[group.length - 1].full) break;
          if (fileBatches >= this.options.maxBatchCount || batches >= BATCHES_PER_PROCESS) {
            limited = true;
            break;
          }
        }
        if (limited && batches >= BATCHES_PER_PROCESS) {
          // Go on with this file next time (it has more, and keeps what it read ahead), then the ones after it.
          status = "READY";
          this.continuing = true;
          this.resumeAt = tf.inode;
          break;
        }
        tf.park();
        if (limited) {
          status = "READY";
          this.continuing = true;
          continue;
        }
        if (finalRead && !tf.hasUnread()) await this.retire(tf, "rotated away and drained");
        else if (idle && tf.matched && tf.isOpen && !tf.hasUnread()) {
          await tf.close();
          this.logger.info(`Closed file: ${tf.path}, inode: ${tf.inode}, pos: ${tf.pos} (idle)`);
        }
      }
      if (this.structuralChange) {
        this.structuralChange = false;
        void this.snapshot();
      }
      return status;
    } catch (err) {
      this.continuing = false;
      if (err instanceof EmitError) {
        this.emitter.failed(err, "the batch is read again at the next poll");
      } else {
        this.logger.error(`${this.name}: Unable to tail files: ${(err as Error).message}`);
        this.counter.inc("EventReadFail");
      }
      return "BACKOFF";
    }
  }
}

function headMatches(head: Uint8Array, fp: Fingerprint): boolean {
  return head.length >= fp.headLen && hashBytes(head, 0, fp.headLen) === fp.head;
}

async function withHandle<T>(file: string, use: (h: ReadOnlyFile) => Promise<T>): Promise<T> {
  const h = await ReadOnlyFile.open(file);
  try {
    return await use(h);
  } finally {
    await h.close().catch(() => {});
  }
}

function parseHeaders(raw: Record<string, string>): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const [k, v] of Object.entries(raw)) {
    const dot = k.indexOf(".");
    if (dot <= 0) continue;
    const group = k.slice(0, dot);
    (out[group] ??= {})[k.slice(dot + 1)] = v;
  }
  return out;
}

/** The position file a configuration names, as the source will use it. */
function positionFileOf(configured: string, ctx: Pick<ComponentContext, "storagePath">): string {
  const expanded = configured.startsWith("~/") ? path.join(homedir(), configured.slice(2)) : configured;
  return path.resolve(ctx.storagePath(expanded));
}

export const definition = defineComponent({
  kind: "source",
  type: "TAILDIR",
  aliases: ["org.apache.flume.source.taildir.TaildirSource"],
  doc: "Tails files matching regular expressions and keeps their positions in a JSON position file.",
  props: {
    filegroups: { type: "list", required: true, doc: "Space-separated file group names" },
    positionFile: { type: "path", default: "~/.flume/taildir_position.json", doc: "JSON file with the inode, position and path of each tailed file" },
    skipToEnd: { type: "boolean", default: false, doc: "Start files not in the position file at their end" },
    idleTimeout: { type: "int", default: 120000, min: 0, doc: "Milliseconds without new data after which a file is closed" },
    writePosInterval: { type: "int", default: 3000, min: 1, doc: "Milliseconds between writes of the position file" },
    batchSize: { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Lines per channel transaction" },
    maxBatchCount: { type: "int", default: Number.MAX_SAFE_INTEGER, doc: "Batches read from one file before moving to the next (<= 0: no limit)" },
    fileHeader: { type: "boolean", default: false, doc: "Add the file's absolute path as a header" },
    fileHeaderKey: { type: "string", default: "file", doc: "Header name for fileHeader" },
    byteOffsetHeader: { type: "boolean", default: false, doc: "Add the line's byte offset as header 'byteoffset'" },
    cachePatternMatching: { type: "boolean", default: true, doc: "List a directory again only when its modification time changes" },
    backoffSleepIncrement: { type: "int", default: 1000, min: 0, doc: "Added to the sleep after each poll without new lines (ms)" },
    maxBackoffSleep: { type: "int", default: 5000, min: 0, doc: "Longest sleep between polls without new lines (ms); file-system events end it early" },
    "positionFile.onCorrupt": {
      type: "enum",
      values: ["reset", "fail"],
      default: "reset",
      doc: "Flume TS extension: a positionFile (or its .state file) that cannot be read is renamed aside (<file>.corrupt-<time>) and every file read anew (reset), or the source refuses to start (fail). Flume logs an error and overwrites it",
    },
    maxLineLength: {
      type: "int",
      default: 16 * 1024 * 1024,
      min: 1,
      doc: "Flume TS extension: longest line in bytes held in memory; longer lines are emitted in pieces",
    },
  },
  groups: {
    filegroupPaths: { prefix: "filegroups.", doc: "filegroups.<group> = /dir/regex: the directory and a regex on file names" },
    headers: { prefix: "headers.", doc: "headers.<group>.<key> = value: a header added to the group's events" },
  },
  claims(config, ctx) {
    const positionFile = positionFileOf(config.positionFile, ctx);
    return [{ file: positionLockFile(positionFile), what: `positionFile ${positionFile}` }];
  },
  create(config, ctx) {
    const groups = config.filegroups;
    const paths = config.filegroupPaths;
    const filegroups: Record<string, string> = {};
    for (const g of groups) if (paths[g] !== undefined) filegroups[g] = paths[g];
    if (Object.keys(filegroups).length === 0) {
      throw new ConfigurationError("filegroups", `Mapping for tailing files is empty or invalid: 'filegroups.' (groups: ${groups.join(" ") || "none"})`, ctx.name);
    }
    const maxBatchCount = config.maxBatchCount;
    if (maxBatchCount <= 0) ctx.logger.warn(`${ctx.name}: Invalid maxBatchCount specified, using no limit`);
    return new TaildirSource(ctx, {
      filegroups,
      headers: parseHeaders(config.headers),
      positionFile: positionFileOf(config.positionFile, ctx),
      skipToEnd: config.skipToEnd,
      idleTimeout: config.idleTimeout,
      writePosInterval: config.writePosInterval,
      batchSize: config.batchSize,
      maxBatchCount: maxBatchCount <= 0 ? Number.MAX_SAFE_INTEGER : maxBatchCount,
      fileHeader: config.fileHeader,
      fileHeaderKey: config.fileHeaderKey,
      byteOffsetHeader: config.byteOffsetHeader,
      cachePatternMatching: config.cachePatternMatching,
      maxLineLength: config.maxLineLength,
      backoffSleepIncrement: config.backoffSleepIncrement,
      maxBackoffSleep: config.maxBackoffSleep,
      onCorrupt: config["positionFile.onCorrupt"],
    });
  },
  validate(config) {
    const errors: { key: string; message: string }[] = [];
    // A position file the agent cannot write would fail every start (and every later write).
    const positionFile = positionFileOf(config.positionFile, { storagePath: (p) => p });
    const unwritable = unwritableDirectory(path.dirname(positionFile));
    if (unwritable) errors.push({ key: "positionFile", message: `the agent cannot keep positionFile ${positionFile} in its directory ${path.dirname(positionFile)}: ${unwritable}` });
    const paths = config.filegroupPaths;
    for (const g of config.filegroups) {
      if (paths[g] === undefined) {
        errors.push({ key: `filegroups.${g}`, message: `group "${g}" is listed in filegroups but has no filegroups.${g} path` });
        continue;
      }
      try {
        new FileGroupMatcher(g, paths[g], true);
      } catch (err) {
        errors.push({ key: `filegroups.${g}`, message: (err as Error).message.replace(/^filegroups\.[^:]*: /, "") });
      }
    }
    return errors;
  },
});
