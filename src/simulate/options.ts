/** Options of a simulation and the parsers for their command-line spellings. */

import { UsageError } from "../core/errors.ts";

export class SimulationUsageError extends UsageError {
  override name = "SimulationUsageError";
}

/** Which sink batches fail: each with a probability, or the listed batch numbers (1-based). */
export type FailSpec = { kind: "none" } | { kind: "rate"; rate: number } | { kind: "batches"; batches: Set<number>; text: string };

export interface SimulationOptions {
  events: number;
  seed: number;
  /** Events per source batch (a configured source's batchSize wins). */
  batchSize: number;
  /** Events per second the simulated clients offer, over all sources; 0 = as fast as accepted. */
  rate: number;
  failSink: FailSpec;
  /** Probability that a source's put transaction fails (channel full / put error). */
  failPut: number;
  /** Virtual times (ms) at which the process crashes and restarts (one-agent runs). */
  crashAt: number[];
  /** Crashes of named agents (tiers; `--crash edge1@3s+2s`). */
  crashes: CrashSpec[];
  /** Faults of the links between agents of a tier. */
  links: LinkFaultSpec[];
  /** Virtual ms one sink batch takes to deliver. */
  sinkLatency: number;
  /** Demo topology only. */
  channel: "memory" | "file";
  /** A Flume properties file whose channels, selectors, interceptors and sink groups are used. */
  configFile?: string;
  agentName?: string;
  /** The simulation stops at this virtual time even if events are still pending. */
  maxTime: number;
  /** Scratch directory for file channels (a temp dir by default). */
  workDir?: string;
  /** Partitions of each topic of the simulated Kafka broker. */
  kafkaPartitions: number;
  /** Probability that the broker writes a produce batch but its answer is lost. */
  kafkaLoseAck: number;
  /** Partition leaders that fail over: elections in which the partition has no leader. */
  kafkaFailovers: FailoverSpec[];
  /** Probability that an HDFS write lands but is answered after the sink's callTimeout. */
  hdfsTimeout: number;
  /** Probability that closing and renaming a rolled HDFS file fails (it is retried). */
  hdfsFailClose: number;
  /** Windows in which the simulated NameNode does not answer (no file is created, closed or renamed). */
  nameNodeDown: { from: number; to: number }[];
}

/** `--kafka-failover logs@2s+1s`: partition `partition` (all when absent) of `topic` loses its leader at `at`; the election takes `election`. */
export interface FailoverSpec {
  topic: string;
  partition?: number;
  at: number;
  election: number;
}

export const DEFAULTS: SimulationOptions = {
  events: 10_000,
  seed: 1,
  batchSize: 100,
  rate: 10_000,
  failSink: { kind: "none" },
  failPut: 0,
  crashAt: [],
  crashes: [],
  links: [],
  sinkLatency: 5,
  channel: "memory",
  maxTime: 86_400_000,
  kafkaPartitions: 3,
  kafkaLoseAck: 0,
  kafkaFailovers: [],
  hdfsTimeout: 0,
  hdfsFailClose: 0,
  nameNodeDown: [],
};

/** Election time of a failover without "+TIME". */
export const DEFAULT_ELECTION_MS = 1000;

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/** "500ms", "2s", "1.5m", "250" (ms) -> milliseconds. */
export function parseDuration(text: string, what: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$/i.exec(text);
  if (!m) throw new SimulationUsageError(`${what}: expected a duration like 500ms, 2s or 1m, got "${text}"`);
  return Math.round(Number(m[1]) * UNITS[(m[2] ?? "ms").toLowerCase()]);
}

export function parseDurations(text: string, what: string): number[] {
  return text
    .split(",")
    .filter((s) => s.trim() !== "")
    .map((s) => parseDuration(s, what))
    .sort((a, b) => a - b);
}

export function parseRate(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || n > 1 || text.trim() === "") throw new SimulationUsageError(`${what}: expected a probability between 0 and 1, got "${text}"`);
  return n;
}

