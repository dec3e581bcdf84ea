import { lineEvent, type Event } from "../../core/event.ts";
import type { Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { BaseSource } from "./base.ts";

export interface SeqOptions {
  batchSize: number;
  totalEvents: number;
  backoffSleepIncrement?: number;
  maxBackoffSleep?: number;
}

/**
 * The ASCII digits of a counter that only counts up: incrementing is usually one byte change,
 * so a batch of consecutive numbers costs no division per event.
 */
class DecimalCounter {
  private readonly digits = new Uint8Array(20);
  private start: number;

  constructor(value: number) {
    const text = String(value);
    this.start = this.digits.length - text.length;
    for (let i = 0; i < text.length; i++) this.digits[this.start + i] = text.charCodeAt(i);
  }

  /** Writes the current number's digits at out[at...]; returns how many. */
  writeTo(out: Uint8Array, at: number): number {
    const d = this.digits;
    for (let i = this.start, j = at; i < d.length; i++, j++) out[j] = d[i];
    return d.length - this.start;
  }

  increment(): void {
    const d = this.digits;
    let i = d.length - 1;
    while (d[i] === 57) d[i--] = 48;
    if (i < this.start) {
      this.start = i;
      d[i] = 49;
    } else {
      d[i]++;
    }
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
    const batch: Event[] = new Array(n);
    const counter = new DecimalCounter(this.sent);
    // The batch's bodies side by side in one buffer (no number has more digits than the last).
    const bodies = new Uint8Array(n * String(this.sent + n - 1).length);
    for (let i = 0, at = 0; i < n; i++) {
      const len = counter.writeTo(bodies, at);
      batch[i] = lineEvent(bodies, at, at + len);
      at += len;
      counter.increment();
    }
    // Refused: the same numbers are offered again after the runner's backoff.
    const refused = this.options.batchSize === 1 ? await this.emitter.offerOne(batch[0]) : await this.emitter.offer(batch);
    if (refused) return "BACKOFF";
    this.sent += n;
    return n < this.options.batchSize ? "BACKOFF" : "READY";
  }
}

export const definition = defineComponent({
  kind: "source",
  type: "seq",
  aliases: ["org.apache.flume.source.SequenceGeneratorSource"],
  doc: "Generates events whose bodies count up from 0; for testing.",
  props: {
    batchSize: { type: "int", roles: ["batchSize"], default: 1, min: 1, doc: "Events per channel transaction" },
    totalEvents: { type: "int", default: Number.MAX_SAFE_INTEGER, min: 0, doc: "Events to generate before stopping (default: no limit)" },
    backoffSleepIncrement: { type: "int", default: 1000, min: 0, doc: "Added to the sleep after each consecutive idle poll (ms)" },
    maxBackoffSleep: { type: "int", default: 5000, min: 0, doc: "Longest sleep between idle polls (ms)" },
  },
  create(config, ctx) {
    return new SeqSource(ctx, {
      batchSize: config.batchSize,
      totalEvents: config.totalEvents,
      backoffSleepIncrement: config.backoffSleepIncrement,
      maxBackoffSleep: config.maxBackoffSleep,
    });
  },
});
