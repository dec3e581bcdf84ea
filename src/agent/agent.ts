import type { Channel } from "../core/channel.ts";
import type { Clock } from "../core/clock.ts";
import { systemClock } from "../core/clock.ts";
import type { CounterGroup } from "../core/counters.ts";
import { ChannelException } from "../core/errors.ts";
import type { LifecycleAware } from "../core/lifecycle.ts";
import type { Logger } from "../core/logger.ts";
import type { DeliveryFailure } from "../core/sink.ts";
import { FlumeError } from "../core/errors.ts";
import { otherOwner } from "../io/owner-lock.ts";
import { silentLogger } from "../core/logger.ts";
import { LifecycleSupervisor } from "../core/supervisor.ts";
import type { AgentModel, ChannelModel } from "../config/model.ts";
import type { LabeledGroup, MetricsProvider } from "../monitoring/metrics.ts";
import type { ComponentInfo, Readiness } from "../monitoring/http-server.ts";
import { type BuildContext, type BuiltAgent, type BuiltChannel, buildAgent } from "./build.ts";

export interface AgentOptions {
  clock?: Clock;
  logger?: Logger;
  /** A logger per component (defaults to the agent's). */
  componentLogger?: (name: string) => Logger;
  /** How long a graceful stop lets sinks drain the channels (ms). */
  drainTimeout?: number;
  /** Wraps each channel the agent builds (transaction tracing). */
  wrapChannel?: (channel: Channel, model: ChannelModel) => Channel;
}

/**
 * A running agent: builds the components of a configuration, starts channels, then sink
 * runners and sources (each under the lifecycle supervisor, which restarts one that fails),
 * and stops them in the reverse order. reload() applies a new configuration, keeping what
 * did not change.
 */
export class Agent implements MetricsProvider {
  private built: BuiltAgent = { channels: new Map(), sources: new Map(), runners: new Map() };
  private model: AgentModel | null = null;
  private hurry = false;
  private lost = 0;
  private supervisor: LifecycleSupervisor;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly componentLogger: (name: string) => Logger;
  private running = false;
  /** start, reload and stop run one after another: a stop that arrives mid-start waits for it. */
  private transition: Promise<unknown> = Promise.resolve();

  constructor(
    readonly name: string,
    private readonly options: AgentOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.componentLogger = options.componentLogger ?? (() => this.logger);
    this.supervisor = new LifecycleSupervisor(this.clock, this.logger);
  }

  get components(): BuiltAgent {
    return this.built;
  }

  private serialized<T>(op: () => Promise<T>): Promise<T> {
    const result = this.transition.then(op, op);
    this.transition = result.catch(() => {});
    return result;
  }

  /** Builds and starts the configuration. */
  start(model: AgentModel): Promise<void> {
    return this.serialized(() => this.doStart(model));
  }

  private async doStart(model: AgentModel): Promise<void> {
    refuseClaimedByOthers(model, this.name);
    this.built = buildAgent(model, this.buildContext());
    this.model = model;
    await this.startAll(this.built, new Set());
    const final = [...this.built.channels.values()].flatMap((c) => {
      const status = this.supervisor.status(c.channel);
      return status?.error ? [{ name: c.name, status }] : [];
    });
    if (final.length > 0) {
      await this.supervisor.stop();
      // The channel's own error (it names the channel and what to do), which the supervisor left
      // to the agent to report: the start fails with it, so it is printed once.
      const [first] = final;
      if (final.length === 1 && first.status.cause instanceof Error) throw first.status.cause;
      throw new ChannelException(final.map((c) => `channel ${c.name} cannot start: ${c.status.lastError}`).join("; "));
    }
    this.running = true;
  }

  private buildContext(): BuildContext {
    return { agentName: this.name, clock: this.clock, logger: this.componentLogger, wrapChannel: this.options.wrapChannel };
  }

