import { readFileSync } from "node:fs";
import path from "node:path";
import { type ArgsDef, defineCommand } from "citty";
import { Agent } from "../agent/agent.ts";
import { ConfigReloader } from "../agent/reload.ts";
import { componentLogger, createAgentLogger } from "../agent/logging.ts";
import { StatsReporter } from "../agent/stats.ts";
import * as registry from "../components/registry.ts";
import { formatProblem } from "../config/problems.ts";
import { decodeProperties } from "../config/properties.ts";
import { ArgReader, UsageError } from "./args.ts";
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

export { UsageError };

/**
 * Parses `flume run` arguments, accepting flume-ng's spellings too: `agent` as a first word,
 * `--conf-file`, `--name`, `-c/--conf` (ignored), `--no-reload-conf`, `-Dk=v` or `-D k=v`.
 */
export function parseRunArgs(argv: string[]): { options: RunOptions; notes: string[] } {
  const notes: string[] = [];
  const o: RunOptions = {
    file: "",
    sysProps: {},
    reload: true,
    pollIntervalSec: 30,
    metricsBind: "0.0.0.0",
    lenient: false,
    quiet: false,
    drainTimeoutMs: 5000,
    statsIntervalSec: 10,
    traceMaxBytes: DEFAULT_TRACE_MAX_BYTES,
  };
  const r = new ArgReader(argv[0] === "agent" ? argv.slice(1) : argv);
  for (let arg = r.next(); arg !== undefined; arg = r.next()) {
    switch (arg) {
      case "-f":
      case "--conf-file":
      case "--file":
        o.file = r.value(arg);
        break;
      case "-n":
      case "--name":
        o.name = r.value(arg);
        break;
      case "-c":
      case "--conf":
        notes.push(`${arg} ${r.value(arg)} ignored: Flume TS needs no conf directory (logging goes to stderr)`);
        break;
      case "--no-reload-conf":
        o.reload = false;
        break;
      case "--poll-interval":
        o.pollIntervalSec = r.number(arg);
        break;
      case "--metrics-port":
        o.metricsPort = r.number(arg);
        break;
      case "--metrics-bind":
        o.metricsBind = r.value(arg);
        break;
      case "--lenient":
        o.lenient = true;
        break;
      case "--quiet":
      case "-q":
        o.quiet = true;
        break;
      case "--drain-timeout":
        o.drainTimeoutMs = r.number(arg);
        break;
      case "--stats-interval":
        o.statsIntervalSec = r.number(arg);
        break;
      case "--trace":
        o.trace = r.value(arg);
        break;
      case "--trace-max-bytes":
        o.traceMaxBytes = r.number(arg);
        break;
      case "-D":
      case "--define": {
        const kv = r.value(arg);
        addSysProp(o, kv);
        break;
      }
      default:
        if (arg.startsWith("-D") && arg.length > 2) addSysProp(o, arg.slice(2));
        else throw new UsageError(`unknown option "${r.raw}"`);
    }
  }
  if (!o.file) throw new UsageError("missing the configuration file: flume run -f FILE [-n AGENT]");
  const mtype = o.sysProps["flume.monitoring.type"];
  if (mtype !== undefined) {
    if (mtype.toLowerCase() !== "http") throw new UsageError(`-Dflume.monitoring.type=${mtype}: only "http" monitoring is available`);
    const port = o.sysProps["flume.monitoring.port"] ?? "41414";
    o.metricsPort ??= r.number("-Dflume.monitoring.port", port);
  }
  if (o.metricsPort !== undefined && (!Number.isInteger(o.metricsPort) || o.metricsPort > 65535)) {
    throw new UsageError(`the metrics port must be a whole number from 0 to 65535, got ${o.metricsPort}`);
  }
  return { options: o, notes };
}

function addSysProp(o: RunOptions, kv: string): void {
  const eq = kv.indexOf("=");
  if (eq <= 0) throw new UsageError(`-D needs key=value, got "${kv}"`);
  o.sysProps[kv.slice(0, eq)] = kv.slice(eq + 1);
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

const HELP_ARGS = {
  "conf-file": { type: "string", alias: "f", description: "The Flume properties file (flume-ng: --conf-file)" },
  name: { type: "string", alias: "n", description: "The agent to run; optional when the file configures one agent" },
  conf: { type: "string", alias: "c", description: "Accepted for flume-ng compatibility and ignored" },
  "no-reload-conf": { type: "boolean", description: "Do not reload the file when it changes" },
  "poll-interval": { type: "string", description: "Seconds between checks of the file for changes (default 30)" },
  "metrics-port": { type: "string", description: "Serve /metrics (Flume's JSON) and /prometheus on this port" },
  "metrics-bind": { type: "string", description: "Address for the metrics server (default 0.0.0.0)" },
  lenient: { type: "boolean", description: "Start with broken components dropped, as Flume does, instead of refusing" },
  quiet: { type: "boolean", alias: "q", description: "No periodic stats line" },
  "drain-timeout": { type: "string", description: "Milliseconds sinks get to drain channels on shutdown (default 5000)" },
  "stats-interval": { type: "string", description: "Seconds between stats lines (default 10)" },
  trace: { type: "string", description: "Record every channel transaction to this file as JSON lines (for flume replay)" },
  "trace-max-bytes": { type: "string", description: "Stop recording the trace beyond this many bytes (default 256 MiB)" },
  define: {
    type: "string",
    alias: "D",
    valueHint: "key=value",
    description: "A system property, as -Dkey=value (repeatable): ${sys:key}, flume.monitoring.type=http, flume.monitoring.port=N",
  },
} satisfies ArgsDef;

export function makeRunCommand(name: string, description: string) {
  return defineCommand({
    meta: { name, description },
    args: HELP_ARGS,
    async run({ rawArgs }) {
      let parsed;
      try {
        parsed = parseRunArgs(rawArgs);
      } catch (err) {
        if (err instanceof UsageError) {
          console.error(`flume ${name}: ${err.message}`);
          process.exit(2);
        }
        throw err;
      }
      const code = await runAgent(parsed.options, parsed.notes);
      process.exit(code);
    },
  });
}

export const run = makeRunCommand("run", "Run an agent from a Flume properties file (flume-ng agent)");
export const agentAlias = makeRunCommand("agent", "Same as run, spelled as flume-ng's `agent` command");
