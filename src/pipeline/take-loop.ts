import type { Channel } from "../core/channel.ts";
import type { SinkCounter } from "../core/counters.ts";
import { ChannelException, EventDeliveryException } from "../core/errors.ts";
import type { Event } from "../core/event.ts";
import type { Logger } from "../core/logger.ts";
import type { Status } from "../core/sink.ts";
import type { Transaction } from "../core/transaction.ts";

/**
 * What a deliver function decided about a batch it did not fail (returning nothing means:
 * delivered, commit). The http sink's status policies use it to roll back, back off or leave
 * a delivery uncounted.
 */
export interface BatchVerdict {
  /** true commits the take; false rolls the batch back into the channel, to be taken again. */
  commit: boolean;
  /** What process() returns; BACKOFF makes the runner wait before the next call. */
  status: Status;
  /** Events added to EventDrainSuccessCount once the transaction is settled (default: the batch if committed, else 0). */
  drained?: number;
}

export type Delivery = void | BatchVerdict;

export interface TakeLoopOptions {
  /** Names the sink in errors and logs ("Rpc sink k1", "sink k1"). */
  label: string;
  logger: Logger;
  /** Flume's SinkCounter; absent for sinks that count nothing (Flume's null and logger sinks). */
  counter?: SinkCounter;
  batchSize: number;
  /**
   * Whether takes are counted as BatchEmptyCount, BatchUnderflowCount and BatchCompleteCount
   * (default true). Flume 1.11's file_roll and http sinks never count them: they stay 0.
   */
  countBatches?: boolean;
  /**
   * process()'s status after a batch the channel cut short: BACKOFF (Flume's null and
   * file_roll sinks, the default) or READY (Flume's RPC sinks). An empty batch is always BACKOFF.
   */
  underflow?: Status;
  /** Where batches go (host:port, URL, directory), for error messages. */
  target?: () => string;
  /** Runs in the transaction before the first take, even when the channel is empty (RPC sinks check their connection). */
  prepare?: () => void | Promise<void>;
  /**
   * Delivers a non-empty batch; throwing fails it. The array is reused for the next batch:
   * deliver must be done with it when its promise settles. tx is the batch's transaction
   * (for observers; the loop commits or rolls it back).
   */
  deliver(events: readonly Event[], tx: Transaction): Delivery | Promise<Delivery>;
  /** After a failed batch was rolled back: undo what the sink did with it (a partly written file, a broken connection). */
  failed?(err: unknown): void | Promise<void>;
  /**
   * Batches whose delivery may be under way at once (default 1: process() returns once its
   * batch is settled). Above 1, process() returns once a batch was handed to deliver while
   * fewer are unsettled; each batch's take commits (or rolls back) when its own delivery
   * settles, and a failed one is thrown by a later process() call, once every batch in flight
   * was settled. deliver must then not reuse anything between batches, and settle() waits for
   * them all (before the sink closes what deliver uses). The channel must take concurrent
   * transactions (every channel here does, as Flume's for several sinks).
   */
  inFlight?: number;
}

/** A batch handed to deliver and not settled yet (inFlight above 1). */
interface Unsettled {
  readonly tx: Transaction;
  readonly events: Event[];
  readonly done: Promise<void>;
}

type Phase = "prepare" | "take" | "deliver" | "commit" | "rollback";

/**
 * The one take loop of every sink: begin a take transaction, take up to batchSize events,
 * hand them to deliver, commit (or roll back as deliver decided). A failure anywhere rolls
 * the batch back, is counted (ChannelReadFail for a channel's error, else EventWriteFail, as
 * Flume's SinkCounter.incrementEventWriteOrChannelFail), and is thrown as
 * EventDeliveryException with the failure as its cause. A rollback that itself fails is
 * logged with both errors; the transaction is closed and the original failure thrown.
 */
export class TakeLoop {
  private readonly batch: Event[] = [];
  private readonly unsettled = new Set<Unsettled>();
  /** Arrays of settled batches, for the next ones (inFlight above 1). */
  private readonly spare: Event[][] = [];
  /** The first failure of a batch in flight since the last one thrown, and how many batches failed. */
  private failure: EventDeliveryException | null = null;
  private failures = 0;
  /** Most batches ever unsettled at once (inFlight above 1), for tests and logs. */
  maxUnsettled = 0;

  constructor(private readonly o: TakeLoopOptions) {}

  /** Batches handed to deliver and not yet committed or rolled back. */
  get inFlight(): number {
    return this.unsettled.size;
  }

  process(channel: Channel): Promise<Status> {
    return (this.o.inFlight ?? 1) > 1 ? this.pipelined(channel) : this.oneByOne(channel);
  }

