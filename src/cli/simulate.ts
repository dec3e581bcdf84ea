/**
 * `flume simulate`: runs the real core of one agent, or of every agent of a file (a tier), on
 * virtual time with simulated clients and destinations and injected faults, and reports
 * whether every accepted event was delivered at least once, and why each duplicate happened.
 * Exit 0 when at-least-once held, 1 when it was violated, 2 on usage errors.
 */
import { writeFileSync } from "node:fs";
import type { Progress } from "../simulate/engine.ts";
import { simulateWithHistory } from "../simulate/with-history.ts";
import { htmlReport } from "../simulate/html.ts";
import {
  DEFAULTS,
  parseCrashSpecs,
  parseDuration,
  parseDurations,
  parseFailovers,
  parseFailSpec,
  parseLinkLatencies,
  parseLinkRates,
  parsePartitions,
  parseRate,
  parseWindows,
  type SimulationOptions,
} from "../simulate/options.ts";
import { jsonReport, textReport } from "../simulate/report.ts";
import { parseSeed } from "../simulate/rng.ts";
import { AGENT_FILE_ARGS, type ArgsSpec, int, oneOf, type Parsed, UsageError } from "./args.ts";
import { command } from "./command.ts";

/** Comma-separated event ids (--explain). */
const eventIds = (text: string, flag: string): number[] =>
  text
    .split(",")
    .filter((id) => id.trim() !== "")
    .map((id) => int(0)(id.trim(), flag));

const SIMULATE_ARGS = {
  ...AGENT_FILE_ARGS,
  "conf-file": {
    ...AGENT_FILE_ARGS["conf-file"],
    description: "Run the file's agents (a tier, joined where an avro sink names another agent's avro source) with their channels, selectors, interceptors and sink groups; other sources and sinks are simulated",
  },
  name: { ...AGENT_FILE_ARGS.name, description: "Run only this agent of the file" },
  events: { type: "string", parse: int(1), default: String(DEFAULTS.events), description: "Events to send" },
  seed: { type: "string", parse: parseSeed, default: String(DEFAULTS.seed), description: "Seed of every random choice: the same seed gives the same output" },
  "fail-sink": { type: "string", parse: parseFailSpec, description: "Sink batch failures: a probability (0.2) or batch numbers (3,7-9)" },
  "fail-put": { type: "string", parse: parseRate, default: String(DEFAULTS.failPut), description: "Probability that a source's put transaction fails (the client retries)" },
  "crash-at": { type: "string", parse: parseDurations, description: "Crash and restart the agent of a one-agent run at these virtual times (500ms, 2s, ...)" },
  crash: { type: "string", parse: parseCrashSpecs, multiple: true, description: "Crash an agent: AGENT@TIME[+DOWNTIME], comma-separated (edge1@3s,collector@5s+2s; repeatable)" },
  partition: { type: "string", parse: parsePartitions, multiple: true, description: "No packet on a link in a window: 'edge1->collector@2s-5s' (or edge1:collector@...; no link: every link; repeatable)" },
  "link-fail": { type: "string", parse: (t: string, f: string) => parseLinkRates(t, f, "fail"), multiple: true, description: "Each request on a link is lost with the connection reset: RATE or 'edge1->collector=RATE' (repeatable)" },
  "lose-answer": { type: "string", parse: (t: string, f: string) => parseLinkRates(t, f, "lose-answer"), multiple: true, description: "Each answer on a link is lost after the receiver committed (the classic duplicate): RATE or 'LINK=RATE' (repeatable)" },
  "link-latency": { type: "string", parse: parseLinkLatencies, multiple: true, description: "One-way latency of a link: 20ms or 'LINK=20ms' (repeatable)" },
  "kafka-partitions": { type: "string", parse: int(1), default: String(DEFAULTS.kafkaPartitions), description: "Partitions of each topic of the simulated Kafka broker" },
  "kafka-lose-ack": { type: "string", parse: parseRate, default: String(DEFAULTS.kafkaLoseAck), description: "Probability that the broker writes a Kafka sink's batch and the acknowledgement is lost (the sink rolls back and resends)" },
  "kafka-failover": { type: "string", parse: parseFailovers, multiple: true, description: "A partition leader fails over: TOPIC[:PARTITION]@TIME[+ELECTION] (logs@2s, logs:1@2s+500ms; comma-separated, repeatable)" },
  "namenode-down": { type: "string", parse: parseWindows, multiple: true, description: "The simulated NameNode does not answer in these windows: 2s-5s[,FROM-TO...] (no file created, closed or renamed)" },
  "hdfs-fail-close": { type: "string", parse: parseRate, default: String(DEFAULTS.hdfsFailClose), description: "Probability that closing and renaming a rolled HDFS file fails (retried after hdfs.retryInterval)" },
  "hdfs-timeout": { type: "string", parse: parseRate, default: String(DEFAULTS.hdfsTimeout), description: "Probability that an HDFS write lands but answers after hdfs.callTimeout (the sink rolls back and writes it again)" },
  explain: { type: "string", parse: eventIds, multiple: true, description: "Print the whole history of these event ids (comma-separated), across agents" },
  "sink-latency": { type: "string", parse: parseDuration, default: `${DEFAULTS.sinkLatency}ms`, description: "Virtual time one sink batch takes" },
  rate: { type: "string", parse: int(0), default: String(DEFAULTS.rate), description: "Events per virtual second the clients offer; 0 = unlimited" },
  "batch-size": { type: "string", parse: int(1), default: String(DEFAULTS.batchSize), description: "Events per client batch" },
  channel: { type: "string", parse: oneOf("memory", "file"), description: "Channel of the built-in demo: memory (default) or file (a real file channel in a temp dir)" },
  "max-time": { type: "string", parse: parseDuration, default: `${DEFAULTS.maxTime}ms`, description: "Stop at this virtual time even if events are pending" },
  json: { type: "boolean", description: "Print the report as JSON" },
  html: { type: "string", description: "Write a self-contained HTML page with the topology, a chart and a timeline per agent to this file" },
  trace: { type: "string", description: "Write every transaction operation to this file as JSON lines (see flume replay)" },
  "no-progress": { type: "boolean", description: "No progress bar on stderr" },
} as const satisfies ArgsSpec;

