/**
 * The jetstream source (Flume's Kafka source, on NATS JetStream): pulls from a durable
 * consumer shared by every agent naming it, hands up to batchSize events to the channel
 * processor as one batch, and acks them only after the channels committed them; a batch the
 * channels refuse is offered again. Messages of either framing are read (one event per
 * message, or a batch message of the jetstream sink or channel); a batch message is acked
 * once all its events are in a channel. Nothing is acked that is not in a channel; an agent
 * that dies mid-batch leaves its messages to ack-wait.
 */
import type { Event } from "../../core/event.ts";
import type { Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import { type NatsClients, NatsLink } from "../../nats/connection.ts";
import { messageOf } from "../../nats/errors.ts";
import { EventCursor, Takes } from "../../nats/event-cursor.ts";
import { Puller } from "../../nats/puller.ts";
import {
  CONNECTION_PROPS,
  CONSUMER_PROPS,
  type ConnectionSettings,
  type ConsumerSettings,
  connectionSettings,
  consumerSettings,
  MAX_MSGS_PROP,
  natsProblems,
  STREAM_PROPS,
  type StreamSettings,
  streamSettings,
} from "../../nats/settings.ts";
import { ensureConsumer, ensureStream } from "../../nats/stream.ts";
import { type ComponentContext, defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSource } from "./base.ts";

export interface JetStreamSourceOptions {
  connection: ConnectionSettings;
  stream: StreamSettings;
  consumer: ConsumerSettings;
  batchSize: number;
  /** Milliseconds a batch waits to fill before it is handed on. */
  batchDurationMillis: number;
  /** Only events on this subject (wildcards allowed), when set. */
  filterSubject?: string;
}

export class JetStreamSource extends BaseSource implements PollableSource {
  readonly kind = "pollable";
  /** process() itself waits up to batchDurationMillis for events: no extra sleep when idle. */
  readonly backoffSleepIncrement = 100;
  readonly maxBackoffSleep = 1000;
  private readonly link: NatsLink;
  private readonly puller: Puller;
  private readonly cursor: EventCursor;
  private readonly takes = new Takes();

  constructor(
    ctx: ComponentContext,
    readonly options: JetStreamSourceOptions,
  ) {
    super(ctx, { label: `jetstream source ${ctx.name}` });
    this.link = new NatsLink(`jetstream source ${ctx.name}`, options.connection, (c) => this.setup(c), ctx.clock, ctx.logger);
    this.puller = new Puller(
      this.link,
      { stream: options.stream.stream, consumer: options.consumer.consumer, prefetch: options.batchSize * 2, ackWait: options.consumer.ackWait, expires: 1000 },
      ctx.clock,
      ctx.logger,
    );
    this.cursor = new EventCursor(this.puller, ctx.logger, this.link.label);
  }

  get label(): string {
    return this.link.label;
  }

  get connected(): boolean {
    return this.link.ready;
  }

  private async setup({ jsm, mod }: NatsClients): Promise<void> {
    const o = this.options;
    await ensureStream(jsm, mod, o.stream, { label: this.label, logger: this.logger, publishes: false });
    await ensureConsumer(jsm, mod, o.stream.stream, o.consumer, { label: this.label, logger: this.logger, filterSubject: o.filterSubject });
    this.counter.values.OpenConnectionCount = 1;
    if (this.state === "START") this.puller.start();
  }

  start(): void {
    this.beginStart();
    this.state = "START";
    this.link.open();
    this.logger.info(`${this.label} started (servers ${this.link.describeServers()}, stream ${this.options.stream.stream}, consumer ${this.options.consumer.consumer})`);
  }

  async stop(): Promise<void> {
    this.state = "STOP";
    await this.puller.stop();
    this.cursor.clear();
    await this.link.close();
    this.counter.values.OpenConnectionCount = 0;
    this.markStopped();
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }

  async process(): Promise<Status> {
    if (!this.link.ready || this.state !== "START") return "BACKOFF";
    const { batchSize, batchDurationMillis } = this.options;
    const events: Event[] = [];
    // Events until the batch is full or batchDurationMillis passed (a batch message gives many at once).
    const deadline = this.clock.now() + batchDurationMillis;
    for (;;) {
      while (events.length < batchSize) {
        const e = this.cursor.take(this.takes);
        if (e === undefined) break;
        events.push(e);
      }
      const left = deadline - this.clock.now();
      if (events.length >= batchSize || left <= 0 || this.state !== "START") break;
      await this.puller.waitFor(1, left);
      if (this.puller.buffered === 0) break;
    }
    if (events.length === 0) return "BACKOFF";
    // One attempt: a refused batch goes back to the head and is offered again.
    const refused = await this.emitter.offer(events, `stream ${this.options.stream.stream}`);
    if (refused) {
      this.cursor.rollback(this.takes);
      return "BACKOFF";
    }
    const done = this.cursor.commit(this.takes);
    try {
      if (done.length > 0) await this.puller.ack(done, this.options.connection.requestTimeout);
    } catch (err) {
      // Committed to the channels; an ack that never arrived only means a redelivery (at least once).
      this.logger.warn(`${this.label}: ${messageOf(err)}; those ${events.length} events may be delivered again`);
    }
    return "READY";
  }
}

export const definition = defineComponent({
  ...builtIn.jetstreamSource,
  doc: "Pulls events from a NATS JetStream stream through a durable consumer shared by every agent naming it; acks only after the channels committed them (Flume's Kafka source, on JetStream).",
  props: {
    ...CONNECTION_PROPS,
    ...STREAM_PROPS,
    ...MAX_MSGS_PROP,
    ...CONSUMER_PROPS,
    "filter-subject": { type: "string", doc: "Only events on this subject (wildcards allowed); default: every subject of the stream" },
    batchSize: { type: "int", default: 1000, min: 1, aliases: ["batch-size"], roles: ["batchSize"], doc: "Most events written to the channels in one batch" },
    batchDurationMillis: { type: "int", default: 1000, min: 0, doc: "Milliseconds a batch waits to fill before it is written" },
  },
  validate: (o) => natsProblems(o, { publishes: false }),
  create(o, ctx) {
    return new JetStreamSource(ctx, {
      connection: connectionSettings(o),
      stream: streamSettings(o, o["max-msgs"]),
      consumer: consumerSettings(o),
      batchSize: o.batchSize,
      batchDurationMillis: o.batchDurationMillis,
      filterSubject: o["filter-subject"] || undefined,
    });
  },
});
