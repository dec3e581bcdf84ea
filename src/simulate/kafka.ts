/**
 * The simulated Kafka broker and the parts that replace Kafka sinks and sources (found by their
 * definitions' brokerLink role; Kafka channels: kafka-channel.ts). Topics have partitions, each an append-only log with a leader
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
 *   and sends the whole batch again (lost-ack);
 * - acks 0 or 1 (lossy): the leader answers before its followers have the part (they fetch it
 *   one more half latency later); a failover in that window loses it: the records become holes
 *   of the log, and the writer reports them lost (an acks=all write is replicated when answered).
 * Readers read up to the high watermark: records not yet replicated, or held by a Kafka
 * channel's put commit under way, wait.
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

/**
 * Records written and not yet readable: readers see them once replicated (the high watermark),
 * and, for a Kafka channel's put, once its commit ended (held). A producer with acks 0 or 1
 * gets its answer before the followers have them: a failover in between loses them.
 */
export interface Unreplicated {
  from: number;
  to: number;
  /** When the leader answered (Infinity: not yet, see SimProducer.sendPart). */
  acked: number;
  /** When the followers have them: set when written (the answer's time, half a latency later with acks 0 or 1), earlier after a failover. */
  replicated: number;
  /** Unreadable until the writer lets them go (a Kafka channel's put commit). */
  held: boolean;
  /** Told the events the new leader does not have. */
  lost(events: readonly Event[]): void;
}

export interface Partition {
  readonly number: number;
  /** The records; null where a failover lost an acknowledged, unreplicated record. */
  readonly log: (Event | null)[];
  /** Offsets of the lost records, ascending. */
  readonly holes: number[];
  readonly unreplicated: Unreplicated[];
  /** Bumped at each failover: an acknowledgement from an older leader is lost. */
  leaderEpoch: number;
  /** The election ends at this virtual time (no leader before). */
  electedAt: number;
}

/** The end of what readers may read (the high watermark): records not replicated yet wait. */
export function readableEnd(p: Partition, now: number): number {
  let end = p.log.length;
  const u = p.unreplicated;
  for (let k = u.length - 1; k >= 0; k--) {
    if (!u[k].held && u[k].replicated <= now) u.splice(k, 1);
    else if (u[k].from < end) end = u[k].from;
  }
  return end;
}

/** Records of p between offsets from (inclusive) and to (exclusive), holes left out. */
export function recordsBetween(p: Partition, from: number, to: number): number {
  let n = to - from;
  for (const h of p.holes) if (h >= from && h < to) n--;
  return n;
}

/** A member of a consumer group: a Kafka source, or a Kafka channel taking from its topic. */
export interface GroupMember {
  readonly name: string;
  readonly epoch: Epoch;
}

export class ConsumerGroup {
  readonly committed: number[];
  readonly position: number[];
  /** Highest offset + 1 whose records a member committed into its channels. */
  readonly putHigh: number[];
  readonly members: GroupMember[] = [];
  /** Re-read records (their offsets were not committed) and rebalances so far. */
  rereads = 0;
  rebalances = 0;
  /** Times every position went back to the committed offsets: what members read before is read again. */
  rewinds = 0;
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
    for (const p of this.topic.partitions) n += recordsBetween(p, this.committed[p.number], p.log.length);
    return n;
  }

  /** `member` joins (or comes back after a crash): members found dead leave, and the group rebalances. */
  join(member: GroupMember): void {
    for (let k = this.members.length - 1; k >= 0; k--) if (!this.members[k].epoch.alive || this.members[k].name === member.name) this.members.splice(k, 1);
    this.members.push(member);
    this.members.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Members found dead leave; true when one did (the group then rebalances). */
  dropDead(): boolean {
    const before = this.members.length;
    for (let k = this.members.length - 1; k >= 0; k--) if (!this.members[k].epoch.alive) this.members.splice(k, 1);
    return this.members.length < before;
  }

  /** The partitions `member` reads (round robin over the live members), without a leader election running. */
  assigned(member: GroupMember, now: number): Partition[] {
    const me = this.members.indexOf(member);
    if (me < 0) return [];
    return this.topic.partitions.filter((p) => p.number % this.members.length === me && now >= p.electedAt);
  }
}