  /**
   * Waits until every batch in flight was committed or rolled back (a sink's stop, before it
   * closes its connection), for at most waitMs when given; a failure not yet thrown is logged
   * (its batch is back in the channel). False: batches still in flight after waitMs.
   */
  async settle(waitMs?: number): Promise<boolean> {
    if (waitMs === undefined) await this.settleAll();
    else {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.settleAll(), new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
      clearTimeout(timer);
    }
    const failure = this.takeFailure();
    if (failure) this.o.logger.warn(failure.message);
    return this.unsettled.size === 0;
  }

  private async oneByOne(channel: Channel): Promise<Status> {
    const o = this.o;
    const c = o.counter?.values;
    const countBatches = o.countBatches ?? true;
    const events = this.batch;
    const max = o.batchSize;
    const tx = channel.getTransaction();
    let phase: Phase = "take";
    try {
      tx.begin();
      phase = "prepare";
      if (o.prepare) {
        const preparing = o.prepare();
        if (preparing) await preparing;
      }
      phase = "take";
      let status: Status = "READY";
      const n = tx.takeInto(events, max);
      if (n < max) status = n === 0 ? "BACKOFF" : (o.underflow ?? "BACKOFF");
      if (c) {
        if (countBatches) {
          if (n === 0) c.BatchEmptyCount++;
          else if (n < max) c.BatchUnderflowCount++;
          else c.BatchCompleteCount++;
        }
        c.EventDrainAttemptCount += n;
      }
      let verdict: Delivery = undefined;
      if (n > 0) {
        phase = "deliver";
        const delivering = o.deliver(events, tx);
        // A synchronous deliver (null, logger) costs no extra turn of the event loop.
        verdict = delivering instanceof Promise ? await delivering : delivering;
      }
      let drained = n;
      if (verdict) {
        status = verdict.status;
        drained = verdict.drained ?? (verdict.commit ? n : 0);
      }
      if (verdict && !verdict.commit) {
        phase = "rollback";
        await tx.rollback();
      } else {
        phase = "commit";
        await tx.commit();
      }
      if (c) c.EventDrainSuccessCount += drained;
      return status;
    } catch (err) {
      // Inline, not in a helper: the simulator's traces depend on when close() runs.
      const n = events.length;
      if (c) {
        if (err instanceof ChannelException) c.ChannelReadFail++;
        else c.EventWriteFail++;
      }
      // A failed commit leaves the transaction open; a failed rollback has finished it.
      if (tx.state === "OPEN") {
        try {
          await tx.rollback();
        } catch (rollbackErr) {
          o.logger.error(`${o.label}: rolling back ${count(n)} into channel ${channel.name} failed (${reason(rollbackErr)}) after: ${reason(err)}; the transaction is closed, the channel keeps what its rollback left`);
        }
      }
      if (o.failed) await this.cleanUp(err);
      throw new EventDeliveryException(failureMessage(o, channel, phase, n, err), { cause: err });
    } finally {
      events.length = 0;
      closeTransaction(tx, o, channel);
    }
  }

  private async pipelined(channel: Channel): Promise<Status> {
    const o = this.o;
    const max = o.inFlight ?? 1;
    while (this.unsettled.size >= max) await Promise.race([...this.unsettled].map((u) => u.done));
    if (this.failure) {
      // The batches after a failed one mostly fail too (a lost connection, out-of-order sequences): all back in the channel before the runner backs off.
      await this.settleAll();
      throw this.takeFailure();
    }
    const c = o.counter?.values;
    const countBatches = o.countBatches ?? true;
    const events = this.spare.pop() ?? [];
    const tx = channel.getTransaction();
    let phase: Phase = "take";
    let handed = false;
    try {
      tx.begin();
      phase = "prepare";
      if (o.prepare) await o.prepare();
      phase = "take";
      const n = tx.takeInto(events, o.batchSize);
      const status: Status = n < o.batchSize ? (n === 0 ? "BACKOFF" : (o.underflow ?? "BACKOFF")) : "READY";
      if (c) {
        if (countBatches) {
          if (n === 0) c.BatchEmptyCount++;
          else if (n < o.batchSize) c.BatchUnderflowCount++;
          else c.BatchCompleteCount++;
        }
        c.EventDrainAttemptCount += n;
      }
      if (n === 0) {
        phase = "commit";
        await tx.commit();
        return status;
      }
      phase = "deliver";
      const delivering = o.deliver(events, tx);
      handed = true;
      const u: Unsettled = { tx, events, done: this.settleLater(channel, tx, events, delivering) };
      this.unsettled.add(u);
      if (this.unsettled.size > this.maxUnsettled) this.maxUnsettled = this.unsettled.size;
      void u.done.then(() => this.unsettled.delete(u));
      return status;
    } catch (err) {
      if (c) {
        if (err instanceof ChannelException) c.ChannelReadFail++;
        else c.EventWriteFail++;
      }
      const n = events.length;
      await this.rollBack(tx, channel, n, err);
      if (o.failed) await this.cleanUp(err);
      throw new EventDeliveryException(failureMessage(o, channel, phase, n, err), { cause: err });
    } finally {
      if (!handed) {
        events.length = 0;
        this.spare.push(events);
        closeTransaction(tx, o, channel);
      }
    }
  }

