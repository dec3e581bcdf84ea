import type { ChannelProcessor } from "../core/channel-processor.ts";
import type { Clock } from "../core/clock.ts";
import type { SourceCounter } from "../core/counters.ts";
import { ChannelException, FlumeError } from "../core/errors.ts";
import type { Event } from "../core/event.ts";
import type { Logger } from "../core/logger.ts";
import { Sleeper } from "../core/sleeper.ts";
import { WarningThrottle } from "./warning-throttle.ts";

/** First wait before a batch the channel refused is tried again; each further wait doubles. */
export const RETRY_FIRST_MS = 100;
/** Longest wait between retries, unless the source's own property (spooldir's maxBackoff) says otherwise. */
export const RETRY_MAX_MS = 5000;

export type { SourcePosition } from "../core/channel.ts";
import type { SourcePosition } from "../core/channel.ts";

/** What the emitter needs of its source. */
export interface EmittingSource {
  readonly name: string;
  readonly counter: SourceCounter;
  getChannelProcessor(): ChannelProcessor;
}

export interface EmitterOptions {
  clock: Clock;
  /** Where refusals and failures are logged; absent: not logged (a caller that reports them itself). */
  logger?: Logger;
  /** Names the source in log lines ("netcat source r1"); the source's name by default. */
  label?: string;
  /** Longest wait between retries in ms (a source's Flume property such as spooldir's maxBackoff). */
  maxBackoff?: number;
  /**
   * "accepted": only EventAcceptedCount and AppendBatchAcceptedCount, as Flume's seq source
   * counts. "flume" (default): every SourceCounter count, as Flume's other sources.
   */
  counting?: "flume" | "accepted";
}

export interface DeliverOptions {
  /** Who sent the events, for log lines ("127.0.0.1:5140"). */
  from?: string;
  /** Stored with the commit of the last part (the position after the whole batch). */
  position?: SourcePosition;
  /**
   * Called once, the first time a channel refuses (before any wait): a source that recorded
   * its position ahead of the commit records the committed one instead, so a crash while the
   * channel stays full does not skip the batch.
   */
  onRefused?: () => void;
}

/**
 * A failure other than a channel refusal while writing events (an interceptor or selector
 * that threw). Already counted as GenericProcessingFail; names the source and the events.
 */
export class EmitError extends FlumeError {}

/**
 * The one way sources hand events to their channels, with Flume's source counters and the
 * full-channel policy:
 * - offer(): one attempt, for sources whose client or runner retries (netcat with acks, avro,
 *   http, embedded, seq, stress). A refusal comes back to be answered (FAILED, 503).
 * - deliver(): retries until committed or the source stops, waiting RETRY_FIRST_MS, doubling up
 *   to maxBackoff, and splitting a batch larger than the channels' transactionCapacity; for
 *   sources nobody retries for (files, pipes, syslog and netcat without acks).
 * A lasting full channel logs one line per interval (WarningThrottle), not one per batch.
 * Other failures are counted as GenericProcessingFail and surfaced: offer returns them,
 * deliver throws them as EmitError.
 */
export class SourceEmitter {
  private readonly clock: Clock;
  private readonly logger: Logger | undefined;
  private readonly label: string;
  private readonly firstWait: number;
  private readonly maxBackoff: number;
  private readonly countAll: boolean;
  private readonly refusals: WarningThrottle | null;
  private readonly failures: WarningThrottle | null;
  /** Waits in progress (several clients may be retrying at once); stop() ends them all. */
  private readonly waits = new Set<Sleeper>();
  private stopped = false;
  /** The source's counter values (one object for the source's life; its start() zeroes them in place). */
  private readonly c: SourceCounter["values"];

  constructor(
    private readonly source: EmittingSource,
    options: EmitterOptions,
  ) {
    this.c = source.counter.values;
    this.clock = options.clock;
    this.logger = options.logger;
    this.label = options.label ?? source.name;
    this.maxBackoff = Math.max(options.maxBackoff ?? RETRY_MAX_MS, 1);
    this.firstWait = Math.min(RETRY_FIRST_MS, this.maxBackoff);
    this.countAll = (options.counting ?? "flume") === "flume";
    const logger = options.logger;
    this.refusals = logger ? new WarningThrottle(this.clock, (m) => logger.warn(m)) : null;
    this.failures = logger ? new WarningThrottle(this.clock, (m) => logger.error(m)) : null;
  }

  /** Retrying is allowed again (the source started). */
  start(): void {
    this.stopped = false;
  }