export class SimTopic {
  readonly partitions: Partition[];
  readonly groups = new Map<string, ConsumerGroup>();
  /** Records written, and of them written again by a resend (same event). */
  written = 0;
  failovers = 0;
  acksLost = 0;
  /** Acknowledged records lost in failovers (acks 0 or 1). */
  lost = 0;
  /** Sinks of the run writing it. */
  readonly writers: string[] = [];
  constructor(
    readonly name: string,
    partitions: number,
  ) {
    this.partitions = Array.from({ length: partitions }, (_, k) => ({ number: k, log: [], holes: [], unreplicated: [], leaderEpoch: 0, electedAt: 0 }));
  }

  /** A failover of p: acknowledged records its followers did not have yet are gone. */
  failOver(p: Partition, now: number): void {
    p.leaderEpoch++;
    this.failovers++;
    const u = p.unreplicated;
    for (let k = u.length - 1; k >= 0; k--) {
      const w = u[k];
      const lose = w.acked <= now && w.replicated > now;
      // Not answered yet: the followers had them, and the producer retries (SimProducer.sendPart).
      w.replicated = Math.min(w.replicated, now);
      if (!w.held) u.splice(k, 1);
      if (!lose) continue;
      const gone: Event[] = [];
      for (let o = w.from; o < w.to; o++) {
        const e = p.log[o];
        if (!e) continue;
        gone.push(e);
        p.log[o] = null;
        p.holes.push(o);
      }
      this.lost += gone.length;
      w.lost(gone);
    }
    p.holes.sort((a, b) => a - b);
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
          t.failOver(p, this.clock.now());
          p.electedAt = this.clock.now() + f.election;
        }
      }, f.at);
    }
  }

  /** Runs fn once the work of this instant is done (a 0 ms timer of the broker's clock). */
  later(fn: () => void): void {
    this.clock.setTimeout(fn, 0);
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
      const lost = t.lost > 0 ? `, ${t.lost.toLocaleString("en-US")} acknowledged records LOST in leader failovers (acks 0 or 1: the leader answered before its followers had them; acks=all never loses them)` : "";
      return `topic ${t.name}: ${t.written.toLocaleString("en-US")} records in ${t.partitions.length} partitions (${per}), ${t.failovers} leader failovers, ${t.acksLost} acknowledgements lost${lost}${groups.length > 0 ? `; ${groups.join("; ")}` : ""}`;
    });
  }
}

/** How a sink's writes count: a delivery (no source of the run reads the topic) or a hop to the agent that reads it. */
export interface TopicUse {
  /** A source of the run reads the topic: what the sink writes is forwarded, not delivered. */
  hop: boolean;
}

/** How a simulated producer answers: its idempotence, its request timeout, and whether acks is 0 or 1 (lossy). */
export interface ProducerSpec {
  idempotent: boolean;
  requestTimeoutMs: number;
  lossy: boolean;
}

/** What the writes of a SimProducer mean to its user (a sink, a Kafka channel's put). */
export interface WriteReport {
  /** Events written to partition p; again: the producer's retry wrote them again (the first copy stays). */
  wrote(ids: number[], p: Partition, again: boolean): void;
  /** Events the leader of p had acknowledged, lost in a failover before its followers had them. */
  lost(events: readonly Event[], p: Partition): void;
}

/**
 * A producer on the simulated broker: spreads a batch round robin over the partitions, writes
 * each part to its leader and waits the acknowledgement (see the top of the file).
 */
export class SimProducer {
  private next = 0;

  constructor(
    readonly label: string,
    readonly topic: SimTopic,
    private readonly spec: ProducerSpec,
    private readonly broker: SimBroker,
    private readonly latency: number,
    private readonly epoch: Epoch,
    private readonly world: SimWorld,
  ) {}

