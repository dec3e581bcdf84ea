/**
 * A Kafka channel on the simulated broker (kafka.ts), for a channel whose definition declares
 * brokerLink.channel. Its events live in a topic of their own: a put commit writes them with
 * the channel's producer (partitions, leader failover, lost acknowledgements, and with acks 0
 * or 1 records lost in a failover) and succeeds once every record is acknowledged; a take reads
 * the group's partitions from its positions, up to the high watermark; a take commit commits the
 * group's offsets (half a sink latency later: a round trip to the broker), never past a record
 * still held (taken-offsets.ts, as the real channel). The group's committed offsets live in the
 * broker: a crash or restart reads again from them.
 *
 * What the ledger cannot see by itself is told through the world: copies written by a put whose
 * commit then failed (lost-ack, or a leader-failover beyond the request timeout) and copies a
 * producer's retry wrote twice are in the channel without a commit counting them (landed); an
 * acknowledged copy a failover lost leaves it (brokerLost).
 */
import type { Channel } from "../core/channel.ts";
import { ChannelException } from "../core/errors.ts";
import type { Event } from "../core/event.ts";
import type { LifecycleState } from "../core/lifecycle.ts";
import { PutListeners } from "../core/put-listeners.ts";
import { ChannelTransaction } from "../core/transaction.ts";
import { TakenOffsets } from "../components/channels/kafka/taken-offsets.ts";
import { KafkaChannelCounter } from "../kafka/counters.ts";
import type { Epoch, SimWorld } from "./components.ts";
import { simIdOf } from "./event-ids.ts";
import { type ConsumerGroup, type GroupMember, type Partition, readableEnd, recordsBetween, type SimBroker, SimProducer, type Unreplicated, type WriteReport } from "./kafka.ts";
import type { BrokerChannelSpec } from "./topology.ts";

interface SimRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly event: Event;
}

export class SimKafkaTransaction extends ChannelTransaction {
  puts: Event[] = [];
  takes: SimRecord[] = [];
  /** Copies of this put a failover lost before the commit returned (told once the commit counted them). */
  lostEarly: number[] = [];
  committing = false;
  /** The group's rewinds at the latest take, and the first take made since. */
  rewinds = -1;
  rewindsFrom = 0;

  constructor(protected readonly ch: SimKafkaChannel) {
    super();
  }
}

export class SimKafkaChannel implements Channel, GroupMember {
  readonly durable = true;
  readonly counter: KafkaChannelCounter;
  private state: LifecycleState = "IDLE";
  private readonly group: ConsumerGroup;
  private readonly producer: SimProducer;
  private readonly offsets = new TakenOffsets<SimRecord, Event>();
  /** Rolled-back takes, taken again first, in their order. */
  private givenBack: SimRecord[] = [];
  /** The group's rewinds when they were given back: after another one, they are read again from the committed offsets instead. */
  private givenBackRewinds = 0;
  /** The group's rewinds `offsets` knows of. */
  private offsetsRewinds = 0;
  private readonly putListeners = new PutListeners();
  private turn = 0;
  /** Put commits under way: what they wrote so far, unreadable until they end. */
  private readonly sending = new Set<{ held: Unreplicated[]; written: number[]; tx: SimKafkaTransaction }>();

