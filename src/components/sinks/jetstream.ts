/**
 * The jetstream sink (Flume's Kafka sink, on NATS JetStream): takes up to batch-size events in
 * one channel transaction, publishes them to a stream and commits the take only after the
 * stream acknowledged every one. Each event gets a message id; after a failed batch the
 * events the channel hands back are published with the ids they had, so the stream's
 * duplicate window drops the ones it already stored. With msg-id-header the id comes from an
 * event header instead (for example the uuid interceptor's), which also dedupes across agents.
 */
import { randomBytes } from "node:crypto";
import { SinkCounter } from "../../core/counters.ts";
import { readHeaders, type Event } from "../../core/event.ts";
import type { Sink, Status } from "../../core/sink.ts";
import { type NatsClients, NatsLink } from "../../nats/connection.ts";
import { publishBatch } from "../../nats/publish.ts";
import { CONNECTION_PROPS, type ConnectionSettings, connectionSettings, MAX_MSGS_PROP, natsProblems, STREAM_PROPS, type StreamSettings, streamSettings } from "../../nats/settings.ts";
import { ensureStream } from "../../nats/stream.ts";
import { type ComponentContext, defineComponent } from "../component.ts";
import type { TakeLoop } from "../../pipeline/take-loop.ts";
import { BaseSink } from "./base.ts";

export interface JetStreamSinkOptions {
  connection: ConnectionSettings;
  stream: StreamSettings;
  batchSize: number;
  /** Milliseconds a batch keeps retrying through reconnects and leader elections. */
  publishTimeout: number;
  /** Header whose value is the message id, when set and present. */
  msgIdHeader?: string;
}

function sameEvent(a: Event, b: Event): boolean {
  if (a === b) return true;
  if (a.body.length !== b.body.length) return false;
  for (let i = 0; i < a.body.length; i++) if (a.body[i] !== b.body[i]) return false;
  const ha = readHeaders(a);
  const hb = readHeaders(b);
  const ka = Object.keys(ha);
  if (ka.length !== Object.keys(hb).length) return false;
  for (const k of ka) if (ha[k] !== hb[k]) return false;
  return true;
}

export class JetStreamSink extends BaseSink implements Sink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;
  private readonly link: NatsLink;
  private readonly idPrefix = randomBytes(9).toString("base64url");
  private nextBatch = 1;
  /** The last batch that failed, with its ids, so a resend of the same events reuses them. */
  private failed: { events: Event[]; ids: string[] } | null = null;

  constructor(
    ctx: ComponentContext,
    readonly options: JetStreamSinkOptions,
  ) {
    super(ctx);
    this.counter = new SinkCounter(ctx.name, ctx.clock);
    this.link = new NatsLink(`jetstream sink ${ctx.name}`, options.connection, (c) => this.setup(c), ctx.clock, ctx.logger);
    this.takeLoop = this.newTakeLoop({
      label: this.link.label,
      counter: this.counter,
      batchSize: options.batchSize,
      // As Flume's Kafka sink: a batch the channel cut short is still READY.
      underflow: "READY",
      target: () => `stream ${options.stream.stream} at ${this.link.describeServers()}`,
      deliver: (events) => this.publish(events),
    });
  }

  get label(): string {
    return this.link.label;
  }

  get connected(): boolean {
    return this.link.ready;
  }

  private async setup({ jsm, mod }: NatsClients): Promise<void> {
    await ensureStream(jsm, mod, this.options.stream, { label: this.label, logger: this.logger, publishes: true });
    this.counter.values.ConnectionCreatedCount++;
  }

  override start(): void {
    super.start();
    this.link.open();
    this.logger.info(`${this.label} started (servers ${this.link.describeServers()}, stream ${this.options.stream.stream}, subject ${this.options.stream.subject})`);
  }

  override async stop(): Promise<void> {
    await this.link.close();
    this.counter.values.ConnectionClosedCount++;
    super.stop();
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }

  override process(): Promise<Status> {
    // Not connected yet (the link retries and logs): leave the events in the channel.
    if (!this.link.ready) return Promise.resolve("BACKOFF");
    return super.process();
  }

  /** Publishes a taken batch; resolves once the stream stored every event (the take then commits). */
  private async publish(events: readonly Event[]): Promise<void> {
    const ids = this.idsFor(events);
    try {
      await publishBatch(this.link, { subject: this.options.stream.subject, stream: this.options.stream.stream, timeout: this.options.publishTimeout, fullWait: 0 }, events, ids, this.clock);
    } catch (err) {
      // The take loop reuses its array: keep a copy to recognise the events when they come back.
      this.failed = { events: events.slice(), ids };
      throw err;
    }
    this.failed = null;
  }

  private idsFor(batch: readonly Event[]): string[] {
    const ids = new Array<string>(batch.length);
    const header = this.options.msgIdHeader;
    const prev = this.failed;
    const key = `${this.idPrefix}.${this.nextBatch++}`;
    for (let i = 0; i < batch.length; i++) {
      const fromHeader = header ? readHeaders(batch[i])[header] : undefined;
      if (fromHeader) ids[i] = fromHeader;
      else if (prev && i < prev.events.length && sameEvent(prev.events[i], batch[i])) ids[i] = prev.ids[i];
      else ids[i] = `${key}.${i}`;
    }
    return ids;
  }
}

export const definition = defineComponent({
  kind: "sink",
  type: "jetstream",
  aliases: ["nats", "org.apache.flume.sink.jetstream.JetStreamSink"],
  doc: "Publishes events to a NATS JetStream stream; a batch's take commits only after the stream stored every event (Flume's Kafka sink, on JetStream).",
  props: {
    ...CONNECTION_PROPS,
    ...STREAM_PROPS,
    ...MAX_MSGS_PROP,
    "batch-size": { type: "int", default: 100, min: 1, aliases: ["batchSize", "flumeBatchSize"], roles: ["batchSize"], doc: "Events taken per transaction and published per batch" },
    "publish-timeout": { type: "int", default: 10000, min: 100, doc: "Milliseconds a batch keeps retrying (same message ids) through reconnects and leader elections before it is rolled back" },
    "msg-id-header": { type: "string", doc: "Event header whose value becomes the message id (e.g. the uuid interceptor's id), so the stream drops copies from any sender" },
  },
  validate: (o) => natsProblems(o, { publishes: true }),
  create(o, ctx) {
    return new JetStreamSink(ctx, {
      connection: connectionSettings(o),
      stream: streamSettings(o, o["max-msgs"]),
      batchSize: o["batch-size"],
      publishTimeout: o["publish-timeout"],
      msgIdHeader: o["msg-id-header"] || undefined,
    });
  },
});
