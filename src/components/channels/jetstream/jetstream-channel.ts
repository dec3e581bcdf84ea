/**
 * A channel kept in a NATS JetStream stream (Flume's KafkaChannel, on JetStream): several
 * agents naming the same stream and consumer share one replicated, durable channel.
 *
 * Put: events are buffered in the transaction; commit publishes them with message ids
 * (<channel instance>.<transaction>.<index>) and returns once the stream acknowledged every
 * one, so they become visible to takers only at commit, and a publish retried inside the
 * commit is not stored twice (the stream's duplicate window drops it).
 * Take: events come from a durable pull consumer shared by every agent (competing
 * consumers), prefetched so that take() is synchronous; commit acks them, rollback naks them
 * so any agent gets them again at once. An agent that dies leaves its taken events
 * unacknowledged; the server redelivers them after ack-wait.
 */
import { randomBytes } from "node:crypto";
import type { JsMsg } from "@nats-io/jetstream";
import type { Channel } from "../../../core/channel.ts";
import type { Clock, TimerHandle } from "../../../core/clock.ts";
import { systemClock } from "../../../core/clock.ts";
import { ChannelException, ChannelFullException } from "../../../core/errors.ts";
import type { Event } from "../../../core/event.ts";
import type { LifecycleState } from "../../../core/lifecycle.ts";
import { type Logger, silentLogger } from "../../../core/logger.ts";
import { BasicTransaction } from "../../../core/transaction.ts";
import { type NatsClients, NatsLink } from "../../../nats/connection.ts";
import { messageOf, StreamFullError } from "../../../nats/errors.ts";
import { fromNatsHeaders } from "../../../nats/headers.ts";
import { publishBatch } from "../../../nats/publish.ts";
import { Puller } from "../../../nats/puller.ts";
import type { ConnectionSettings, ConsumerSettings, StreamSettings } from "../../../nats/settings.ts";
import { ensureConsumer, ensureStream } from "../../../nats/stream.ts";
import { JetStreamChannelCounter } from "./counter.ts";

export interface JetStreamChannelOptions {
  connection: ConnectionSettings;
  stream: StreamSettings;
  consumer: ConsumerSettings;
  transactionCapacity: number;
  /** Events pulled ahead of takes (0: transactionCapacity). */
  prefetch: number;
  /** Seconds a commit waits for room in a full stream. */
  keepAlive: number;
  /** Milliseconds a commit keeps retrying through reconnects and leader elections. */
  commitTimeout: number;
  /** Milliseconds one pull request waits on the server (long poll). */
  pullExpires?: number;
}

/** How often ChannelSize is read from the server. */
const SIZE_REFRESH_MS = 1000;

export class JetStreamTransaction extends BasicTransaction {
  puts: Event[] = [];
  takes: JsMsg[] = [];
  /** Message ids of this transaction's puts, fixed at the first commit so a retried commit reuses them. */
  txKey: string | null = null;

  constructor(private readonly ch: JetStreamChannel) {
    super();
  }

