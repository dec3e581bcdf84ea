/**
 * Flume's Kafka channel (org.apache.flume.channel.kafka.KafkaChannel): the events live in a
 * Kafka topic, shared by every agent naming the same topic and consumer group.
 *
 * Put: events are kept in the transaction; commit sends them as records and returns once the
 * broker acknowledged every one (acks = all by default, as Flume), so they become visible to
 * takers only at commit. Take: records come from a consumer in the group, fetched ahead so
 * that take() is synchronous; a record's key, if it has one, is its event's `key` header (as
 * Flume's, in both parseAsFlumeEvent modes); commit commits their offsets; rollback puts them
 * back at the head of the fetched records in their order. The group's offset of a partition
 * moves only past records whose take committed (taken-offsets.ts). A killed agent commits
 * nothing: a restart (or another member of the group) reads again from the last committed
 * offsets.
 *
 * The channel has no capacity of its own, as Flume's: the topic's retention bounds it.
 */
import type { Channel } from "../../../core/channel.ts";
import { ChannelException } from "../../../core/errors.ts";
import { type Event, readHeaders } from "../../../core/event.ts";
import type { LifecycleState } from "../../../core/lifecycle.ts";
import type { DeliveryFailure } from "../../../core/sink.ts";
import { type Logger, silentLogger } from "../../../core/logger.ts";
import { PutListeners } from "../../../core/put-listeners.ts";
import { ChannelTransaction } from "../../../core/transaction.ts";
import { STOPPED_STARTING } from "../../../kafka/connect-bound.ts";
import { type KafkaMessage, KafkaPoller } from "../../../kafka/consumer.ts";
import { KafkaChannelCounter } from "../../../kafka/counters.ts";
import { messageOf, namedBy, partitionChoosers } from "../../../kafka/errors.ts";
import { BadRecordsSeen } from "../../../kafka/bad-records.ts";
import { DeadLetters } from "../../../kafka/dead-letters.ts";
import { flumeEventSize } from "../../../kafka/flume-event.ts";
import { KafkaPublisher, type KafkaRecord } from "../../../kafka/producer.ts";
import { type BadRecordHandler, eventOfRecord, setKeyHeader, where } from "../../../kafka/records.ts";
import { TakenResponses, ValueCopies } from "../../../kafka/response-release.ts";
import type { ConsumerSettings, ProducerSettings } from "../../../kafka/settings.ts";
import { TakenOffsets } from "./taken-offsets.ts";

const EMPTY = new Uint8Array(0);

/**
 * Bytes a fetch of the channel asks for at most (its whole response), below the consumer's
 * read-ahead: a take reads one record at a time, so half a fetch less in memory costs no rate.
 * Measured (stress -> kafka channel -> null, 1,000,000 100-byte events, alternated runs on one
 * broker): peak RSS 1-3 MB lower than with the consumer's 240 kB fetches, the same CPU an event.
 * A record batch larger than this is still fetched whole (the broker returns at least one).
 */
export const CHANNEL_FETCH_BYTES = 128 * 1024;

/**
 * Records the channel's consumer fetches ahead of the takes: one transaction's worth (at least
 * 1000). Each one held is a record object and its share of a response, live (and so kept past
 * the young collections) until taken. Measured (as CHANNEL_FETCH_BYTES): peak RSS 2-3 MB lower
 * than with two transactions' worth, at the same rate and CPU an event.
 */
export function readAhead(transactionCapacity: number): number {
  return Math.max(1000, transactionCapacity);
}

/** The consumer settings with fetches of at most CHANNEL_FETCH_BYTES (less when fetch.max.bytes / max.partition.fetch.bytes say so). */
export function channelFetches(s: ConsumerSettings): ConsumerSettings {
  return { ...s, maxBytes: Math.min(s.maxBytes, CHANNEL_FETCH_BYTES), maxBytesPerPartition: Math.min(s.maxBytesPerPartition, CHANNEL_FETCH_BYTES) };
}

export interface KafkaChannelOptions {
  topic: string;
  producer: ProducerSettings;
  consumer: ConsumerSettings;
  parseAsFlumeEvent: boolean;
  pollTimeout: number;
  partitionIdHeader?: string;
  defaultPartitionId?: number;
  transactionCapacity: number;
  /** kafka.deadLetterTopic: where taken records that are no FlumeEvent go. */
  deadLetterTopic?: string;
}

