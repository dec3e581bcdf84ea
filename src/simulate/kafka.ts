/**
 * The simulated Kafka broker and the parts that replace Kafka sinks and sources (found by their
 * definitions' brokerLink role). Topics have partitions, each an append-only log with a leader
 * that can fail over (--kafka-failover); a produce request is written, then acknowledged, and
 * the acknowledgement can be lost (--kafka-lose-ack). Consumer groups keep committed offsets in
 * the broker, so they survive a crash of the agent that reads, which then reads again from the
 * last committed offset. A sink and a source of the run over the same topic join two agents.
 *
 * What happens to a produce request, per partition part of a sink's batch:
 * - the partition has no leader (an election): the producer retries until the new leader is
 *   elected; past its request.timeout.ms it gives up, the whole send fails and the sink rolls
 *   back (what other partitions wrote is then written again: leader-failover);
 * - the leader fails over between the write and the acknowledgement: the producer retries
 *   the part to the new leader, which writes it again unless the producer is idempotent
 *   (acks=all) and deduplicates it (leader-failover);
 * - the acknowledgement of the batch is lost: the sink waits its request timeout, rolls back
 *   and sends the whole batch again (lost-ack).
 */
import type { Clock } from "../core/clock.ts";
import { SinkCounter } from "../core/counters.ts";
import type { Event } from "../core/event.ts";
import type { EventDrivenSource } from "../core/source.ts";
import { componentContext } from "../components/component.ts";
import { BaseSink } from "../components/sinks/base.ts";
import { BaseSource } from "../components/sources/base.ts";
import type { TakeLoop } from "../pipeline/take-loop.ts";
import type { Epoch, SimClient, SimWorld } from "./components.ts";
import { simIdOf } from "./event-ids.ts";
import { type FailoverSpec, formatTime } from "./options.ts";
import type { Random } from "./rng.ts";
import type { TracedTransaction } from "./trace.ts";

interface Partition {
  readonly number: number;
  readonly log: Event[];
  /** Bumped at each failover: an acknowledgement from an older leader is lost. */
  leaderEpoch: number;
  /** The election ends at this virtual time (no leader before). */
  electedAt: number;
}

class ConsumerGroup {
  readonly committed: number[];
  readonly position: number[];
  /** Highest offset + 1 whose records a member committed into its channels. */
  readonly putHigh: number[];
  readonly members: SimKafkaSource[] = [];
  /** Re-read records (their offsets were not committed) and rebalances so far. */
  rereads = 0;
  rebalances = 0;
  constructor(
    readonly name: string,
    readonly topic: SimTopic,
  ) {
    const n = topic.partitions.length;
    this.committed = new Array<number>(n).fill(0);
    this.position = new Array<number>(n).fill(0);
    this.putHigh = new Array<number>(n).fill(0);
  }

  get lag(): number {
    let n = 0;
    for (const p of this.topic.partitions) n += p.log.length - this.committed[p.number];
    return n;
  }
}

export class SimTopic {
  readonly partitions: Partition[];
  readonly groups = new Map<string, ConsumerGroup>();
  /** Records written, and of them written again by a resend (same event). */
  written = 0;
  failovers = 0;
  acksLost = 0;
  /** Sinks of the run writing it. */
  readonly writers: string[] = [];
  constructor(
    readonly name: string,
    partitions: number,
  ) {
    this.partitions = Array.from({ length: partitions }, (_, k) => ({ number: k, log: [], leaderEpoch: 0, electedAt: 0 }));
  }
}

export class KafkaFailureError extends Error {
  override name = "KafkaFailureError";
}

/** The broker (a cluster, as clients see it) every Kafka sink and source of the run talks to. */
export class SimBroker {
  readonly topics = new Map<string, SimTopic>();

  constructor(
    private readonly clock: Clock,
    readonly partitions: number,
    readonly loseAck: number,
    readonly ackRandom: Random,
  ) {}

