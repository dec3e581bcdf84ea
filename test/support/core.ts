/** Small helpers shared by the core tests. */
import type { Channel } from "../../src/core/channel.ts";
import { SinkCounter } from "../../src/core/counters.ts";
import { EventDeliveryException } from "../../src/core/errors.ts";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import type { LifecycleState } from "../../src/core/lifecycle.ts";
import type { Sink, Status } from "../../src/core/sink.ts";
import type { Transaction } from "../../src/core/transaction.ts";

export function events(n: number, prefix = "event", from = 0): Event[] {
  return Array.from({ length: n }, (_, i) => createEvent(`${prefix} ${from + i}`));
}

/** Puts the events in one transaction and commits. */
export async function putAll(channel: Channel, batch: Event[]): Promise<void> {
  const tx = channel.getTransaction();
  tx.begin();
  try {
    for (const e of batch) tx.put(e);
    await tx.commit();
  } catch (err) {
    await tx.rollback();
    throw err;
  } finally {
    tx.close();
  }
}

/** Takes in an open transaction until `events` holds n or the channel has none now; returns events. */
export function takeInto(tx: Transaction, events: Event[], n: number): Event[] {
  while (events.length < n) {
    const e = tx.take();
    if (!e) break;
    events.push(e);
  }
  return events;
}

/** Begins a take and takes up to n events in it, left open (the caller commits or rolls it back). */
export function takeOpen<T extends Transaction>(channel: { getTransaction(): T }, n: number): { tx: T; events: Event[] } {
  const tx = channel.getTransaction();
  tx.begin();
  return { tx, events: takeInto(tx, [], n) };
}

/** Takes up to max events in one transaction, commits, and returns their bodies. */
export async function takeAll(channel: Channel, max = Number.MAX_SAFE_INTEGER): Promise<string[]> {
  const { tx, events } = takeOpen(channel, max);
  await tx.commit();
  tx.close();
  return events.map(bodyText);
}

/** Empties a channel in transactions of at most `batch` events (keep it within transactionCapacity). */
export async function drain(channel: Channel, batch = 1): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const got = await takeAll(channel, batch);
    out.push(...got);
    if (got.length < batch) return out;
  }
}

/** Observes a promise without letting a rejection go unhandled. */
export function watch<T>(p: Promise<T>): { readonly done: boolean; readonly value: T | undefined; readonly error: unknown; promise: Promise<void> } {
  const state = { done: false, value: undefined as T | undefined, error: undefined as unknown, promise: Promise.resolve() };
  state.promise = p.then(
    (v) => {
      state.done = true;
      state.value = v;
    },
    (e) => {
      state.done = true;
      state.error = e;
    },
  );
  return state;
}

/**
 * A sink like the ones in Flume's processor tests: each process() takes one event in a
 * transaction; it throws EventDeliveryException when failing, and returns BACKOFF on an
 * empty channel.
 */
export class TestSink implements Sink {
  readonly counter: SinkCounter;
  readonly received: string[] = [];
  fail = false;
  /** When set, the sink fails once it has delivered this many more events (Flume's ConsumeXSink). */
  remaining = Number.POSITIVE_INFINITY;
  /** Return READY even when the channel was empty (as Flume's ConsumeXSink). */
  readyWhenEmpty = false;
  calls = 0;
  private channel: Channel | null = null;
  private state: LifecycleState = "IDLE";

  constructor(readonly name: string) {
    this.counter = new SinkCounter(name);
  }

  setChannel(channel: Channel): void {
    this.channel = channel;
  }

  getChannel(): Channel {
    if (!this.channel) throw new Error(`${this.name} has no channel`);
    return this.channel;
  }

  start(): void {
    this.state = "START";
  }

  stop(): void {
    this.state = "STOP";
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  async process(): Promise<Status> {
    this.calls++;
    if (this.fail || this.remaining <= 0) throw new EventDeliveryException(`${this.name} cannot deliver`);
    const tx = this.getChannel().getTransaction();
    tx.begin();
    try {
      const e = tx.take();
      await tx.commit();
      if (e === null) return this.readyWhenEmpty ? "READY" : "BACKOFF";
      this.received.push(bodyText(e));
      this.remaining--;
      return "READY";
    } catch (err) {
      await tx.rollback();
      throw err;
    } finally {
      tx.close();
    }
  }
}

/** Seeded PRNG (mulberry32): "random" runs are reproducible from their seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
