/**
 * The durable file channel. Puts and takes are synchronous and touch only memory; a commit
 * encodes the whole transaction (see format.ts), and a single writer appends the commits that
 * are waiting as one group with one fsync (group commit), then applies them to the in-memory
 * queue and resolves them. The newest committed events are also kept as objects
 * (recent-events.ts), so a sink that keeps up takes them without a read. Checkpoints
 * (checkpoint.ts) snapshot the queue between groups so a restart replays only the log tail
 * (replay.ts).
 *
 * This file holds the channel's state and its transaction operations; the transaction is in
 * transaction.ts, the group-commit writer in writer.ts, capacity reservations in room.ts and
 * the free-space check in disk-space.ts.
 */
import fs from "node:fs";
import path from "node:path";
import type { Channel } from "../../../core/channel.ts";
import type { Clock } from "../../../core/clock.ts";
import { systemClock } from "../../../core/clock.ts";
import { ChannelException } from "../../../core/errors.ts";
import type { Event } from "../../../core/event.ts";
import type { LifecycleState } from "../../../core/lifecycle.ts";
import { type Logger, silentLogger } from "../../../core/logger.ts";
import { PutListeners } from "../../../core/put-listeners.ts";
import { encodeCheckpoint, writeCheckpointFile } from "./checkpoint.ts";
import { FileChannelCounter } from "./counter.ts";
import { BufferPool } from "./buffer-pool.ts";
import { directoryLockFile, LockHeldError, OwnerLock } from "../../../io/owner-lock.ts";
import { EventQueue } from "./event-queue.ts";
import { InlineWrites } from "./inline-writes.ts";
import { encodeTransaction, toRanges } from "./format.ts";
import { recover } from "./replay.ts";
import { RecentEvents } from "./recent-events.ts";
import { SegmentLog } from "./segment-log.ts";
import { DiskSpace } from "./disk-space.ts";
import { Room } from "./room.ts";
import { FileTransaction, NOTHING_TAKEN, Taken } from "./transaction.ts";
import { type CommitRequest, GroupWriter } from "./writer.ts";
import { refuseFlumeFormat } from "../../../migrate/flume-file-channel/detect.ts";

export interface FileChannelOptions {
  checkpointDir: string;
  dataDirs: string[];
  backupCheckpointDir?: string;
  useDualCheckpoints: boolean;
  capacity: number;
  transactionCapacity: number;
  /** Milliseconds. */
  checkpointInterval: number;
  maxFileSize: number;
  minimumRequiredSpace: number;
  /** Seconds a commit waits for room in a full channel. */
  keepAlive: number;
  checkpointOnClose: boolean;
  fsyncPerTransaction: boolean;
  /** Seconds between fsyncs when fsyncPerTransaction is false. */
  fsyncInterval: number;
  /** Milliseconds an append may take on the main thread (see inline-writes.ts); 0: never inline. */
  inlineWriteLimit: number;
}

export { MINIMUM_REQUIRED_SPACE_FLOOR } from "./disk-space.ts";
export { FileTransaction } from "./transaction.ts";

/** Body bytes of the newest committed events kept in memory for takes (see RecentEvents). */
const RECENT_BYTES = 4 * 1024 * 1024;

export class FileChannel implements Channel {
  readonly durable = true;
  readonly counter: FileChannelCounter;
  private state: LifecycleState = "IDLE";
  private startError: Error | null = null;
  private readonly logger: Logger;
  private readonly clock: Clock;

