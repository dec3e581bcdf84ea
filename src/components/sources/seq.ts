import { lineEvent, type Event } from "../../core/event.ts";
import type { Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import type { OptionsOf, Props } from "../../config/schema.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSource } from "./base.ts";

const props = {
  batchSize: { type: "int", roles: ["batchSize"], default: 1, min: 1, doc: "Events per channel transaction" },
  totalEvents: { type: "int", default: Number.MAX_SAFE_INTEGER, min: 0, doc: "Events to generate before stopping (default: no limit)" },
  backoffSleepIncrement: { type: "int", default: 1000, min: 0, doc: "Added to the sleep after each consecutive idle poll (ms)" },
  maxBackoffSleep: { type: "int", default: 5000, min: 0, doc: "Longest sleep between idle polls (ms)" },
} as const satisfies Props;

/** What the schema parses the properties into. */
export type SeqOptions = OptionsOf<typeof props>;

/** Numbers a template holds: every value of the last three digits. */
const RUN = 1000;

/**
 * Event bodies for consecutive numbers, as ranges of one buffer per batch. Numbers that differ
 * only in their last three digits share the rest, so a template of the 1,000 numbers
 * `<prefix>000`..`<prefix>999` of one digit count is kept: a run of them is one copy out of it,
 * and a new prefix rewrites only the digits that changed, one column of the template (usually
 * one byte per 1,000 numbers). Written digit by digit, a number cost about 40 ns without the FTL
 * JIT tier (the default runtime profile), more than the channel's put and take of it.
 */
class NumberBodies {
  private template = new Uint8Array(0);
  private width = 0;
  private prefix = "";

  /** Events for first, first + 1, ..., first + n - 1. */
  events(first: number, n: number): Event[] {
    const batch: Event[] = new Array(n);
    const bodies = new Uint8Array(n * String(first + n - 1).length);
    let at = 0;
    for (let i = 0; i < n; ) {
      const value = first + i;
      const text = String(value);
      const width = text.length;
      if (width <= 3) {
        for (let k = 0; k < width; k++) bodies[at + k] = text.charCodeAt(k);
        batch[i++] = lineEvent(bodies, at, at + width);
        at += width;
        continue;
      }
      const low = value % RUN;
      const run = Math.min(n - i, RUN - low);
      const template = this.templateFor(text);
      bodies.set(template.subarray(low * width, (low + run) * width), at);
      for (let r = 0; r < run; r++, at += width) batch[i++] = lineEvent(bodies, at, at + width);
    }
    return batch;
  }

  /** The template of the numbers that share `text`'s digits but its last three. */
  private templateFor(text: string): Uint8Array {
    const width = text.length;
    if (width !== this.width) {
      const t = new Uint8Array(RUN * width);
      for (let r = 0, o = width - 3; r < RUN; r++, o += width) {
        t[o] = 48 + Math.floor(r / 100);
        t[o + 1] = 48 + (Math.floor(r / 10) % 10);
        t[o + 2] = 48 + (r % 10);
      }
      this.template = t;
      this.width = width;
      this.prefix = "";
    }
    const t = this.template;
    const p = width - 3;
    for (let k = 0; k < p; k++) {
      const c = text.charCodeAt(k);
      // An empty prefix (a new template) differs everywhere: charCodeAt past the end is NaN.
      if (this.prefix.charCodeAt(k) !== c) for (let o = k; o < t.length; o += width) t[o] = c;
    }
    this.prefix = text.slice(0, p);
    return t;
  }
}

/**
 * Flume's sequence generator: events whose bodies are 0, 1, 2, ... up to totalEvents. A
 * batch's bodies are ranges of one buffer (lineEvent): the view of a body is made only when
 * something reads it (a view per event is a native call, and an array per event was slower).
 */
export class SeqSource extends BaseSource implements PollableSource {
  readonly kind = "pollable";
  readonly backoffSleepIncrement?: number;
  readonly maxBackoffSleep?: number;
  private sent = 0;
  private readonly bodies = new NumberBodies();

  constructor(
    ctx: ComponentContext,
    private readonly options: SeqOptions,
  ) {
    super(ctx, { label: `${ctx.name} source`, counting: "accepted" });
    this.backoffSleepIncrement = options.backoffSleepIncrement;
    this.maxBackoffSleep = options.maxBackoffSleep;
  }

  /** Events generated and accepted so far. */
  get eventsSent(): number {
    return this.sent;
  }

  start(): void {
    this.markStarted();
  }

  stop(): void {
    this.markStopped();
    this.logger.info(`Sequence generator ${this.name} stopped after ${this.sent} events`);
  }

  async process(): Promise<Status> {
    const remaining = this.options.totalEvents - this.sent;
    if (remaining <= 0) return "BACKOFF";
    const n = Math.min(this.options.batchSize, remaining);
    const batch = this.bodies.events(this.sent, n);
    // Refused: the same numbers are offered again after the runner's backoff.
    const refused = this.options.batchSize === 1 ? await this.emitter.offerOne(batch[0]) : await this.emitter.offer(batch);
    if (refused) return "BACKOFF";
    this.sent += n;
    return n < this.options.batchSize ? "BACKOFF" : "READY";
  }
}

export const definition = defineComponent({
  ...builtIn.seqSource,
  doc: "Generates events whose bodies count up from 0; for testing.",
  props,
  create: (config, ctx) => new SeqSource(ctx, config),
});
