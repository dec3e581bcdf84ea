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
  /** Virtual times (ms) at which the process crashes and restarts. */
  crashAt: number[];
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
}

export const DEFAULTS: SimulationOptions = {
  events: 10_000,
  seed: 1,
  batchSize: 100,
  rate: 10_000,
  failSink: { kind: "none" },
  failPut: 0,
  crashAt: [],
  sinkLatency: 5,
  channel: "memory",
  maxTime: 86_400_000,
};

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

/** "1500" -> "1.500s", "250" -> "250ms". */
export function formatTime(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(3)}s`;
  const s = ((ms % 60_000) / 1000).toFixed(3).padStart(6, "0");
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m${s}s`;
  const m = String(Math.floor((ms % 3_600_000) / 60_000)).padStart(2, "0");
  return `${Math.floor(ms / 3_600_000)}h${m}m${s}s`;
}