  private async startAll(next: BuiltAgent, keep: Set<unknown>): Promise<void> {
    const starting = [...next.channels.values()].filter((c) => !keep.has(c.channel)).map((c) => `channel ${c.name}`);
    starting.push(...[...next.runners.values()].filter((r) => !keep.has(r.runner)).map((r) => `sink runner ${r.name}`));
    starting.push(...[...next.sources.values()].filter((s) => !keep.has(s.runner)).map((s) => `source ${s.name}`));
    this.logger.debug(`starting ${starting.join(", ") || "nothing new"} (channels, then sink runners and sources)`);
    const waits: Promise<void>[] = [];
    for (const c of next.channels.values()) if (!keep.has(c.channel)) waits.push(this.supervisor.supervise(c.channel));
    await Promise.all(waits);
    waits.length = 0;
    // On the first start, a channel that will never start (the supervisor gave up) fails the
    // start (doStart): its sources and sinks would only repeat its error.
    if (!this.running && [...next.channels.values()].some((c) => this.supervisor.isComponentInErrorState(c.channel))) return;
    // Sources start right after the sink runners, without waiting for their first start to end
    // (as Flume): a sink whose broker does not answer must not keep the sources from accepting.
    for (const r of next.runners.values()) if (!keep.has(r.runner)) waits.push(this.supervisor.supervise(r.runner));
    for (const s of next.sources.values()) if (!keep.has(s.runner)) waits.push(this.supervisor.supervise(s.runner));
    await Promise.all(waits);
  }

  /**
   * Applies a new configuration. Components whose settings and wiring did not change keep
   * running untouched; a memory channel that only changed its settings is resized in place.
   */
  reload(model: AgentModel): Promise<{ kept: string[]; started: string[]; stopped: string[] }> {
    return this.serialized(() => this.doReload(model));
  }

  private async doReload(model: AgentModel): Promise<{ kept: string[]; started: string[]; stopped: string[] }> {
    if (!this.running) throw new Error(`agent ${this.name} is not running`);
    const old = this.built;
    refuseClaimedByOthers(model, this.name);
    const next = buildAgent(model, this.buildContext(), old);
    this.model = model;
    const keep = new Set<unknown>();
    const kept: string[] = [];
    for (const c of next.channels.values()) if (old.channels.get(c.name)?.channel === c.channel) (keep.add(c.channel), kept.push(`channel ${c.name}`));
    for (const r of next.runners.values()) if ([...old.runners.values()].some((o) => o.runner === r.runner)) (keep.add(r.runner), kept.push(`sink runner ${r.name}`));
    for (const s of next.sources.values()) if (old.sources.get(s.name)?.runner === s.runner) (keep.add(s.runner), kept.push(`source ${s.name}`));
    const stopped: string[] = [];
    for (const s of old.sources.values()) if (!keep.has(s.runner)) (await this.supervisor.unsupervise(s.runner), stopped.push(`source ${s.name}`));
    // A memory channel that goes away would lose its events: its old sinks drain it first (bounded).
    const replaced = [...old.channels.values()].filter((c) => !keep.has(c.channel));
    await this.drain(old, new Set(replaced.filter((c) => !durable(c)).map((c) => c.channel)));
    const drained = this.drainable(old);
    for (const r of old.runners.values()) if (!keep.has(r.runner)) (await this.supervisor.unsupervise(r.runner), stopped.push(`sink runner ${r.name}`));
    for (const c of replaced) {
      this.warnLeftover(c, drained.has(c.channel));
      await this.supervisor.unsupervise(c.channel);
      stopped.push(`channel ${c.name}`);
    }
    // Resized only now: the build succeeded, and the old sources and sinks (whose batches
    // fit the old transactionCapacity) are stopped.
    for (const c of next.channels.values()) {
      const change = c.reconfigure;
      delete c.reconfigure;
      if (change) await change();
    }
    this.built = next;
    await this.startAll(next, keep);
    // A start that failed (a port in use) is retried by the supervisor; the report says so.
    const label = (what: string, c: LifecycleAware) => {
      const status = this.supervisor.status(c);
      return status?.lastError ? `${what} (not started, ${status.error ? "not retried" : "retrying"}: ${status.lastError})` : what;
    };
    const started = [
      ...[...next.channels.values()].filter((c) => !keep.has(c.channel)).map((c) => label(`channel ${c.name}`, c.channel)),
      ...[...next.runners.values()].filter((r) => !keep.has(r.runner)).map((r) => label(`sink runner ${r.name}`, r.runner)),
      ...[...next.sources.values()].filter((s) => !keep.has(s.runner)).map((s) => label(`source ${s.name}`, s.runner)),
    ];
    return { kept, started, stopped };
  }

