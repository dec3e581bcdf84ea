import type { ChannelProcessor } from "./channel-processor.ts";
import type { SourceCounter } from "./counters.ts";
import type { LifecycleAware } from "./lifecycle.ts";
import type { DeliveryFailure, Status } from "./sink.ts";

/** A source hands events to its ChannelProcessor, which writes them to channels in transactions. */
export interface Source extends LifecycleAware {
  readonly counter: SourceCounter;
  setChannelProcessor(processor: ChannelProcessor): void;
  getChannelProcessor(): ChannelProcessor;
  /** A started source that reads from a peer (a Kafka broker), while its reads fail: why, and since when (for /ready); null once they work again. */
  readFailure?(): DeliveryFailure | null;
}

/** A source the runner polls (Flume's PollableSource): process() is called in a loop. */
export interface PollableSource extends Source {
  readonly kind: "pollable";
  process(): Promise<Status>;
  /** Backoff after BACKOFF grows by this much per consecutive BACKOFF (Flume: 1000 ms). */
  readonly backoffSleepIncrement?: number;
  /** Upper bound of that backoff (Flume: 5000 ms). */
  readonly maxBackoffSleep?: number;
  /**
   * The runner is stopping: end any wait inside process() (a batch retried while the channel
   * is full), so that process() returns and stop() can follow.
   */
  interrupt?(): void;
  /**
   * Given by the runner once the source started: `wake` ends the runner's backoff sleep (or
   * skips the next one), for a source that learns of new input by itself (file-system events)
   * and would otherwise wait for its next poll.
   */
  setWakeup?(wake: () => void): void;
}

/** A source that produces events by itself once started (servers, tailers). */
export interface EventDrivenSource extends Source {
  readonly kind: "event-driven";
}

export type AnySource = PollableSource | EventDrivenSource;
