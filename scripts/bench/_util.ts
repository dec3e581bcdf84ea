import { createEvent, type Event } from "../../src/core/event.ts";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { residentParts } from "../../src/agent/process-memory.ts";
import { freePort } from "../../test/support/ports.ts";

/** Peak resident set size of a process in MB (VmHWM), from /proc. */
export function peakRssMb(pid: number | "self" = "self"): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = /VmHWM:\s+(\d+) kB/.exec(status);
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * What a process's RSS is made of now, for a figure: "binary X, anonymous Y, other Z MB". Read
 * right after a load, the binary's part is what the load paged in of the executable (a release
 * only runs when quiet), so the rest of the peak was anonymous memory and other files.
 */
export function residentPartsText(pid: number): string {
  try {
    const p = residentParts(readFileSync(`/proc/${pid}/smaps`, "utf8"), readlinkSync(`/proc/${pid}/exe`));
    const mb = (b: number) => (b / 1048576).toFixed(0);
    return `binary ${mb(p.binary)}, anonymous ${mb(p.anonymous)}, other ${mb(p.other)} MB`;
  } catch {
    return "no /proc";
  }
}

/** CPU time (user + system) of a process (or one of its threads) in ms, from /proc's stat (clock ticks of 10 ms). */
export function cpuMs(pid: number, tid?: number | string): number {
  const text = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, "utf8");
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

/**
 * CPU milliseconds a JVM's JIT compiler threads (C1, C2) have used: while a broker still compiles
 * its hot paths, it takes CPU from the agents measured beside it on the same cores.
 */
export function jitCpuMs(pid: number): number {
  let ms = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (!/^C[12] Compiler/.test(readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8"))) continue;
      ms += cpuMs(pid, tid);
    } catch {
      // The thread ended since the listing.
    }
  }
  return ms;
}

/** A figure a benchmark prints, with the issue's target for it when there is one. */
export interface Figure {
  what: string;
  value: string;
  target?: string;
  met?: boolean;
}

const VERDICT = /\(target (.+): (met|NOT met)\)$/;

/** The line a figure is printed as: `  what: value  (target ...: met)`. */
export function figureLine(f: Figure): string {
  const verdict = f.target === undefined ? "" : `  (target ${f.target}: ${f.met ? "met" : "NOT met"})`;
  return `  ${f.what}: ${f.value}${verdict}`;
}

/** A figure with a target back from a printed line (the footprint run counts those of the benchmarks it runs); null for other lines. */
export function parseFigureLine(line: string): Figure | null {
  const v = VERDICT.exec(line);
  if (!v) return null;
  const head = line.slice(0, v.index).trim();
  // The last ": " ends the name: names have colons of their own ("TAILDIR, 1,000 files: peak RSS").
  const colon = head.lastIndexOf(": ");
  return { what: colon < 0 ? head : head.slice(0, colon), value: colon < 0 ? "" : head.slice(colon + 2), target: v[1], met: v[2] === "met" };
}

/**
 * Runs per figure with a throughput target (BENCH_RUNS, default 5): the issue's "before" figures
 * are medians of 3 runs, and one run of a second or less on a shared VM varies by a third.
 */
export const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 5));

/** The median of some numbers (the lower middle one for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Each run's figure behind a median, least to most: "4.9 M, 5.2 M, 5.6 M". */
export function spread(values: readonly number[], show: (n: number) => string): string {
  return [...values].sort((a, b) => a - b).map(show).join(", ");
}

/**
 * How the runs behind a median rate and peak went, for its figure: "median of 5 runs: 4.90 M,
 * ... lines/s; agent CPU 0.61, ... s; peak RSS 57, ... MB" (`unit` after the rates; CPU when given).
 */