/**
 * Emptied lists of finished transactions, handed to the next ones: a transaction's lists grow
 * to a batch each time otherwise (garbage the collector counts in each cycle). A list is given
 * back once, when its transaction no longer uses it (the transaction gets a new empty one).
 */
class SpareLists<T> {
  private readonly lists: T[][] = [];

  take(): T[] {
    return this.lists.pop() ?? [];
  }

  give(list: T[]): void {
    list.length = 0;
    // One a transaction open at once (sink runners); more are left to the collector.
    if (this.lists.length < 8) this.lists.push(list);
  }
}

export class KafkaTransaction extends ChannelTransaction {
  puts: Event[] = [];
  takes: KafkaMessage[] = [];
  /** The event of each take (null for a record that was no event, skipped). */
  taken: (Event | null)[] = [];
  /** Events handed out: what transactionCapacity bounds (skipped records ride along, whatever their number). */
  events = 0;
  /** The takes that were no event, for the dead-letter topic at commit. */
  deadLetters: DeadLetters | null = null;
  /** What the channel does with a take that is no event (made at the first take). */
  onBad: BadRecordHandler | null = null;
  /** The consumer's generation at the latest take, and the first take made in it. */
  generation = -1;
  generationFrom = 0;

  constructor(protected readonly ch: KafkaChannel) {
    super();
  }
}

export class KafkaChannel implements Channel {
  readonly durable = true;
  readonly counter: KafkaChannelCounter;
  readonly label: string;
  private state: LifecycleState = "IDLE";
  private readonly logger: Logger;
  private readonly publisher: KafkaPublisher;
  private readonly poller: KafkaPoller;
  /** What partitionIdHeader and defaultPartitionId say in the error for a partition the topic does not have. */
  private readonly choosers: { byHeader: string; byDefault: string };
  private readonly putListeners = new PutListeners();
  private readonly offsets = new TakenOffsets<KafkaMessage, Event>();
  /** Takes' events hold copies of the values; a fetch response is freed once no take or buffered record needs it. */
  private readonly responses = new TakenResponses();
  private readonly copies = new ValueCopies();
  /** Takes that were no event, logged once however often a rolled-back take reads them again. */
  private readonly badSeen = new BadRecordsSeen();
  /** Sends and offset commits in flight. */
  private inFlight = 0;
  /**
   * The take whose offsets are committing, if one is: the next take's offsets are worked out once
   * it settled. Worked out beside it, they could pass its records, which a failed commit holds
   * again until their rollback.
   */
  private takeCommitting: Promise<void> | null = null;
  /** The records of sends settled, reused by the next ones (one slot a send in flight). */
  private readonly slots: { records: KafkaRecord[]; pool: KafkaRecord[] }[] = [];
  /** Records this channel sent that its consumer has not fetched back yet (see ioBusy). */
  private unfetched = 0;
  private readonly sparePuts = new SpareLists<Event>();
  private readonly spareTakes = new SpareLists<KafkaMessage>();
  private readonly spareTaken = new SpareLists<Event | null>();

  constructor(
    readonly name: string,
    readonly options: KafkaChannelOptions,
    deps: { logger?: Logger } = {},
  ) {
    this.logger = deps.logger ?? silentLogger;
    this.label = `kafka channel ${name}`;
    this.counter = new KafkaChannelCounter(name);
    this.choosers = partitionChoosers(options);
    this.publisher = new KafkaPublisher(this.label, options.producer, this.logger);
    this.poller = new KafkaPoller(this.label, channelFetches(options.consumer), { topics: [options.topic] }, this.logger, readAhead(options.transactionCapacity), () => {
      this.putListeners.notify();
    });
    this.poller.onRecords = (n, ms) => {
      // ChannelSize is set at each commit and rollback, and grows as committed records arrive.
      this.counter.values.ChannelSize += n;
      // Flume's take times its consumer's poll (and each record's decoding, under a millisecond:
      // its per-record sum of whole milliseconds counts only the polls). Our fetches are those
      // polls, run ahead of the takes: each one that brought records counts, from its request to
      // its records read, one clock read a fetch and none a take.
      this.counter.values.KafkaEventGetTimer += ms;
      if (this.inFlight > 0) this.unfetched -= n;
      else if (this.unfetched > 0) this.unfetched = Math.max(0, this.unfetched - n);
    };
    this.poller.onDropped = (records) => {
      this.newGeneration(records);
      this.counter.set("ChannelSize", this.poller.buffered);
    };
  }

