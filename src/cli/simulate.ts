/**
 * `flume simulate`: runs the real core on virtual time with simulated sources and sinks and
 * injected faults, and reports whether every accepted event was delivered at least once.
 * Exit 0 when at-least-once held, 1 when it was violated, 2 on usage errors.
 */
import { writeFileSync } from "node:fs";
import { type ArgsDef, defineCommand } from "citty";
import { type Progress, simulateWithHistory } from "../simulate/engine.ts";
import { DEFAULTS, parseCount, parseDuration, parseDurations, parseFailSpec, parseRate, SimulationUsageError, type SimulationOptions } from "../simulate/options.ts";
import { htmlReport, jsonReport, textReport } from "../simulate/report.ts";
import { parseSeed } from "../simulate/rng.ts";
import { ArgReader } from "./args.ts";

export interface SimulateCli {
  options: SimulationOptions;
  json: boolean;
  html?: string;
  trace?: string;
  progress: boolean;
}

export function parseSimulateArgs(argv: string[]): SimulateCli {
  const o: SimulationOptions = { ...DEFAULTS, crashAt: [] };
  const cli: SimulateCli = { options: o, json: false, progress: true };
  const r = new ArgReader(argv, SimulationUsageError);
  for (let arg = r.next(); arg !== undefined; arg = r.next()) {
    switch (arg) {
      case "-f":
      case "--conf-file":
      case "--file":
        o.configFile = r.value(arg);
        break;
      case "-n":
      case "--name":
        o.agentName = r.value(arg);
        break;
      case "--events":
        o.events = parseCount(r.value(arg), arg, 1);
        break;
      case "--seed":
        o.seed = parseSeed(r.value(arg));
        break;
      case "--batch-size":
        o.batchSize = parseCount(r.value(arg), arg, 1);
        break;
      case "--rate":
        o.rate = parseCount(r.value(arg), arg, 0);
        break;
      case "--fail-sink":
        o.failSink = parseFailSpec(r.value(arg), arg);
        break;
      case "--fail-put":
        o.failPut = parseRate(r.value(arg), arg);
        break;
      case "--crash-at":
        o.crashAt = parseDurations(r.value(arg), arg);
        break;
      case "--sink-latency":
        o.sinkLatency = parseDuration(r.value(arg), arg);
        break;
      case "--max-time":
        o.maxTime = parseDuration(r.value(arg), arg);
        break;
      case "--channel": {
        const c = r.value(arg);
        if (c !== "memory" && c !== "file") throw new SimulationUsageError(`--channel: expected memory or file, got "${c}"`);
        o.channel = c;
        break;
      }
      case "--json":
        cli.json = true;
        break;
      case "--html":
        cli.html = r.value(arg);
        break;
      case "--trace":
        cli.trace = r.value(arg);
        break;
      case "--no-progress":
        cli.progress = false;
        break;
      default:
        throw new SimulationUsageError(`unknown option "${r.raw}" (see flume simulate --help)`);
    }
  }
  if (o.configFile && eqChannelGiven(argv)) throw new SimulationUsageError("--channel applies to the built-in demo; with -f the configured channels are used");
  return cli;
}

function eqChannelGiven(argv: string[]): boolean {
  return argv.some((a) => a === "--channel" || a.startsWith("--channel="));
}

/** A one-line progress bar on stderr, redrawn in place. */
function progressBar(): { update(p: Progress): void; clear(): void } {
  const width = 30;
  let drawn = false;
  let last = 0;
  return {
    update(p) {
      const now = performance.now();
      if (now - last < 100) return;
      last = now;
      const frac = Math.min(1, p.delivered / Math.max(1, p.total));
      const filled = Math.round(frac * width);
      process.stderr.write(`\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${(frac * 100).toFixed(0).padStart(3)}%  ${p.delivered.toLocaleString("en-US")} deliveries of ${p.total.toLocaleString("en-US")} events  t=${(p.time / 1000).toFixed(1)}s `);
      drawn = true;
    },
    clear() {
      if (drawn) process.stderr.write("\r\x1b[2K");
    },
  };
}

export async function runSimulateCli(argv: string[]): Promise<number> {
  let cli: SimulateCli;
  try {
    cli = parseSimulateArgs(argv);
  } catch (err) {
    if (err instanceof SimulationUsageError) {
      console.error(`flume simulate: ${err.message}`);
      return 2;
    }
    throw err;
  }
  const bar = cli.progress && process.stderr.isTTY ? progressBar() : null;
  let result;
  try {
    result = await simulateWithHistory(cli.options, { traceFile: cli.trace, onProgress: bar ? (p) => bar.update(p) : undefined });
  } catch (err) {
    bar?.clear();
    if (err instanceof SimulationUsageError) {
      console.error(`flume simulate: ${err.message}`);
      return 2;
    }
    console.error(`flume simulate: ${(err as Error).message}`);
    return 2;
  }
  bar?.clear();
  process.stdout.write(cli.json ? jsonReport(cli.options, result) : textReport(cli.options, result));
  if (cli.html) {
    writeFileSync(cli.html, htmlReport(cli.options, result));
    if (!cli.json) process.stdout.write(`chart written to ${cli.html}\n`);
  }
  if (cli.trace && !cli.json) process.stdout.write(`trace written to ${cli.trace} (check it with: flume replay ${cli.trace})\n`);
  return result.verdict.held ? 0 : 1;
}

const ARGS = {
  "conf-file": { type: "string", alias: "f", description: "Use this agent's channels, selectors, interceptors and sink groups (sources and sinks are simulated)" },
  name: { type: "string", alias: "n", description: "The agent in the file (optional when it configures one)" },
  events: { type: "string", description: `Events to send (default ${DEFAULTS.events})` },
  seed: { type: "string", description: "Seed of every random choice: the same seed gives the same output (default 1)" },
  "fail-sink": { type: "string", description: "Sink batch failures: a probability (0.2) or batch numbers (3,7-9)" },
  "fail-put": { type: "string", description: "Probability that a source's put transaction fails (the client retries)" },
  "crash-at": { type: "string", description: "Crash and restart the agent at these virtual times (500ms, 2s, ...)" },
  "sink-latency": { type: "string", description: `Virtual time one sink batch takes (default ${DEFAULTS.sinkLatency}ms)` },
  rate: { type: "string", description: `Events per virtual second the clients offer; 0 = unlimited (default ${DEFAULTS.rate})` },
  "batch-size": { type: "string", description: `Events per client batch (default ${DEFAULTS.batchSize})` },
  channel: { type: "string", description: "Channel of the built-in demo: memory (default) or file (a real file channel in a temp dir)" },
  "max-time": { type: "string", description: "Stop at this virtual time even if events are pending (default 24h)" },
  json: { type: "boolean", description: "Print the report as JSON" },
  html: { type: "string", description: "Write a self-contained HTML page with a chart to this file" },
  trace: { type: "string", description: "Write every transaction operation to this file as JSON lines (see flume replay)" },
  "no-progress": { type: "boolean", description: "No progress bar on stderr" },
} satisfies ArgsDef;

export const simulate = defineCommand({
  meta: { name: "simulate", description: "Simulate an agent on virtual time with failures and crashes, and check at-least-once delivery" },
  args: ARGS,
  async run({ rawArgs }) {
    process.exit(await runSimulateCli(rawArgs));
  },
});
