import { bodyEvent, type Event } from "../../core/event.ts";
import type { Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSource } from "./base.ts";
import type { OptionsOf, Props } from "../../config/schema.ts";

const props = {
  size: { type: "int", default: 500, min: 0, doc: "Body size of each event in bytes." },
  maxTotalEvents: { type: "int", default: -1, min: -1, doc: "Events to attempt in all (-1: no limit)." },
  maxSuccessfulEvents: { type: "int", default: -1, min: -1, doc: "Events to deliver successfully in all (-1: no limit)." },
  batchSize: { type: "int", roles: ["batchSize"], default: 1, min: 1, doc: "Events per channel transaction." },
  maxEventsPerSecond: { type: "int", default: 0, min: 0, doc: "Rate limit (0: none)." },
  backoffSleepIncrement: { type: "int", default: 1000, min: 0, doc: "Backoff growth in ms when the source backs off." },
  maxBackoffSleep: { type: "int", default: 5000, min: 0, doc: "Longest backoff in ms." },
} as const satisfies Props;

/** What the schema parses the properties into. */
export type StressOptions = OptionsOf<typeof props>;

/**
 * Paces permits at a steady rate (as Guava's RateLimiter that Flume uses): a request waits for
 * the time the previous ones were granted ahead of schedule.
 */
class RateLimiter {
  private next = 0;
  constructor(private readonly perSecond: number) {}
  /** Milliseconds to wait before n permits may be used. */
  reserve(n: number, now: number): number {
    const wait = Math.max(0, this.next - now);
    this.next = Math.max(this.next, now) + (n * 1000) / this.perSecond;
    return wait;
  }
}

/**
 * Flume's StressSource: generates events of `size` bytes (every byte 127, empty headers), in
 * batches of batchSize, until maxTotalEvents were attempted or maxSuccessfulEvents accepted
 * (-1: no limit), at most maxEventsPerSecond (0: no limit). All events share one body buffer;
 * each gets its own headers object, since interceptors may add headers.
 */
export class StressSource extends BaseSource implements PollableSource {
  readonly kind = "pollable";
  readonly backoffSleepIncrement?: number;
  readonly maxBackoffSleep?: number;
  private readonly body: Uint8Array;
  private readonly limiter: RateLimiter | null;
  private total = 0;
  private successful = 0;
  private failed = 0;

  constructor(
    ctx: ComponentContext,
    readonly options: StressOptions,
  ) {
    super(ctx, { label: `stress source ${ctx.name}` });
    this.body = new Uint8Array(options.size).fill(127);
    this.limiter = options.maxEventsPerSecond > 0 ? new RateLimiter(options.maxEventsPerSecond) : null;
    this.backoffSleepIncrement = options.backoffSleepIncrement;
    this.maxBackoffSleep = options.maxBackoffSleep;
  }

  /** Events attempted, accepted and refused so far (Flume's events.total, .successful, .failed). */
  get stats(): { total: number; successful: number; failed: number } {
    return { total: this.total, successful: this.successful, failed: this.failed };
  }

  start(): void {
    this.markStarted();
  }

  stop(): void {
    this.markStopped();
    this.logger.info(`stress source ${this.name} stopped: ${this.total} events attempted, ${this.successful} successful, ${this.failed} failed`);
  }

  async process(): Promise<Status> {
    const o = this.options;
    if ((o.maxTotalEvents >= 0 && this.total >= o.maxTotalEvents) || (o.maxSuccessfulEvents >= 0 && this.successful >= o.maxSuccessfulEvents)) return "BACKOFF";
    let n = o.batchSize;
    if (o.maxTotalEvents >= 0) n = Math.min(n, o.maxTotalEvents - this.total);
    if (this.limiter) {
      const wait = this.limiter.reserve(n, this.clock.now());
      if (wait > 0) await this.clock.sleep(wait);
    }
    const events: Event[] = new Array(n);
    for (let i = 0; i < n; i++) events[i] = bodyEvent(this.body);
    this.total += n;
    // As Flume: refused events count as failed and are not offered again.
    if (await this.emitter.offer(events)) {
      this.failed += n;
      return "BACKOFF";
    }
    this.successful += n;
    return "READY";
  }
}

export const definition = defineComponent({
  ...builtIn.stressSource,
  doc: "Generates events of a fixed size for load tests.",
  props,
  create: (config, ctx) => new StressSource(ctx, config),
});
