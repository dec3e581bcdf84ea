import path from "node:path";
import { Agent } from "../agent/agent.ts";
import { ConfigReloader } from "../agent/reload.ts";
import { componentLogger, createAgentLogger, LOG_LEVELS, levelFromFlumeRootLogger, type LogFormat, type LogLevel } from "../agent/logging.ts";
import { StatsReporter } from "../agent/stats.ts";
import { IdleMemoryRelease } from "../agent/idle-release.ts";
import { canReleaseMemory, releaseProcessMemory } from "../agent/process-memory.ts";
import * as registry from "../components/registry.ts";
import { formatProblem } from "../config/problems.ts";
import { AGENT_FILE_ARGS, type ArgsSpec, FLUME_NG_ARGS, nonNegative, oneOf, type Parsed, parseCommandLine, port, UsageError } from "./args.ts";
import { command } from "./command.ts";
import { appliedSettings, DEFAULT_RUNTIME_PROFILE, RUNTIME_PROFILES, type RuntimeProfile } from "./runtime-tuning.ts";
import { humanReport } from "./validate.ts";
import { ConfigReadError, loadConfigFile, loadConfigText } from "../config/load.ts";
import { systemClock } from "../core/clock.ts";
import type { MetricsServer } from "../monitoring/http-server.ts";
import type { liveTracer } from "../simulate/trace.ts";

export interface RunOptions {
  file: string;
  name?: string;
  sysProps: Record<string, string>;
  reload: boolean;
  pollIntervalSec: number;
  metricsPort?: number;
  metricsBind: string;
  lenient: boolean;
  /** Refuse to start (and to reload) on warnings too, as `flume validate --strict` counts them. */
  strict: boolean;
  quiet: boolean;
  drainTimeoutMs: number;
  statsIntervalSec: number;
  /** Record every channel transaction to this file (JSON lines, see src/simulate/trace.ts). */
  trace?: string;
  traceMaxBytes: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  /** Seconds every component gets to start before the process gives up with exit 1 (undefined: retry forever). */
  failFastSec?: number;
  /** Seconds without events after which unused memory goes back to the system (0: never). */
  releaseMemorySec: number;
  /** The JIT and collector settings asked for (applied before the start, by src/cli/runtime-tuning.ts). */
  runtimeProfile?: RuntimeProfile;
}

/**
 * Exit codes of `flume run`: 0 stopped with nothing accepted dropped; 1 did not start (invalid
 * configuration, a directory another agent holds, --fail-fast ran out) or failed to stop; 2
 * bad command line; 3 stopped, but a memory channel still held events (lost).
 */
export const EXIT = { ok: 0, notStarted: 1, usage: 2, eventsLost: 3 } as const;

/** What a bare --fail-fast waits for a component to start. */
const DEFAULT_FAIL_FAST_SEC = 30;

/** Default size bound of `--trace`: the recording stops (with a "truncated" line) beyond it. */
export const DEFAULT_TRACE_MAX_BYTES = 256 * 1024 * 1024;