  topic(name: string): SimTopic {
    let t = this.topics.get(name);
    if (!t) this.topics.set(name, (t = new SimTopic(name, this.partitions)));
    return t;
  }

  group(topic: string, name: string): ConsumerGroup {
    const t = this.topic(topic);
    let g = t.groups.get(name);
    if (!g) t.groups.set(name, (g = new ConsumerGroup(name, t)));
    return g;
  }

  /** Schedules the failovers (each partition named, or every partition of the topic). */
  schedule(failovers: readonly FailoverSpec[]): void {
    for (const f of failovers) {
      this.clock.setTimeout(() => {
        const t = this.topic(f.topic);
        for (const p of t.partitions) {
          if (f.partition !== undefined && p.number !== f.partition) continue;
          p.leaderEpoch++;
          p.electedAt = this.clock.now() + f.election;
          t.failovers++;
        }
      }, f.at);
    }
  }

  /** Every group of the run has committed every record of its topic. */
  get drained(): boolean {
    for (const t of this.topics.values()) for (const g of t.groups.values()) if (g.lag > 0) return false;
    return true;
  }

  /** One line per topic, for the report. */
  describe(): string[] {
    return [...this.topics.values()].map((t) => {
      const per = t.partitions.map((p) => p.log.length).join("/");
      const groups = [...t.groups.values()].map((g) => `group ${g.name}: lag ${g.lag}, ${g.rereads} records read again, ${g.rebalances} rebalances`);
      return `topic ${t.name}: ${t.written.toLocaleString("en-US")} records in ${t.partitions.length} partitions (${per}), ${t.failovers} leader failovers, ${t.acksLost} acknowledgements lost${groups.length > 0 ? `; ${groups.join("; ")}` : ""}`;
    });
  }
}

/** How a sink's writes count: a delivery (no source of the run reads the topic) or a hop to the agent that reads it. */
export interface TopicUse {
  /** A source of the run reads the topic: what the sink writes is forwarded, not delivered. */
  hop: boolean;
}

