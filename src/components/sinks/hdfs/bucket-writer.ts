/**
 * One bucket of the hdfs sink (Flume's BucketWriter): the files of one escaped directory and
 * file prefix, written one after the other. A file is written under its in-use name
 * (<inUsePrefix><prefix>.<counter><suffix><inUseSuffix>) and renamed to its final name when it
 * rolls (rollCount events, rollSize bytes, rollInterval seconds, idleTimeout seconds without a
 * write), when the sink stops and when maxOpenFiles evicts the bucket. The counter starts at
 * the clock's milliseconds when the bucket is first made, as in Flume.
 *
 * Every write is one whole batch's bytes, durable when it resolves (see DfsClient); the file is
 * created with its first batch, so an in-use file always reads complete.
 */
import type { Clock, TimerHandle } from "../../../core/clock.ts";
import type { SinkCounter } from "../../../core/counters.ts";
import type { Event } from "../../../core/event.ts";
import type { Logger } from "../../../core/logger.ts";
import type { DfsClient } from "../../../io/hdfs/file-system.ts";
import { type FileFormat, type FormatOptions, openFormat } from "./formats.ts";

export interface BucketOptions {
  rollInterval: number;
  rollSize: number;
  rollCount: number;
  idleTimeout: number;
  inUsePrefix: string;
  inUseSuffix: string;
  /** fileSuffix, or the codec's extension without one. */
  suffix: string;
  format: FormatOptions;
  /** Who wrote a file, set as a mark on it so a restarted sink finds its own in-use files. */
  writerMark: string;
  closeTries: number;
  retryInterval: number;
  /** The sink's renames waiting to be tried again (retryInterval). */
  renameRetries: RenameRetries;
}

/**
 * The renames of files whose write or close failed, each tried again later; when the sink stops
 * they are cancelled and none is scheduled any more (its client is closed): the sink's next
 * start renames those files, as after a kill.
 */
export class RenameRetries {
  private readonly timers = new Set<TimerHandle>();
  private stoppedNow = false;

  constructor(private readonly clock: Clock) {}

  get stopped(): boolean {
    return this.stoppedNow;
  }

  /** Runs fn after ms, unless the sink stopped before. */
  schedule(fn: () => void, ms: number): void {
    if (this.stoppedNow) return;
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  start(): void {
    this.stoppedNow = false;
  }

  /** Cancels the waiting tries; how many there were. */
  stop(): number {
    this.stoppedNow = true;
    for (const t of this.timers) this.clock.clearTimeout(t);
    const n = this.timers.size;
    this.timers.clear();
    return n;
  }
}

interface OpenFile {
  inUsePath: string;
  targetPath: string;
  format: FileFormat;
  created: boolean;
  events: number;
  bytes: number;
  rollTimer: TimerHandle | null;
}

export const WRITER_MARK = "flume.writer";

export class BucketWriter {
  private file: OpenFile | null = null;
  private idleTimer: TimerHandle | null = null;
  closed = false;

  constructor(
    readonly dir: string,
    readonly prefix: string,
    /** The file counter, shared by the bucket's writers in every lane. */
    private readonly counter: { value: number },
    private readonly fs: DfsClient,
    private readonly o: BucketOptions,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly sinkCounter: SinkCounter,
    /** Runs a timer's close with the sink's other file operations, one at a time. */
    private readonly serialize: (what: string, fn: () => Promise<void>) => void,
    /** Called when an idle bucket closed itself. */
    private readonly onIdle: (b: BucketWriter) => void,
  ) {}

  get currentPath(): string | null {
    return this.file?.inUsePath ?? null;
  }

  private async open(): Promise<OpenFile> {
    const counter = ++this.counter.value;
    const name = `${this.prefix}.${counter}${this.o.suffix}`;
    const file: OpenFile = {
      inUsePath: `${this.dir}/${this.o.inUsePrefix}${name}${this.o.inUseSuffix}`,
      targetPath: `${this.dir}/${name}`,
      format: await openFormat(this.o.format),
      created: false,
      events: 0,
      bytes: 0,
      rollTimer: null,
    };
    if (this.o.rollInterval > 0) {
      file.rollTimer = this.clock.setTimeout(() => {
        file.rollTimer = null;
        this.serialize(`roll ${file.inUsePath}`, async () => {
          if (this.file === file) await this.closeFile();
        });
      }, this.o.rollInterval * 1000);
    }
    this.file = file;
    return file;
  }

  private shouldRoll(f: OpenFile): boolean {
    return (this.o.rollCount > 0 && f.events >= this.o.rollCount) || (this.o.rollSize > 0 && f.bytes >= this.o.rollSize);
  }