function simulationOptions(a: Parsed<typeof SIMULATE_ARGS>): SimulationOptions {
  if (a["conf-file"] !== undefined && a.channel !== undefined) throw new UsageError("--channel applies to the built-in demo; with -f the configured channels are used");
  return {
    ...DEFAULTS,
    configFile: a["conf-file"],
    agentName: a.name,
    events: a.events,
    seed: a.seed,
    batchSize: a["batch-size"],
    rate: a.rate,
    failSink: a["fail-sink"] ?? DEFAULTS.failSink,
    failPut: a["fail-put"],
    crashAt: a["crash-at"] ?? [],
    crashes: a.crash.flat().sort((x, y) => x.at - y.at),
    links: [...a.partition, ...a["link-fail"], ...a["lose-answer"], ...a["link-latency"]].flat(),
    sinkLatency: a["sink-latency"],
    maxTime: a["max-time"],
    kafkaPartitions: a["kafka-partitions"],
    kafkaLoseAck: a["kafka-lose-ack"],
    kafkaFailovers: a["kafka-failover"].flat().sort((x, y) => x.at - y.at),
    nameNodeDown: a["namenode-down"].flat().sort((x, y) => x.from - y.from),
    hdfsFailClose: a["hdfs-fail-close"],
    hdfsTimeout: a["hdfs-timeout"],
    channel: a.channel ?? DEFAULTS.channel,
  };
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

async function runSimulate(a: Parsed<typeof SIMULATE_ARGS>): Promise<number> {
  const options = simulationOptions(a);
  const explain = a.explain.flat();
  const bar = !a["no-progress"] && process.stderr.isTTY ? progressBar() : null;
  let result;
  try {
    result = await simulateWithHistory(options, { traceFile: a.trace, onProgress: bar ? (p) => bar.update(p) : undefined }, explain);
  } catch (err) {
    // A configuration the simulator cannot use is the user's to fix, whatever the error's class.
    throw err instanceof UsageError ? err : new UsageError((err as Error).message);
  } finally {
    bar?.clear();
  }
  process.stdout.write(a.json ? jsonReport(options, result) : textReport(options, result, true, explain));
  if (a.html) {
    writeFileSync(a.html, htmlReport(options, result));
    if (!a.json) process.stdout.write(`chart written to ${a.html}\n`);
  }
  if (a.trace && !a.json) process.stdout.write(`trace written to ${a.trace} (check it with: flume replay ${a.trace})\n`);
  return result.verdict.held ? 0 : 1;
}

export const simulate = command({
  name: "simulate",
  description: "Simulate an agent, or a whole tier of agents, on virtual time with failures, crashes and link faults, and check at-least-once delivery",
  args: SIMULATE_ARGS,
  run: runSimulate,
});
