import type { Clock, TimerHandle } from "../../../core/clock.ts";
import { ChannelException } from "../../../core/errors.ts";
import type { Event } from "../../../core/event.ts";
import type { Logger } from "../../../core/logger.ts";
import type { BufferPool } from "./buffer-pool.ts";
import type { FileChannelCounter } from "./counter.ts";
import type { Room } from "./room.ts";
import type { SegmentLog } from "./segment-log.ts";
import type { FileTransaction } from "./transaction.ts";

/** Upper bound of one group write. */
const MAX_GROUP_BYTES = 64 * 1024 * 1024;

/** An encoded commit waiting for the writer. */
export interface CommitRequest {
  tx: FileTransaction;
  bytes: Buffer;
  eventOffsets: Uint32Array;
  firstSeq: number;
  puts: Event[];
  /** The room reserved for it (see Room). */
  reserved: number;
  positions: Map<string, string> | null;
  resolve(): void;
  reject(err: Error): void;
}

/** What the writer needs of its channel. */
export interface WriterChannel {
  readonly name: string;
  readonly counter: FileChannelCounter;
  /** The open log, or null once the channel stopped. */
  openLog(): SegmentLog | null;
  /** Makes a written commit visible; true if it freed room. */
  apply(r: CommitRequest, segment: number, base: number): boolean;
  checkpoint(): Promise<void>;
}

/**
 * The single writer of the log (group commit): appends the commits that are waiting as one
 * group with one fsync, applies and resolves them, and runs the due periodic fsyncs and
 * checkpoints between groups, so a checkpoint always matches the log.
 */
export class GroupWriter {
  /** Group commit figures: how many writes (each with one fsync) carried how many commits. */
  readonly stats = { groups: 0, transactions: 0 };
  private pending: CommitRequest[] = [];
  private writing = false;
  private idleWaiters: (() => void)[] = [];
  /** The writer waiting between groups (see nextRound): how many commits it waits for. */
  private roundWaiter: { want: number; go: () => void } | null = null;
  checkpointDue = false;
  private syncDue = false;
  private checkpointTimer: TimerHandle | null = null;
  private syncTimer: TimerHandle | null = null;