  /**
   * Commits or rolls back a batch in flight once its delivery settled, as oneByOne does inline
   * (kept apart: oneByOne's awaits stay as they were, which the simulator's traces depend on);
   * a failure is kept for the next process() call.
   */
  private async settleLater(channel: Channel, tx: Transaction, events: Event[], delivering: Delivery | Promise<Delivery>): Promise<void> {
    const o = this.o;
    const c = o.counter?.values;
    const n = events.length;
    let phase: Phase = "deliver";
    try {
      const verdict = delivering instanceof Promise ? await delivering : delivering;
      const drained = verdict ? (verdict.drained ?? (verdict.commit ? n : 0)) : n;
      if (verdict && !verdict.commit) {
        phase = "rollback";
        await tx.rollback();
      } else {
        phase = "commit";
        await tx.commit();
      }
      if (c) c.EventDrainSuccessCount += drained;
    } catch (err) {
      if (c) {
        if (err instanceof ChannelException) c.ChannelReadFail++;
        else c.EventWriteFail++;
      }
      await this.rollBack(tx, channel, n, err);
      if (o.failed) await this.cleanUp(err);
      this.failures++;
      this.failure ??= new EventDeliveryException(failureMessage(o, channel, phase, n, err), { cause: err });
    } finally {
      events.length = 0;
      this.spare.push(events);
      closeTransaction(tx, o, channel);
    }
  }

  private async settleAll(): Promise<void> {
    while (this.unsettled.size > 0) await Promise.all([...this.unsettled].map((u) => u.done));
  }

  /** The failure to throw (naming how many batches in flight failed with it), cleared. */
  private takeFailure(): EventDeliveryException | null {
    const failure = this.failure;
    if (!failure) return null;
    const more = this.failures - 1;
    this.failure = null;
    this.failures = 0;
    if (more === 0) return failure;
    return new EventDeliveryException(`${failure.message} (and ${more} more batch${more === 1 ? "" : "es"} in flight, rolled back too)`, { cause: failure.cause });
  }

  /** Rolls back a failed batch's open transaction; a rollback that fails is logged with both errors. */
  private async rollBack(tx: Transaction, channel: Channel, n: number, err: unknown): Promise<void> {
    // A failed commit leaves the transaction open; a failed rollback has finished it.
    if (tx.state !== "OPEN") return;
    try {
      await tx.rollback();
    } catch (rollbackErr) {
      this.o.logger.error(`${this.o.label}: rolling back ${count(n)} into channel ${channel.name} failed (${reason(rollbackErr)}) after: ${reason(err)}; the transaction is closed, the channel keeps what its rollback left`);
    }
  }

  private async cleanUp(err: unknown): Promise<void> {
    try {
      await this.o.failed?.(err);
    } catch (cleanupErr) {
      this.o.logger.error(`${this.o.label}: cleaning up after a failed batch failed (${reason(cleanupErr)}) after: ${reason(err)}`);
    }
  }
}

function failureMessage(o: TakeLoopOptions, channel: Channel, phase: Phase, n: number, err: unknown): string {
  const to = o.target ? ` to ${o.target()}` : "";
  const why = reason(err);
  switch (phase) {
    case "prepare":
      return `${o.label}: cannot deliver${to}: ${why}`;
    case "take":
      return `${o.label}: unable to take events from channel ${channel.name}: ${why}${n > 0 ? `; ${count(n)} rolled back` : ""}`;
    case "deliver":
      return `${o.label}: failed to deliver ${count(n)}${to}: ${why}; rolled back into channel ${channel.name}`;
    case "commit":
      return `${o.label}: delivered ${count(n)}${to} but channel ${channel.name} could not commit the take: ${why}; rolled back, they will be delivered again`;
    case "rollback":
      return `${o.label}: rolling back ${count(n)} into channel ${channel.name} failed: ${why}`;
  }
}

function closeTransaction(tx: Transaction, o: TakeLoopOptions, channel: Channel): void {
  try {
    tx.close();
  } catch (err) {
    o.logger.error(`${o.label}: closing a take transaction of channel ${channel.name} failed: ${reason(err)}`);
  }
}

function count(n: number): string {
  return n === 1 ? "1 event" : `${n} events`;
}

/** The error's message, led by its code (ECONNREFUSED) when the message does not say it. */
export function reason(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}
