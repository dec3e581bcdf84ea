import { readdir, stat } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import type { TimerHandle } from "../../core/clock.ts";
import { ConfigurationError } from "../../core/errors.ts";
import type { Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import { EmitError } from "../../pipeline/emitter.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { BaseSource } from "./base.ts";
import { FileGroupMatcher } from "./taildir/matcher.ts";
import type { MatchedFile } from "./taildir/matcher.ts";
import type { Fingerprint, PositionEntry } from "./taildir/position-file.ts";
import { fingerprintFileOf, formatPositions, parsePositions, readFingerprints, readPositionFile, writeAtomically } from "./taildir/position-file.ts";
import { TailFile, matchesFingerprint } from "./taildir/tail-file.ts";
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
}

/** Flume's byte offset header name. */
export const BYTE_OFFSET_HEADER_KEY = "byteoffset";
/**
 * Position files in use in this process -> the source using it. Two sources on one file
 * (both left at the default path, say) would overwrite each other's positions.
 */
const positionFileOwners = new Map<string, string>();

/** Batches one process() call may cut before it returns READY, so a stop is never held up long. */
const BATCHES_PER_PROCESS = 256;

/**
 * Flume's TAILDIR source: tails every file matching the groups' patterns, identifies files by
 * inode, and keeps positions in Flume's JSON position file. Unlike Flume, a position moves only
 * after the batch is committed, a batch that the channel refused is retried as is (inside
 * process(), until it commits or the source stops), a file
 * rotated away by rename is drained to its end (found again by inode after a restart), and a
 * copy made by copytruncate is recognised (by fingerprint) and continued where the original
 * was, so rotation neither loses nor repeats lines.
 */
export class TaildirSource extends BaseSource implements PollableSource {
  readonly kind = "pollable";
  readonly backoffSleepIncrement: number;
  readonly maxBackoffSleep: number;
  private readonly matchers: FileGroupMatcher[];
  /** Tracked files by inode. */
  private readonly files = new Map<number, TailFile>();
  /** Fingerprints at the committed positions, by inode (kept for files that may be truncated). */
  private readonly fingerprints = new Map<number, Fingerprint>();
  private posTimer: TimerHandle | null = null;
  private writing: Promise<void> = Promise.resolve();
  private started = false;
  private lastWritten = "";
  private lastFingerprints = "";
  /** Some channel of this source keeps positions (a file channel). */
  private durable = false;
  /**
   * A file was let go since the last commit: a durable channel still lists its inode and
   * position, which a restart would apply to a new file that got the freed inode.
   */
  private retiredSinceCommit = false;

  constructor(
    ctx: ComponentContext,
    readonly options: TaildirOptions,
  ) {
    super(ctx);
    this.backoffSleepIncrement = options.backoffSleepIncrement;
    this.maxBackoffSleep = options.maxBackoffSleep;
    this.matchers = Object.entries(options.filegroups).map(([g, p]) => new FileGroupMatcher(g, p, options.cachePatternMatching));
  }

