import type { Agent } from "undici/index.js";
import type { Groups, OptionsOf, Props } from "../../config/schema.ts";
import { SinkCounter } from "../../core/counters.ts";
import { ConfigurationError, configurationProblems } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { BatchVerdict, TakeLoop } from "../../pipeline/take-loop.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSink } from "./base.ts";

// undici is imported by path: Bun replaces the bare "undici" with a partial built-in whose
// request() ignores the dispatcher's timeouts. It is loaded when the sink starts, so listing
// components (flume validate, describe) does not pay for it.
type Undici = typeof import("undici/index.js");
let undici: Promise<Undici> | null = null;
function loadUndici(): Promise<Undici> {
  undici ??= import("undici/index.js");
  return undici;
}

/** A per-status policy: exact codes ("503"), then "50X", then "5XX", then the default. */
export class StatusPolicy {
  private readonly rules = new Map<string, boolean>();

  constructor(
    readonly name: string,
    readonly defaultValue: boolean,
    overrides: Readonly<Record<string, boolean>> = {},
  ) {
    for (const [code, value] of Object.entries(overrides)) {
      const key = code.trim().toUpperCase();
      if (!/^[1-5](\d\d|\dX|XX)$/.test(key)) throw new ConfigurationError(`${name}.${code}`, "expected an HTTP status code (503) or pattern (50X, 5XX)");
      this.rules.set(key, value);
    }
  }

  /** Whether this policy's rule names a 2XX code (for the start-up hint). */
  coversSuccess(): boolean {
    return [...this.rules.keys()].some((k) => k.startsWith("2"));
  }

  decide(status: number): boolean {
    const code = String(status);
    return this.rules.get(code) ?? this.rules.get(`${code.slice(0, 2)}X`) ?? this.rules.get(`${code[0]}XX`) ?? this.defaultValue;
  }
}

/**
 * Flume's HttpSink: takes one event per transaction and POSTs its body to the endpoint. The
 * response status decides, through the backoff / rollback / incrementMetrics policies, whether
 * the transaction commits or rolls back, whether the runner backs off, and whether
 * EventDrainSuccessCount counts it. As in Flume, the defaults roll back and back off on every
 * status, so a working setup sets rollback.2XX = false (and usually backoff.2XX = false).
 * A connection failure or timeout rolls back and raises EventDeliveryException (Flume logs it
 * and backs off; the runner does both here).
 */
export class HttpSink extends BaseSink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;
  private agent: Agent | null = null;
  private request: Undici["request"] | null = null;
  private readonly resolved: ReturnType<typeof resolve>;

  constructor(
    ctx: ComponentContext,
    readonly options: HttpSinkOptions,
  ) {
    super(ctx);
    this.resolved = resolve(options);
    this.counter = new SinkCounter(ctx.name, ctx.clock);
    this.takeLoop = this.newTakeLoop({
      label: `http sink ${this.name}`,
      counter: this.counter,
      // Flume's sink counts no batches: BatchEmptyCount and the others stay 0.
      countBatches: false,
      batchSize: 1,
      target: () => this.resolved.endpoint.href,
      deliver: (events) => this.deliver(events[0]),
    });
  }

  override async start(): Promise<void> {
    const { Agent, request } = await loadUndici();
    this.request = request;
    this.agent = new Agent({ connectTimeout: this.options.connectTimeout, headersTimeout: this.options.requestTimeout, bodyTimeout: this.options.requestTimeout });
    this.counter.start();
    if (this.resolved.rollback.defaultValue && !this.resolved.rollback.coversSuccess())
      this.logger.warn(`http sink ${this.name}: defaultRollback is true and no rollback.2XX/rollback.200 is set, so even successful posts are rolled back and sent again (as in Flume); set rollback.2XX = false`);
    this.state = "START";
  }

  override async stop(): Promise<void> {
    const agent = this.agent;
    this.agent = null;
    if (agent) await agent.close().catch(() => agent.destroy());
    this.counter.stop();
    this.state = "STOP";
  }

  private async post(body: Uint8Array): Promise<number> {
    const agent = this.agent;
    const request = this.request;
    if (!agent || !request) throw new Error("sink is not started");
    const res = await request(this.resolved.endpoint, {
      method: "POST",
      body,
      headers: { "content-type": this.options.contentTypeHeader, accept: this.options.acceptHeader },
      dispatcher: agent,
      signal: AbortSignal.timeout(this.options.connectTimeout + this.options.requestTimeout),
    });
    // Read the response to its end so the connection can be reused.
    await res.body.dump();
    return res.statusCode;
  }

  /** Flume's policies: the status decides commit or rollback, backoff, and whether the event counts as drained. */
  private async deliver(event: Event): Promise<BatchVerdict> {
    if (event.body.length === 0) {
      // As Flume: an empty body is committed (dropped) with a warning; the runner backs off.
      this.logger.warn(`http sink ${this.name}: dropped an event with an empty body`);
      return { commit: true, status: "BACKOFF", drained: 0 };
    }
    const status = await this.post(event.body);
    const rollback = this.resolved.rollback.decide(status);
    const backoff = this.resolved.backoff.decide(status);
    if (rollback) this.logger.info(`http sink ${this.name}: got status ${status}; rolling back the event${backoff ? " and backing off" : " for retry"}`);
    else if (status >= 400) this.logger.warn(`http sink ${this.name}: got status ${status}; the event is committed (dropped) as configured`);
    return { commit: !rollback, status: backoff ? "BACKOFF" : "READY", drained: this.resolved.incrementMetrics.decide(status) ? 1 : 0 };
  }
}

