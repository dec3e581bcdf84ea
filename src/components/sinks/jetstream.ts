/**
 * The jetstream sink (Flume's Kafka sink, on NATS JetStream): takes up to batch-size events in
 * one channel transaction, publishes them to a stream and commits the take only after the
 * stream acknowledged every one. Each event gets a message id; after a failed batch the
 * events the channel hands back are published with the ids they had, so the stream's
 * duplicate window drops the ones it already stored. With msg-id-header the id comes from an
 * event header instead (for example the uuid interceptor's), which also dedupes across agents.
 * With framing = batch a batch goes in as few messages as max_payload allows (read by the
 * jetstream source and channel of Flume TS); the ids are then per message.
 */
import { createHash, randomBytes } from "node:crypto";
import { SinkCounter } from "../../core/counters.ts";
import { readHeaders, type Event } from "../../core/event.ts";
import type { Sink, Status } from "../../core/sink.ts";
import { type NatsClients, NatsLink } from "../../nats/connection.ts";
import { FrameScratch } from "../../nats/batch-frame.ts";
import { batchMessages, perEventMessages, publishBatch } from "../../nats/publish.ts";
import { CONNECTION_PROPS, type ConnectionSettings, connectionSettings, MAX_MSGS_PROP, natsProblems, STREAM_PROPS, type StreamSettings, streamSettings } from "../../nats/settings.ts";
import { ensureStream } from "../../nats/stream.ts";
import { type ComponentContext, defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
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
  /** event: one message per event (any NATS client reads them); batch: batch messages. */
  framing: "event" | "batch";
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
  /** Where batch messages are encoded, reused from one acknowledged batch to the next. */
  private readonly scratch = new FrameScratch();
  /** The last batch that failed, with its ids, so a resend of the same events reuses them. */
  private failed: { events: Event[]; ids: string[]; key: string } | null = null;

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
    const { ids, key } = this.idsFor(events);
    const target = { subject: this.options.stream.subject, stream: this.options.stream.stream, timeout: this.options.publishTimeout, fullWait: 0 };
    const build = this.options.framing === "batch" ? batchMessages(target, events, (_k, from, to) => this.batchId(events, key, from, to), this.scratch) : perEventMessages(target, events, ids);
    try {
      await publishBatch(this.link, target, build, this.clock);
    } catch (err) {
      this.scratch.giveBack(false);
      // The take loop reuses its array: keep a copy to recognise the events when they come back.
      this.failed = { events: events.slice(), ids, key };
      throw err;
    }
    this.scratch.giveBack(true);
    this.failed = null;
  }

  private idsFor(batch: readonly Event[]): { ids: string[]; key: string } {
    const ids = new Array<string>(batch.length);
    const header = this.options.msgIdHeader;
    const prev = this.failed;
    let key = `${this.idPrefix}.${this.nextBatch++}`;
    let resent = prev !== null;
    for (let i = 0; i < batch.length; i++) {
      const fromHeader = header ? readHeaders(batch[i])[header] : undefined;
      const same = prev !== null && i < prev.events.length && sameEvent(prev.events[i], batch[i]);
      if (!same) resent = false;
      if (fromHeader) ids[i] = fromHeader;
      else if (same) ids[i] = (prev as { ids: string[] }).ids[i];
      else ids[i] = `${key}.${i}`;
    }
    // A batch resent as it was (a prefix of the failed one or more) is cut the same way: same message ids.
    if (resent && prev) key = prev.key;
    return { ids, key };
  }

  /** A batch message's id: from its events' header ids when msg-id-header gives all of them, else the batch's key and range. */
  private batchId(events: readonly Event[], key: string, from: number, to: number): string {
    const header = this.options.msgIdHeader;
    if (header) {
      const h = createHash("sha256");
      let all = true;
      for (let i = from; i < to && all; i++) {
        const id = readHeaders(events[i])[header];
        if (id) h.update(id).update("\n");
        else all = false;
      }
      if (all) return h.digest("base64url");
    }
    return `${key}.${from}-${to}`;
  }
}

export const definition = defineComponent({
  ...builtIn.jetstreamSink,
  doc: "Publishes events to a NATS JetStream stream; a batch's take commits only after the stream stored every event (Flume's Kafka sink, on JetStream).",
  props: {
    ...CONNECTION_PROPS,
    ...STREAM_PROPS,
    ...MAX_MSGS_PROP,
    "batch-size": { type: "int", default: 100, min: 1, aliases: ["batchSize", "flumeBatchSize"], roles: ["batchSize"], doc: "Events taken per transaction and published per batch" },
    "publish-timeout": { type: "int", default: 10000, min: 100, doc: "Milliseconds a batch keeps retrying (same message ids) through reconnects and leader elections before it is rolled back" },
    "msg-id-header": { type: "string", doc: "Event header whose value becomes the message id (e.g. the uuid interceptor's id), so the stream drops copies from any sender; with framing = batch a message's id is a digest of its events' ids" },
    framing: {
      type: "enum",
      values: ["event", "batch"],
      default: "event",
      doc: "event: one JetStream message per event, its headers as NATS headers (any NATS client reads them); batch: a batch's events in as few messages as max_payload allows (header Flume-Batch; the jetstream source and channel read them)",
    },
  },
  validate: (o) => natsProblems(o, { publishes: true }),
  create(o, ctx) {
    return new JetStreamSink(ctx, {
      connection: connectionSettings(o),
      stream: streamSettings(o, o["max-msgs"]),
      batchSize: o["batch-size"],
      publishTimeout: o["publish-timeout"],
      msgIdHeader: o["msg-id-header"] || undefined,
      framing: o.framing,
    });
  },
});