  private locks: OwnerLock[] = [];
  private log: SegmentLog | null = null;
  private queue = new EventQueue();
  /** Two transactions' worth of the newest committed events, as put (see RecentEvents). */
  private readonly recent: RecentEvents;
  /** Pending events (queued or taken by an open transaction) per segment id. */
  private segLive = new Map<number, number>();
  private positions = new Map<string, string>();
  private nextSeq = 0;
  private nextTxid = 1;
  private inflightTakes = 0;
  /** Transactions holding taken events: their events are still pending for checkpoints. */
  private readonly takers = new Set<FileTransaction>();
  /** Take lists of finished transactions, reused: a sink's every batch would make three arrays. */
  private readonly spareTaken: Taken[] = [];
  private readonly room: Room;
  private readonly space: DiskSpace;
  /** Where appends run: main thread or I/O pool (inline-writes.ts). */
  readonly writes: InlineWrites;
  /**
   * Every write, fsync and checkpoint on the main thread (ComponentContext.blockingIo): the
   * simulator's runs then never depend on when the disk answers.
   */
  readonly blockingIo: boolean;
  private readonly pool = new BufferPool();
  private readonly writer: GroupWriter;

  constructor(
    readonly name: string,
    readonly options: FileChannelOptions,
    deps: { clock?: Clock; logger?: Logger; blockingIo?: boolean } = {},
  ) {
    this.clock = deps.clock ?? systemClock;
    this.logger = deps.logger ?? silentLogger;
    this.blockingIo = deps.blockingIo ?? false;
    this.counter = new FileChannelCounter(name, this.clock);
    this.counter.set("ChannelCapacity", options.capacity);
    this.recent = new RecentEvents(Math.max(2 * options.transactionCapacity, 1000), RECENT_BYTES);
    this.writes = new InlineWrites(this.blockingIo ? Number.POSITIVE_INFINITY : options.inlineWriteLimit);
    this.space = new DiskSpace(name, options.minimumRequiredSpace, () => this.log?.activeDir ?? this.options.dataDirs[0], this.clock, this.logger);
    this.room = new Room(name, options.capacity, options.keepAlive, () => this.queue.length + this.inflightTakes, () => this.requireOpen(), this.clock);
    const channel = { name, counter: this.counter, openLog: () => this.log, apply: (r: CommitRequest, segment: number, base: number) => this.apply(r, segment, base), checkpoint: () => this.checkpoint() };
    this.writer = new GroupWriter(channel, this.room, this.pool, this.clock, this.logger);
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  getTransaction(): FileTransaction {
    return new FileTransaction(this);
  }

  sourcePosition(source: string): string | undefined {
    return this.positions.get(source);
  }

  private readonly putListeners = new PutListeners();

  ioBusy(): boolean {
    return this.writer.busy();
  }

  /** Group commit figures: how many writes (each with one fsync) carried how many commits. */
  get writeStats(): { groups: number; transactions: number } {
    return this.writer.stats;
  }

  /** Wakes sink runners sleeping after an empty take once puts are durable (see Channel). */
  onPutsCommitted(listener: () => void): () => void {
    return this.putListeners.add(listener);
  }

  /**
   * Changes minimumRequiredSpace on a running channel (reconfiguration); the next put checks
   * the disk again.
   */
  setMinimumRequiredSpace(bytes: number): void {
    this.space.setMinimum(bytes);
  }

  /** Number of events waiting to be taken. */
  get size(): number {
    return this.queue.length;
  }

  private describeDirs(): string {
    return `checkpointDir ${this.options.checkpointDir}, dataDirs ${this.options.dataDirs.join(",")}`;
  }

  async start(): Promise<void> {
    if (this.state === "START") return;
    const o = this.options;
    const started = this.clock.now();
    try {
      const dirs = [o.checkpointDir, ...o.dataDirs];
      if (o.useDualCheckpoints && o.backupCheckpointDir) dirs.push(o.backupCheckpointDir);
      if (new Set(dirs.map((d) => path.resolve(d))).size !== dirs.length) {
        throw new ChannelException(`file channel ${this.name}: checkpointDir, backupCheckpointDir and dataDirs must be distinct directories (${dirs.join(", ")})`);
      }
      // Before anything is created or locked there: Flume's own lock file must stay untouched.
      refuseFlumeFormat(this.name, o.checkpointDir, o.dataDirs, o.useDualCheckpoints ? o.backupCheckpointDir : undefined);
      for (const d of dirs) fs.mkdirSync(d, { recursive: true });
      for (const d of dirs) {
        try {
          const lock = OwnerLock.acquire(directoryLockFile(d), `directory ${d} of file channel ${this.name}`, `flume-ts file channel ${this.name}`);
          if (lock.tookOverFrom) this.logger.warn(`file channel ${this.name}: took over ${lock.file} from process ${lock.tookOverFrom.pid}, which is no longer running`);
          this.locks.push(lock);
        } catch (err) {
          if (err instanceof LockHeldError) throw new ChannelException(`file channel ${this.name}: ${err.message}`, { cause: err });
          throw err;
        }
      }

      const ckptDirs = [o.checkpointDir];
      if (o.useDualCheckpoints && o.backupCheckpointDir) ckptDirs.push(o.backupCheckpointDir);
      const r = recover({ dataDirs: o.dataDirs, checkpointDirs: ckptDirs, logger: this.logger, repair: true, channel: this.name });
      this.queue = new EventQueue();
      this.recent.clear();
      this.segLive.clear();
      for (let i = 0; i < r.count; i++) {
        this.queue.pushBack(r.seqs[i], r.segs[i], r.offs[i]);
        this.segLive.set(r.segs[i], (this.segLive.get(r.segs[i]) ?? 0) + 1);
      }
      this.positions = r.positions;
      this.nextSeq = r.nextSeq;
      this.nextTxid = r.nextTxid;
      this.log = new SegmentLog(o.dataDirs, o.maxFileSize, o.fsyncPerTransaction, this.writes, this.blockingIo);
      this.log.open(r.segments, r.minNewSegmentId);
      this.inflightTakes = 0;
      this.room.reserved = 0;
      this.startError = null;
      this.counter.unhealthy = false;
      this.counter.set("ChannelSize", this.queue.length);
      this.counter.set("ChannelCapacity", o.capacity);
      // A fresh checkpoint makes the next start fast and lets old segments go.
      if (r.replayedRecords > 0 || r.tornTail || !r.checkpointUsed) await this.checkpoint();
      this.counter.start();
      this.state = "START";
      this.counter.open = true;
      this.writer.arm(o.checkpointInterval, o.fsyncPerTransaction, o.fsyncInterval);
      this.logger.info(
        `file channel ${this.name}: open with ${this.queue.length} pending events in ${this.clock.now() - started} ms ` +
          `(${r.checkpointUsed ? `checkpoint ${r.checkpointUsed}` : "no checkpoint"}, ${r.committedTransactions} transactions replayed)`,
      );
    } catch (err) {
      for (const l of this.locks) l.release();
      this.locks = [];
      await this.log?.close().catch(() => {});
      this.log = null;
      this.state = "ERROR";
      this.counter.open = false;
      this.counter.unhealthy = true;
      this.startError = err instanceof Error ? err : new Error(String(err));
      throw err instanceof ChannelException ? err : new ChannelException(`file channel ${this.name} could not start (${this.describeDirs()}): ${this.startError.message}`, { cause: err });
    }
  }

  async stop(): Promise<void> {
    if (this.state !== "START") return;
    this.counter.open = false;
    this.state = "STOP";
    this.writer.disarm();
    await this.writer.whenIdle();
    try {
      if (this.options.checkpointOnClose) await this.checkpoint();
      await this.log?.close();
    } catch (err) {
      // Nothing is lost: the log holds every commit and the next start replays it.
      this.logger.error(`file channel ${this.name}: error while closing: ${(err as Error).message}`);
    }
    this.closed();
  }

  /**
   * What a killed process leaves behind: timers stop, files close and the locks go, and nothing
   * more is written (no checkpoint, no queued write). The simulator and the channel conformance
   * suite crash a channel this way; call it when no write is in flight (ioBusy() is false).
   */
  crash(): void {
    if (this.state !== "START") return;
    this.state = "STOP";
    this.counter.open = false;
    this.writer.disarm();
    this.writer.rejectAll(() => new ChannelException(`file channel ${this.name}: the process crashed`));
    this.log?.closeNow();
    this.closed();
  }

  /** The log is closed (or dropped): memory and locks go, commits waiting for room give up. */
  private closed(): void {
    this.log = null;
    this.recent.clear();
    for (const l of this.locks) l.release();
    this.locks = [];
    this.room.wake();
    this.counter.stop();
  }

  private requireOpen(): SegmentLog {
    if (this.state === "START" && this.log) return this.log;
    if (this.startError) throw new ChannelException(`file channel ${this.name} is closed: it failed to start: ${this.startError.message}`);
    throw new ChannelException(`file channel ${this.name} is not open (state ${this.state})`);
  }

  // ---- transaction operations ----

  put(tx: FileTransaction, event: Event): void {
    this.counter.values.EventPutAttemptCount++;
    this.requireOpen();
    if (tx.puts.length >= this.options.transactionCapacity) {
      throw new ChannelException(
        `Put queue for FileBackedTransaction of capacity ${this.options.transactionCapacity} full, consider committing more frequently, increasing capacity or increasing thread count (channel ${this.name})`,
      );
    }
    if (this.space.low !== null) {
      const reason = this.space.check(true);
      if (reason) {
        this.counter.values.EventPutErrorCount++;
        throw new ChannelException(reason);
      }
    }
    tx.puts.push(event);
  }

  /** put() for each event, with the checks made once when the whole batch fits. */
  putAll(tx: FileTransaction, events: readonly Event[]): void {
    const n = events.length;
    if (this.state !== "START" || !this.log || this.space.low !== null || tx.puts.length + n > this.options.transactionCapacity) {
      for (let i = 0; i < n; i++) this.put(tx, events[i]);
      return;
    }
    this.counter.values.EventPutAttemptCount += n;
    const puts = tx.puts;
    for (let i = 0; i < n; i++) puts.push(events[i]);
  }

  /**
   * take() up to `max` times into `out`, with the checks made once: the same events, counts
   * and errors (a read that fails throws after the events taken before it were added to `out`).
   */
  takeInto(tx: FileTransaction, out: Event[], max: number): number {
    const room = this.options.transactionCapacity - tx.taken.length;
    if (max > room || this.state !== "START" || !this.log) {
      let n = 0;
      while (n < max) {
        const e = this.take(tx);
        if (e === null) break;
        out.push(e);
        n++;
      }
      return n;
    }
    const log = this.requireOpen();
    const q = this.queue;
    const want = Math.min(max, q.length);
    // As take() called once per event, and once more when the queue ran dry.
    this.counter.values.EventTakeAttemptCount += want < max ? want + 1 : want;
    if (want === 0) return 0;
    const t = this.takeList(tx);
    const recent = this.recent;
    for (let k = 0; k < want; k++) {
      const seq = q.frontSeq();
      const seg = q.frontSeg();
      const off = q.frontOff();
      let event: Event;
      try {
        event = recent.take(seq) ?? log.read(seg, off);
      } catch (err) {
        // Not taken: take() would have counted one attempt for it and none after it.
        this.counter.values.EventTakeAttemptCount -= (want < max ? want + 1 : want) - (k + 1);
        this.inflightTakes += k;
        throw this.readFailed(log, seq, seg, off, err);
      }
      q.dropFront();
      const i = t.length++;
      t.seqs[i] = seq;
      t.segs[i] = seg;
      t.offs[i] = off;
      out.push(event);
    }
    this.inflightTakes += want;
    return want;
  }

  take(tx: FileTransaction): Event | null {
    this.counter.values.EventTakeAttemptCount++;
    const log = this.requireOpen();
    if (tx.taken.length >= this.options.transactionCapacity) {
      throw new ChannelException(
        `Take list for FileBackedTransaction, capacity ${this.options.transactionCapacity} full, consider committing more frequently, increasing capacity, or increasing thread count (channel ${this.name})`,
      );
    }
    const q = this.queue;
    if (q.length === 0) return null;
    const seq = q.frontSeq();
    const seg = q.frontSeg();
    const off = q.frontOff();
    let event: Event;
    try {
      event = this.recent.take(seq) ?? log.read(seg, off);
    } catch (err) {
      throw this.readFailed(log, seq, seg, off, err);
    }
    q.dropFront();
    this.inflightTakes++;
    const t = this.takeList(tx);
    const i = t.length++;
    t.seqs[i] = seq;
    t.segs[i] = seg;
    t.offs[i] = off;
    return event;
  }

  /** The take list of tx, made (or reused) with its first take. */
  private takeList(tx: FileTransaction): Taken {
    let t = tx.taken;
    if (t === NOTHING_TAKEN) {
      tx.taken = t = this.spareTaken.pop() ?? new Taken(this.options.transactionCapacity);
      this.takers.add(tx);
    }
    return t;
  }

  private readFailed(log: SegmentLog, seq: number, seg: number, off: number, err: unknown): ChannelException {
    this.counter.values.EventTakeErrorCount++;
    return new ChannelException(`file channel ${this.name}: cannot read event ${seq} from ${log.pathOf(seg) ?? `segment ${seg}`} at offset ${off}: ${(err as Error).message}`, { cause: err });
  }

  /** Takes back the take list of a transaction that committed or rolled back. */
  recycle(t: Taken): void {
    t.length = 0;
    if (t.seqs.length === this.options.transactionCapacity && this.spareTaken.length < 4) this.spareTaken.push(t);
  }

  rollback(tx: FileTransaction): void {
    const t = tx.taken;
    const n = t.length;
    // Back to the head, in their original order.
    for (let i = n - 1; i >= 0; i--) this.queue.pushFront(t.seqs[i], t.segs[i], t.offs[i]);
    this.inflightTakes -= n;
    this.takers.delete(tx);
    this.counter.values.ChannelSize = this.queue.length;
    tx.clear();
  }

  async commit(tx: FileTransaction, positions: Map<string, string> | null): Promise<void> {
    const puts = tx.puts.length;
    const takes = tx.taken.length;
    const reserved = Math.max(0, puts - takes);
    if (puts === 0 && takes === 0 && (!positions || positions.size === 0)) {
      this.counter.values.ChannelSize = this.queue.length;
      return;
    }
    this.requireOpen();
    if (puts > 0) {
      const reason = this.space.check(false);
      if (reason) {
        this.counter.values.EventPutErrorCount += puts;
        throw new ChannelException(reason);
      }
      const room = this.room.reserve(reserved);
      if (room) await room;
    }
    const txid = this.nextTxid++;
    const firstSeq = this.nextSeq;
    this.nextSeq += puts;
    let encoded: ReturnType<typeof encodeTransaction>;
    try {
      encoded = encodeTransaction(txid, firstSeq, tx.puts, takes > 0 ? toRanges(tx.taken.seqs, takes) : [], takes, positions, (n) => this.pool.get(n));
    } catch (err) {
      this.room.reserved -= reserved;
      this.counter.values.EventPutErrorCount += puts;
      this.room.wake();
      throw err instanceof ChannelException ? err : new ChannelException(`file channel ${this.name}: cannot encode the transaction: ${(err as Error).message}`, { cause: err });
    }
    const { bytes, eventOffsets } = encoded;
    await new Promise<void>((resolve, reject) => {
      this.writer.enqueue({ tx, bytes, eventOffsets, firstSeq, puts: tx.puts, reserved, positions, resolve, reject });
    });
  }

  /** Makes a durable commit visible: queues its puts, forgets its takes. True if it freed room. */
  private apply(r: CommitRequest, segment: number, base: number): boolean {
    const q = this.queue;
    const v = this.counter.values;
    const puts = r.puts;
    for (let i = 0; i < puts.length; i++) {
      q.pushBack(r.firstSeq + i, segment, base + r.eventOffsets[i]);
      this.recent.add(r.firstSeq + i, puts[i]);
    }
    if (puts.length > 0) {
      this.segLive.set(segment, (this.segLive.get(segment) ?? 0) + puts.length);
      v.EventPutSuccessCount += puts.length;
    }
    this.room.reserved -= r.reserved;
    const tx = r.tx;
    const takes = tx.taken.length;
    if (takes > 0) {
      const segs = tx.taken.segs;
      let i = 0;
      while (i < takes) {
        const s = segs[i];
        let j = i + 1;
        while (j < takes && segs[j] === s) j++;
        this.segLive.set(s, (this.segLive.get(s) ?? 0) - (j - i));
        i = j;
      }
      this.inflightTakes -= takes;
      v.EventTakeSuccessCount += takes;
      this.takers.delete(tx);
    }
    if (r.positions) for (const [k, val] of r.positions) this.positions.set(k, val);
    v.ChannelSize = q.length;
    tx.clear();
    if (puts.length > 0) this.putListeners.notify();
    return takes > 0;
  }

  /**
   * Writes a checkpoint of every pending event (taken-but-uncommitted ones first) at the
   * current end of the log, then deletes segments that hold no pending event and lie wholly
   * before it. Runs only while no group write is in flight, so the snapshot matches the log.
   */
  private async checkpoint(): Promise<void> {
    this.writer.checkpointDue = false;
    const log = this.log;
    if (!log) return;
    const o = this.options;
    if (!o.fsyncPerTransaction) await log.syncIfDirty();
    const count = this.inflightTakes + this.queue.length;
    const seqs = new Float64Array(count);
    const segs = new Uint32Array(count);
    const offs = new Uint32Array(count);
    let i = 0;
    for (const tx of this.takers) {
      const t = tx.taken;
      for (let k = 0; k < t.length; k++, i++) {
        seqs[i] = t.seqs[k];
        segs[i] = t.segs[k];
        offs[i] = t.offs[k];
      }
    }
    this.queue.forEach((s, g, f) => {
      seqs[i] = s;
      segs[i] = g;
      offs[i] = f;
      i++;
    });
    const logSegment = log.activeId;
    const bytes = encodeCheckpoint({
      logSegment,
      logOffset: log.activeEnd,
      nextSeq: this.nextSeq,
      nextTxid: this.nextTxid,
      count: i,
      seqs,
      segs,
      offs,
      positions: new Map(this.positions),
    });
    try {
      await writeCheckpointFile(o.checkpointDir, bytes, this.blockingIo);
    } catch (err) {
      this.counter.values.CheckpointWriteErrorCount++;
      this.logger.error(`file channel ${this.name}: cannot write checkpoint in ${o.checkpointDir}: ${(err as Error).message}; the log is kept until a checkpoint succeeds`);
      return;
    }
    if (o.useDualCheckpoints && o.backupCheckpointDir) {
      try {
        await writeCheckpointFile(o.backupCheckpointDir, bytes, this.blockingIo);
      } catch (err) {
        this.counter.values.CheckpointBackupWriteErrorCount++;
        this.logger.error(`file channel ${this.name}: cannot write backup checkpoint in ${o.backupCheckpointDir}: ${(err as Error).message}`);
        // The older backup may still need the segments: keep them until both are written.
        return;
      }
    }
    if (!this.log) return;
    for (const id of log.segmentIds()) {
      if (id < logSegment && (this.segLive.get(id) ?? 0) <= 0) {
        try {
          log.remove(id);
          this.segLive.delete(id);
        } catch (err) {
          this.logger.warn(`file channel ${this.name}: cannot delete data file of segment ${id}: ${(err as Error).message}`);
        }
      }
    }
  }
}