/** A Kafka sink: takes a batch, spreads it over the partitions, commits once every part is acknowledged. */
export class SimKafkaSink extends BaseSink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;
  private readonly topic: SimTopic;
  private next = 0;

  constructor(
    name: string,
    private readonly spec: { topic: string; batchSize: number; idempotent: boolean; requestTimeoutMs: number },
    private readonly use: TopicUse,
    private readonly broker: SimBroker,
    private readonly latency: number,
    private readonly epoch: Epoch,
    private readonly world: SimWorld,
  ) {
    super(componentContext(name, { clock: epoch }));
    this.counter = new SinkCounter(name, epoch);
    this.topic = broker.topic(spec.topic);
    if (!this.topic.writers.includes(name)) this.topic.writers.push(name);
    this.takeLoop = this.newTakeLoop({
      counter: this.counter,
      batchSize: spec.batchSize,
      underflow: "READY",
      deliver: (events, tx) => this.send(events, tx as TracedTransaction),
    });
  }

  private async send(taken: readonly Event[], tx: TracedTransaction): Promise<void> {
    ++this.world.sinkBatches;
    const loseAck = this.broker.loseAck > 0 && this.broker.ackRandom() < this.broker.loseAck;
    const parts = this.topic.partitions.map(() => [] as Event[]);
    const start = this.next++;
    for (let k = 0; k < taken.length; k++) parts[(start + k) % parts.length].push(taken[k]);
    const deadline = this.epoch.now() + this.spec.requestTimeoutMs;
    const written: number[] = [];
    const results = await Promise.all(parts.map((events, p) => (events.length === 0 ? Promise.resolve(null) : this.sendPart(this.topic.partitions[p], events, tx, deadline, written))));
    const failed = results.find((r) => r !== null);
    if (failed) {
      this.world.resendTag(tx, written, "leader-failover", this.use.hop);
      throw new KafkaFailureError(failed);
    }
    if (loseAck) {
      this.topic.acksLost++;
      this.world.say(written, `the acknowledgement of topic ${this.topic.name}'s write (tx ${tx.id}) was lost; sink ${this.name} waits its request timeout`);
      await this.epoch.sleep(Math.max(0, deadline - this.epoch.now()));
      this.world.resendTag(tx, written, "lost-ack", this.use.hop);
      throw new KafkaFailureError(`no acknowledgement from topic ${this.topic.name} within request.timeout.ms ${this.spec.requestTimeoutMs} (lost after the broker wrote the batch)`);
    }
  }

  /** One partition's part: null once acknowledged, or why the producer gave up. */
  private async sendPart(p: Partition, events: Event[], tx: TracedTransaction, deadline: number, written: number[]): Promise<string | null> {
    const epoch = this.epoch;
    if (this.latency > 0) await epoch.sleep(this.latency);
    let wrote = false;
    for (;;) {
      if (epoch.now() < p.electedAt) {
        // No leader: the producer retries until one is elected, or its request timeout.
        if (p.electedAt > deadline) {
          await epoch.sleep(Math.max(0, deadline - epoch.now()));
          return `partition ${this.topic.name}-${p.number} had no leader within request.timeout.ms ${this.spec.requestTimeoutMs} (leader election until ${formatTime(p.electedAt)})`;
        }
        await epoch.sleep(p.electedAt - epoch.now());
        continue;
      }
      const leader = p.leaderEpoch;
      if (!wrote || !this.spec.idempotent) {
        const ids = events.map(simIdOf);
        if (wrote) this.world.resendTag(tx, ids, "leader-failover", this.use.hop);
        for (const e of events) p.log.push(e);
        this.topic.written += events.length;
        this.world.wrote(tx, this.name, ids, this.use.hop, `topic ${this.topic.name} partition ${p.number}`);
        written.push(...ids);
        wrote = true;
      }
      await epoch.sleep(Math.max(1, Math.ceil(this.latency / 2)));
      if (p.leaderEpoch === leader) return null;
      // The leader that wrote the part failed over before it answered: the producer retries.
      this.world.say(
        events.map(simIdOf),
        `the leader of ${this.topic.name}-${p.number} failed over before acknowledging; the producer retries${this.spec.idempotent ? " (idempotent: the new leader knows the records)" : ", and the new leader writes the records again"}`,
      );
    }
  }
}

/**
 * A Kafka source: a member of its consumer group; reads up to batchSize records from the
 * partitions the group assigns it, puts them into its channels in one transaction, then
 * commits the offsets (half a sink latency later: a round trip to the broker). A crash between
 * the two makes the group read the batch again.
 */
