/**
 * `flume simulate`: runs the real core of one agent, or of every agent of a file (a tier), on
 * virtual time with simulated clients and destinations and injected faults, and reports
 * whether every accepted event was delivered at least once, and why each duplicate happened.
 * Exit 0 when at-least-once held, 1 when it was violated, 2 on usage errors.
 */
import { writeFileSync } from "node:fs";
import { type ArgsDef, defineCommand } from "citty";
import { type Progress, simulateWithHistory } from "../simulate/engine.ts";
import { htmlReport } from "../simulate/html.ts";
import {
  DEFAULTS,
  parseCount,
  parseCrashSpecs,
  parseDuration,
  parseDurations,
  parseFailSpec,
  parseLinkLatencies,
  parseLinkRates,
  parsePartitions,
  parseRate,
  SimulationUsageError,
  type SimulationOptions,
} from "../simulate/options.ts";
import { jsonReport, textReport } from "../simulate/report.ts";
import { parseSeed } from "../simulate/rng.ts";
import { ArgReader } from "./args.ts";

export interface SimulateCli {
  options: SimulationOptions;
  json: boolean;
  html?: string;
  trace?: string;
  progress: boolean;
  /** Event ids whose history to print (--explain). */
  explain: number[];
}

export function parseSimulateArgs(argv: string[]): SimulateCli {
  const o: SimulationOptions = { ...DEFAULTS, crashAt: [], crashes: [], links: [] };
  const cli: SimulateCli = { options: o, json: false, progress: true, explain: [] };
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
      case "--crash":
        o.crashes = [...o.crashes, ...parseCrashSpecs(r.value(arg), arg)].sort((a, b) => a.at - b.at);
        break;
      case "--partition":
        o.links = [...o.links, ...parsePartitions(r.value(arg), arg)];
        break;
      case "--link-fail":
        o.links = [...o.links, ...parseLinkRates(r.value(arg), arg, "fail")];
        break;
      case "--lose-answer":
        o.links = [...o.links, ...parseLinkRates(r.value(arg), arg, "lose-answer")];
        break;
      case "--link-latency":
        o.links = [...o.links, ...parseLinkLatencies(r.value(arg), arg)];
        break;
      case "--explain":
        for (const id of r.value(arg).split(",")) if (id.trim() !== "") cli.explain.push(parseCount(id.trim(), arg));
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
    result = await simulateWithHistory(cli.options, { traceFile: cli.trace, onProgress: bar ? (p) => bar.update(p) : undefined }, cli.explain);
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
  process.stdout.write(cli.json ? jsonReport(cli.options, result) : textReport(cli.options, result, true, cli.explain));
  if (cli.html) {
    writeFileSync(cli.html, htmlReport(cli.options, result));
    if (!cli.json) process.stdout.write(`chart written to ${cli.html}\n`);
  }
  if (cli.trace && !cli.json) process.stdout.write(`trace written to ${cli.trace} (check it with: flume replay ${cli.trace})\n`);
  return result.verdict.held ? 0 : 1;
}

const ARGS = {
  "conf-file": { type: "string", alias: "f", description: "Run the file's agents (a tier, joined where an avro sink names another agent's avro source); other sources and sinks are simulated" },
  name: { type: "string", alias: "n", description: "Run only this agent of the file" },
  events: { type: "string", description: `Events to send (default ${DEFAULTS.events})` },
  seed: { type: "string", description: "Seed of every random choice: the same seed gives the same output (default 1)" },
  "fail-sink": { type: "string", description: "Sink batch failures: a probability (0.2) or batch numbers (3,7-9)" },
  "fail-put": { type: "string", description: "Probability that a source's put transaction fails (the client retries)" },
  "crash-at": { type: "string", description: "Crash and restart the agent of a one-agent run at these virtual times (500ms, 2s, ...)" },
  crash: { type: "string", description: "Crash an agent: AGENT@TIME[+DOWNTIME], comma-separated (edge1@3s,collector@5s+2s)" },
  partition: { type: "string", description: "No packet on a link in a window: 'edge1->collector@2s-5s' (or edge1:collector@...; no link: every link)" },
  "link-fail": { type: "string", description: "Each request on a link is lost with the connection reset: RATE or 'edge1->collector=RATE'" },
  "lose-answer": { type: "string", description: "Each answer on a link is lost after the receiver committed (the classic duplicate): RATE or 'LINK=RATE'" },
  "link-latency": { type: "string", description: "One-way latency of a link: 20ms or 'LINK=20ms'" },
  explain: { type: "string", description: "Print the whole history of these event ids (comma-separated), across agents" },
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
