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

  constructor(private readonly o: TakeLoopOptions) {}

  async process(channel: Channel): Promise<Status> {
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
