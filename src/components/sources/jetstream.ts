/**
 * The jetstream source (Flume's Kafka source, on NATS JetStream): pulls from a durable
 * consumer shared by every agent naming it, hands up to batchSize events to the channel
 * processor as one batch, and acks them only after the channels committed them; a channel
 * failure naks them so they are delivered again (to this agent or another). Nothing is acked
 * that is not in a channel; an agent that dies mid-batch leaves the batch to ack-wait.
 */
import type { JsMsg } from "@nats-io/jetstream";
import type { Event } from "../../core/event.ts";
import type { Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import { type NatsClients, NatsLink } from "../../nats/connection.ts";
import { messageOf } from "../../nats/errors.ts";
import { eventOfMessage } from "../../nats/headers.ts";
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
    await this.link.close();
    this.counter.values.OpenConnectionCount = 0;
    this.markStopped();
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }

  async process(): Promise<Status> {
    if (!this.link.ready || this.state !== "START") return "BACKOFF";
    const { batchSize, batchDurationMillis } = this.options;
    await this.puller.waitFor(batchSize, batchDurationMillis);
    const msgs: JsMsg[] = [];
    const events: Event[] = [];
    for (let m = this.puller.shift(); m !== undefined; m = msgs.length < batchSize ? this.puller.shift() : undefined) {
      msgs.push(m);
      events.push(eventOfMessage(m.data, m.headers));
      if (msgs.length >= batchSize) break;
    }
    if (msgs.length === 0) return "BACKOFF";
    // One attempt: the stream is the client that retries (a refused batch is delivered again).
    const refused = await this.emitter.offer(events, `stream ${this.options.stream.stream}`);
    if (refused) {
      this.puller.nak(msgs);
      return "BACKOFF";
    }
    try {
      await this.puller.ack(msgs, this.options.connection.requestTimeout);
    } catch (err) {
      // Committed to the channels; an ack that never arrived only means a redelivery (at least once).
      this.logger.warn(`${this.label}: ${messageOf(err)}; those ${msgs.length} events may be delivered again`);
    }
    return "READY";
  }
}

export const definition = defineComponent({
  kind: "source",
  type: "jetstream",
  aliases: ["nats", "org.apache.flume.source.jetstream.JetStreamSource"],
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