/** `flume run`'s options, with flume-ng's spellings: `--conf-file`, `--name`, `-c` (ignored), `-Dk=v`, `--no-reload-conf`. */
const RUN_ARGS = {
  ...AGENT_FILE_ARGS,
  ...FLUME_NG_ARGS,
  define: {
    ...FLUME_NG_ARGS.define,
    description: "A system property, as -Dkey=value or -D key=value (repeatable): ${sys:key}, flume.monitoring.type=http, flume.monitoring.port=N",
  },
  "no-reload-conf": { type: "boolean", description: "Do not reload the file when it changes" },
  "poll-interval": { type: "string", parse: nonNegative, default: "30", description: "Seconds between checks of the file for changes" },
  "metrics-port": { type: "string", parse: port(0), description: "Serve /metrics (Flume's JSON) and /prometheus on this port" },
  "metrics-bind": { type: "string", default: "0.0.0.0", description: "Address for the metrics server: every interface by default, as Flume's, so another host can scrape it; 127.0.0.1 keeps it local" },
  lenient: { type: "boolean", description: "Start with broken components dropped, as Flume does, instead of refusing" },
  strict: { type: "boolean", description: "Treat warnings (an unknown property, a misspelt key) as errors: refuse to start, as validate --strict" },
  quiet: { type: "boolean", alias: "q", description: "No periodic stats line" },
  "drain-timeout": { type: "string", parse: nonNegative, default: "5000", description: "Milliseconds sinks get to drain channels on shutdown" },
  "release-memory": {
    type: "string",
    parse: nonNegative,
    default: "3",
    description: "Seconds without events after which the agent returns memory it no longer uses to the system after a burst; it also does once right after the start (Bun only; 0: never)",
  },
  "stats-interval": { type: "string", parse: nonNegative, default: "10", description: "Seconds between stats lines (0: none)" },
  "runtime-profile": {
    type: "string",
    parse: oneOf(...(Object.keys(RUNTIME_PROFILES) as RuntimeProfile[])),
    default: DEFAULT_RUNTIME_PROFILE,
    description: "Bun's JIT and collector settings: footprint (smaller memory peaks, about a quarter more CPU per event) or throughput (Bun's defaults), as the README's \"Footprint on an edge host\" measures",
  },
  trace: { type: "string", description: "Record every channel transaction to this file as JSON lines (for flume replay)" },
  "trace-max-bytes": { type: "string", parse: nonNegative, default: String(DEFAULT_TRACE_MAX_BYTES), description: "Stop recording the trace beyond this many bytes" },
  "log-level": { type: "string", parse: oneOf(...LOG_LEVELS), description: "error, warn, info (default), debug or trace; also -Dflume.root.logger=LEVEL,console" },
  "log-format": { type: "string", parse: oneOf("text", "json"), default: "text", description: "text lines, or one JSON object a line" },
  "fail-fast": {
    type: "boolean",
    inline: nonNegative,
    description: `Exit 1 when a component has not started after ${DEFAULT_FAIL_FAST_SEC} s (--fail-fast=SECONDS for another limit) instead of retrying forever`,
  },
} as const satisfies ArgsSpec;

/** Parses `flume run` (or `flume agent`) arguments; a bad one throws a UsageError naming it. */
export function parseRunArgs(argv: readonly string[]): { options: RunOptions; notes: string[] } {
  return runOptions(parseCommandLine(argv, RUN_ARGS));
}

function runOptions(a: Parsed<typeof RUN_ARGS>): { options: RunOptions; notes: string[] } {
  const notes = a.conf === undefined ? [] : [`-c ${a.conf} ignored: Flume TS needs no conf directory (logging goes to stderr)`];
  if (!a["conf-file"]) throw new UsageError("missing the configuration file: flume run -f FILE [-n AGENT]");
  const sysProps = Object.fromEntries(a.define);
  let metricsPort = a["metrics-port"];
  const mtype = sysProps["flume.monitoring.type"];
  if (mtype !== undefined) {
    if (mtype.toLowerCase() !== "http") throw new UsageError(`-Dflume.monitoring.type=${mtype}: only "http" monitoring is available`);
    metricsPort ??= port(0)(sysProps["flume.monitoring.port"] ?? "41414", "-Dflume.monitoring.port");
  }
  let logLevel = a["log-level"];
  const rootLogger = sysProps["flume.root.logger"];
  if (logLevel === undefined && rootLogger !== undefined) {
    logLevel = levelFromFlumeRootLogger(rootLogger);
    if (logLevel === undefined) throw new UsageError(`-Dflume.root.logger=${rootLogger}: expected LEVEL,appender with LEVEL one of ERROR, WARN, INFO, DEBUG, TRACE`);
  }
  if (a.strict && a.lenient) throw new UsageError("--strict and --lenient contradict each other: --strict refuses warnings, --lenient starts despite errors");
  const failFast = a["fail-fast"];
  const options: RunOptions = {
    logLevel: logLevel ?? "info",
    logFormat: a["log-format"],
    failFastSec: failFast === false ? undefined : failFast === true ? DEFAULT_FAIL_FAST_SEC : failFast,
    file: a["conf-file"],
    name: a.name,
    sysProps,
    reload: !a["no-reload-conf"],
    pollIntervalSec: a["poll-interval"],
    metricsPort,
    metricsBind: a["metrics-bind"],
    lenient: a.lenient,
    strict: a.strict,
    quiet: a.quiet,
    drainTimeoutMs: a["drain-timeout"],
    statsIntervalSec: a["stats-interval"],
    releaseMemorySec: a["release-memory"],
    runtimeProfile: a["runtime-profile"],
    trace: a.trace,
    traceMaxBytes: a["trace-max-bytes"],
  };
  return { options, notes };
}