const props = {
  endpoint: { type: "string", required: true, doc: "URL to POST to." },
  connectTimeout: { type: "int", default: 5000, min: 1, doc: "Milliseconds to wait for the connection." },
  requestTimeout: { type: "int", default: 5000, min: 1, doc: "Milliseconds to wait for the response." },
  contentTypeHeader: { type: "string", default: "text/plain", doc: "Content-Type of the request." },
  acceptHeader: { type: "string", default: "text/plain", doc: "Accept header of the request." },
  defaultBackoff: { type: "boolean", default: true, doc: "Back off after a status no backoff.CODE names." },
  defaultRollback: { type: "boolean", default: true, doc: "Roll back after a status no rollback.CODE names." },
  defaultIncrementMetrics: { type: "boolean", default: false, doc: "Count EventDrainSuccessCount for a status no incrementMetrics.CODE names." },
} as const satisfies Props;

const groups = {
  backoff: { prefix: "backoff.", doc: "backoff.CODE = true|false, CODE a status (503) or pattern (50X, 5XX); the most specific wins", value: { type: "boolean" } },
  rollback: { prefix: "rollback.", doc: "rollback.CODE = true|false", value: { type: "boolean" } },
  incrementMetrics: { prefix: "incrementMetrics.", doc: "incrementMetrics.CODE = true|false", value: { type: "boolean" } },
} as const satisfies Groups;

/** What the schema parses the properties into. */
export type HttpSinkOptions = OptionsOf<typeof props, typeof groups>;

/** What the sink builds from its options: the endpoint as a URL and the status policies; throws ConfigurationError. */
function resolve(config: HttpSinkOptions): { endpoint: URL; backoff: StatusPolicy; rollback: StatusPolicy; incrementMetrics: StatusPolicy } {
  const raw = config.endpoint;
  let endpoint: URL;
  try {
    endpoint = new URL(raw);
  } catch {
    throw new ConfigurationError("endpoint", `"${raw}" is not a valid URL (e.g. http://collector:8080/events)`);
  }
  if (endpoint.protocol !== "http:" && endpoint.protocol !== "https:") throw new ConfigurationError("endpoint", `must be an http:// or https:// URL, got "${raw}"`);
  return {
    endpoint,
    backoff: new StatusPolicy("backoff", config.defaultBackoff, config.backoff),
    rollback: new StatusPolicy("rollback", config.defaultRollback, config.rollback),
    incrementMetrics: new StatusPolicy("incrementMetrics", config.defaultIncrementMetrics, config.incrementMetrics),
  };
}

export const definition = defineComponent({
  ...builtIn.httpSink,
  doc: "POSTs each event's body to an HTTP endpoint; the response status decides commit or rollback, backoff and metrics.",
  props,
  groups,
  create(config, ctx) {
    return new HttpSink(ctx, config);
  },
  validate: (config) => configurationProblems(() => resolve(config)),
});
