import type { Channel, SourcePosition } from "./channel.ts";
import { ChannelException } from "./errors.ts";
import { compactBodies, type Event } from "./event.ts";
import type { Interceptor } from "./interceptor.ts";
import { InterceptorChain } from "./interceptor.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { ChannelSelector } from "./selectors.ts";

/**
 * Writes a source's events to its channels (Flume's ChannelProcessor): interceptors first,
 * then, per channel chosen by the selector, one transaction per batch. A failure on a
 * required channel rolls that transaction back and reaches the source as ChannelException
 * (channels already committed stay committed: the source's retry may duplicate there, which
 * is Flume's at-least-once). Failures on optional channels are logged and ignored.
 */
export class ChannelProcessor {
  readonly interceptors: InterceptorChain;

  constructor(
    readonly selector: ChannelSelector,
    interceptors: Interceptor[] | InterceptorChain = [],
    private readonly logger: Logger = silentLogger,
  ) {
    this.interceptors = interceptors instanceof InterceptorChain ? interceptors : new InterceptorChain(interceptors);
  }

  initialize(): void {
    this.interceptors.initialize();
  }

  close(): void {
    this.interceptors.close();
  }

  getChannels(): readonly Channel[] {
    return this.selector.getAllChannels();
  }

  /**
   * The largest batch every channel of this source accepts in one transaction (the smallest
   * transactionCapacity), for sources whose batches are not configured, like netcat.
   */
  maxBatchSize(fallback = 100): number {
    let max = Infinity;
    for (const c of this.selector.getAllChannels()) {
      const cap = c.getTransactionCapacity?.();
      if (cap !== undefined && cap < max) max = cap;
    }
    return max === Infinity ? fallback : max;
  }

  async processEvent(event: Event, position?: SourcePosition): Promise<void> {
    const kept = this.interceptors.intercept(event);
    if (kept === null) {
      if (position) await this.storePosition(position);
      return;
    }
    await this.dispatch([kept], position);
  }

  /**
   * Writes a batch. `position` is the source's opaque position after this batch; durable
   * channels store it in the same commit (see Transaction.setSourcePosition).
   */
  processEventBatch(events: Event[], position?: SourcePosition): Promise<void> | void {
    const kept = this.interceptors.interceptAll(events);
    if (kept.length === 0) {
      if (position) return this.storePosition(position);
      return;
    }
    // Events dropped by interceptors would still be held, as bytes of the buffers the kept
    // bodies are views into (see compactBodies). Without drops, the rest of those buffers is
    // queued events too, and nothing is copied.
    if (kept.length < events.length) compactBodies(kept);
    return this.dispatch(kept, position);
  }

  /**
   * Done before returning (no promise) when every channel took its batch at once (see
   * Channel.putNow): a source writing batch after batch then waits for no promise per batch.
   */
  private dispatch(events: Event[], position?: SourcePosition): Promise<void> | void {
    const fixed = this.selector.fixedRouting();
    if (!fixed) return this.dispatchRouted(events, position);
    const { required, optional } = fixed;
    for (let i = 0; i < required.length; i++) {
      const pending = putRequired(required[i], events, position);
      if (pending) return this.finishFixed(pending, required, optional, i + 1, events, position);
    }
    for (let i = 0; i < optional.length; i++) {
      const pending = this.putOptional(optional[i], events, position);
      if (pending) return this.finishFixed(pending, required, optional, required.length + i + 1, events, position);
    }
  }

  /** The rest of a fixed routing once a channel had to wait: channel `next` (counting required, then optional) onwards. */
  private async finishFixed(
    pending: Promise<void>,
    required: readonly Channel[],
    optional: readonly Channel[],
    next: number,
    events: Event[],
    position?: SourcePosition,
  ): Promise<void> {
    await pending;
    for (let i = next; i < required.length; i++) await putRequired(required[i], events, position);
    for (let i = Math.max(0, next - required.length); i < optional.length; i++) await this.putOptional(optional[i], events, position);
  }

  private async dispatchRouted(events: Event[], position?: SourcePosition): Promise<void> {
    const required = new Map<Channel, Event[]>();
    const optional = new Map<Channel, Event[]>();
    for (const event of events) {
      for (const c of this.selector.getRequiredChannels(event)) {
        const list = required.get(c);
        if (list) list.push(event);
        else required.set(c, [event]);
      }
      for (const c of this.selector.getOptionalChannels(event)) {
        const list = optional.get(c);
        if (list) list.push(event);
        else optional.set(c, [event]);
      }
    }
    for (const [channel, list] of required) await putRequired(channel, list, position);
    for (const [channel, list] of optional) await this.putOptional(channel, list, position);
  }

  private putOptional(channel: Channel, events: Event[], position?: SourcePosition): Promise<void> | void {
    const warn = (err: unknown) => this.logger.warn(`Unable to put batch on optional channel: ${channel.name}: ${(err as Error).message}`);
    try {
      const pending = putBatch(channel, events, position);
      if (pending) return pending.catch(warn);
    } catch (err) {
      warn(err);
    }
  }

  /** A batch that interceptors emptied still advances the source's position. */
  private async storePosition(position: { source: string; value: string }): Promise<void> {
    for (const channel of this.selector.getAllChannels()) {
      if (channel.durable) await putBatch(channel, [], position);
    }
  }
}

/** A failure on a required channel reaches the source as ChannelException. */
function requiredFailure(channel: Channel, err: unknown): ChannelException {
  if (err instanceof ChannelException) return err;
  return new ChannelException(`Unable to put batch on required channel: ${channel.name}: ${(err as Error).message}`, { cause: err });
}

function putRequired(channel: Channel, events: Event[], position?: SourcePosition): Promise<void> | void {
  try {
    const pending = putBatch(channel, events, position);
    if (pending)
      return pending.catch((err: unknown) => {
        throw requiredFailure(channel, err);
      });
  } catch (err) {
    throw requiredFailure(channel, err);
  }
}

/**
 * One put transaction for a batch on one channel; rolls back and rethrows on failure. Done
 * before returning (no promise) when the channel took the batch at once (Channel.putNow).
 */
export function putBatch(channel: Channel, events: Event[], position?: SourcePosition): Promise<void> | void {
  if (channel.putNow?.(events, position)) return;
  return putInTransaction(channel, events, position);
}

async function putInTransaction(channel: Channel, events: Event[], position?: SourcePosition): Promise<void> {
  const tx = channel.getTransaction();
  tx.begin();
  try {
    tx.putAll(events);
    if (position) tx.setSourcePosition(position.source, position.value);
    await tx.commit();
  } catch (err) {
    try {
      await tx.rollback();
    } catch {
      // The original failure is what the caller needs to see.
    }
    throw err;
  } finally {
    tx.close();
  }
}