/** Parses the file once, imports the custom components it names, validates it. */
function loadConfig(text: string, file: string, o: RunOptions) {
  return loadConfigText(text, file, { agentName: o.name, sysProps: o.sysProps }, registry);
}

/** Runs an agent until SIGINT or SIGTERM; resolves with the exit code. */
export async function runAgent(o: RunOptions, notes: string[] = []): Promise<number> {
  const log = createAgentLogger({ level: o.logLevel, format: o.logFormat, agent: o.name });
  for (const n of notes) log.info(n);
  const jsc = appliedSettings();
  if (jsc.length > 0) log.debug(`runtime profile ${o.runtimeProfile ?? DEFAULT_RUNTIME_PROFILE}: runs with ${jsc.join(" ")} (--runtime-profile throughput for Bun's own settings)`);
  const file = path.resolve(o.file);
  let result;
  // Read before the config is parsed: a save during the start is then seen by the first poll.
  let loadedText = "";
  try {
    // Awaited only when the file names custom components: otherwise the start goes on in this tick.
    const { text, loaded } = loadConfigFile(file, { agentName: o.name, sysProps: o.sysProps }, registry);
    loadedText = text;
    result = loaded instanceof Promise ? await loaded : loaded;
  } catch (err) {
    log.error(`cannot read ${o.file}: ${err instanceof ConfigReadError ? err.reason : (err as Error).message}`);
    return 2;
  }
  // Under --strict a warning refuses the start as an error does.
  const errors = result.problems.filter((p) => p.severity === "error" || o.strict);
  if (errors.length > 0 && !o.lenient) {
    // The same report as `flume validate`.
    process.stderr.write(humanReport(result, o.file, o.strict).text);
  } else {
    for (const p of result.problems) (p.severity === "error" ? log.error : log.warn)(formatProblem(p));
  }
  if (!result.model) return 1;
  if (errors.length > 0) {
    if (!o.lenient) {
      const warnings = errors.filter((p) => p.severity === "warning").length;
      log.error(
        warnings === errors.length
          ? `${warnings} warning(s) in ${o.file} and --strict; not starting (fix them, or run without --strict)`
          : `${errors.length} error(s) in ${o.file}; not starting (fix them, or use --lenient to drop the broken components as Flume does)`,
      );
      return 1;
    }
    for (const w of result.model.dropped) log.warn(w);
  }
  const config = result.model;
  let tracer: ReturnType<typeof liveTracer> | null = null;
  if (o.trace) {
    try {
      // Imported only when asked for, as the metrics server below: an agent loads what it uses.
      const { liveTracer } = await import("../simulate/trace.ts");
      tracer = liveTracer(o.trace, systemClock, o.traceMaxBytes, result.model);
    } catch (err) {
      log.error(`cannot write the trace ${o.trace}: ${(err as Error).message}`);
      return 1;
    }
  }
  const agent = new Agent(config.agent, {
    wrapChannel: tracer?.wrapChannel,
    clock: systemClock,
    logger: log,
    componentLogger: (name) => componentLogger(log, name),
    drainTimeout: o.drainTimeoutMs,
  });
  // Handlers go in before the start: a SIGTERM during a long start (a file channel replaying
  // its log) stops the agent gracefully once started, instead of killing the process.
  let reloadTimer: ReturnType<typeof setInterval> | null = null;
  let metrics: MetricsServer | null = null;
  let stats: StatsReporter | null = null;
  let idleRelease: IdleMemoryRelease | null = null;
  let stopping = false;
  let resolveExit: (code: number) => void = () => {};
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  let reloader: ConfigReloader | null = null;
  const shutdown = async (signal: string, failure?: number) => {
    if (stopping) {
      // A second one: the drain ends now; what the channels still hold is reported as the stop closes them.
      log.warn(`${signal} received again: stopping at once, without waiting for the sinks to drain the channels`);
      agent.stopNow();
      return;
    }
    stopping = true;
    // Whoever pressed Ctrl-C is at a terminal: tell them the key, not a signal name.
    const again = signal === "SIGINT" ? "press Ctrl-C again (or send SIGTERM)" : "send SIGTERM again";
    log.info(`${failure === undefined ? `${signal} received` : signal}: stopping agent ${config.agent} (sinks drain the channels for up to ${o.drainTimeoutMs} ms; ${again} to stop at once)`);
    if (reloadTimer) clearInterval(reloadTimer);
    if (readyTimer) clearInterval(readyTimer);
    stats?.stop();
    idleRelease?.stop();
    try {
      await agent.stop();
      await metrics?.stop();
      if (tracer) {
        const t = tracer.finish();
        log.info(`trace written to ${o.trace}: ${t.accepted} events accepted, ${t.deliveredUnique} delivered (check it with: flume replay ${o.trace})`);
      }
      if (failure !== undefined) {
        resolveExit(failure);
      } else if (agent.lostAtStop > 0) {
        log.error(`agent ${config.agent} stopped; ${agent.lostAtStop} accepted events left in memory channels were lost (exit ${EXIT.eventsLost})`);
        resolveExit(EXIT.eventsLost);
      } else {
        log.success(`agent ${config.agent} stopped`);
        resolveExit(EXIT.ok);
      }
    } catch (err) {
      log.error(`error while stopping: ${(err as Error).message}`);
      resolveExit(EXIT.notStarted);
    }
  };
  const onSigint = () => void shutdown("SIGINT");
  const onSigterm = () => void shutdown("SIGTERM");
  // SIGHUP reloads the configuration now, as Vector and Fluent Bit do (Flume's JVM would exit).
  const onSighup = () => {
    if (stopping) return;
    log.info("SIGHUP received: reloading the configuration");
    void reloader?.reloadNow();
  };
  process.on("SIGINT", onSigint);
  process.on("SIGTERM", onSigterm);
  process.on("SIGHUP", onSighup);
  let readyTimer: ReturnType<typeof setInterval> | null = null;
  const finish = (code: number) => {
    process.off("SIGINT", onSigint);
    process.off("SIGTERM", onSigterm);
    process.off("SIGHUP", onSighup);
    if (readyTimer) clearInterval(readyTimer);
    return code;
  };

  try {
    await agent.start(config);
  } catch (err) {
    log.error(`agent ${config.agent} failed to start: ${(err as Error).message}`);
    await agent.stop().catch(() => {});
    return finish(1);
  }
  if (stopping) return finish(await exited);
  reportStart(agent, config.agent, log);
  normalJitPolicy();
  const startedAt = Date.now();
  if (!agent.readiness().ready) {
    // Say so when the last component has started; with --fail-fast give up when one does not in time.
    readyTimer = setInterval(() => {
      const r = agent.readiness();
      if (r.ready) {
        if (readyTimer) clearInterval(readyTimer);
        readyTimer = null;
        log.success(`agent ${config.agent}: every component has started`);
      } else if (o.failFastSec !== undefined && Date.now() - startedAt >= o.failFastSec * 1000 && !stopping) {
        if (readyTimer) clearInterval(readyTimer);
        readyTimer = null;
        log.error(`agent ${config.agent}: ${r.notStarted.map((x) => `${x.kind} ${x.name}`).join(", ")} not started after ${o.failFastSec} s (--fail-fast); stopping (exit ${EXIT.notStarted})`);
        void shutdown("--fail-fast", EXIT.notStarted);
      }
    }, 250);
  }

  if (o.metricsPort !== undefined) {
    const { MetricsServer } = await import("../monitoring/http-server.ts");
    metrics = new MetricsServer(agent, o.metricsPort, o.metricsBind, log);
    try {
      await metrics.start();
    } catch (err) {
      log.error(`cannot serve metrics on ${o.metricsBind}:${o.metricsPort}: ${(err as Error).message}`);
      metrics = null;
      if (stopping) return finish(await exited);
      await agent.stop();
      return finish(1);
    }
    if (stopping) {
      await metrics.stop();
      return finish(await exited);
    }
  }

  stats = o.quiet || o.statsIntervalSec === 0 ? null : new StatsReporter(agent, systemClock, (line) => log.info(line), o.statsIntervalSec * 1000);
  stats?.start();
  if (o.releaseMemorySec > 0 && canReleaseMemory()) {
    idleRelease = new IdleMemoryRelease(systemClock, () => eventsMoved(agent), () => process.memoryUsage.rss(), (after) => releaseMemory(after, o.releaseMemorySec, log), {
      quietMs: o.releaseMemorySec * 1000,
      atStart: true,
    });
    idleRelease.start();
  }

  reloader = new ConfigReloader(agent, { file, displayName: o.file, load: (text) => loadConfig(text, file, o), lenient: o.lenient, strict: o.strict, log, loadedText });
  if (o.reload && o.pollIntervalSec > 0) {
    const poller = reloader;
    reloadTimer = setInterval(() => void poller.poll(), o.pollIntervalSec * 1000);
  }

  return finish(await exited);
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
 * The compiled binary starts with the JIT reluctant to compile (scripts/build.ts), so code that
 * runs once at start stays interpreted and the JIT's own code is not paged in for it; once the
 * agent runs, hot paths get the normal policy.
 */
function normalJitPolicy(): void {
  const unsafe = (globalThis as { Bun?: { unsafe?: { setJITPolicy?(scale: number): void } } }).Bun?.unsafe;
  unsafe?.setJITPolicy?.(1);
}

/**
 * The start line: "started" only when every component runs; otherwise how many did and why the
 * others did not (the supervisor retries them).
 */
function reportStart(agent: Agent, name: string, log: { success(m: string): void; warn(m: string): void }): void {
  const c = agent.components;
  const list = `sources [${[...c.sources.keys()].join(", ")}], channels [${[...c.channels.keys()].join(", ")}], sinks [${[...c.runners.values()].flatMap((r) => r.sinks.map((s) => s.name)).join(", ")}]`;
  const r = agent.readiness();
  if (r.ready) {
    log.success(`agent ${name} started: ${list}`);
    return;
  }
  const total = c.sources.size + c.channels.size + c.runners.size;
  const why = r.notStarted.map((x) => `${x.kind} ${x.name} not started: ${x.error ?? x.state}`).join("; ");
  log.warn(`agent ${name} started ${total - r.notStarted.length} of ${total} components; ${why}, retrying every ${agent.retryIntervalMs / 1000} s`);
}

function runCommand(name: string, description: string) {
  return command({
    name,
    description,
    args: RUN_ARGS,
    run(args) {
      const { options, notes } = runOptions(args);
      return runAgent(options, notes);
    },
  });
}

export const run = runCommand("run", "Run an agent from a Flume properties file (flume-ng agent)");
export const agentAlias = runCommand("agent", "Same as run, spelled as flume-ng's `agent` command");
