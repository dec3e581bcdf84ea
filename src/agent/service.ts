/**
 * The agent as a service: what a process around an Agent does while it runs. It starts the
 * agent, says when every component is up (or gives up with --fail-fast), serves metrics, writes
 * the stats line, returns idle memory to the system, records a trace, reloads the configuration
 * when its file changes, and stops with a drain, ending with the exit code `flume run` uses.
 * `flume run`, EmbeddedAgent and tests drive it the same way; signals are a separate piece the
 * CLI installs (src/agent/signals.ts).
 */
import { EventEmitter } from "node:events";
import type { Clock } from "../core/clock.ts";
import { systemClock } from "../core/clock.ts";
import { FlumeError } from "../core/errors.ts";
import { type Logger, silentLogger } from "../core/logger.ts";
import * as registry from "../components/registry.ts";
import { loadConfigText } from "../config/load.ts";
import type { AgentModel } from "../config/model.ts";
import type { ParseOptions } from "../config/flume-config.ts";
import { formatProblem, type Problem } from "../config/problems.ts";
import type { LoadResult } from "../config/validate.ts";
import type { MetricsServer, Readiness } from "../monitoring/http-server.ts";
import type { liveTracer } from "../simulate/trace.ts";
import { Agent } from "./agent.ts";
import { IdleMemoryRelease } from "./idle-release.ts";
import { type AgentLogger, componentLogger } from "./logging.ts";
import { canReleaseMemory, releaseProcessMemory } from "./process-memory.ts";
import { ConfigReloader } from "./reload.ts";
import { StatsReporter } from "./stats.ts";

/**
 * Exit codes of `flume run`: 0 stopped with nothing accepted dropped; 1 did not start (invalid
 * configuration, a directory another agent holds, --fail-fast ran out) or failed to stop; 2
 * bad command line; 3 stopped, but a memory channel still held events (lost).
 */
export const EXIT = { ok: 0, notStarted: 1, usage: 2, eventsLost: 3 } as const;

/** The configuration file behind the model: read again by reload() and, when polled, on changes. */
export interface ServiceConfigFile {
  /** The file, resolved. */
  file: string;
  /** As the user named it, for messages (default: file). */
  displayName?: string;
  /** The text the model was loaded from: a save made during the start is then seen by the first poll. */
  text: string;
  /** Parses and checks a new text of the file. */
  load(text: string): LoadResult | Promise<LoadResult>;
  /** Seconds between looks at the file (0 or undefined: only on reload()). */
  pollIntervalSec?: number;
  /** A reloaded file with errors starts without its broken components instead of being refused. */
  lenient?: boolean;
  /** Warnings refuse a reloaded file as errors do. */
  strict?: boolean;
}

export interface AgentServiceOptions {
  /** The agent's log; a Logger without success() gets those lines at info. Default: silent. */
  logger?: AgentLogger | Logger;
  clock?: Clock;
  /** How long a graceful stop lets sinks drain the channels (ms, default 5000). */
  drainTimeoutMs?: number;
  /** Seconds every component gets to start before the service stops with exit 1 (undefined: retry forever). */
  failFastSec?: number;
  /** Serve /metrics (Flume's JSON) and /prometheus. */
  metrics?: { port: number; bind?: string };
  /** Seconds between stats lines (0 or undefined: none). */
  statsIntervalSec?: number;
  /** Seconds without events after which unused memory goes back to the system (0 or undefined: never). */
  releaseMemorySec?: number;
  /** Record every channel transaction to this file (JSON lines, see src/simulate/trace.ts). */
  trace?: { file: string; maxBytes: number };
  /** The file the configuration came from; without it reload() has nothing to read. */
  config?: ServiceConfigFile;
  /** Log why a start failed (default true); false when the caller handles the thrown ServiceStartError itself. */
  logStartFailure?: boolean;
}

export interface ReloadOutcome {
  kept: string[];
  started: string[];
  stopped: string[];
}