export function runsText(rates: readonly number[], peaks: readonly number[], o: { unit?: string; cpuMs?: readonly number[] } = {}): string {
  const cpu = o.cpuMs ? `; agent CPU ${spread(o.cpuMs, (n) => (n / 1000).toFixed(2))} s` : "";
  return `median of ${rates.length} runs: ${spread(rates, (n) => `${(n / 1e6).toFixed(2)} M`)}${o.unit ? ` ${o.unit}` : ""}${cpu}; peak RSS ${spread(peaks, (n) => n.toFixed(0))} MB`;
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/**
 * Runs `flume run` on conf (the built binary when present, else the sources under Bun) and
 * times from the first counted event to the `total`-th, read from /metrics as `group.key`.
 * Returns events/s and the agent's peak RSS in MB; the agent is stopped afterwards.
 */
export async function timeAgent(conf: string, agent: string, group: string, key: string, total: number, timeoutMs = 180_000): Promise<{ rate: number; rss: number }> {
  const { spawn } = await import("node:child_process");
  const { existsSync } = await import("node:fs");
  const path = await import("node:path");
  const port = await freePort();
  const binary = path.resolve(import.meta.dir, "../../dist/flume");
  const cmd = existsSync(binary) && !process.env.BENCH_FROM_SOURCE ? [binary] : [process.execPath, path.resolve(import.meta.dir, "../../src/cli.ts")];
  const child = spawn(cmd[0], [...cmd.slice(1), "run", "-f", conf, "-n", agent, "--quiet", "--no-reload-conf", "--metrics-port", String(port), "--metrics-bind", "127.0.0.1"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d) => (stderr += d));
  let first = 0;
  let last = 0;
  let peak = 0;
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline && child.exitCode === null) {
      let n = 0;
      try {
        const m = (await (await fetch(`http://127.0.0.1:${port}/metrics`)).json()) as Record<string, Record<string, string>>;
        n = Number(m[group]?.[key] ?? 0);
      } catch {
        // not up yet
      }
      peak = Math.max(peak, peakRssMb(child.pid as number) || 0);
      if (n > 0 && first === 0) first = performance.now();
      if (n >= total) {
        last = performance.now();
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    peak = Math.max(peak, peakRssMb(child.pid as number) || 0);
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.on("exit", r)));
  }
  if (last === 0) throw new Error(`${agent}: ${group}.${key} did not reach ${total} within ${timeoutMs / 1000} s\n${stderr.slice(-2000)}`);
  return { rate: total / ((last - first) / 1000), rss: peak };
}

export { freePort };

/** The batch the RPC benchmarks send: `size` events of `bodySize` bytes, with two headers each when asked. */
export function rpcBenchBatch(size: number, bodySize: number, headers: boolean): Event[] {
  const batch: Event[] = [];
  for (let i = 0; i < size; i++) {
    const body = Buffer.alloc(bodySize, 97 + (i % 26));
    batch.push(createEvent(body, headers ? { timestamp: String(1796038752343 + i), host: "edge-01.example.com" } : {}));
  }
  return batch;
}

/** Sends `batch` with `inFlight` calls outstanding, until the process is killed. */
export async function sendForever(client: { appendBatch(events: Event[]): Promise<void> }, batch: Event[], inFlight: number): Promise<void> {
  const loop = async () => {
    for (;;) await client.appendBatch(batch);
  };
  await Promise.all(Array.from({ length: inFlight }, loop));
}

/**
 * The client: N RFC 3164 lines over `conns` connections, in 1000-line writes, once every
 * connection is open. Prints "ready" when they are, "done" when all is written.
 */
export const SYSLOG_CLIENT = `
const net = require("node:net");
const [port, n, conns] = process.argv.slice(1).map(Number);
const lines = [];
for (let i = 0; i < 1000; i++) lines.push("<134>May  6 07:08:09 web-01 nginx[4242]: GET /index.html HTTP/1.1 200 512 " + String(i).padStart(6, "0") + "\\n");
const block = Buffer.from(lines.join(""));
const per = Math.ceil(n / conns);
let open = 0, finished = 0;
const all = [];
for (let c = 0; c < conns; c++) {
  const s = net.connect(port, "127.0.0.1", () => {
    if (++open < conns) return;
    console.log("ready");
    for (const [sock, count] of all) pump(sock, count);
  });
  s.on("error", (e) => { console.error(e.message); process.exit(1); });
  all.push([s, Math.min(per, n - c * per)]);
}
function pump(s, count) {
  let sent = 0;
  const step = () => {
    while (sent < count) {
      const k = Math.min(1000, count - sent);
      sent += k;
      if (!s.write(k === 1000 ? block : block.subarray(0, k * (block.length / 1000)))) return s.once("drain", step);
    }
    if (++finished === conns) console.log("done");
  };
  step();
}
setInterval(() => {}, 1000);
`;
