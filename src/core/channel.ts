import type { ChannelCounter } from "./counters.ts";
import type { LifecycleAware } from "./lifecycle.ts";
import type { Transaction } from "./transaction.ts";

/** A channel buffers events between sources and sinks; all access goes through transactions. */
export interface Channel extends LifecycleAware {
  readonly name: string;
  readonly counter: ChannelCounter<string>;
  /** A fresh transaction; the caller begins, commits or rolls back, and closes it. */
  getTransaction(): Transaction;
  /**
   * The position a source stored with its last committed put (see
   * Transaction.setSourcePosition), or undefined when the channel keeps none.
   */
  sourcePosition?(source: string): string | undefined;
  /** Most events one transaction may hold, when the channel limits it. */
  getTransactionCapacity?(): number;
  /**
   * Calls listener after each commit that added events, so a sink runner sleeping after an
   * empty take wakes at once. Returns a function that removes the listener.
   */
  onPutsCommitted?(listener: () => void): () => void;
  /**
   * True while the channel still has writes in flight (a durable channel's disk I/O); the
   * simulator waits for it before moving virtual time.
   */
  ioBusy?(): boolean;
  /** True when the channel keeps committed events across a process crash. */
  readonly durable?: boolean;
}
