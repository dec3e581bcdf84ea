import path from "node:path";
import { createAgentLogger, LOG_LEVELS, levelFromFlumeRootLogger, type LogFormat, type LogLevel } from "../agent/logging.ts";
import { AgentService } from "../agent/service.ts";
import { installSignalHandlers } from "../agent/signals.ts";
import * as registry from "../components/registry.ts";
import { formatProblem } from "../config/problems.ts";
import { AGENT_FILE_ARGS, type ArgsSpec, FLUME_NG_ARGS, nonNegative, oneOf, type Parsed, parseCommandLine, port, UsageError } from "./args.ts";
import { command } from "./command.ts";
import { appliedSettings, DEFAULT_RUNTIME_PROFILE, RUNTIME_PROFILES, type RuntimeProfile } from "./runtime-tuning.ts";
import { humanReport } from "./validate.ts";
import { ConfigReadError, loadConfigFile, loadConfigText } from "../config/load.ts";
import { systemClock } from "../core/clock.ts";

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

/** Exit codes of `flume run` (see src/agent/service.ts). */
export { EXIT } from "../agent/service.ts";

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
  const service = new AgentService(result.model, {
    logger: log,
    clock: systemClock,
    drainTimeoutMs: o.drainTimeoutMs,
    failFastSec: o.failFastSec,
    metrics: o.metricsPort === undefined ? undefined : { port: o.metricsPort, bind: o.metricsBind },
    statsIntervalSec: o.quiet ? 0 : o.statsIntervalSec,
    releaseMemorySec: o.releaseMemorySec,
    trace: o.trace ? { file: o.trace, maxBytes: o.traceMaxBytes } : undefined,
    config: { file, displayName: o.file, text: loadedText, load: (text) => loadConfig(text, file, o), lenient: o.lenient, strict: o.strict, pollIntervalSec: o.reload ? o.pollIntervalSec : 0 },
  });
  service.once("started", normalJitPolicy);
  const removeSignalHandlers = installSignalHandlers(service, log);
  // A failed start is logged by the service and ends it with its exit code.
  await service.start().catch(() => {});
  const code = await service.exited;
  removeSignalHandlers();
  return code;
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