  /**
   * Sends a batch; `written` gets the ids of every copy written. Resolves null once every part
   * was acknowledged, or why the send failed: ackLost when the broker wrote it all and the
   * acknowledgement was lost (after waiting out the request timeout).
   */
  async send(events: readonly Event[], report: WriteReport, written: number[], what: string, held?: Unreplicated[]): Promise<{ failed: string; ackLost: boolean } | null> {
    const loseAck = this.broker.loseAck > 0 && this.broker.ackRandom() < this.broker.loseAck;
    const parts = this.topic.partitions.map(() => [] as Event[]);
    const start = this.next++;
    for (let k = 0; k < events.length; k++) parts[(start + k) % parts.length].push(events[k]);
    const deadline = this.epoch.now() + this.spec.requestTimeoutMs;
    const results = await Promise.all(parts.map((part, p) => (part.length === 0 ? Promise.resolve(null) : this.sendPart(this.topic.partitions[p], part, report, deadline, written, held))));
    const failed = results.find((r) => r !== null);
    if (failed) return { failed, ackLost: false };
    if (!loseAck) return null;
    this.topic.acksLost++;
    this.world.say(written, `the acknowledgement of topic ${this.topic.name}'s write (${what}) was lost; ${this.label} waits its request timeout`);
    await this.epoch.sleep(Math.max(0, deadline - this.epoch.now()));
    return { failed: `no acknowledgement from topic ${this.topic.name} within request.timeout.ms ${this.spec.requestTimeoutMs} (lost after the broker wrote the batch)`, ackLost: true };
  }

  /** One partition's part: null once acknowledged, or why the producer gave up. With `held`, its writes stay unreadable until the caller lets them go. */
  private async sendPart(p: Partition, events: Event[], report: WriteReport, deadline: number, written: number[], held?: Unreplicated[]): Promise<string | null> {
    const epoch = this.epoch;
    if (this.latency > 0) await epoch.sleep(this.latency);
    const answer = Math.max(1, Math.ceil(this.latency / 2));
    const pending: Unreplicated[] = [];
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
        const from = p.log.length;
        for (const e of events) p.log.push(e);
        this.topic.written += events.length;
        report.wrote(ids, p, wrote);
        written.push(...ids);
        if (this.spec.lossy || held) {
          // The followers fetch the part whether or not the producer lives to read the answer (a crash meanwhile must not leave the high watermark below it for good).
          const replicated = epoch.now() + answer + (this.spec.lossy ? answer : 0);
          const u: Unreplicated = { from, to: p.log.length, acked: Infinity, replicated, held: held !== undefined, lost: (gone) => report.lost(gone, p) };
          p.unreplicated.push(u);
          pending.push(u);
          held?.push(u);
        }
        wrote = true;
      }
      await epoch.sleep(answer);
      if (p.leaderEpoch === leader) {
        // acks 0 or 1: the leader answered at once; its followers fetch the records one more half round trip later.
        const now = epoch.now();
        for (const u of pending) u.acked = now;
        return null;
      }
      // The leader that wrote the part failed over before it answered (its followers had fetched the records): the producer retries.
      this.world.say(
        events.map(simIdOf),
        `the leader of ${this.topic.name}-${p.number} failed over before acknowledging; the producer retries${this.spec.idempotent ? " (idempotent: the new leader knows the records)" : ", and the new leader writes the records again"}`,
      );
    }
  }
}