/** What a service reports as it runs; listen with on()/once(). */
export interface AgentServiceEvents {
  /** The agent was started; some components may still be retrying. */
  started: [];
  /** Every component has started. */
  ready: [];
  /** A new configuration was applied. */
  reloaded: [ReloadOutcome];
  /** A stop began: why. */
  stopping: [string];
  /** The service ended, with the exit code `flume run` returns. */
  stopped: [number];
}

/** The service did not start; what went wrong was logged, and `exited` holds the code. */
export class ServiceStartError extends FlumeError {
  constructor(
    message: string,
    readonly exitCode: number,
    cause?: unknown,
  ) {
    super(message, { cause });
  }
}

/** A configuration text with errors (or warnings, when strict) refused before anything was built. */
export class ConfigRejectedError extends FlumeError {
  constructor(
    readonly file: string,
    readonly problems: Problem[],
  ) {
    super(`${problems.length} problem(s) in ${file}; not starting:\n${problems.map((p) => `  ${formatProblem(p)}`).join("\n")}`);
  }
}

function isAgentLogger(logger: AgentLogger | Logger): logger is AgentLogger {
  return "withTag" in logger && "success" in logger;
}

/** Logging the service needs: the agent's logger, with success() falling back to info(). */
function serviceLog(logger: AgentLogger | Logger): Logger & { success(m: string): void } {
  const success = isAgentLogger(logger) ? (m: string) => logger.success(m) : (m: string) => logger.info(m);
  return { debug: (m) => logger.debug(m), info: (m) => logger.info(m), warn: (m) => logger.warn(m), error: (m) => logger.error(m), success };
}

export class AgentService extends EventEmitter<AgentServiceEvents> {
  /** The running agent: its counters are what /metrics serves. */
  readonly agent: Agent;
  /** Resolves with the exit code once the service has ended (stopped, or failed to start). */
  readonly exited: Promise<number>;
  /** Said after "stopping agent ..." on how to cut the drain short (set by whoever handles signals). */
  stopHint: string | undefined;

  private readonly log: Logger & { success(m: string): void };
  private readonly clock: Clock;
  private readonly drainTimeoutMs: number;
  private tracer: ReturnType<typeof liveTracer> | null = null;
  private metrics: MetricsServer | null = null;
  private stats: StatsReporter | null = null;
  private idleRelease: IdleMemoryRelease | null = null;
  private reloader: ConfigReloader | null = null;
  private reloadTimer: ReturnType<typeof setInterval> | null = null;
  private readyTimer: ReturnType<typeof setInterval> | null = null;
  private starting: Promise<void> | null = null;
  private stopping = false;
  private ended = false;
  /** The start failed: that ends the service (exit 1), whatever a stop meanwhile would say. */
  private startFailed = false;
  private resolveExit: (code: number) => void = () => {};

  constructor(
    readonly model: AgentModel,
    private readonly o: AgentServiceOptions = {},
  ) {
    super();
    const logger = o.logger ?? silentLogger;
    this.log = serviceLog(logger);
    this.clock = o.clock ?? systemClock;
    this.drainTimeoutMs = o.drainTimeoutMs ?? 5000;
    this.exited = new Promise<number>((resolve) => (this.resolveExit = resolve));
    // Built now, so a stop() during the start reaches it: the agent runs the stop after its start.
    this.agent = new Agent(model.agent, {
      // The tracer is made by start(); channels are built after it, so the wrapper finds it there.
      wrapChannel: o.trace ? (channel, m) => (this.tracer ? this.tracer.wrapChannel(channel, m) : channel) : undefined,
      clock: this.clock,
      logger,
      componentLogger: isAgentLogger(logger) ? (name) => componentLogger(logger, name) : undefined,
      drainTimeout: this.drainTimeoutMs,
    });
  }

  /** The agent's name in the configuration. */
  get name(): string {
    return this.model.agent;
  }

  /** True once a stop has begun (or the start failed). */
  get isStopping(): boolean {
    return this.stopping;
  }

  /**
   * Starts the agent and everything around it. Resolves once it runs (or when a stop that came
   * during the start has been carried out); rejects with ServiceStartError when it did not start.
   */
  start(): Promise<void> {
    this.starting ??= this.doStart();
    return this.starting;
  }

