/**
 * A custom sink for Flume TS: writes each event as one line of JSON,
 * {"headers":{...},"body":"..."}, appended to a file. Use it with
 *
 *   a1.sinks.k1.type = ./jsonl-sink.ts        (relative to the configuration file)
 *   a1.sinks.k1.file = /var/log/flume/events.jsonl
 *
 * It is written with the same API as the built-in components: defineComponent declares the
 * properties (flume validate and flume describe read them), create() builds the sink, and the
 * sink takes events from its channel in transactions (a failed write rolls the batch back, so
 * the events are taken again: at least once).
 */
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import { type Channel, type ComponentContext, defineComponent, EventDeliveryException, type Event, type LifecycleState, type Sink, SinkCounter, type Status } from "flume-ts";

interface Settings {
  file: string;
  batchSize: number;
  body: "text" | "base64";
  fsync: boolean;
}

const decoder = new TextDecoder();

export class JsonLinesSink implements Sink {
  readonly name: string;
  readonly counter: SinkCounter;
  private channel: Channel | null = null;
  private state: LifecycleState = "IDLE";
  private fd: number | null = null;

  constructor(
    private readonly ctx: ComponentContext,
    private readonly settings: Settings,
  ) {
    this.name = ctx.name;
    this.counter = new SinkCounter(ctx.name, ctx.clock);
  }

  setChannel(channel: Channel): void {
    this.channel = channel;
  }

  getChannel(): Channel {
    if (!this.channel) throw new Error(`sink ${this.ctx.name} has no channel`);
    return this.channel;
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  start(): void {
    // The simulator and tests may move storage elsewhere: ask the context where the file lives.
    this.fd = openSync(this.ctx.storagePath(this.settings.file), "a");
    this.counter.start();
    this.counter.inc("ConnectionCreatedCount");
    this.state = "START";
  }

  stop(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    this.counter.inc("ConnectionClosedCount");
    this.counter.stop();
    this.state = "STOP";
  }

  private line(e: Event): string {
    const body = this.settings.body === "base64" ? Buffer.from(e.body).toString("base64") : decoder.decode(e.body);
    return JSON.stringify({ headers: e.headers, body }) + "\n";
  }

  /** One take transaction: up to batchSize events, one write, then the commit. */
  async process(): Promise<Status> {
    const tx = this.getChannel().getTransaction();
    tx.begin();
    let n = 0;
    try {
      let text = "";
      for (; n < this.settings.batchSize; n++) {
        const e = tx.take();
        if (e === null) break;
        text += this.line(e);
      }
      this.counter.inc("EventDrainAttemptCount", n);
      if (n > 0) {
        writeSync(this.fd as number, text);
        if (this.settings.fsync) fsyncSync(this.fd as number);
      }
      await tx.commit();
      this.counter.inc(n === 0 ? "BatchEmptyCount" : n < this.settings.batchSize ? "BatchUnderflowCount" : "BatchCompleteCount");
      this.counter.inc("EventDrainSuccessCount", n);
      return n < this.settings.batchSize ? "BACKOFF" : "READY";
    } catch (err) {
      await tx.rollback();
      this.counter.inc("EventWriteFail");
      throw new EventDeliveryException(`sink ${this.ctx.name}: cannot write ${n} events to ${this.settings.file}: ${(err as Error).message}`, { cause: err });
    } finally {
      tx.close();
    }
  }
}

export default defineComponent({
  kind: "sink",
  type: "jsonl",
  doc: "Appends each event to a file as one line of JSON (an example custom sink).",
  props: {
    file: { type: "path", required: true, doc: "The file the lines are appended to" },
    batchSize: { type: "int", default: 100, min: 1, roles: ["batchSize"], doc: "Events per take transaction (and per write)" },
    body: { type: "enum", values: ["text", "base64"], default: "text", doc: "How the body is written: as UTF-8 text or base64" },
    fsync: { type: "boolean", default: false, doc: "fsync the file after each batch, before the commit" },
  },
  create(o, ctx) {
    return new JsonLinesSink(ctx, { file: o.file, batchSize: o.batchSize, body: o.body, fsync: o.fsync });
  },
});
