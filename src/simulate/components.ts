/**
 * The simulated parts that replace configured sources and sinks: clients offering numbered
 * events to a source (and retrying a failed put, as an RPC client does), and sinks that take a
 * batch in a transaction and "deliver" it to the ledger, failing as told.
 */
import type { Clock, TimerHandle } from "../core/clock.ts";
import { SinkCounter } from "../core/counters.ts";
import type { Event } from "../core/event.ts";
import type { EventDrivenSource } from "../core/source.ts";
import type { VirtualClock } from "../core/virtual-clock.ts";
import type { TakeLoop } from "../pipeline/take-loop.ts";
import { componentContext } from "../components/component.ts";
import { BaseSink } from "../components/sinks/base.ts";
import { BaseSource } from "../components/sources/base.ts";
import type { Cause } from "./causes.ts";
import type { FailSpec } from "./options.ts";
import type { Random } from "./rng.ts";
import { SIM_ID_HEADER, simIdOf } from "./event-ids.ts";
import type { TracedTransaction } from "./trace.ts";

/** One run of the simulated process between crashes; its timers die with it. */
export class Epoch implements Clock {
  alive = true;
  constructor(
    readonly number: number,
    private readonly clock: VirtualClock,
  ) {}
  now(): number {
    return this.clock.now();
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    return this.clock.setTimeout(() => {
      if (this.alive) fn();
    }, ms);
  }
  clearTimeout(handle: TimerHandle): void {
    this.clock.clearTimeout(handle);
  }
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }
}

/** What simulated parts report to the simulation (ledger, trace, timeline, history). */
export interface SimWorld {
  readonly sinkFail: FailSpec;
  readonly sinkRandom: Random;
  readonly partialRandom: Random;
  /** Non-empty sink batches so far (numbers for --fail-sink 3,7-9 start at 1). */
  sinkBatches: number;
  /** A client made these events; `client` names it when it is not a source's client. */
  produced(ids: number[], by: string, client?: string): void;
  accepted(ids: number[], by: string, client?: string): void;
  putFailed(ids: number[], by: string, err: Error): void;
  delivered(tx: TracedTransaction, by: string, ids: number[]): void;
  sinkFailed(tx: TracedTransaction, by: string, batch: number, delivered: number, size: number): void;
  /**
   * A sink wrote events to a simulated peer (a topic, a file system): a delivery, or (hop) a
   * forward to the agent of the run that reads the topic.
   */
  wrote(tx: TracedTransaction, by: string, ids: number[], hop: boolean, where: string): void;
  /**
   * These events got through and will be sent again because of `cause`: the next copy (hop: the
   * next put of a copy into a channel; else the next delivery from tx's channel) takes it.
   */
  resendTag(tx: TracedTransaction | null, ids: readonly number[], cause: Cause, hop: boolean): void;
  /**
   * Copies the broker lost after they counted (a leader failover with acks 0 or 1): a sink's
   * write of channel ch's events (delivered or forwarded), or events committed into ch itself
   * (a Kafka channel's put: held).
   */
  brokerLost(ch: number, ids: readonly number[], counted: "delivered" | "forwarded" | "held", where: string): void;
  /**
   * Copies of events that landed in channel ch without a commit counting them (a Kafka
   * channel's put that failed after the broker wrote it, or a producer's retry that wrote them
   * twice): the ledger counts them in, and the copy made because of `cause` takes the tag.
   */
  landed(ch: number, ids: readonly number[], cause: Cause, where: string): void;
  /** A line in the history of each watched event among ids. */
  say(ids: readonly number[], text: string): void;
}

const encoder = new TextEncoder();

/**
 * An upstream client of one source: it survives crashes of the agent (it is another process),
 * makes numbered events at its rate, and resends a batch until the source accepted it.
 */
export class SimClient {
  /** The batch being offered, until the source accepts it. */
  pending: Event[] | null = null;
  pendingIds: number[] = [];
  nextDue = 0;
  retries = 0;
  attempts = 0;

  constructor(
    readonly name: string,
    readonly batchSize: number,
    /** Virtual ms between batches (0: as fast as accepted). */
    readonly interval: number,
    private readonly ids: { next: number; total: number },
  ) {}

  get exhausted(): boolean {
    return this.pending === null && this.ids.next >= this.ids.total;
  }

