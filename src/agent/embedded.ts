import type { Clock } from "../core/clock.ts";
import type { Event } from "../core/event.ts";
import { ConfigurationError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import * as registry from "../components/registry.ts";
import { EmbeddedSource } from "../components/sources/embedded.ts";
import { loadConfigMap } from "../config/load.ts";
import type { AgentModel } from "../config/model.ts";
import { formatProblem } from "../config/problems.ts";
import type { Agent } from "./agent.ts";
import { AgentService, ServiceStartError } from "./service.ts";

const AGENT = "embedded";

/** Turns an EmbeddedAgent property map into the keys of a one-agent Flume configuration. */
function translate(properties: Record<string, string>): Map<string, string> {
  const sinks = (properties.sinks ?? "").trim();
  if (!sinks) throw new ConfigurationError("sinks", "is required: name the sinks, e.g. sinks = k1");
  const sinkNames = sinks.split(/\s+/);
  const out = new Map<string, string>([
    [`${AGENT}.sources`, "source"],
    [`${AGENT}.channels`, "channel"],
    [`${AGENT}.sinks`, sinks],
    [`${AGENT}.sources.source.type`, "embedded"],
    [`${AGENT}.sources.source.channels`, "channel"],
  ]);
  if (Object.keys(properties).some((k) => k.startsWith("processor."))) {
    out.set(`${AGENT}.sinkgroups`, "group");
    out.set(`${AGENT}.sinkgroups.group.sinks`, sinks);
  }
  for (const [key, value] of Object.entries(properties)) {
    if (key === "sinks") continue;
    if (key === "source.type") {
      if (value.trim().toLowerCase() !== "embedded") throw new ConfigurationError(key, `an embedded agent's source is always "embedded", got "${value}"`);
    } else if (key.startsWith("channel.")) out.set(`${AGENT}.channels.channel.${key.slice(8)}`, value);
    else if (key.startsWith("processor.")) out.set(`${AGENT}.sinkgroups.group.${key}`, value);
    else if (key.startsWith("source.")) out.set(`${AGENT}.sources.source.${key.slice(7)}`, value);
    else {
      const dot = key.indexOf(".");
      if (dot <= 0 || !sinkNames.includes(key.slice(0, dot))) {
        throw new ConfigurationError(key, `unknown key: expected channel.*, processor.*, source.*, sinks, or <sink>.* for one of ${sinkNames.join(", ")}`);
      }
      out.set(`${AGENT}.sinks.${key}`, value);
    }
  }
  for (const s of sinkNames) out.set(`${AGENT}.sinks.${s}.channel`, "channel");
  return out;
}

/**
 * An agent inside an application, configured like Flume's EmbeddedAgent from a flat map:
 *
 *   channel.type = memory, channel.capacity = 1000,
 *   sinks = k1 k2, k1.type = avro, k1.hostname = ..., k1.port = ...,
 *   processor.type = failover (optional), source.interceptors = i1, source.interceptors.i1.type = ...
 *
 * put/putAll go through the source's interceptors into the channel and throw ChannelException
 * when it is full; sinks deliver in the background. Unlike Flume's, any sink type may be used.
 */
export class EmbeddedAgent {
  private service: AgentService | null = null;
  private model: AgentModel | null = null;

  constructor(
    readonly name = AGENT,
    private readonly options: { clock?: Clock; logger?: Logger; drainTimeout?: number } = {},
  ) {}

  /** Checks and keeps the configuration; throws ConfigurationError listing every problem. */
  configure(properties: Record<string, string>): void {
    const result = loadConfigMap(translate(properties), "<embedded>", { agentName: AGENT }, registry);
    const errors = result.problems.filter((p) => p.severity === "error");
    if (errors.length > 0 || !result.model) {
      throw new ConfigurationError("properties", `invalid embedded agent configuration:\n${errors.map((p) => `  ${p.component}: ${p.key}: ${p.message}`).join("\n")}`);
    }
    for (const p of result.problems) this.options.logger?.warn(formatProblem(p));
    this.model = result.model;
  }

  async start(): Promise<void> {
    if (!this.model) throw new Error("configure() the embedded agent before start()");
    if (this.service) throw new Error("the embedded agent is already started");
    const service = new AgentService(
      { ...this.model, agent: this.name },
      { clock: this.options.clock, logger: this.options.logger, drainTimeoutMs: this.options.drainTimeout, logStartFailure: false },
    );
    // Set before the start completes, so a stop() meanwhile reaches it (the agent runs it after the start).
    this.service = service;
    try {
      await service.start();
    } catch (err) {
      if (this.service === service) this.service = null;
      // The component's own error, as before the service: the embedding application handles it.
      throw err instanceof ServiceStartError && err.cause !== undefined ? err.cause : err;
    }
  }

  private source(): EmbeddedSource {
    const s = this.service?.agent.components.sources.get("source")?.source;
    if (!(s instanceof EmbeddedSource)) throw new Error("the embedded agent is not started");
    return s;
  }

  /** Puts one event; throws ChannelException when the channel is full. */
  put(event: Event): Promise<void> {
    return this.source().put(event);
  }

  /** Puts a batch in one transaction; all or nothing. */
  putAll(events: Event[]): Promise<void> {
    return this.source().putAll(events);
  }

  /** The running agent (its counters are the groups /metrics serves), or null when stopped. */
  get running(): Agent | null {
    return this.service?.agent ?? null;
  }

  /** Stops with a drain; resolves with the exit code (3 when the memory channel still held events). */
  async stop(): Promise<number> {
    const service = this.service;
    this.service = null;
    return service ? service.stop() : 0;
  }
}