export class SimKafkaSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private readonly groups: ConsumerGroup[];
  private turn = 0;

  constructor(
    name: string,
    private readonly spec: { topics: readonly string[]; group: string; batchSize: number; batchDurationMs: number },
    broker: SimBroker,
    private readonly latency: number,
    readonly epoch: Epoch,
    private readonly world: SimWorld,
  ) {
    // Unlogged: refusals go to the world (ledger, trace), and no log timers run in virtual time.
    super(componentContext(name, { clock: epoch }), { unlogged: true });
    this.groups = spec.topics.map((t) => broker.group(t, spec.group));
  }

  start(): void {
    this.state = "START";
    for (const g of this.groups) this.join(g);
    void this.loop();
  }
  stop(): void {
    this.state = "STOP";
  }

  /** Joining (or a member gone): the group rebalances, and every partition is read again from its committed offset. */
  private join(g: ConsumerGroup): void {
    for (let k = g.members.length - 1; k >= 0; k--) if (!g.members[k].epoch.alive || g.members[k].name === this.name) g.members.splice(k, 1);
    g.members.push(this);
    g.members.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.rebalance(g);
  }

  private rebalance(g: ConsumerGroup): void {
    g.rebalances++;
    for (const p of g.topic.partitions) {
      const from = g.committed[p.number];
      const reread: number[] = [];
      for (let o = from; o < g.putHigh[p.number]; o++) reread.push(simIdOf(p.log[o]));
      if (reread.length > 0) {
        g.rereads += reread.length;
        this.world.resendTag(null, reread, "source-reread", true);
        this.world.say(reread, `group ${g.name} reads ${g.topic.name}-${p.number} again from committed offset ${from}: the record was committed into a channel, its offset was not`);
      }
      g.position[p.number] = from;
      g.putHigh[p.number] = from;
    }
  }

  /** The partitions of g this member reads (round robin over the live members). */
  private assigned(g: ConsumerGroup): Partition[] {
    if (g.members.some((m) => !m.epoch.alive)) {
      for (let k = g.members.length - 1; k >= 0; k--) if (!g.members[k].epoch.alive) g.members.splice(k, 1);
      this.rebalance(g);
    }
    const me = g.members.indexOf(this);
    if (me < 0) return [];
    const now = this.epoch.now();
    return g.topic.partitions.filter((p) => p.number % g.members.length === me && now >= p.electedAt);
  }

  private fetch(): { g: ConsumerGroup; picks: [Partition, number, number][]; events: Event[] } | null {
    for (let n = 0; n < this.groups.length; n++) {
      const g = this.groups[(this.turn + n) % this.groups.length];
      const picks: [Partition, number, number][] = [];
      const events: Event[] = [];
      for (const p of this.assigned(g)) {
        const from = g.position[p.number];
        const to = Math.min(p.log.length, from + this.spec.batchSize - events.length);
        if (to <= from) continue;
        for (let o = from; o < to; o++) events.push(p.log[o]);
        picks.push([p, from, to]);
        if (events.length >= this.spec.batchSize) break;
      }
      if (events.length > 0) {
        this.turn = (this.turn + n + 1) % this.groups.length;
        return { g, picks, events };
      }
    }
    return null;
  }

  private async loop(): Promise<void> {
    const epoch = this.epoch;
    const idle = Math.max(1, Math.min(100, this.spec.batchDurationMs));
    while (epoch.alive && this.state === "START") {
      const got = this.fetch();
      if (!got) {
        await epoch.sleep(idle);
        continue;
      }
      const { g, picks, events } = got;
      for (const [p, , to] of picks) g.position[p.number] = to;
      const refused = await this.emitter.offer(events);
      if (!epoch.alive) return;
      if (refused) {
        // As Flume's source: the batch is offered again (from the positions it was read at).
        for (const [p, from] of picks) if (g.position[p.number] > from) g.position[p.number] = from;
        await epoch.sleep(idle);
        continue;
      }
      for (const [p, , to] of picks) g.putHigh[p.number] = Math.max(g.putHigh[p.number], to);
      await epoch.sleep(Math.max(1, Math.ceil(this.latency / 2)));
      if (!epoch.alive) return;
      for (const [p, , to] of picks) if (to > g.committed[p.number]) g.committed[p.number] = to;
    }
  }
}

/**
 * A producer outside the run writing a topic that a source of the run reads and no sink of
 * the run writes: it makes its client's numbered events and appends them as they come, with
 * every write acknowledged.
 */
export class OutsideProducer {
  constructor(
    private readonly client: SimClient,
    private readonly topic: SimTopic,
    private readonly clock: Clock,
    private readonly world: SimWorld,
  ) {}

  start(): void {
    const step = (): void => {
      const c = this.client;
      if (c.exhausted) return;
      c.makeBatch();
      const producer = `the producer of topic ${this.topic.name} (outside the run)`;
      this.world.produced(c.pendingIds, this.topic.name, producer);
      const parts = this.topic.partitions;
      const events = c.pending as Event[];
      for (let k = 0; k < events.length; k++) parts[(c.pendingIds[k] >>> 0) % parts.length].log.push(events[k]);
      this.topic.written += events.length;
      this.world.say(c.pendingIds, `written to topic ${this.topic.name}`);
      this.world.accepted(c.pendingIds, `the broker`, producer);
      c.pending = null;
      this.clock.setTimeout(step, Math.max(1, c.nextDue - this.clock.now()));
    };
    step();
  }
}