  constructor(
    readonly name: string,
    /** Its number in the ledger. */
    private readonly index: number,
    private readonly spec: BrokerChannelSpec,
    private readonly transactionCapacity: number,
    private readonly broker: SimBroker,
    private readonly latency: number,
    readonly epoch: Epoch,
    private readonly world: SimWorld,
  ) {
    this.counter = new KafkaChannelCounter(name, epoch);
    this.group = broker.group(spec.topic, spec.group);
    this.producer = new SimProducer(`channel ${name}'s put`, broker.topic(spec.topic), spec, broker, latency, epoch, world);
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  /** Joins the group, reading every partition from its committed offset (what was read past it is read again). */
  start(): void {
    if (this.state === "START") return;
    const g = this.group;
    g.join(this);
    g.rebalances++;
    for (const p of g.topic.partitions) {
      if (g.position[p.number] > g.committed[p.number]) g.rereads += recordsBetween(p, g.committed[p.number], g.position[p.number]);
      g.position[p.number] = g.committed[p.number];
    }
    g.rewinds++;
    this.state = "START";
  }

  stop(): void {
    this.state = "STOP";
  }

  /**
   * What a killed process leaves: nothing more is committed. What the put commits under way had
   * written is in the topic all the same, uncounted by any commit: the clients send it again.
   */
  crash(): void {
    this.state = "STOP";
    for (const s of this.sending) {
      for (const u of s.held) u.held = false;
      const lost = new Set(s.tx.lostEarly);
      this.world.landed(this.index, s.written.filter((id) => !lost.has(id)), "crash-replay", `topic ${this.spec.topic}`);
    }
    this.sending.clear();
  }

  /** The events of committed takes a crash now would deliver again (their offsets wait behind a held record). */
  repeatable(): Event[] {
    return this.offsetsNow().repeatable();
  }

  ioBusy(): boolean {
    return false;
  }

  getTransaction(): SimKafkaTransaction {
    return new SimKafkaTransaction(this);
  }

  getTransactionCapacity(): number {
    return this.transactionCapacity;
  }

  onPutsCommitted(listener: () => void): () => void {
    return this.putListeners.add(listener);
  }

  put(tx: SimKafkaTransaction, event: Event): void {
    this.counter.values.EventPutAttemptCount++;
    if (tx.puts.length >= this.transactionCapacity) throw new ChannelException(`Put list for channel ${this.name} transaction full, capacity ${this.transactionCapacity}`);
    tx.puts.push(event);
  }

  take(tx: SimKafkaTransaction): Event | null {
    this.counter.values.EventTakeAttemptCount++;
    if (this.state !== "START") return null;
    if (tx.takes.length >= this.transactionCapacity) throw new ChannelException(`Take list for channel ${this.name} transaction full, capacity ${this.transactionCapacity}`);
    const g = this.group;
    this.dropStaleGivenBack();
    const r = this.givenBack.length > 0 ? (this.givenBack.shift() as SimRecord) : this.read();
    if (!r) return null;
    if (tx.rewinds !== g.rewinds) {
      tx.rewinds = g.rewinds;
      tx.rewindsFrom = tx.takes.length;
    }
    tx.takes.push(r);
    this.offsetsNow().taken(r);
    return r.event;
  }

  /**
   * As the real channel: once the group went back to its committed offsets, what the offsets
   * kept from before goes (holds, and takes committed above them, which are read again).
   */
  private offsetsNow(): TakenOffsets<SimRecord, Event> {
    if (this.offsetsRewinds !== this.group.rewinds) {
      this.offsets.clear();
      this.offsetsRewinds = this.group.rewinds;
    }
    return this.offsets;
  }

  /** Where tx's takes since the group last went back to its committed offsets start (the takes' length when it has none). */
  private takesFrom(tx: SimKafkaTransaction): number {
    return tx.rewinds === this.group.rewinds ? tx.rewindsFrom : tx.takes.length;
  }

  /** The next record of the partitions the group assigns this channel, round robin. */
  private read(): SimRecord | null {
    const g = this.group;
    if (g.dropDead()) g.rebalances++;
    const now = this.epoch.now();
    const me = g.members.indexOf(this);
    if (me < 0) return null;
    // The partitions the group assigns this member (round robin), without a leader election running; no array per take.
    const parts = g.topic.partitions;
    for (let n = 0; n < parts.length; n++) {
      const p = parts[(this.turn + n) % parts.length];
      if (p.number % g.members.length !== me || now < p.electedAt) continue;
      const end = readableEnd(p, now);
      let o = g.position[p.number];
      while (o < end) {
        const e = p.log[o++];
        if (!e) continue;
        g.position[p.number] = o;
        this.turn = (this.turn + n + 1) % parts.length;
        return { topic: g.topic.name, partition: p.number, offset: o - 1, event: e };
      }
      g.position[p.number] = o;
    }
    return null;
  }

  async commit(tx: SimKafkaTransaction): Promise<void> {
    if (tx.puts.length > 0) await this.send(tx);
    if (tx.takes.length > 0) await this.commitTakes(tx);
  }

  private where(p: Partition): string {
    return `topic ${this.spec.topic} partition ${p.number}`;
  }

  private async send(tx: SimKafkaTransaction): Promise<void> {
    const world = this.world;
    const again: number[] = [];
    const written: number[] = [];
    tx.committing = true;
    const report: WriteReport = {
      wrote: (ids, _p, retry) => {
        if (retry) again.push(...ids);
      },
      lost: (events, p) => {
        const ids = events.map(simIdOf);
        if (tx.committing) tx.lostEarly.push(...ids);
        else world.brokerLost(this.index, ids, "held", this.where(p));
      },
    };
    // Unreadable until the commit ended, so the ledger counts every copy before a take can take it.
    const held: Unreplicated[] = [];
    const sending = { held, written, tx };
    this.sending.add(sending);
    const failed = await this.producer.send(tx.puts, report, written, `the put of channel ${this.name}`, held);
    this.sending.delete(sending);
    tx.committing = false;
    for (const u of held) u.held = false;
    if (failed) {
      // In the topic all the same: the copies are in the channel, and the resend of the batch makes more.
      const lost = new Set(tx.lostEarly);
      world.landed(this.index, lost.size > 0 ? written.filter((id) => !lost.has(id)) : written, failed.ackLost ? "lost-ack" : "leader-failover", `topic ${this.spec.topic}`);
      throw new ChannelException(`channel ${this.name}: ${failed.failed}`);
    }
    if (again.length > 0) world.landed(this.index, again, "leader-failover", `topic ${this.spec.topic}`);
    if (tx.lostEarly.length > 0) {
      // Lost before the commit returned: told once the commit counted them in.
      const ids = tx.lostEarly;
      this.broker.later(() => world.brokerLost(this.index, ids, "held", `topic ${this.spec.topic}`));
    }
    this.counter.inc("EventPutSuccessCount", tx.puts.length);
    tx.puts = [];
    this.putListeners.notify();
  }

  private async commitTakes(tx: SimKafkaTransaction): Promise<void> {
    // The offset commit's round trip to the broker: a crash meanwhile leaves the offsets where they were.
    await this.epoch.sleep(Math.max(1, Math.ceil(this.latency / 2)));
    const g = this.group;
    // As the real channel: takes read before the group last went back to its committed offsets move no offset.
    const current = tx.takes.slice(this.takesFrom(tx));
    const offsets = this.offsetsNow();
    const upTo = current.length > 0 ? offsets.committed(current, current.map((t) => t.event)) : [];
    for (const r of upTo) {
      const next = r.offset + 1;
      if (next > g.committed[r.partition]) g.committed[r.partition] = next;
    }
    offsets.settled(upTo);
    this.counter.inc("EventTakeSuccessCount", tx.takes.length);
    tx.takes = [];
  }

  rollback(tx: SimKafkaTransaction): void {
    // As the real channel (Flume's): the events of a rolled-back take, none for a put.
    this.counter.values.RollbackCount += tx.takes.length;
    tx.puts = [];
    // As the real channel: takes read before the group last went back to its committed offsets
    // are read again from there (by this member or the partition's owner now), not given back.
    const takes = tx.takes;
    const from = this.takesFrom(tx);
    if (from < takes.length) {
      this.dropStaleGivenBack();
      this.givenBack = [...takes.slice(from), ...this.givenBack];
      this.givenBackRewinds = this.group.rewinds;
    }
    tx.takes = [];
  }

  /** Rolled-back takes waiting here since before the group went back to its committed offsets are read again from there: they go (their holds went with the rewind, offsetsNow). */
  private dropStaleGivenBack(): void {
    if (this.givenBack.length > 0 && this.givenBackRewinds !== this.group.rewinds) this.givenBack = [];
  }
}
