import { readFileSync } from "node:fs";
import path from "node:path";
import { Agent } from "../agent/agent.ts";
import { ConfigReloader } from "../agent/reload.ts";
import { componentLogger, createAgentLogger } from "../agent/logging.ts";
import { StatsReporter } from "../agent/stats.ts";
import * as registry from "../components/registry.ts";
import { formatProblem } from "../config/problems.ts";
import { decodeProperties } from "../config/properties.ts";
import { AGENT_FILE_ARGS, type ArgsSpec, FLUME_NG_ARGS, nonNegative, type Parsed, parseCommandLine, port, UsageError } from "./args.ts";
import { command } from "./command.ts";
import { humanReport } from "./validate.ts";
import { validateConfigText } from "../config/validate.ts";
import { systemClock } from "../core/clock.ts";
import { MetricsServer } from "../monitoring/http-server.ts";
import { liveTracer } from "../simulate/trace.ts";

export interface RunOptions {
  file: string;
  name?: string;
  sysProps: Record<string, string>;
  reload: boolean;
  pollIntervalSec: number;
  metricsPort?: number;
  metricsBind: string;
  lenient: boolean;
  quiet: boolean;
  drainTimeoutMs: number;
  statsIntervalSec: number;
  /** Record every channel transaction to this file (JSON lines, see src/simulate/trace.ts). */
  trace?: string;
  traceMaxBytes: number;
}

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
  "metrics-bind": { type: "string", default: "0.0.0.0", description: "Address for the metrics server" },
  lenient: { type: "boolean", description: "Start with broken components dropped, as Flume does, instead of refusing" },
  quiet: { type: "boolean", alias: "q", description: "No periodic stats line" },
  "drain-timeout": { type: "string", parse: nonNegative, default: "5000", description: "Milliseconds sinks get to drain channels on shutdown" },
  "stats-interval": { type: "string", parse: nonNegative, default: "10", description: "Seconds between stats lines (0: none)" },
  trace: { type: "string", description: "Record every channel transaction to this file as JSON lines (for flume replay)" },
  "trace-max-bytes": { type: "string", parse: nonNegative, default: String(DEFAULT_TRACE_MAX_BYTES), description: "Stop recording the trace beyond this many bytes" },
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
  const options: RunOptions = {
    file: a["conf-file"],
    name: a.name,
    sysProps,
    reload: !a["no-reload-conf"],
    pollIntervalSec: a["poll-interval"],
    metricsPort,
    metricsBind: a["metrics-bind"],
    lenient: a.lenient,
    quiet: a.quiet,
    drainTimeoutMs: a["drain-timeout"],
    statsIntervalSec: a["stats-interval"],
    trace: a.trace,
    traceMaxBytes: a["trace-max-bytes"],
  };
  return { options, notes };
}

function loadConfig(text: string, file: string, o: RunOptions) {
  return validateConfigText(text, file, { agentName: o.name, sysProps: o.sysProps }, registry);
}

/** Runs an agent until SIGINT or SIGTERM; resolves with the exit code. */
export async function runAgent(o: RunOptions, notes: string[] = []): Promise<number> {
  const log = createAgentLogger({});
  for (const n of notes) log.info(n);
  const file = path.resolve(o.file);
  let result;
  // Read before the config is parsed: a save during the start is then seen by the first poll.
  let loadedText = "";
  try {
    loadedText = decodeProperties(readFileSync(file));
    result = loadConfig(loadedText, file, o);
  } catch (err) {
    log.error(`cannot read ${o.file}: ${(err as Error).message}`);
    return 2;
  }
  const errors = result.problems.filter((p) => p.severity === "error");
  if (errors.length > 0 && !o.lenient) {
    // The same report as `flume validate`.
    process.stderr.write(humanReport(result, o.file).text);
  } else {
    for (const p of result.problems) (p.severity === "error" ? log.error : log.warn)(formatProblem(p));
  }
  if (!result.model) return 1;
  if (errors.length > 0) {
    if (!o.lenient) {
      log.error(`${errors.length} error(s) in ${o.file}; not starting (fix them, or use --lenient to drop the broken components as Flume does)`);
      return 1;
    }
    for (const w of result.model.dropped) log.warn(w);
  }
  const config = result.model;
  let tracer: ReturnType<typeof liveTracer> | null = null;
  if (o.trace) {
    try {
      tracer = liveTracer(o.trace, systemClock, o.traceMaxBytes);
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
  let stopping = false;
  let resolveExit: (code: number) => void = () => {};
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal} received: stopping agent ${config.agent}`);
    if (reloadTimer) clearInterval(reloadTimer);
    stats?.stop();
    try {
      await agent.stop();
      await metrics?.stop();
      if (tracer) {
        const t = tracer.finish();
        log.info(`trace written to ${o.trace}: ${t.accepted} events accepted, ${t.deliveredUnique} delivered (check it with: flume replay ${o.trace})`);
      }
      log.success(`agent ${config.agent} stopped`);
      resolveExit(0);
    } catch (err) {
      log.error(`error while stopping: ${(err as Error).message}`);
      resolveExit(1);
    }
  };
  const onSigint = () => void shutdown("SIGINT");
  const onSigterm = () => void shutdown("SIGTERM");
  process.on("SIGINT", onSigint);
  process.on("SIGTERM", onSigterm);
  const finish = (code: number) => {
    process.off("SIGINT", onSigint);
    process.off("SIGTERM", onSigterm);
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
  const c = agent.components;
  // A component whose start failed (a port in use) is retried by the supervisor: said apart.
  const failed = agent.notStarted();
  const isFailed = (kind: string, name: string) => failed.some((f) => f.kind === kind && f.name === name);
  const retrying = failed.length > 0 ? `; not started yet, retrying: ${failed.map((f) => `${f.kind === "source" ? "" : `${f.kind} `}${f.name} (${f.error})`).join(", ")}` : "";
  log.success(
    `agent ${config.agent} started: sources [${[...c.sources.keys()].filter((n) => !isFailed("source", n)).join(", ")}], channels [${[...c.channels.keys()].filter((n) => !isFailed("channel", n)).join(", ")}], sinks [${[...c.runners.values()].filter((r) => !isFailed("sink runner", r.name)).flatMap((r) => r.sinks.map((s) => s.name)).join(", ")}]${retrying}`,
  );

  if (o.metricsPort !== undefined) {
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

  if (o.reload && o.pollIntervalSec > 0) {
    const reloader = new ConfigReloader(agent, { file, displayName: o.file, load: (text) => loadConfig(text, file, o), lenient: o.lenient, log, loadedText });
    reloadTimer = setInterval(() => void reloader.poll(), o.pollIntervalSec * 1000);
  }

  return finish(await exited);
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