  private async doStart(): Promise<void> {
    // Stopped before it was started: nothing to start.
    if (this.stopping) return;
    const o = this.o;
    const name = this.name;
    if (o.trace) {
      try {
        // Imported only when asked for, as the metrics server below: an agent loads what it uses.
        const { liveTracer } = await import("../simulate/trace.ts");
        this.tracer = liveTracer(o.trace.file, this.clock, o.trace.maxBytes, this.model);
      } catch (err) {
        return this.failStart(`cannot write the trace ${o.trace.file}: ${(err as Error).message}`, err);
      }
      // A stop() while the tracer was made: the agent never starts.
      if (this.stopping) return;
    }
    // Served before the components start: a start held by a peer (a broker that does not
    // answer takes its client's whole connect bound) must not keep /health and /ready silent.
    if (o.metrics) {
      const bind = o.metrics.bind ?? "0.0.0.0";
      const { MetricsServer } = await import("../monitoring/http-server.ts");
      const metrics = new MetricsServer(this.agent, o.metrics.port, bind, this.log);
      this.metrics = metrics;
      try {
        await metrics.start();
      } catch (err) {
        this.metrics = null;
        const message = `cannot serve metrics on ${bind}:${o.metrics.port}: ${(err as Error).message}`;
        // Stopping already: that stop ends the service with its own code.
        if (this.stopping) return this.log.error(message);
        return this.failStart(message, err);
      }
      if (this.stopping) {
        await metrics.stop();
        return;
      }
    }
    try {
      await this.agent.start(this.model);
    } catch (err) {
      return this.failStart(`agent ${name} failed to start: ${(err as Error).message}`, err, async () => {
        await this.agent.stop().catch(() => {});
        await this.metrics?.stop();
      });
    }
    if (this.stopping) return;
    reportStart(this.agent, name, this.log);
    this.emit("started");
    this.watchReadiness();

    if (o.statsIntervalSec) {
      this.stats = new StatsReporter(this.agent, this.clock, (line) => this.log.info(line), o.statsIntervalSec * 1000);
      this.stats.start();
    }
    const quietSec = o.releaseMemorySec ?? 0;
    if (quietSec > 0 && canReleaseMemory()) {
      const agent = this.agent;
      this.idleRelease = new IdleMemoryRelease(this.clock, () => eventsMoved(agent), () => process.memoryUsage.rss(), (after) => releaseMemory(after, quietSec, this.log), {
        quietMs: quietSec * 1000,
        atStart: true,
      });
      this.idleRelease.start();
    }

    const c = o.config;
    if (c) {
      const applier = { reload: (m: AgentModel) => this.apply(m) };
      const reloader = new ConfigReloader(applier, { file: c.file, displayName: c.displayName ?? c.file, load: c.load, lenient: c.lenient ?? false, strict: c.strict, log: this.log, loadedText: c.text });
      this.reloader = reloader;
      if (c.pollIntervalSec) this.reloadTimer = setInterval(() => void reloader.poll(), c.pollIntervalSec * 1000);
    }
  }

  /** Ends a start that failed: logged, what started stopped, exit 1, rejected. */
  private async failStart(message: string, cause: unknown, stopStarted?: () => Promise<void>): Promise<never> {
    if (this.o.logStartFailure !== false) this.log.error(message);
    this.stopping = true;
    this.startFailed = true;
    await stopStarted?.();
    this.end(EXIT.notStarted);
    throw new ServiceStartError(message, EXIT.notStarted, cause);
  }