/** "0.2" (a probability) or "3,7-9" (batch numbers). */
export function parseFailSpec(text: string, what: string): FailSpec {
  const t = text.trim();
  if (/^(0|1)?\.\d+$|^[01]$|^1\.0*$/.test(t) && !t.includes(",") && !t.includes("-")) {
    const rate = parseRate(t, what);
    return rate === 0 ? { kind: "none" } : { kind: "rate", rate };
  }
  const batches = new Set<number>();
  for (const part of t.split(",")) {
    const p = part.trim();
    const m = /^(\d+)(?:-(\d+))?$/.exec(p);
    if (!m) throw new SimulationUsageError(`${what}: expected a probability (0.2) or batch numbers (3,7-9), got "${text}"`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (from < 1 || to < from || to - from > 1_000_000) throw new SimulationUsageError(`${what}: bad batch range "${p}" (batches are numbered from 1)`);
    for (let b = from; b <= to; b++) batches.add(b);
  }
  return { kind: "batches", batches, text: t };
}

export function describeFailSpec(f: FailSpec): string {
  if (f.kind === "none") return "none";
  if (f.kind === "rate") return `each sink batch fails with probability ${f.rate}`;
  return `sink batches ${f.text} fail`;
}

/** A crash of one agent at a virtual time; it restarts after `down` ms (0: at once). */
export interface CrashSpec {
  /** Absent: the only agent of a one-agent run. */
  agent?: string;
  at: number;
  down: number;
}

/** Which links a fault applies to: from agent -> to agent, "*" for any. */
export interface LinkSelector {
  from: string;
  to: string;
}

export type LinkFaultSpec =
  | { kind: "fail"; link: LinkSelector; rate: number }
  | { kind: "lose-answer"; link: LinkSelector; rate: number }
  | { kind: "latency"; link: LinkSelector; ms: number }
  | { kind: "partition"; link: LinkSelector; from: number; to: number };

export const ANY_LINK: LinkSelector = { from: "*", to: "*" };

export function describeLink(l: LinkSelector): string {
  return l.from === "*" && l.to === "*" ? "every link" : `${l.from}->${l.to}`;
}

const SHELL_HINT = "quote it in a shell ('edge1->collector'), or write edge1:collector";

/** "edge1->collector", "edge1:collector", "*" or "edge1->*". */
export function parseLinkSelector(text: string, what: string): LinkSelector {
  const t = text.trim();
  if (t === "*" || t === "") return ANY_LINK;
  const m = /^([^\s:>]+?)\s*(?:->|:)\s*([^\s:>]+)$/.exec(t);
  if (!m) {
    const cut = t.endsWith("-") ? ` (the shell took ">" as a redirection: ${SHELL_HINT})` : ` (${SHELL_HINT})`;
    throw new SimulationUsageError(`${what}: expected a link like edge1->collector, got "${t}"${cut}`);
  }
  return { from: m[1], to: m[2] };
}

/** Comma-separated items; the part before the last "=" (or "@") of each is an optional link. */
function linkItems(text: string, what: string, sep: "=" | "@"): { link: LinkSelector; value: string }[] {
  return text
    .split(",")
    .filter((s) => s.trim() !== "")
    .map((item) => {
      const at = item.lastIndexOf(sep);
      if (at < 0) return { link: ANY_LINK, value: item.trim() };
      return { link: parseLinkSelector(item.slice(0, at), what), value: item.slice(at + 1).trim() };
    });
}

/** `--link-fail` / `--lose-answer`: "0.1" (every link) or "edge1->collector=0.1,edge2->collector=0.05". */
export function parseLinkRates(text: string, what: string, kind: "fail" | "lose-answer"): LinkFaultSpec[] {
  return linkItems(text, what, "=").map(({ link, value }) => ({ kind, link, rate: parseRate(value, what) }));
}

/** `--link-latency`: "20ms" (every link) or "edge1->collector=200ms". */
export function parseLinkLatencies(text: string, what: string): LinkFaultSpec[] {
  return linkItems(text, what, "=").map(({ link, value }) => ({ kind: "latency" as const, link, ms: parseDuration(value, what) }));
}

/** `--partition`: "edge1->collector@2s-5s" (or "2s-5s" for every link): no packet passes in the window. */
export function parsePartitions(text: string, what: string): LinkFaultSpec[] {
  return linkItems(text, what, "@").map(({ link, value }) => {
    const m = /^(.+?)-(.+)$/.exec(value);
    if (!m) {
      const cut = value.endsWith("-") ? ` (the shell took ">" as a redirection: ${SHELL_HINT})` : "";
      throw new SimulationUsageError(`${what}: expected a window like edge1->collector@2s-5s, got "${value}"${cut}`);
    }
    const from = parseDuration(m[1], what);
    const to = parseDuration(m[2], what);
    if (to <= from) throw new SimulationUsageError(`${what}: the window ${value} ends before it starts`);
    return { kind: "partition" as const, link, from, to };
  });
}

/** `--crash`: "edge1@3s", "collector@5s+2s" (down for 2 s), comma-separated. */
export function parseCrashSpecs(text: string, what: string): CrashSpec[] {
  return text
    .split(",")
    .filter((s) => s.trim() !== "")
    .map((item) => {
      const m = /^\s*([^@\s]+)\s*@\s*([^+]+?)\s*(?:\+\s*(.+?))?\s*$/.exec(item);
      if (!m) throw new SimulationUsageError(`${what}: expected AGENT@TIME or AGENT@TIME+DOWNTIME like edge1@3s or collector@5s+2s, got "${item.trim()}"`);
      return { agent: m[1], at: parseDuration(m[2], what), down: m[3] === undefined ? 0 : parseDuration(m[3], what) };
    })
    .sort((a, b) => a.at - b.at);
}

/** `--kafka-failover`: "logs@2s", "logs:1@2s+500ms" (partition 1; election 500 ms), comma-separated. */
export function parseFailovers(text: string, what: string): FailoverSpec[] {
  return text
    .split(",")
    .filter((s) => s.trim() !== "")
    .map((item) => {
      const m = /^\s*([^@:\s]+)(?::(\d+))?\s*@\s*([^+]+?)\s*(?:\+\s*(.+?))?\s*$/.exec(item);
      if (!m) throw new SimulationUsageError(`${what}: expected TOPIC[:PARTITION]@TIME[+ELECTION] like logs@2s or logs:1@2s+500ms, got "${item.trim()}"`);
      return { topic: m[1], partition: m[2] === undefined ? undefined : Number(m[2]), at: parseDuration(m[3], what), election: m[4] === undefined ? DEFAULT_ELECTION_MS : parseDuration(m[4], what) };
    })
    .sort((a, b) => a.at - b.at);
}

/** `--namenode-down`: "2s-5s,10s-12s". */
export function parseWindows(text: string, what: string): { from: number; to: number }[] {
  return text
    .split(",")
    .filter((s) => s.trim() !== "")
    .map((w) => {
      const m = /^(.+?)-(.+)$/.exec(w.trim());
      if (!m) throw new SimulationUsageError(`${what}: expected windows like 2s-5s, got "${w.trim()}"`);
      const from = parseDuration(m[1], what);
      const to = parseDuration(m[2], what);
      if (to <= from) throw new SimulationUsageError(`${what}: the window ${w.trim()} ends before it starts`);
      return { from, to };
    })
    .sort((a, b) => a.from - b.from);
}

/** "1500" -> "1.500s", "250" -> "250ms". */
export function formatTime(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(3)}s`;
  const s = ((ms % 60_000) / 1000).toFixed(3).padStart(6, "0");
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m${s}s`;
  const m = String(Math.floor((ms % 3_600_000) / 60_000)).padStart(2, "0");
  return `${Math.floor(ms / 3_600_000)}h${m}m${s}s`;
}