/** A Kafka sink: takes a batch, spreads it over the partitions, commits once every part is acknowledged. */
export class SimKafkaSink extends BaseSink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;
  private readonly producer: SimProducer;

  constructor(
    name: string,
    spec: { topic: string; batchSize: number } & ProducerSpec,
    private readonly use: TopicUse,
    broker: SimBroker,
    latency: number,
    epoch: Epoch,
    private readonly world: SimWorld,
  ) {
    super(componentContext(name, { clock: epoch }));
    this.counter = new SinkCounter(name, epoch);
    const topic = broker.topic(spec.topic);
    if (!topic.writers.includes(name)) topic.writers.push(name);
    this.producer = new SimProducer(`sink ${name}`, topic, spec, broker, latency, epoch, world);
    this.takeLoop = this.newTakeLoop({
      counter: this.counter,
      batchSize: spec.batchSize,
      underflow: "READY",
      deliver: (events, tx) => this.send(events, tx as TracedTransaction),
    });
  }

  private async send(taken: readonly Event[], tx: TracedTransaction): Promise<void> {
    ++this.world.sinkBatches;
    const hop = this.use.hop;
    const topic = this.producer.topic.name;
    const written: number[] = [];
    const report: WriteReport = {
      wrote: (ids, p, again) => {
        if (again) this.world.resendTag(tx, ids, "leader-failover", hop);
        this.world.wrote(tx, this.name, ids, hop, `topic ${topic} partition ${p.number}`);
      },
      lost: (events, p) => this.world.brokerLost(tx.target.index, events.map(simIdOf), hop ? "forwarded" : "delivered", `topic ${topic} partition ${p.number}`),
    };
    const failed = await this.producer.send(taken, report, written, `tx ${tx.id}`);
    if (!failed) return;
    this.world.resendTag(tx, written, failed.ackLost ? "lost-ack" : "leader-failover", hop);
    throw new KafkaFailureError(failed.failed);
  }
}

/**
 * A Kafka source: a member of its consumer group; reads up to batchSize records from the
 * partitions the group assigns it, puts them into its channels in one transaction, then
 * commits the offsets (half a sink latency later: a round trip to the broker). A crash between
 * the two makes the group read the batch again.
 */
export class SimKafkaSource extends BaseSource implements EventDrivenSource, GroupMember {
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
    for (const g of this.groups) {
      g.join(this);
      this.rebalance(g);
    }
    void this.loop();
  }
  stop(): void {
    this.state = "STOP";
  }

  /** Every partition is read again from its committed offset; what was put and not committed is tagged. */
  private rebalance(g: ConsumerGroup): void {
    g.rebalances++;
    for (const p of g.topic.partitions) {
      const from = g.committed[p.number];
      const reread: number[] = [];
      for (let o = from; o < g.putHigh[p.number]; o++) {
        const e = p.log[o];
        if (e) reread.push(simIdOf(e));
      }
      if (reread.length > 0) {
        g.rereads += reread.length;
        this.world.resendTag(null, reread, "source-reread", true);
        this.world.say(reread, `group ${g.name} reads ${g.topic.name}-${p.number} again from committed offset ${from}: the record was committed into a channel, its offset was not`);
      }
      g.position[p.number] = from;
      g.putHigh[p.number] = from;
    }
    g.rewinds++;
  }

  /** The partitions of g this member reads (round robin over the live members). */
  private assigned(g: ConsumerGroup): Partition[] {
    if (g.dropDead()) this.rebalance(g);
    return g.assigned(this, this.epoch.now());
  }

  private fetch(): { g: ConsumerGroup; picks: [Partition, number, number][]; events: Event[] } | null {
    const now = this.epoch.now();
    for (let n = 0; n < this.groups.length; n++) {
      const g = this.groups[(this.turn + n) % this.groups.length];
      const picks: [Partition, number, number][] = [];
      const events: Event[] = [];
      for (const p of this.assigned(g)) {
        const from = g.position[p.number];
        const end = readableEnd(p, now);
        let o = from;
        for (; o < end && events.length < this.spec.batchSize; o++) {
          const e = p.log[o];
          if (e) events.push(e);
        }
        if (o <= from) continue;
        picks.push([p, from, o]);
        if (events.length >= this.spec.batchSize) break;
      }
      if (picks.length > 0) {
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
      const refused = events.length > 0 ? await this.emitter.offer(events) : null;
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