  /**
   * The consumer starts again from the group's committed offsets (a rebalance, or it was lost
   * and connects again) and drops its buffer: every record past those offsets is fetched again,
   * by this member or by the partition's new owner. Rolled-back takes waiting in the buffer are
   * not taken again from it: their responses go, and so do the bad records among them remembered
   * (the owner now reports them). What the offsets kept of the generation that ended goes too:
   * its holds, and the takes committed above them, which come again; kept, they would let a take
   * of the new generation commit the group's offset past records no take committed since.
   * Takes still open from before commit no offset (takesFrom).
   */
  private newGeneration(dropped: readonly KafkaMessage[]): void {
    const held = this.offsets.dropped(dropped);
    if (held.length > 0) this.responses.dropped(held);
    this.badSeen.forgetAll(dropped);
    this.offsets.clear();
  }

  /**
   * Where tx's takes of the consumer's current generation start (the takes' length when it has
   * none): the takes before were fetched in a generation that ended, and come again.
   */
  private takesFrom(tx: KafkaTransaction): number {
    return tx.generation === this.poller.generation ? tx.generationFrom : tx.takes.length;
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  getTransaction(): KafkaTransaction {
    const tx = new KafkaTransaction(this);
    tx.puts = this.sparePuts.take();
    tx.takes = this.spareTakes.take();
    tx.taken = this.spareTaken.take();
    return tx;
  }

  /** A transaction's takes are done with: once committed, its lists go to the next transactions (not after a rollback: the consumer was handed the takes). */
  private endTakes(tx: KafkaTransaction, committed: boolean): void {
    if (committed) {
      this.spareTakes.give(tx.takes);
      this.spareTaken.give(tx.taken);
    }
    tx.takes = [];
    tx.taken = [];
    tx.events = 0;
    tx.deadLetters = null;
    tx.onBad = null;
    tx.generation = -1;
    tx.generationFrom = 0;
  }

  private endPuts(tx: KafkaTransaction): void {
    this.sparePuts.give(tx.puts);
    tx.puts = [];
  }

  getTransactionCapacity(): number {
    return this.options.transactionCapacity;
  }

  onPutsCommitted(listener: () => void): () => void {
    return this.putListeners.add(listener);
  }

  /**
   * True while a send or an offset commit is in flight, or records this channel sent have not
   * been fetched back yet: exact when the channel is its topic's only reader (the channel
   * conformance suite waits on it), which `flume simulate` does not need (a file channel
   * stands in for this one there).
   */
  ioBusy(): boolean {
    return this.inFlight > 0 || this.unfetched > 0;
  }

  get connected(): boolean {
    return this.poller.connected && this.publisher.connected;
  }

  /** Connects the producer (checking the topic) and joins the group; fails with the reason, and the supervisor retries. */
  async start(): Promise<void> {
    if (this.state === "START") return;
    this.counter.start();
    try {
      await this.publisher.connect(this.options.topic);
      await this.poller.connect();
    } catch (err) {
      await this.publisher.close();
      await this.poller.close();
      throw err;
    }
    this.state = "START";
    this.logger.info(`${this.label} started (brokers ${this.publisher.brokers}, topic ${this.options.topic}, group ${this.options.consumer.groupId})`);
  }

  readFailure(): DeliveryFailure | null {
    return this.state === "START" ? this.poller.failure : null;
  }

  abortStart(): void {
    this.publisher.abortConnect(STOPPED_STARTING);
    this.poller.abortConnect(STOPPED_STARTING);
  }

  async stop(): Promise<void> {
    await this.shutDown("stop");
  }

  /** What a killed process leaves: nothing committed; a restart reads again from the committed offsets. */
  async crash(): Promise<void> {
    await this.shutDown("crash");
  }

  /** A clean stop leaves the group at once; a crash drops the connection and leaves the group to time the member out. */
  private async shutDown(how: "stop" | "crash"): Promise<void> {
    if (this.state !== "START") return;
    this.state = "STOP";
    await (how === "crash" ? this.poller.crash() : this.poller.close());
    await this.publisher.close();
    this.offsets.clear();
    this.responses.clear();
    this.copies.clear();
    this.badSeen.clear();
    this.inFlight = 0;
    this.unfetched = 0;
    this.counter.stop();
  }

  /** The events of committed takes a crash or restart now would deliver again (see taken-offsets.ts). */
  repeatable(): Event[] {
    return this.offsets.repeatable();
  }

  put(tx: KafkaTransaction, event: Event): void {
    this.counter.values.EventPutAttemptCount++;
    const capacity = this.options.transactionCapacity;
    if (tx.puts.length >= capacity) throw new ChannelException(`Put list for ${this.label} transaction full, capacity ${capacity}`);
    tx.puts.push(event);
  }

  take(tx: KafkaTransaction): Event | null {
    this.counter.values.EventTakeAttemptCount++;
    // The events handed out, not the records read: with skipped records counted, a sink whose batch is the capacity would fail on them at every try.
    if (tx.events >= this.options.transactionCapacity) {
      throw new ChannelException(`Take list for ${this.label} transaction full, capacity ${this.options.transactionCapacity}`);
    }
    if (this.state === "START") this.poller.ensureConnected();
    for (;;) {
      const m = this.poller.takeOne();
      if (!m) return null;
      if (tx.generation !== this.poller.generation) {
        tx.generation = this.poller.generation;
        tx.generationFrom = tx.takes.length;
      }
      tx.takes.push(m);
      if (this.offsets.taken(m)) this.responses.taken(m.bytes);
      const parse = this.options.parseAsFlumeEvent;
      const copies = this.copies;
      copies.place(m);
      const e = eventOfRecord(m, parse, this.label, this.logger, parse ? (tx.onBad ??= this.badRecordHandler(tx)) : undefined, copies.window, copies.at, m.valueLength);
      tx.taken.push(e);
      // A record that is no event is logged and skipped; its offset is committed with the take.
      if (e) {
        setKeyHeader(e, m);
        tx.events++;
        return e;
      }
    }
  }

  /** Logs a bad take once (a rolled-back take reads it again) and keeps it for the transaction's dead letters. */
  private badRecordHandler(tx: KafkaTransaction): BadRecordHandler {
    const dlq = this.options.deadLetterTopic;
    return (m, error) => this.badSeen.report(m, error, dlq ? (tx.deadLetters ??= new DeadLetters(dlq, this.publisher)).add : undefined);
  }

  /**
   * Fills in the record of a put: the `key` header as its key (as Flume's channel),
   * partitionIdHeader's number, else defaultPartitionId, else the producer's choice. Every
   * field is set each time: the records are reused from send to send (sendSlot).
   */
  private fill(record: KafkaRecord, e: Event): KafkaRecord {
    const o = this.options;
    const headers = readHeaders(e);
    const key = headers.key;
    let partition = o.defaultPartitionId;
    let chosenBy = this.choosers.byDefault;
    if (o.partitionIdHeader !== undefined) {
      const p = headers[o.partitionIdHeader];
      if (p !== undefined && /^\d+$/.test(p)) {
        partition = Number(p);
        chosenBy = this.choosers.byHeader;
      }
    }
    record.topic = o.topic;
    record.key = key === undefined ? undefined : Buffer.from(key);
    record.partition = partition;
    record.partitionFrom = partition === undefined ? undefined : chosenBy;
    if (o.parseAsFlumeEvent) {
      // Written as a FlumeEvent straight into the request: the body is read from the event.
      record.value = EMPTY;
      record.flumeEvent = e;
      record.eventSize = flumeEventSize(e);
    } else {
      record.value = e.body;
      record.flumeEvent = undefined;
      record.eventSize = undefined;
    }
    return record;
  }

  async commit(tx: KafkaTransaction): Promise<void> {
    this.inFlight++;
    try {
      if (tx.puts.length > 0) await this.send(tx);
      if (tx.takes.length > 0) await this.commitTakes(tx);
      // Every list back, used or not (a put's transaction has take lists too).
      this.endPuts(tx);
      this.endTakes(tx, true);
    } finally {
      this.inFlight--;
      this.counter.set("ChannelSize", this.poller.buffered);
    }
  }

  private async send(tx: KafkaTransaction): Promise<void> {
    const puts = tx.puts;
    // The bodies as they are, or the events written as FlumeEvents straight into the request.
    const slot = this.slots.pop() ?? { records: [], pool: [] };
    const { records, pool } = slot;
    try {
      for (let i = 0; i < puts.length; i++) {
        const r = this.fill((pool[i] ??= { topic: "", value: EMPTY }), puts[i]);
        const tooLarge = this.publisher.checkSize(r);
        if (tooLarge) throw new ChannelException(tooLarge.message);
        records.push(r);
      }
      const started = Date.now();
      try {
        await this.publisher.send(records);
      } catch (err) {
        // The producer's label is the channel's.
        throw new ChannelException(namedBy(this.label, err), { cause: err });
      }
      this.counter.values.KafkaEventSendTimer += Date.now() - started;
    } finally {
      // The client took what it sends from the records before send settled; they no longer hold the events.
      for (let i = 0; i < records.length; i++) {
        const r = records[i];
        r.value = EMPTY;
        r.flumeEvent = undefined;
        r.key = undefined;
      }
      records.length = 0;
      this.slots.push(slot);
    }
    this.unfetched += puts.length;
    this.counter.inc("EventPutSuccessCount", tx.puts.length);
  }

  private async commitTakes(tx: KafkaTransaction): Promise<void> {
    // Counted before the flush, which lets go of them whether it succeeds or not.
    const bad = tx.deadLetters?.size ?? 0;
    try {
      await tx.deadLetters?.flush();
    } catch (err) {
      throw new ChannelException(`${this.label}: sending ${bad} record(s) that are no FlumeEvent to the dead-letter topic ${this.options.deadLetterTopic} (kafka.deadLetterTopic) failed: ${messageOf(err)}; the take of ${tx.takes.length} records from ${where(tx.takes[0])} is not committed, its records are read again`, { cause: err });
    }
    while (this.takeCommitting) await this.takeCommitting;
    let settle = () => {};
    this.takeCommitting = new Promise<void>((resolve) => (settle = resolve));
    try {
      await this.commitOffsets(tx);
    } finally {
      this.takeCommitting = null;
      settle();
    }
  }

  private async commitOffsets(tx: KafkaTransaction): Promise<void> {
    // Takes of a generation that ended move no offset: their records come again from the group's
    // offsets, and the partition may be another member's now (an offset committed for it could
    // move its owner's back).
    const from = this.takesFrom(tx);
    const current = from === 0 ? tx.takes : tx.takes.slice(from);
    const upTo = current.length > 0 ? this.offsets.committed(current, from === 0 ? tx.taken : tx.taken.slice(from)) : [];
    const started = Date.now();
    const generation = this.poller.generation;
    try {
      if (upTo.length > 0) await this.poller.commit(upTo);
    } catch (err) {
      // Held again for the rollback that follows; if a generation ended meanwhile, the rollback lets go of them.
      if (this.poller.generation === generation) this.offsets.failed(current);
      throw new ChannelException(`${this.label}: committing the offsets of ${tx.takes.length} taken records failed: ${messageOf(err)}`, { cause: err });
    }
    this.counter.values.KafkaCommitTimer += Date.now() - started;
    this.offsets.settled(upTo);
    this.responses.committed(tx.takes);
    const events = tx.events;
    this.counter.inc("EventTakeSuccessCount", events);
    // The records that were no FlumeEvent, skipped now that their offsets are committed: each counted once, however often its take was rolled back.
    if (events < tx.taken.length) {
      for (let i = 0; i < tx.taken.length; i++) if (!tx.taken[i]) this.badSeen.forget(tx.takes[i]);
      this.counter.inc("EventReadFail", tx.taken.length - events);
    }
  }

  rollback(tx: KafkaTransaction): void {
    // As Flume's: the events of a rolled-back take; a put's rollback counts none.
    this.counter.values.RollbackCount += tx.events;
    this.endPuts(tx);
    // Takes from before the consumer last started again from the committed offsets are fetched
    // again (here, or by the partition's new owner after a rebalance): given back, they would
    // come twice, and their offsets be committed by a member that no longer owns them.
    const takes = tx.takes;
    const from = this.takesFrom(tx);
    if (from > 0) {
      const before = from === takes.length ? takes : takes.slice(0, from);
      this.responses.dropped(before);
      this.badSeen.forgetAll(before);
    }
    this.poller.giveBack(from === 0 ? takes : takes.slice(from));
    this.endTakes(tx, false);
    this.counter.set("ChannelSize", this.poller.buffered);
  }
}