  /**
   * The source is stopping: waits end now and deliveries give up instead of retrying (each
   * delivery still makes its first attempt). Logs what the throttles still hold.
   */
  stop(): void {
    this.stopped = true;
    for (const w of this.waits) w.wake();
    this.refusals?.stop();
    this.failures?.stop();
  }

  /** One attempt at a batch; null once committed, else what refused or failed it. */
  async offer(events: Event[], from?: string): Promise<Error | null> {
    const c = this.c;
    if (this.countAll) {
      c.AppendBatchReceivedCount++;
      c.EventReceivedCount += events.length;
    }
    try {
      await this.source.getChannelProcessor().processEventBatch(events);
    } catch (err) {
      return this.refused(err, events.length, from);
    }
    c.AppendBatchAcceptedCount++;
    c.EventAcceptedCount += events.length;
    return null;
  }

  /** One attempt at a single event (Flume's append: Append* counters); null once committed. */
  async offerOne(event: Event, from?: string): Promise<Error | null> {
    const c = this.c;
    if (this.countAll) {
      c.AppendReceivedCount++;
      c.EventReceivedCount++;
    }
    try {
      await this.source.getChannelProcessor().processEvent(event);
    } catch (err) {
      return this.refused(err, 1, from);
    }
    if (this.countAll) c.AppendAcceptedCount++;
    c.EventAcceptedCount++;
    return null;
  }

  /**
   * Writes a batch, retrying a refused part until it is committed. True once every event is
   * committed; false when the source stopped first (parts already committed stay committed).
   * Throws EmitError on a failure other than the channel's.
   */
  async deliver(events: Event[], options: DeliverOptions = {}): Promise<boolean> {
    if (events.length === 0) return true;
    const c = this.c;
    if (this.countAll) {
      c.AppendBatchReceivedCount++;
      c.EventReceivedCount += events.length;
    }
    const processor = this.source.getChannelProcessor();
    const max = processor.maxBatchSize(events.length);
    let onRefused = options.onRefused;
    for (let offset = 0; offset < events.length; ) {
      const end = Math.min(offset + max, events.length);
      const part = offset === 0 && end === events.length ? events : events.slice(offset, end);
      const position = end === events.length ? options.position : undefined;
      let wait = this.firstWait;
      for (;;) {
        try {
          const pending = processor.processEventBatch(part, position);
          if (pending) await pending;
          break;
        } catch (err) {
          const from = options.from ? ` from ${options.from}` : "";
          if (!(err instanceof ChannelException)) throw this.failure(err, events.length - offset, from);
          c.ChannelWriteFail++;
          onRefused?.();
          onRefused = undefined;
          if (this.stopped) return false;
          this.refusals?.warn(`${this.label}: channel refused ${part.length} events${from} (${err.message}); pausing this input and retrying in ${wait} ms`);
          await this.sleep(wait);
          if (this.stopped) return false;
          wait = Math.min(wait * 2, this.maxBackoff);
        }
      }
      c.EventAcceptedCount += part.length;
      offset = end;
    }
    c.AppendBatchAcceptedCount++;
    return true;
  }

  /**
   * Reports a failure a source caught around its emission (or elsewhere in its processing):
   * logged, and counted as GenericProcessingFail unless deliver() counted it already.
   */
  failed(err: unknown, what: string): void {
    if (err instanceof EmitError) {
      this.logger?.error(`${err.message}; ${what}`);
      return;
    }
    this.c.GenericProcessingFail++;
    this.logger?.error(`${this.label}: ${what}: ${err instanceof Error ? err.message : String(err)}`);
  }

  private refused(err: unknown, count: number, from: string | undefined): Error {
    const by = from ? ` from ${from}` : "";
    if (err instanceof ChannelException) {
      this.c.ChannelWriteFail++;
      this.refusals?.warn(`${this.label}: channel refused ${count} events${by}: ${err.message}`);
      return err;
    }
    const failure = this.failure(err, count, by);
    this.failures?.warn(failure.message);
    return failure;
  }

  private failure(err: unknown, count: number, from: string): EmitError {
    this.c.GenericProcessingFail++;
    const message = err instanceof Error ? err.message : String(err);
    return new EmitError(`${this.label}: could not write ${count} events${from}: ${message}`, { cause: err });
  }

  private async sleep(ms: number): Promise<void> {
    const sleeper = new Sleeper(this.clock);
    this.waits.add(sleeper);
    try {
      await sleeper.sleep(ms);
    } finally {
      this.waits.delete(sleeper);
    }
  }
}
