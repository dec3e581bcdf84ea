import type { ChannelCounter } from "./counters.ts";
import type { LifecycleAware } from "./lifecycle.ts";
import type { Event } from "./event.ts";
import type { DeliveryFailure } from "./sink.ts";
import type { Transaction } from "./transaction.ts";

/** A source's opaque position after a batch (a file offset), stored by durable channels in the same commit. */
export interface SourcePosition {
  source: string;
  value: string;
}

/** A channel buffers events between sources and sinks; all access goes through transactions. */
export interface Channel extends LifecycleAware {
  readonly name: string;
  readonly counter: ChannelCounter<string>;
  /** A fresh transaction; the caller begins, commits or rolls back, and closes it. */
  getTransaction(): Transaction;
  /** A started channel kept by a peer (a Kafka topic), while reading from it fails: why, and since when (for /ready); null once it works again. */
  readFailure?(): DeliveryFailure | null;
  /**
   * The position a source stored with its last committed put (see
   * Transaction.setSourcePosition), or undefined when the channel keeps none.
   */
  sourcePosition?(source: string): string | undefined;
  /**
   * Puts a batch as one committed put transaction would (getTransaction, begin, putAll,
   * setSourcePosition, commit, close), synchronously, when that needs no wait: room in the
   * channel now, no disk. False, with nothing changed or counted, when it would have to wait:
   * then the caller uses a transaction. A source writing many batches in a row then awaits
   * no promise per batch. Absent: always a transaction.
   */
  putNow?(events: readonly Event[], position?: SourcePosition): boolean;
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