  /** Components whose start failed and that the supervisor is retrying, with the last error. */
  notStarted(): { kind: "channel" | "sink runner" | "source"; name: string; error: string }[] {
    const out: { kind: "channel" | "sink runner" | "source"; name: string; error: string }[] = [];
    const add = (kind: "channel" | "sink runner" | "source", name: string, c: LifecycleAware) => {
      const error = this.supervisor.status(c)?.lastError;
      if (error && c.getLifecycleState() !== "START") out.push({ kind, name, error });
    };
    for (const c of this.built.channels.values()) add("channel", c.name, c.channel);
    for (const r of this.built.runners.values()) add("sink runner", r.name, r.runner);
    for (const s of this.built.sources.values()) add("source", s.name, s.runner);
    return out;
  }

  /**
   * Whether every configured component runs and delivers, for /ready: the ones that did not
   * start, with their lifecycle state and the error their last start attempt failed with; the
   * started sinks whose deliveries fail, with the last error and since when.
   */
  readiness(): Readiness {
    const notStarted: Readiness["notStarted"] = [];
    const failing: Readiness["failing"] = [];
    const check = (kind: string, name: string, c: LifecycleAware) => {
      const state = c.getLifecycleState();
      if (state === "START") return;
      const status = this.supervisor.status(c);
      const error = status?.lastError;
      notStarted.push({ kind, name, state: status?.starting ? "STARTING" : state, ...(error ? { error } : {}) });
    };
    for (const c of this.built.channels.values()) check("channel", c.name, c.channel);
    for (const r of this.built.runners.values()) check("sink runner", r.name, r.runner);
    for (const s of this.built.sources.values()) check("source", s.name, s.runner);
    // A sink that runs but whose deliveries fail (its broker gone) is not ready either, nor a
    // source or channel whose reads from its broker fail.
    const fails = (kind: string, name: string, f: DeliveryFailure | null | undefined) => {
      if (f) failing.push({ kind, name, state: "FAILING", error: f.error, since: new Date(f.since).toISOString() });
    };
    for (const c of this.built.channels.values()) fails("channel", c.name, c.channel.readFailure?.());
    for (const r of this.built.runners.values()) {
      if (r.runner.getLifecycleState() !== "START") continue;
      for (const s of r.sinks) fails("sink", s.name, s.deliveryFailure?.());
    }
    for (const s of this.built.sources.values()) if (s.runner.getLifecycleState() === "START") fails("source", s.name, s.source.readFailure?.());
    return { ready: this.running && notStarted.length === 0 && failing.length === 0, notStarted, failing };
  }

  /** Every configured component, from the running configuration (for /components). */
  componentList(): ComponentInfo[] {
    const m = this.model;
    if (!m) return [];
    return [
      ...[...m.sources.values()].map((c) => ({ kind: "source" as const, name: c.name, type: c.type })),
      ...[...m.channels.values()].map((c) => ({ kind: "channel" as const, name: c.name, type: c.type })),
      ...[...m.sinks.values()].map((c) => ({ kind: "sink" as const, name: c.name, type: c.type })),
    ];
  }

  /** The channels a started sink reads: a drain can empty only those (a sink whose start failed or was given up takes nothing). */
  private drainable(built: BuiltAgent): Set<Channel> {
    const drained = new Set<Channel>();
    for (const r of built.runners.values()) if (r.runner.getLifecycleState() === "START") for (const s of r.sinks) drained.add(s.getChannel());
    return drained;
  }

  /** Events waiting in the channels that a started sink reads (the ones a drain can empty). */
  private pendingEvents(built: BuiltAgent, only?: Set<Channel>): number {
    const drained = this.drainable(built);
    let n = 0;
    for (const c of built.channels.values()) if (drained.has(c.channel) && (!only || only.has(c.channel))) n += c.channel.counter.values.ChannelSize;
    return n;
  }

  /** Lets the sinks of `built` empty its channels (or just `only`) for up to drainTimeout. */
  private async drain(built: BuiltAgent, only?: Set<Channel>): Promise<void> {
    if (only && only.size === 0) return;
    const deadline = this.clock.now() + (this.options.drainTimeout ?? 5000);
    // One immediate try for every runner; after that each sink keeps its own backoff or error
    // sleep (waking it every 20 ms would hit a downstream answering 503 ~50 times a second).
    // New events still wake it: the channels notify their runners of committed puts.
    for (const r of built.runners.values()) r.runner.poke();
    while (this.pendingEvents(built, only) > 0 && this.clock.now() < deadline && !this.hurry) await this.clock.sleep(20);
  }