  protected override doPut(event: Event): void {
    this.ch.put(this, event);
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

export class JetStreamChannel implements Channel {
  readonly durable = true;
  readonly counter: JetStreamChannelCounter;
  private state: LifecycleState = "IDLE";
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly link: NatsLink;
  private readonly puller: Puller;
  /** Unique per channel instance, so message ids never collide across agents or restarts. */
  private readonly idPrefix = randomBytes(9).toString("base64url");
  private nextTx = 1;
  private sizeTimer: TimerHandle | null = null;
  private sizeReading = false;
  private putListeners: (() => void)[] = [];

  constructor(
    readonly name: string,
    readonly options: JetStreamChannelOptions,
    deps: { clock?: Clock; logger?: Logger } = {},
  ) {
    this.clock = deps.clock ?? systemClock;
    this.logger = deps.logger ?? silentLogger;
    this.counter = new JetStreamChannelCounter(name, this.clock);
    this.counter.set("ChannelCapacity", Math.max(0, options.stream.maxMsgs));
    const label = `jetstream channel ${name}`;
    this.link = new NatsLink(label, options.connection, (clients) => this.setup(clients), this.clock, this.logger);
    this.puller = new Puller(
      this.link,
      {
        stream: options.stream.stream,
        consumer: options.consumer.consumer,
        prefetch: options.prefetch > 0 ? options.prefetch : options.transactionCapacity,
        ackWait: options.consumer.ackWait,
        expires: options.pullExpires ?? 1000,
      },
      this.clock,
      this.logger,
      () => {
        for (let i = 0; i < this.putListeners.length; i++) this.putListeners[i]();
      },
    );
  }

  get label(): string {
    return this.link.label;
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  getTransaction(): JetStreamTransaction {
    return new JetStreamTransaction(this);
  }

  getTransactionCapacity(): number {
    return this.options.transactionCapacity;
  }

  /** Wakes sink runners when prefetched events arrive (see Channel.onPutsCommitted). */
  onPutsCommitted(listener: () => void): () => void {
    this.putListeners.push(listener);
    return () => {
      this.putListeners = this.putListeners.filter((l) => l !== listener);
    };
  }

  /** True once connected to NATS with the stream and consumer in place. */
  get connected(): boolean {
    return this.link.ready;
  }

  /** Events pulled from the server and not yet taken. */
  get prefetched(): number {
    return this.puller.buffered;
  }

  /** Starts connecting; a server that is down is retried in the background (logged), never fatal. */
  start(): void {
    if (this.state === "START") return;
    this.counter.start();
    this.state = "START";
    this.link.open();
  }

  async stop(): Promise<void> {
    if (this.state !== "START") return;
    this.state = "STOP";
    if (this.sizeTimer) this.clock.clearTimeout(this.sizeTimer);
    this.sizeTimer = null;
    await this.puller.stop();
    await this.link.close();
    this.counter.connected = false;
    this.counter.stop();
  }

  private async setup({ jsm, mod }: NatsClients): Promise<void> {
    const o = this.options;
    const stream = await ensureStream(jsm, mod, o.stream, { label: this.label, logger: this.logger, publishes: true });
    await ensureConsumer(jsm, mod, o.stream.stream, o.consumer, { label: this.label, logger: this.logger });
    this.counter.set("ChannelCapacity", Math.max(0, stream.config.max_msgs ?? 0));
    this.counter.connected = true;
    if (this.state === "START") {
      this.puller.start();
      this.scheduleSizeRead(0);
    }
  }

  private scheduleSizeRead(ms: number): void {
    if (this.sizeTimer || this.state !== "START") return;
    this.sizeTimer = this.clock.setTimeout(() => {
      this.sizeTimer = null;
      void this.readSize().finally(() => this.scheduleSizeRead(SIZE_REFRESH_MS));
    }, ms);
  }

  private async readSize(): Promise<void> {
    if (this.sizeReading || !this.link.ready || !this.link.jsm) return;
    this.sizeReading = true;
    try {
      const info = await this.link.jsm.consumers.info(this.options.stream.stream, this.options.consumer.consumer);
      this.counter.values.ChannelSize = info.num_pending + info.num_ack_pending;
      this.counter.connected = true;
    } catch {
      this.counter.connected = this.link.ready;
    } finally {
      this.sizeReading = false;
    }
  }

  // ---- transaction operations ----

  put(tx: JetStreamTransaction, event: Event): void {
    this.counter.values.EventPutAttemptCount++;
    if (tx.puts.length >= this.options.transactionCapacity) {
      throw new ChannelException(
        `Put queue for JetStreamTransaction of capacity ${this.options.transactionCapacity} full, consider committing more frequently or increasing transactionCapacity (channel ${this.name})`,
      );
    }
    tx.puts.push(event);
  }

  take(tx: JetStreamTransaction): Event | null {
    this.counter.values.EventTakeAttemptCount++;
    if (tx.takes.length >= this.options.transactionCapacity) {
      throw new ChannelException(
        `Take list for JetStreamTransaction, capacity ${this.options.transactionCapacity} full, consider committing more frequently or increasing transactionCapacity (channel ${this.name})`,
      );
    }
    const m = this.puller.shift();
    if (m === undefined) return null;
    tx.takes.push(m);
    return { headers: fromNatsHeaders(m.headers), body: m.data };
  }

  async commit(tx: JetStreamTransaction): Promise<void> {
    const c = this.counter.values;
    if (tx.puts.length > 0) {
      if (this.state !== "START") throw new ChannelException(`${this.label} is not started (state ${this.state})`);
      tx.txKey ??= `${this.idPrefix}.${this.nextTx++}`;
      const ids = new Array<string>(tx.puts.length);
      for (let i = 0; i < ids.length; i++) ids[i] = `${tx.txKey}.${i}`;
      const started = this.clock.now();
      try {
        const r = await publishBatch(
          this.link,
          { subject: this.options.stream.subject, stream: this.options.stream.stream, timeout: this.options.commitTimeout, fullWait: this.options.keepAlive * 1000 },
          tx.puts,
          ids,
          this.clock,
        );
        c["channel.jetstream.publish.retry.count"] += r.retries;
        c["channel.jetstream.publish.duplicate.count"] += r.duplicates;
      } catch (err) {
        if (err instanceof StreamFullError) throw new ChannelFullException(`${this.label}: ${err.message}`, { cause: err });
        throw new ChannelException(`${this.label}: commit of ${tx.puts.length} events failed: ${messageOf(err)}`, { cause: err });
      } finally {
        c["channel.jetstream.event.send.time"] += this.clock.now() - started;
      }
      c.EventPutSuccessCount += tx.puts.length;
      tx.puts = [];
      tx.txKey = null;
    }
    if (tx.takes.length > 0) {
      const started = this.clock.now();
      try {
        await this.puller.ack(tx.takes, this.options.commitTimeout);
      } catch (err) {
        // The acks may still reach the server; if not, the events are delivered again (at least once).
        this.puller.release(tx.takes);
        tx.takes = [];
        throw new ChannelException(`${this.label}: take commit not confirmed: ${messageOf(err)}`, { cause: err });
      } finally {
        c["channel.jetstream.commit.time"] += this.clock.now() - started;
      }
      c.EventTakeSuccessCount += tx.takes.length;
      tx.takes = [];
    }
  }

  rollback(tx: JetStreamTransaction): void {
    if (tx.takes.length > 0) this.puller.nak(tx.takes);
    tx.takes = [];
    tx.puts = [];
    tx.txKey = null;
    this.counter.values["channel.rollback.count"]++;
  }
}