  /** Writes events[from, to) durably, rolling files on count and size as Flume does. */
  async write(events: readonly Event[], from: number, to: number): Promise<void> {
    if (this.idleTimer) this.clock.clearTimeout(this.idleTimer);
    this.idleTimer = null;
    let start = from;
    while (start < to) {
      const f = this.file ?? (await this.open());
      let end = start;
      // Events go to this file until a roll limit is reached (checked before each event, as Flume).
      while (end < to && !this.shouldRoll(f)) {
        f.events++;
        f.bytes += events[end].body.length;
        end++;
      }
      if (end > start) await this.append(f, events, start, end);
      if (this.shouldRoll(f)) await this.closeFile();
      start = end;
    }
    if (this.o.idleTimeout > 0 && !this.closed) {
      this.idleTimer = this.clock.setTimeout(() => {
        this.idleTimer = null;
        this.serialize(`idle close of ${this.dir}/${this.prefix}`, async () => {
          await this.close();
          this.onIdle(this);
        });
      }, this.o.idleTimeout * 1000);
    }
  }

  private async append(f: OpenFile, events: readonly Event[], from: number, to: number): Promise<void> {
    const bytes = f.format.batch(events, from, to);
    if (!f.created) {
      try {
        await this.fs.create(f.inUsePath, bytes);
      } catch (err) {
        this.sinkCounter.inc("ConnectionFailedCount");
        // The file may exist half made (made by the NameNode, its block refused: a quota): never
        // append to it, and delete it, since its batch goes back to the channel.
        this.abandon();
        await this.fs.delete(f.inUsePath).catch(() => false);
        throw err;
      }
      f.created = true;
      this.sinkCounter.inc("ConnectionCreatedCount");
      await this.fs.setMark(f.inUsePath, WRITER_MARK, this.o.writerMark).catch(() => false);
      return;
    }
    try {
      await this.fs.append(f.inUsePath, bytes);
    } catch (err) {
      // The append's bytes may or may not be in the file; the batch goes back to the channel and
      // is written again into a new file, so the old one is closed as it is (at most one batch twice).
      this.abandon();
      throw err;
    }
  }

  /** Leaves the current file for a new one; renamed later if it was made. */
  private abandon(): void {
    const f = this.file;
    if (!f) return;
    this.file = null;
    if (f.rollTimer) this.clock.clearTimeout(f.rollTimer);
    if (f.created) this.retryRename(f, 1);
  }

  private retryRename(f: OpenFile, attempt: number): void {
    if (this.o.closeTries > 0 && attempt > this.o.closeTries) {
      this.logger.error(`hdfs sink: gave up renaming ${f.inUsePath} to ${f.targetPath} after ${attempt - 1} tries; a restarted sink renames it`);
      return;
    }
    const delay = attempt === 1 ? 0 : this.o.retryInterval * 1000;
    const retries = this.o.renameRetries;
    retries.schedule(() => {
      this.serialize(`rename ${f.inUsePath}`, async () => {
        try {
          await this.rename(f);
        } catch (err) {
          const again = this.o.retryInterval > 0 && !retries.stopped;
          this.logger.warn(`hdfs sink: renaming ${f.inUsePath} failed (${(err as Error).message}); ${again ? `trying again in ${this.o.retryInterval} s` : "the sink's next start renames it"}`);
          if (again) this.retryRename(f, attempt + 1);
        }
      });
    }, delay);
  }

  private async rename(f: OpenFile): Promise<void> {
    if (f.inUsePath === f.targetPath) return;
    if (!(await this.fs.rename(f.inUsePath, f.targetPath))) {
      this.logger.warn(`hdfs sink: could not rename ${f.inUsePath} to ${f.targetPath}: the target exists or the file is gone`);
    }
  }

  /** Closes the current file: its closing bytes, then the rename to its final name. */
  async closeFile(): Promise<void> {
    const f = this.file;
    if (!f) return;
    this.file = null;
    if (f.rollTimer) this.clock.clearTimeout(f.rollTimer);
    if (!f.created) return;
    try {
      const tail = f.format.close();
      if (tail.length > 0) await this.fs.append(f.inUsePath, tail);
      await this.rename(f);
      this.sinkCounter.inc("ConnectionClosedCount");
    } catch (err) {
      this.logger.warn(`hdfs sink: closing ${f.inUsePath} failed: ${(err as Error).message}; retrying the rename`);
      this.retryRename(f, 2);
    }
  }

  /** Closes the bucket for good (stop, eviction, idle). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) this.clock.clearTimeout(this.idleTimer);
    this.idleTimer = null;
    await this.closeFile();
  }
}