  /** How often the supervisor retries a component that failed to start. */
  get retryIntervalMs(): number {
    return this.supervisor.monitorInterval;
  }

  /**
   * Cuts a graceful stop short (a second SIGINT/SIGTERM): the drain ends now; what the
   * channels still hold is reported by stop() (a memory channel's events are lost).
   */
  stopNow(): void {
    this.hurry = true;
  }

  /** Events a memory (non-durable) channel still held when the last stop closed it: lost. */
  get lostAtStop(): number {
    return this.lost;
  }

  /** `drained`: whether a started sink read the channel during the drain. */
  private warnLeftover(c: BuiltChannel, drained: boolean): void {
    const left = c.channel.counter.values.ChannelSize;
    if (left === 0) return;
    if (!durable(c)) this.lost += left;
    const when = !drained ? "; no sink reading it had started, so nothing drained it" : this.hurry ? " when the drain was cut short" : ` after the ${this.options.drainTimeout ?? 5000} ms drain`;
    this.logger.warn(durable(c) ? `channel ${c.name} keeps ${left} events on disk for the next start` : `channel ${c.name} still held ${left} events${when}; a memory channel loses them`);
  }

  /**
   * Graceful stop: sources stop accepting, sinks get up to drainTimeout to empty the
   * channels, then sink runners stop (a batch in flight completes or rolls back), then
   * channels close. Committed events left in a memory channel are reported.
   */
  stop(): Promise<void> {
    // Now, not once a start under way ends: a component waiting on a peer would hold it.
    this.supervisor.abandonStarts();
    return this.serialized(async () => {
      try {
        await this.doStop();
      } finally {
        this.supervisor.resume();
      }
    });
  }

  private async doStop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.lost = 0;
    for (const s of [...this.built.sources.values()].reverse()) await this.supervisor.unsupervise(s.runner);
    await this.drain(this.built);
    const drained = this.drainable(this.built);
    for (const r of [...this.built.runners.values()].reverse()) await this.supervisor.unsupervise(r.runner);
    for (const c of [...this.built.channels.values()].reverse()) {
      this.warnLeftover(c, drained.has(c.channel));
      await this.supervisor.unsupervise(c.channel);
    }
    await this.supervisor.stop();
  }

  *labeledGroups(): Iterable<LabeledGroup> {
    for (const s of this.built.sources.values()) yield { group: s.source.counter, componentType: this.typeOf("source", s.name) };
    for (const c of this.built.channels.values()) yield { group: c.channel.counter, componentType: c.model.type };
    for (const r of this.built.runners.values()) for (const sink of r.sinks) if (sink.counter) yield { group: sink.counter, componentType: this.typeOf("sink", sink.counter.name) };
  }

  private typeOf(kind: "source" | "sink", name: string): string {
    return (kind === "source" ? this.model?.sources.get(name)?.type : this.model?.sinks.get(name)?.type) ?? "";
  }

  *counterGroups(): Iterable<CounterGroup<string>> {
    for (const s of this.built.sources.values()) yield s.source.counter;
    for (const c of this.built.channels.values()) yield c.channel.counter;
    for (const r of this.built.runners.values()) for (const sink of r.sinks) if (sink.counter) yield sink.counter;
  }
}

/** Whether a channel keeps its events when the process ends (its definition says so). */
function durable(c: BuiltChannel): boolean {
  return c.model.definition.durability !== undefined;
}

/** An agent that will not start because another live process owns what it would use. */
export class ClaimedByOtherProcessError extends FlumeError {}

/**
 * Refuses, before anything starts, an agent whose data directories or state files another
 * live process holds (a second agent on the same file channel would otherwise start its
 * sources and re-send what the first delivered). Locks held by this process are its own.
 */
function refuseClaimedByOthers(model: AgentModel, agent: string): void {
  const held: string[] = [];
  const components = [...model.channels.values(), ...model.sources.values(), ...model.sinks.values()];
  for (const c of components) {
    for (const claim of c.definition.claims?.(c.options, { storagePath: (p) => p }) ?? []) {
      const owner = otherOwner(claim.file);
      if (owner) held.push(`${claim.what} of ${c.kind} ${c.name} is in use by process ${owner.pid}${owner.what ? ` (${owner.what})` : ""} (lock file ${claim.file})`);
    }
  }
  if (held.length > 0) throw new ClaimedByOtherProcessError(`agent ${agent} not started: ${held.join("; ")}; stop that process or give this agent its own directories`);
}
