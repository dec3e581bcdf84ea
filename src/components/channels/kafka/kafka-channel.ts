/**
 * Flume's Kafka channel (org.apache.flume.channel.kafka.KafkaChannel): the events live in a
 * Kafka topic, shared by every agent naming the same topic and consumer group.
 *
 * Put: events are kept in the transaction; commit sends them as records and returns once the
 * broker acknowledged every one (acks = all by default, as Flume), so they become visible to
 * takers only at commit. Take: records come from a consumer in the group, fetched ahead so
 * that take() is synchronous; commit commits their offsets; rollback puts them back at the head
 * of the fetched records in their order. A killed agent commits nothing: a restart (or another
 * member of the group) reads again from the last committed offsets.
 */
import type { Channel } from "../../../core/channel.ts";
import { ChannelException } from "../../../core/errors.ts";
import { type Event, readHeaders } from "../../../core/event.ts";
import type { LifecycleState } from "../../../core/lifecycle.ts";
import { type Logger, silentLogger } from "../../../core/logger.ts";
import { PutListeners } from "../../../core/put-listeners.ts";
import { BasicTransaction } from "../../../core/transaction.ts";
import { type KafkaMessage, KafkaPoller } from "../../../kafka/consumer.ts";
import { KafkaChannelCounter } from "../../../kafka/counters.ts";
import { messageOf } from "../../../kafka/errors.ts";
import { encodeFlumeEvent } from "../../../kafka/flume-event.ts";
import { KafkaPublisher, type KafkaRecord } from "../../../kafka/producer.ts";
import { eventOfRecord } from "../../../kafka/records.ts";
import type { ConsumerSettings, ProducerSettings } from "../../../kafka/settings.ts";

export interface KafkaChannelOptions {
  topic: string;
  producer: ProducerSettings;
  consumer: ConsumerSettings;
  parseAsFlumeEvent: boolean;
  pollTimeout: number;
  partitionIdHeader?: string;
  defaultPartitionId?: number;
  transactionCapacity: number;
}

export class KafkaTransaction extends BasicTransaction {
  puts: Event[] = [];
  takes: KafkaMessage[] = [];

  constructor(private readonly ch: KafkaChannel) {
    super();
  }

  protected override doPut(event: Event): void {
    this.ch.counter.values.EventPutAttemptCount++;
    this.puts.push(event);
  }

  protected override doTake(): Event | null {
    return this.ch.take(this);
  }

  protected override doCommit(): Promise<void> {
    return this.ch.commit(this);
  }

  protected override doRollback(): void {
    this.ch.rollback(this);
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
  private readonly putListeners = new PutListeners();

  constructor(
    readonly name: string,
    readonly options: KafkaChannelOptions,
    deps: { logger?: Logger } = {},
  ) {
    this.logger = deps.logger ?? silentLogger;
    this.label = `kafka channel ${name}`;
    this.counter = new KafkaChannelCounter(name);
    this.publisher = new KafkaPublisher(this.label, options.producer, this.logger);
    this.poller = new KafkaPoller(this.label, options.consumer, { topics: [options.topic] }, this.logger, Math.max(1000, options.transactionCapacity * 2), () => {
      this.putListeners.notify();
    });
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  getTransaction(): KafkaTransaction {
    return new KafkaTransaction(this);
  }

  getTransactionCapacity(): number {
    return this.options.transactionCapacity;
  }

  onPutsCommitted(listener: () => void): () => void {
    return this.putListeners.add(listener);
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

  async stop(): Promise<void> {
    if (this.state !== "START") return;
    this.state = "STOP";
    await this.poller.close();
    await this.publisher.close();
    this.counter.stop();
  }

  /** What a killed process leaves: nothing committed; a restart reads again from the committed offsets. */
  async crash(): Promise<void> {
    if (this.state !== "START") return;
    this.state = "STOP";
    await this.poller.crash();
    await this.publisher.close();
    this.counter.stop();
  }

  take(tx: KafkaTransaction): Event | null {
    this.counter.values.EventTakeAttemptCount++;
    if (tx.takes.length >= this.options.transactionCapacity) {
      throw new ChannelException(`Take list for ${this.label} transaction full, capacity ${this.options.transactionCapacity}`);
    }
    if (this.state === "START") this.poller.ensureConnected();
    for (;;) {
      const [m] = this.poller.take(1);
      if (!m) {
        this.counter.set("ChannelSize", 0);
        return null;
      }
      tx.takes.push(m);
      const e = eventOfRecord(m, this.options.parseAsFlumeEvent, this.label, this.logger);
      // A record that is no event is logged and skipped; its offset is committed with the take.
      if (e) {
        this.counter.set("ChannelSize", this.poller.buffered);
        return e;
      }
    }
  }

  private recordOf(e: Event): KafkaRecord {
    const o = this.options;
    const headers = readHeaders(e);
    const record: KafkaRecord = { topic: o.topic, value: o.parseAsFlumeEvent ? encodeFlumeEvent(e) : Buffer.from(e.body.buffer, e.body.byteOffset, e.body.length) };
    if (headers.key !== undefined) record.key = Buffer.from(headers.key);
    const p = o.partitionIdHeader !== undefined ? headers[o.partitionIdHeader] : undefined;
    if (p !== undefined && /^\d+$/.test(p)) record.partition = Number(p);
    else if (o.defaultPartitionId !== undefined) record.partition = o.defaultPartitionId;
    return record;
  }

  async commit(tx: KafkaTransaction): Promise<void> {
    if (tx.puts.length > 0) {
      const records = tx.puts.map((e) => this.recordOf(e));
      for (const r of records) {
        const tooLarge = this.publisher.checkSize(r);
        if (tooLarge) throw new ChannelException(tooLarge.message);
      }
      const started = Date.now();
      try {
        await this.publisher.send(records);
        this.counter.values.KafkaEventSendTimer += Date.now() - started;
      } catch (err) {
        throw new ChannelException(`${this.label}: ${messageOf(err)}`, { cause: err });
      }
      this.counter.inc("EventPutSuccessCount", tx.puts.length);
      tx.puts = [];
    }
    if (tx.takes.length > 0) {
      const started = Date.now();
      try {
        await this.poller.commit(tx.takes);
        this.counter.values.KafkaCommitTimer += Date.now() - started;
      } catch (err) {
        throw new ChannelException(`${this.label}: committing the offsets of ${tx.takes.length} taken records failed: ${messageOf(err)}`, { cause: err });
      }
      this.counter.inc("EventTakeSuccessCount", tx.takes.length);
      tx.takes = [];
    }
  }

  rollback(tx: KafkaTransaction): void {
    this.counter.values.RollbackCount++;
    tx.puts = [];
    this.poller.giveBack(tx.takes);
    tx.takes = [];
    this.counter.set("ChannelSize", this.poller.buffered);
  }
}