  constructor(
    private readonly channel: WriterChannel,
    private readonly room: Room,
    private readonly pool: BufferPool,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** A write is in flight or waiting. */
  busy(): boolean {
    return this.writing || this.pending.length > 0;
  }

  /** Queues an encoded commit for the next group. */
  enqueue(r: CommitRequest): void {
    this.pending.push(r);
    const waiter = this.roundWaiter;
    if (waiter && this.pending.length >= waiter.want) waiter.go();
    this.pump();
  }

  /** Fails every commit waiting (the process crashed): nothing more is written. */
  rejectAll(failure: () => Error): void {
    for (const r of this.pending.splice(0)) r.reject(failure());
  }

  /** Starts the checkpoint timer, and the fsync timer when fsyncs are periodic. */
  arm(checkpointInterval: number, fsyncPerTransaction: boolean, fsyncInterval: number): void {
    const interval = Math.max(1000, checkpointInterval);
    const tick = (): void => {
      this.checkpointDue = true;
      this.pump();
      this.checkpointTimer = this.clock.setTimeout(tick, interval);
    };
    this.checkpointTimer = this.clock.setTimeout(tick, interval);
    if (!fsyncPerTransaction) {
      const every = Math.max(1, fsyncInterval) * 1000;
      const sync = (): void => {
        this.syncDue = true;
        this.pump();
        this.syncTimer = this.clock.setTimeout(sync, every);
      };
      this.syncTimer = this.clock.setTimeout(sync, every);
    }
  }

  disarm(): void {
    if (this.checkpointTimer) this.clock.clearTimeout(this.checkpointTimer);
    if (this.syncTimer) this.clock.clearTimeout(this.syncTimer);
    this.checkpointTimer = this.syncTimer = null;
  }

  private pump(): void {
    if (this.writing) return;
    if (this.pending.length === 0 && !this.checkpointDue && !this.syncDue) return;
    this.writing = true;
    void this.run();
  }

  private async run(): Promise<void> {
    const ch = this.channel;
    try {
      for (;;) {
        const log = ch.openLog();
        if (!log || !(this.pending.length > 0 || this.checkpointDue || this.syncDue)) break;
        if (this.pending.length > 0) await this.nextRound(await this.writeGroup(log));
        const open = ch.openLog();
        if (this.syncDue && open) {
          this.syncDue = false;
          await open.syncIfDirty().catch((err: Error) => this.logger.error(`file channel ${ch.name}: periodic fsync failed: ${err.message}`));
        }
        // Due checkpoints run even under constant load (commits queued meanwhile wait), or
        // the log would never shrink.
        if (this.checkpointDue) {
          await ch.checkpoint().catch((err: Error) => {
            ch.counter.values.CheckpointWriteErrorCount++;
            this.logger.error(`file channel ${ch.name}: checkpoint failed: ${err.message}`);
          });
        }
      }
    } catch (err) {
      // Not expected (writeGroup handles I/O errors): fail what waits rather than hang it.
      this.logger.error(`file channel ${ch.name}: writer failed: ${(err as Error).message}`);
      for (const r of this.pending.splice(0)) {
        this.room.reserved -= r.reserved;
        r.reject(new ChannelException(`file channel ${ch.name}: writer failed: ${(err as Error).message}`, { cause: err }));
      }
    } finally {
      this.writing = false;
      for (const w of this.idleWaiters.splice(0)) w();
    }
    if (ch.openLog() && this.pending.length > 0) this.pump();
  }

  /** Resolves once no write is in flight or waiting. */
  whenIdle(): Promise<void> {
    if (!this.writing && this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Lets the committers of the group just written run on, so their next commits join the next
   * group (a producer and a consumer then share one fsync instead of alternating): waits until
   * as many commits are queued as that group had (at least two: a source's and a sink's), or
   * for one turn of the event loop, whichever comes first. A turn alone would do, but under a
   * busy socket source one took 20-70 ms here.
   */
  private nextRound(groupSize: number): Promise<void> {
    const want = Math.max(2, groupSize);
    if (this.pending.length >= want) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const go = () => {
        if (this.roundWaiter !== waiter) return;
        this.roundWaiter = null;
        resolve();
      };
      const waiter = { want, go };
      this.roundWaiter = waiter;
      setImmediate(go);
    });
  }

  /** Writes the next group of queued commits; returns how many it carried. */
  private async writeGroup(log: SegmentLog): Promise<number> {
    const ch = this.channel;
    let total = 0;
    let n = 0;
    while (n < this.pending.length && (n === 0 || total + this.pending[n].bytes.length <= MAX_GROUP_BYTES)) {
      total += this.pending[n].bytes.length;
      n++;
    }
    const group = this.pending.splice(0, n);
    let segment: number;
    let offset: number;
    try {
      log.prepare(total);
      ({ segment, offset } = await log.append(
        group.map((r) => r.bytes),
        total,
      ));
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      // The partial write was cut off (SegmentLog.append), so the next commit simply tries
      // again: on a full disk (ENOSPC) puts fail until space returns, then go through.
      const hint = e.code === "ENOSPC" ? "; the disk is full: puts fail until space is freed, takes keep working" : "";
      const failure = new ChannelException(`file channel ${ch.name}: cannot write to ${log.pathOf(log.activeId) ?? log.activeDir}: ${e.message}${hint}`, { cause: err });
      for (const r of group) {
        this.room.reserved -= r.reserved;
        if (r.puts.length > 0) ch.counter.values.EventPutErrorCount += r.puts.length;
        else ch.counter.values.EventTakeErrorCount += r.tx.taken.length;
        this.pool.release(r.bytes);
        r.reject(failure);
      }
      this.room.wake();
      return group.length;
    }
    this.stats.groups++;
    this.stats.transactions += group.length;
    let at = offset;
    let freed = false;
    for (const r of group) {
      if (ch.apply(r, segment, at)) freed = true;
      at += r.bytes.length;
    }
    if (freed) this.room.wake();
    for (const r of group) {
      this.pool.release(r.bytes);
      r.resolve();
    }
    return group.length;
  }
}