  /** Committed positions of the tracked files (what the position file holds). */
  positions(): PositionEntry[] {
    const out: PositionEntry[] = [];
    for (const f of this.files.values()) if (f.shadowOf === null) out.push({ inode: f.inode, pos: f.pos, file: f.path });
    return out;
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
    const owner = positionFileOwners.get(this.options.positionFile);
    if (owner !== undefined && owner !== this.name) {
      throw new ConfigurationError("positionFile", `${this.options.positionFile} is already used by TAILDIR source ${owner}; give each TAILDIR source its own positionFile`, this.name);
    }
    positionFileOwners.set(this.options.positionFile, this.name);
    this.beginStart();
    this.durable = this.getChannelProcessor()
      .getChannels()
      .some((c) => c.durable === true);
    await this.restore();
    // Every tracked file is in the position file before any of its lines is read, so a crash
    // followed by a rotation can still find it by inode.
    await this.writePositions();
    this.started = true;
    this.state = "START";
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
    await this.storeRetiredPositions();
    await this.writePositions();
    for (const f of this.files.values()) await f.release();
    this.files.clear();
    if (positionFileOwners.get(this.options.positionFile) === this.name) positionFileOwners.delete(this.options.positionFile);
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`Taildir source ${this.name} stopped. Metrics: ${JSON.stringify(this.counter.snapshot())}`);
  }

  private schedulePositionWrite(): void {
    this.posTimer = this.clock.setTimeout(() => {
      void this.writePositions().finally(() => {
        if (this.started) this.schedulePositionWrite();
      });
    }, this.options.writePosInterval);
  }

  /** Writes the committed positions (and fingerprints) atomically; writes never overlap. */
  writePositions(): Promise<void> {
    const run = async () => {
      try {
        for (const f of this.files.values()) {
          if (f.size >= f.pos) {
            const fp = await f.fingerprint();
            if (fp) this.fingerprints.set(f.inode, fp);
          }
        }
        const entries = this.positions();
        const fps: Record<string, Fingerprint> = {};
        for (const e of entries) {
          const fp = this.fingerprints.get(e.inode);
          if (fp && fp.tailEnd <= e.pos) fps[String(e.inode)] = fp;
        }
        const positions = formatPositions(entries);
        const fingerprints = JSON.stringify(fps);
        // Nothing moved since the last write: leave the files alone.
        if (positions === this.lastWritten && fingerprints === this.lastFingerprints) return;
        // Same directory: the second write's directory flush covers both renames.
        await writeAtomically(fingerprintFileOf(this.options.positionFile), fingerprints, false);
        await writeAtomically(this.options.positionFile, positions);
        this.lastWritten = positions;
        this.lastFingerprints = fingerprints;
      } catch (err) {
        this.counter.inc("GenericProcessingFail");
        this.logger.error(`${this.name}: Failed writing positionFile ${this.options.positionFile}: ${(err as Error).message}`);
      }
    };
    this.writing = this.writing.then(run);
    return this.writing;
  }

  /**
   * The positions to resume from: a durable channel's (stored with the events, so exact) for
   * the files it knows, the position file's for the others (files recorded before any of their
   * lines was committed).
   */
  private async savedPositions(): Promise<PositionEntry[]> {
    let fromFile: PositionEntry[] = [];
    try {
      fromFile = await readPositionFile(this.options.positionFile);
    } catch (err) {
      this.logger.error(`${this.name}: Failed loading positionFile ${this.options.positionFile}: ${(err as Error).message}; starting without positions`);
    }
    for (const channel of this.getChannelProcessor().getChannels()) {
      if (!channel.durable || !channel.sourcePosition) continue;
      const value = channel.sourcePosition(this.name);
      if (value === undefined) continue;
      try {
        const entries = parsePositions(value);
        this.logger.info(`${this.name}: resuming from the positions stored in channel ${channel.name}`);
        const known = new Set(entries.map((e) => e.inode));
        return [...entries, ...fromFile.filter((e) => !known.has(e.inode))];
      } catch (err) {
        this.logger.warn(`${this.name}: ignoring the position stored in channel ${channel.name}: ${(err as Error).message}`);
      }
    }
    return fromFile;
  }

  private async listMatched(): Promise<{ group: string; file: MatchedFile }[]> {
    const out: { group: string; file: MatchedFile }[] = [];
    const now = this.clock.now();
    for (const m of this.matchers) {
      try {
        for (const file of await m.match(now)) {
          // Never tail our own position files (a pattern like .* in their directory).
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
    const saved = await this.savedPositions();
    const savedFps = await readFingerprints(fingerprintFileOf(this.options.positionFile));
    for (const [inode, fp] of savedFps) this.fingerprints.set(inode, fp);
    const matched = await this.listMatched();
    const byInode = new Map<number, { group: string; file: MatchedFile }>();
    for (const m of matched) if (!byInode.has(m.file.inode)) byInode.set(m.file.inode, m);
    const groupOfDir = (dir: string) => this.matchers.find((m) => m.directory === dir)?.group ?? this.matchers[0].group;

    for (const entry of saved) {
      const m = byInode.get(entry.inode);
      if (m) {
        const tf = this.newTailFile(m.file.path, entry.inode, m.group, entry.pos);
        tf.size = m.file.size;
        this.files.set(entry.inode, tf);
        const fp = this.fingerprints.get(entry.inode);
        // Smaller than the position, or other content: truncated (and rewritten) while we were down.
        if (m.file.size < entry.pos || (fp && !(await matchesFingerprint(m.file.path, fp)))) await this.handleShrink(tf, m.file.size);
        continue;
      }
      // Not matched any more: rotated away by rename? Look for the inode in its directory.
      const found = await this.findByInode(path.dirname(entry.file), entry.inode);
      if (found) {
        const tf = this.newTailFile(found.path, entry.inode, groupOfDir(path.dirname(entry.file)), entry.pos);
        tf.size = found.size;
        tf.matched = false;
        this.files.set(entry.inode, tf);
        if (found.size < entry.pos) await this.handleShrink(tf, found.size);
        this.logger.info(`${this.name}: ${entry.file} (inode ${entry.inode}) was rotated to ${found.path}; reading it to its end from pos ${entry.pos}`);
      } else {
        this.logger.info(`Missing file: ${entry.file}, inode: ${entry.inode}, pos: ${entry.pos}`);
      }
    }
    for (const m of matched) {
      if (this.files.has(m.file.inode)) continue;
      const take = this.options.skipToEnd ? { pos: m.file.size, shadowOf: null } : await this.takeUpNewFile(m.file);
      const tf = this.newTailFile(m.file.path, m.file.inode, m.group, take.pos);
      tf.shadowOf = take.shadowOf;
      tf.size = m.file.size;
      this.files.set(m.file.inode, tf);
    }
  }

  private async findByInode(dir: string, inode: number): Promise<{ path: string; size: number } | null> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return null;
    }
    for (const n of names) {
      const p = path.join(dir, n);
      try {
        const s = await stat(p);
        if (s.isFile() && s.ino === inode) return { path: p, size: s.size };
      } catch {
        // Gone since the listing.
      }
    }
    return null;
  }

  /**
   * How to take up a file seen for the first time: from 0, unless it is a copy of a tracked
   * file (copytruncate): then it waits as that file's shadow until the original is truncated,
   * and continues where the original was. A copy of a file from before a restart (known only
   * by its saved fingerprint) continues at the saved position.
   */
  private async takeUpNewFile(file: MatchedFile): Promise<{ pos: number; shadowOf: number | null }> {
    const candidates: { inode: number; fp: Fingerprint; tracked: TailFile | undefined }[] = [];
    for (const tf of this.files.values()) {
      if (tf.inode === file.inode || tf.shadowOf !== null || tf.pos === 0) continue;
      const fp = tf.memoryFingerprint() ?? this.fingerprints.get(tf.inode);
      if (fp) candidates.push({ inode: tf.inode, fp, tracked: tf });
    }
    for (const [inode, fp] of this.fingerprints) if (!this.files.has(inode)) candidates.push({ inode, fp, tracked: undefined });
    for (const c of candidates) {
      if (file.size < c.fp.tailEnd) continue;
      if (!(await matchesFingerprint(file.path, c.fp))) continue;
      if (c.tracked) {
        this.logger.info(`${this.name}: ${file.path} is a copy of ${c.tracked.path} (copytruncate?); it is read from where the original is once the original is truncated or gone`);
        return { pos: 0, shadowOf: c.inode };
      }
      this.logger.info(`${this.name}: ${file.path} is a copy of a file read up to pos ${c.fp.tailEnd} before; continuing it there`);
      return { pos: c.fp.tailEnd, shadowOf: null };
    }
    return { pos: 0, shadowOf: null };
  }

  /** Starts the shadows of `original` at its position: the original lost its content. */
  private releaseShadows(original: TailFile, pos: number): boolean {
    let any = false;
    for (const tf of this.files.values()) {
      if (tf.shadowOf !== original.inode) continue;
      tf.shadowOf = null;
      // A copy shorter than the original's position holds nothing unread: start at its end.
      const at = Math.min(pos, tf.size);
      tf.rewindTo(at);
      any = true;
      this.logger.info(`${this.name}: continuing ${tf.path}, the copy of ${original.path}, at pos ${at}`);
    }
    return any;
  }

  /**
   * A tracked file got smaller than its committed position: truncated (copytruncate, or by
   * hand). The lines after the position may survive in a copy in the same directory: find it
   * by fingerprint and continue it there. Then read the truncated file from its start.
   */
  private async handleShrink(tf: TailFile, size: number): Promise<void> {
    const useFp = tf.memoryFingerprint() ?? this.fingerprints.get(tf.inode) ?? null;
    const oldPos = tf.pos;
    if (this.releaseShadows(tf, oldPos)) {
      this.logger.info(`${this.name}: ${tf.path} was truncated after being copied; reading it again from pos 0`);
    } else if (useFp) {
      const copy = await this.findCopy(path.dirname(tf.path), tf.inode, useFp, oldPos);
      if (copy) {
        const existing = this.files.get(copy.inode);
        if (existing) {
          if (existing.pos < oldPos) {
            existing.rewindTo(oldPos);
            existing.size = copy.size;
          }
        } else {
          const ctf = this.newTailFile(copy.path, copy.inode, tf.group, oldPos);
          ctf.size = copy.size;
          ctf.matched = this.matchers.some((m) => m.directory === path.dirname(copy.path)) && (await this.isMatched(copy.path));
          this.files.set(copy.inode, ctf);
        }
        this.logger.info(`${this.name}: ${tf.path} was truncated after being copied to ${copy.path}; continuing the copy at pos ${oldPos}`);
      } else {
        this.logger.warn(`${this.name}: Pos ${oldPos} is larger than file size ${size}! Restarting from pos 0, file: ${tf.path}, inode: ${tf.inode} (no copy of its content found; lines after pos ${oldPos} were lost by the truncation)`);
      }
    } else {
      this.logger.info(`Pos ${oldPos} is larger than file size! Restarting from pos 0, file: ${tf.path}, inode: ${tf.inode}`);
    }
    this.fingerprints.delete(tf.inode);
    tf.rewindTo(0);
    tf.size = size;
  }

  private async isMatched(p: string): Promise<boolean> {
    const all = await this.listMatched();
    return all.some((m) => m.file.path === p);
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
        if (await matchesFingerprint(p, fp)) return { path: p, inode: s.ino, size: s.size };
      } catch {
        // Gone since the listing.
      }
    }
    return null;
  }

  /** Re-lists and re-stats: new files, rotations, truncations, growth, idleness. */
  private async updateFiles(): Promise<void> {
    const now = this.clock.now();
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
      if (tf.path !== m.file.path) tf.path = m.file.path;
      tf.matched = true;
      if (m.file.size < tf.pos) await this.handleShrink(tf, m.file.size);
      else if (m.file.size !== tf.size && tf.pos > 0 && !(await tf.tailStillMatches())) await this.handleShrink(tf, m.file.size);
      else tf.grew(m.file.size, now);
    }
    for (const tf of this.files.values()) {
      if (seen.has(tf.inode)) continue;
      // Rotated away (or deleted): keep reading through the open descriptor until drained.
      if (tf.matched) {
        tf.matched = false;
        tf.lastActive = now;
        this.logger.info(`${this.name}: ${tf.path} (inode ${tf.inode}) no longer matches; reading it to its end`);
      }
      if (!tf.isOpen) {
        const found = await this.findByInode(path.dirname(tf.path), tf.inode);
        if (!found) {
          this.retire(tf, "deleted");
          continue;
        }
        tf.path = found.path;
        tf.grew(found.size, now);
      } else {
        tf.grew(await tf.currentSize(), now);
      }
    }
    let added = false;
    for (const m of fresh) {
      if (this.files.has(m.file.inode)) continue; // already taken up as a copytruncate copy
      const take = await this.takeUpNewFile(m.file);
      const tf = this.newTailFile(m.file.path, m.file.inode, m.group, take.pos);
      tf.shadowOf = take.shadowOf;
      tf.size = m.file.size;
      this.files.set(m.file.inode, tf);
      added = true;
    }
    // A new file is recorded before it is read (see start()).
    if (added) await this.writePositions();
  }

  private retire(tf: TailFile, why: string): void {
    this.releaseShadows(tf, tf.pos);
    this.files.delete(tf.inode);
    this.fingerprints.delete(tf.inode);
    if (this.durable) this.retiredSinceCommit = true;
    void tf.release();
    this.logger.info(`Closed file: ${tf.path}, inode: ${tf.inode}, pos: ${tf.pos} (${why})`);
  }

  /**
   * Commits one batch, retried until the channel takes it; false when the source stopped first.
   * A batch not committed is read again from the committed position.
   */
  private async commit(batch: TailBatch): Promise<boolean> {
    // Only a durable channel stores the position; skip building it for the others.
    const position = this.durable ? { source: this.name, value: formatPositions(this.positionsAfter(batch)) } : undefined;
    let committed = false;
    try {
      committed = await this.emitter.deliver(batch.events, { position });
    } finally {
      if (!committed) batch.file.rewindTo(batch.file.pos);
    }
    if (!committed) return false;
    if (this.durable) this.retiredSinceCommit = false;
    batch.file.committed(batch, this.clock.now());
    return true;
  }

  /** Gives a durable channel the positions without the files let go (no events). */
  private async storeRetiredPositions(): Promise<void> {
    if (!this.retiredSinceCommit) return;
    try {
      await this.getChannelProcessor().processEventBatch([], { source: this.name, value: formatPositions(this.positions()) });
      this.retiredSinceCommit = false;
    } catch (err) {
      // Tried again after the next poll.
      this.logger.warn(`${this.name}: could not update the positions stored in the channel: ${(err as Error).message}`);
    }
  }

  private positionsAfter(batch: TailBatch): PositionEntry[] {
    const out: PositionEntry[] = [];
    for (const f of this.files.values()) if (f.shadowOf === null) out.push({ inode: f.inode, pos: f === batch.file ? batch.endPos : f.pos, file: f.path });
    return out;
  }

  async process(): Promise<Status> {
    if (!this.started) return "BACKOFF";
    try {
      await this.updateFiles();
      let status: Status = "BACKOFF";
      let batches = 0;
      const offsetHeader = this.options.byteOffsetHeader ? BYTE_OFFSET_HEADER_KEY : null;
      const fileHeader = this.options.fileHeader ? this.options.fileHeaderKey : null;
      const now = this.clock.now();
      for (const tf of [...this.files.values()]) {
        if (!this.started) break;
        if (tf.shadowOf !== null) continue;
        const idle = now - tf.lastActive >= this.options.idleTimeout;
        // A file rotated away that stayed idle will not grow: its last line is complete now.
        const finalRead = !tf.matched && idle;
        let fileBatches = 0;
        while (this.started && (tf.hasUnread() || finalRead)) {
          let batch: TailBatch | null;
          try {
            batch = await tf.readBatch(this.options.batchSize, offsetHeader, fileHeader, finalRead);
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
          if (batch === null) break;
          if (!(await this.commit(batch))) return "BACKOFF";
          batches++;
          if (!batch.full) break;
          if (++fileBatches >= this.options.maxBatchCount || batches >= BATCHES_PER_PROCESS) {
            status = "READY";
            break;
          }
        }
        if (batches >= BATCHES_PER_PROCESS) {
          status = "READY";
          break;
        }
        if (finalRead && !tf.hasUnread()) this.retire(tf, "rotated away and drained");
        else if (idle && tf.matched && tf.isOpen && !tf.hasUnread()) {
          await tf.close();
          this.logger.info(`Closed file: ${tf.path}, inode: ${tf.inode}, pos: ${tf.pos} (idle)`);
        }
      }
      await this.storeRetiredPositions();
      return status;
    } catch (err) {
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
    maxBackoffSleep: { type: "int", default: 5000, min: 0, doc: "Longest sleep between polls without new lines (ms)" },
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
  create(config, ctx) {
    const groups = config.filegroups;
    const paths = config.filegroupPaths;
    const filegroups: Record<string, string> = {};
    for (const g of groups) if (paths[g] !== undefined) filegroups[g] = paths[g];
    if (Object.keys(filegroups).length === 0) {
      throw new ConfigurationError("filegroups", `Mapping for tailing files is empty or invalid: 'filegroups.' (groups: ${groups.join(" ") || "none"})`, ctx.name);
    }
    let positionFile = config.positionFile;
    if (positionFile.startsWith("~/")) positionFile = path.join(homedir(), positionFile.slice(2));
    const maxBatchCount = config.maxBatchCount;
    if (maxBatchCount <= 0) ctx.logger.warn(`${ctx.name}: Invalid maxBatchCount specified, using no limit`);
    return new TaildirSource(ctx, {
      filegroups,
      headers: parseHeaders(config.headers),
      positionFile: path.resolve(positionFile),
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
    });
  },
  validate(config) {
    const errors: { key: string; message: string }[] = [];
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