  /**
   * Says when the last component has started; with fail-fast gives up when one does not in
   * time. Only starting counts: a started sink whose sends fail (its broker down) makes /ready
   * answer 503 under `failing`, but neither holds back "ready" nor ends the process (its
   * batches wait in the channel until the broker is back).
   */
  private watchReadiness(): void {
    if (this.agent.readiness().notStarted.length === 0) {
      this.emit("ready");
      return;
    }
    const startedAt = Date.now();
    const failFastSec = this.o.failFastSec;
    this.readyTimer = setInterval(() => {
      const r = this.agent.readiness();
      if (r.notStarted.length === 0) {
        this.clearReadyTimer();
        if (r.failing.length === 0) this.log.success(`agent ${this.name}: every component has started`);
        else this.log.warn(`agent ${this.name}: every component has started; ${failingText(r)}`);
        this.emit("ready");
      } else if (failFastSec !== undefined && Date.now() - startedAt >= failFastSec * 1000 && !this.stopping) {
        this.clearReadyTimer();
        this.log.error(`agent ${this.name}: ${r.notStarted.map((x) => `${x.kind} ${x.name}`).join(", ")} not started after ${failFastSec} s (--fail-fast); stopping (exit ${EXIT.notStarted})`);
        void this.shutdown("--fail-fast", EXIT.notStarted);
      }
    }, 250);
  }

  private clearReadyTimer(): void {
    if (this.readyTimer) clearInterval(this.readyTimer);
    this.readyTimer = null;
  }

  private async apply(model: AgentModel): Promise<ReloadOutcome> {
    const r = await this.agent.reload(model);
    this.emit("reloaded", r);
    return r;
  }

  /**
   * Reads the configuration file again and applies it now, even when it looks unchanged; a file
   * with errors keeps the running configuration (logged). False when there is nothing to reload:
   * no file, not started yet, or stopping.
   */
  async reload(): Promise<boolean> {
    if (this.stopping || !this.reloader) return false;
    await this.reloader.reloadNow();
    return true;
  }

  /**
   * Stops gracefully: sources stop, sinks drain the channels for up to drainTimeoutMs, then
   * everything closes. Resolves with the exit code; a second call returns the same promise.
   */
  stop(reason = "stop requested"): Promise<number> {
    if (!this.stopping) void this.shutdown(reason);
    return this.exited;
  }

  /** Cuts a graceful stop short: the drain ends now, and what memory channels still hold is lost (exit 3). */
  stopNow(): Promise<number> {
    this.agent.stopNow();
    return this.stop();
  }

  private async shutdown(reason: string, failure?: number): Promise<void> {
    this.stopping = true;
    this.emit("stopping", reason);
    const hint = this.stopHint ? `; ${this.stopHint}` : "";
    this.log.info(`${reason}: stopping agent ${this.name} (sinks drain the channels for up to ${this.drainTimeoutMs} ms${hint})`);
    if (this.reloadTimer) clearInterval(this.reloadTimer);
    this.reloadTimer = null;
    this.clearReadyTimer();
    this.stats?.stop();
    this.idleRelease?.stop();
    let code: number;
    try {
      await this.agent.stop();
      if (this.startFailed) return;
      await this.metrics?.stop();
      if (this.tracer && this.o.trace) {
        const t = this.tracer.finish();
        this.log.info(`trace written to ${this.o.trace.file}: ${t.accepted} events accepted, ${t.deliveredUnique} delivered (check it with: flume replay ${this.o.trace.file})`);
      }
      if (failure !== undefined) {
        code = failure;
      } else if (this.agent.lostAtStop > 0) {
        this.log.error(`agent ${this.name} stopped; ${this.agent.lostAtStop} accepted events left in memory channels were lost (exit ${EXIT.eventsLost})`);
        code = EXIT.eventsLost;
      } else {
        this.log.success(`agent ${this.name} stopped`);
        code = EXIT.ok;
      }
    } catch (err) {
      this.log.error(`error while stopping: ${(err as Error).message}`);
      code = EXIT.notStarted;
    }
    this.end(code);
  }

  private end(code: number): void {
    if (this.ended) return;
    this.ended = true;
    this.clearReadyTimer();
    this.resolveExit(code);
    this.emit("stopped", code);
  }
}

export interface StartFromTextOptions extends AgentServiceOptions, ParseOptions {
  /** Where the text came from, for messages (and, with watch, the file reload() reads). */
  file?: string;
  /** Start without the broken components instead of refusing. */
  lenient?: boolean;
  /** Warnings refuse the start as errors do. */
  strict?: boolean;
  /** Seconds between looks at `file` for changes (0 or undefined: only on reload()). */
  pollIntervalSec?: number;
}

