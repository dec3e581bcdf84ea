import type { Channel } from "./channel.ts";
import type { SinkCounter } from "./counters.ts";
import type { LifecycleAware } from "./lifecycle.ts";

/** What one process() call achieved: READY to call again at once, BACKOFF to wait. */
export type Status = "READY" | "BACKOFF";

/** A started component whose work with its peer fails (a sink's deliveries, a source's or channel's reads): the last failure, and when the first of them happened. */
export interface DeliveryFailure {
  error: string;
  /** Epoch milliseconds of the first failure since the last success. */
  since: number;
}

/**
 * A sink takes events from its channel in a transaction and delivers them. process() throws
 * EventDeliveryException after rolling back when delivery failed.
 */
export interface Sink extends LifecycleAware {
  readonly counter?: SinkCounter;
  setChannel(channel: Channel): void;
  getChannel(): Channel;
  process(): Promise<Status>;
  /**
   * The runner stops: called as its loop ends, before stop(). A sink whose process() may wait
   * on deliveries (batches in flight) makes them end in bounded time (rolled back if need be).
   */
  interrupt?(): void;
  /** While the sink's deliveries fail: why, and since when (epoch ms; for /ready); null once one succeeds again. */
  deliveryFailure?(): DeliveryFailure | null;
}