  makeBatch(): void {
    const n = Math.min(this.batchSize, this.ids.total - this.ids.next);
    const events: Event[] = new Array(n);
    const ids: number[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const id = this.ids.next++;
      ids[i] = id;
      events[i] = { headers: { [SIM_ID_HEADER]: String(id) }, body: encoder.encode(`event ${id}`) };
    }
    this.pending = events;
    this.pendingIds = ids;
    this.nextDue += this.interval;
  }
}

/** Client retry delay after a refused batch (virtual ms). */
export const CLIENT_RETRY_MS = 100;

/** A source that receives its client's batches (as an RPC source would) and puts them in one call. */
export class SimSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";

  constructor(
    name: string,
    private readonly client: SimClient,
    private readonly epoch: Epoch,
    private readonly world: SimWorld,
  ) {
    // Unlogged: refusals go to the world (ledger, trace), and no log timers run in virtual time.
    super(componentContext(name, { clock: epoch }), { unlogged: true });
  }

  start(): void {
    this.state = "START";
    void this.loop();
  }
  stop(): void {
    this.state = "STOP";
  }

  private async loop(): Promise<void> {
    const c = this.client;
    const epoch = this.epoch;
    while (epoch.alive && this.state === "START") {
      if (c.pending === null) {
        if (c.exhausted) return;
        const wait = c.nextDue - epoch.now();
        if (wait > 0) {
          await epoch.sleep(wait);
          if (!epoch.alive) return;
        }
        c.makeBatch();
        this.world.produced(c.pendingIds, this.name);
      } else if (c.attempts > 0) {
        c.retries++;
      }
      const events = c.pending as Event[];
      c.attempts++;
      const refused = await this.emitter.offer(events);
      if (!epoch.alive) return;
      if (refused) {
        this.world.putFailed(c.pendingIds, this.name, refused);
        await epoch.sleep(CLIENT_RETRY_MS);
        continue;
      }
      this.world.accepted(c.pendingIds, this.name);
      c.pending = null;
      c.attempts = 0;
    }
  }
}

/**
 * A sink that takes up to batchSize events in a transaction, spends `latency` virtual ms
 * delivering them, waits latency/2 for the acknowledgement, and commits. A failing batch delivers a random prefix first, then rolls
 * back: the events that got through will be delivered again (real duplicates).
 */
export class SimSink extends BaseSink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;

  constructor(
    name: string,
    batchSize: number,
    private readonly latency: number,
    private readonly epoch: Epoch,
    private readonly world: SimWorld,
  ) {
    super(componentContext(name, { clock: epoch }));
    this.counter = new SinkCounter(name, epoch);
    // The agents' take loop, so simulated sinks count, commit and roll back as real ones.
    this.takeLoop = this.newTakeLoop({
      counter: this.counter,
      batchSize,
      underflow: "READY",
      deliver: (events, tx) => this.deliver(events, tx as TracedTransaction),
    });
  }

  private shouldFail(batch: number): boolean {
    const f = this.world.sinkFail;
    if (f.kind === "none") return false;
    if (f.kind === "batches") return f.batches.has(batch);
    return this.world.sinkRandom() < f.rate;
  }

  /**
   * Synchronous without latency: an extra turn of the event loop would reorder the trace
   * against the other parts running at the same virtual instant.
   */
  private deliver(taken: readonly Event[], tx: TracedTransaction): void | Promise<void> {
    const batch = ++this.world.sinkBatches;
    const fail = this.shouldFail(batch);
    if (this.latency === 0) return this.reach(taken, tx, batch, fail);
    return this.epoch.sleep(this.latency).then(() => this.reach(taken, tx, batch, fail));
  }

  /** The batch reaches the destination, all of it or (failing) a random prefix. */
  private reach(taken: readonly Event[], tx: TracedTransaction, batch: number, fail: boolean): void | Promise<void> {
    const ids = taken.map(simIdOf);
    if (fail) {
      const reached = Math.floor(this.world.partialRandom() * taken.length);
      if (reached > 0) this.world.delivered(tx, this.name, ids.slice(0, reached));
      this.world.sinkFailed(tx, this.name, batch, reached, taken.length);
      throw new Error(`simulated failure of batch ${batch} after ${reached} of ${taken.length} events reached the destination`);
    }
    this.world.delivered(tx, this.name, ids);
    // The destination has the batch; the acknowledgement takes half the latency to come
    // back. A crash in that window makes a durable channel deliver the batch again.
    const ack = Math.ceil(this.latency / 2);
    if (ack > 0) return this.epoch.sleep(ack);
  }
}