/**
 * Starts an agent from the text of a Flume properties file, as `flume run` does from the file:
 * custom component modules are imported, problems refuse the start (ConfigRejectedError) unless
 * lenient, and, given the file, reload() reads it again.
 */
export async function startAgentService(text: string, o: StartFromTextOptions = {}): Promise<AgentService> {
  const file = o.file ?? "<config>";
  const load = (t: string) => loadConfigText(t, file, { agentName: o.agentName, sysProps: o.sysProps }, registry);
  const result = await load(text);
  const refusing = result.problems.filter((p) => p.severity === "error" || o.strict);
  if (!result.model || (refusing.length > 0 && !o.lenient)) throw new ConfigRejectedError(file, refusing);
  const service = new AgentService(result.model, {
    ...o,
    config: o.file === undefined ? o.config : { file: o.file, text, load, lenient: o.lenient, strict: o.strict, pollIntervalSec: o.pollIntervalSec },
  });
  await service.start();
  return service;
}

/** A sum that changes whenever events move: received by sources, put into or taken from channels. */
function eventsMoved(agent: Agent): number {
  let n = 0;
  const { sources, channels } = agent.components;
  for (const s of sources.values()) n += s.source.counter.values.EventReceivedCount;
  for (const c of channels.values()) n += c.channel.counter.values.EventPutSuccessCount + c.channel.counter.values.EventTakeSuccessCount;
  return n;
}

/**
 * Right after the start a load may be running already: the binary's code pages are only
 * unmapped (paging them out takes ten times as long), and nothing is collected (the heap holds
 * little yet, and the code being compiled is what runs next; with both, seq -> memory -> null
 * measured 10.2 instead of 10.9 M events/s).
 */
async function releaseMemory(after: "start" | "quiet", quietSec: number, log: { debug(m: string): void; warn(m: string): void }): Promise<void> {
  try {
    const t0 = performance.now();
    const r = await releaseProcessMemory(after === "start" ? { collect: false, codePages: "unmap" } : { collect: true, codePages: "pageout" });
    const mb = (bytes: number) => (bytes / (1024 * 1024)).toFixed(1);
    const code = r.codePages === "pageout" ? " (code pages of the binary paged out)" : r.codePages === "unmap" ? " (code pages of the binary unmapped, kept in the page cache)" : "";
    log.debug(`${after === "start" ? "started" : `no events for ${quietSec} s`}: returned unused memory to the system in ${(performance.now() - t0).toFixed(0)} ms, RSS ${mb(r.rssBefore)} -> ${mb(r.rssAfter)} MB${code}`);
  } catch (err) {
    log.warn(`could not return unused memory to the system: ${(err as Error).message} (--release-memory 0 turns this off)`);
  }
}

/**
 * The start line: "started" only when every component runs; otherwise how many did and why the
 * others did not (the supervisor retries them).
 */
function reportStart(agent: Agent, name: string, log: { success(m: string): void; warn(m: string): void }): void {
  const c = agent.components;
  const list = `sources [${[...c.sources.keys()].join(", ")}], channels [${[...c.channels.keys()].join(", ")}], sinks [${[...c.runners.values()].flatMap((r) => r.sinks.map((s) => s.name)).join(", ")}]`;
  const r = agent.readiness();
  if (r.notStarted.length === 0) {
    if (r.failing.length === 0) log.success(`agent ${name} started: ${list}`);
    else log.warn(`agent ${name} started: ${list}; ${failingText(r)}`);
    return;
  }
  const total = c.sources.size + c.channels.size + c.runners.size;
  const why = [...r.notStarted.map((x) => `${x.kind} ${x.name} not started: ${x.error ?? x.state}`), ...(r.failing.length > 0 ? [failingText(r)] : [])].join("; ");
  log.warn(`agent ${name} started ${total - r.notStarted.length} of ${total} components; ${why}, retrying (backing off up to every ${agent.retryIntervalMs / 1000} s)`);
}

/** The started sinks whose sends fail, for a log line: "sink k1 failing since ...: error". */
function failingText(r: Readiness): string {
  return r.failing.map((x) => `${x.kind} ${x.name} failing since ${x.since}: ${x.error}`).join("; ");
}
