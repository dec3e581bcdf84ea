/**
 * The log-rotation crash harness, shared by test/e2e/taildir-rotation-crash.test.ts
 * (a few seeded runs at a tenth of the timings) and scripts/bench/taildir-rotation.ts (many
 * runs, real timings).
 *
 * One run: `flume run` with TAILDIR (filegroup `app\.log.*`) -> file or memory channel ->
 * file_roll. app.log holds lines 0-3999, all delivered; 500 more are appended (being read
 * when the rotation comes), then the rotation:
 * - copytruncate: app.log is copied to app.log.1 (new inode, matches the filegroup), 0.5 s
 *   later truncated, then 1,000 more lines are appended;
 * - rename: app.log is renamed to app.log.1, the application writes 100 more lines to it
 *   (its descriptor still open), 0.5 s later app.log is created with 1,000 more lines.
 * The agent gets SIGKILL at a point of the window from the rotation to 3 s after the
 * truncation (or creation), is started again, 10 more lines are appended, and once nothing
 * new arrives it is stopped. Every line delivered is counted.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export type Rotation = "copytruncate" | "rename";
export type ChannelKind = "file" | "memory";

export interface RotationRunOptions {
  rotation: Rotation;
  channel: ChannelKind;
  /** Milliseconds after the rotation's first step (copy or rename) when SIGKILL comes. */
  killAtMs: number;
  /** Timings multiplier: 1 is the real timings (0.5 s to the truncation), 0.1 a tenth of them. */
  scale?: number;
  /** TAILDIR batchSize and file_roll's sink.batchSize (both Flume's default, 100). */
  batchSize?: number;
  sinkBatchSize?: number;
  /** The flume command: [executable, ...args]; `bun src/cli.ts` by default. */
  command?: string[];
  /** Extra TAILDIR properties (r1.<key> = value). */
  taildir?: Record<string, string>;
  keep?: boolean;
}

export interface RotationRunResult {
  rotation: Rotation;
  channel: ChannelKind;
  killAtMs: number;
  /** Lines the application wrote, in all and when the kill came. */
  written: number;
  writtenAtKill: number;
  /** Distinct lines in the sink's output. */
  delivered: number;
  /** Lines written and never delivered; of them, written after the kill (must be none). */
  lost: number;
  lostAfterKill: number;
  /** Extra copies delivered (a line delivered twice counts 1). */
  duplicated: number;
  /** The first few lost and duplicated line numbers, for the report. */
  lostSample: number[];
  duplicatedSample: number[];
  /** The agent's log, for a failed check. */
  log: string;
  dir: string;
}

const ROOT = path.resolve(import.meta.dir, "..", "..");
const CLI = path.join(ROOT, "src", "cli.ts");

function lines(from: number, to: number): string {
  let s = "";
  for (let i = from; i < to; i++) s += `line-${String(i).padStart(6, "0")} ${"x".repeat(40)}\n`;
  return s;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}

function config(dir: string, o: Required<Pick<RotationRunOptions, "channel" | "batchSize" | "sinkBatchSize">> & { taildir: Record<string, string> }): string {
  const channel =
    o.channel === "file"
      ? `a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${path.join(dir, "ckpt")}
a1.channels.c1.dataDirs = ${path.join(dir, "data")}
a1.channels.c1.minimumRequiredSpace = 1048576`
      : `a1.channels.c1.type = memory
a1.channels.c1.capacity = 100000
a1.channels.c1.transactionCapacity = 1000`;
  const extra = Object.entries(o.taildir)
    .map(([k, v]) => `a1.sources.r1.${k} = ${v}`)
    .join("\n");
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = TAILDIR
a1.sources.r1.channels = c1
a1.sources.r1.filegroups = g1
a1.sources.r1.filegroups.g1 = ${path.join(dir, "logs")}/app\\.log.*
a1.sources.r1.positionFile = ${path.join(dir, "pos", "taildir_position.json")}
a1.sources.r1.batchSize = ${o.batchSize}
${extra}
${channel}
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${path.join(dir, "out")}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.batchSize = ${o.sinkBatchSize}
`;
}

/** Line numbers in the sink's output, in order (all files of the output directory). */
export function deliveredNumbers(outDir: string): number[] {
  const out: number[] = [];
  if (!existsSync(outDir)) return out;
  for (const name of readdirSync(outDir).sort()) {
    const text = readFileSync(path.join(outDir, name), "latin1");
    let at = 0;
    for (;;) {
      const i = text.indexOf("line-", at);
      if (i < 0) break;
      out.push(Number(text.slice(i + 5, i + 11)));
      at = i + 11;
    }
  }
  return out;
}

class Agent {
  readonly child: ChildProcess;
  log = "";
  readonly exited: Promise<void>;

  constructor(command: string[], conf: string) {
    this.child = spawn(command[0], [...command.slice(1), "run", "-f", conf, "-n", "a1", "--stats-interval", "0", "--no-reload-conf"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1" },
    });
    this.child.stdout?.on("data", (d) => (this.log += d));
    this.child.stderr?.on("data", (d) => (this.log += d));
    this.exited = new Promise((r) => this.child.on("exit", () => r()));
  }

  async started(ms = 20_000): Promise<void> {
    const t0 = Date.now();
    while (!/agent a1 started/.test(this.log)) {
      if (this.child.exitCode !== null) throw new Error(`agent exited (${this.child.exitCode}) before starting:\n${this.log}`);
      if (Date.now() - t0 > ms) throw new Error(`agent did not start in ${ms} ms:\n${this.log}`);
      await sleep(10);
    }
  }

  kill(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }
}

/** Waits until `done()`, then until `count()` stays the same for `quietMs`. */
async function settle(count: () => number, done: () => boolean, quietMs: number, maxMs: number): Promise<void> {
  const t0 = Date.now();
  let last = -1;
  let since = Date.now();
  for (;;) {
    const n = count();
    if (n !== last) {
      last = n;
      since = Date.now();
    }
    if (Date.now() - since >= quietMs && done()) return;
    if (Date.now() - t0 > maxMs) return;
    await sleep(20);
  }
}

export async function rotationRun(options: RotationRunOptions): Promise<RotationRunResult> {
  const scale = options.scale ?? 1;
  const batchSize = options.batchSize ?? 100;
  const sinkBatchSize = options.sinkBatchSize ?? 100;
  const command = options.command ?? [process.execPath, CLI];
  const dir = mkdtempSync(path.join(tmpdir(), "flume-rotation-"));
  const logs = path.join(dir, "logs");
  const out = path.join(dir, "out");
  mkdirSync(logs);
  mkdirSync(out);
  const conf = path.join(dir, "agent.conf");
  // Short idle backoff: the harness is about what survives the crash, not about pickup latency.
  writeFileSync(conf, config(dir, { channel: options.channel, batchSize, sinkBatchSize, taildir: { maxBackoffSleep: "100", ...options.taildir } }));
  const file = path.join(logs, "app.log");
  const rotated = `${file}.1`;
  let written = 0;
  const write = (target: string, k: number) => {
    appendFileSync(target, lines(written, written + k));
    written += k;
  };
  const agents: Agent[] = [];
  let log = "";
  try {
    write(file, 4000);
    const first = new Agent(command, conf);
    agents.push(first);
    await first.started();
    const outCount = () => new Set(deliveredNumbers(out)).size;
    await settle(outCount, () => outCount() >= 4000, 0, 20_000);
    write(file, 500); // being read when the rotation comes

    const t0 = performance.now();
    let writtenAtKill = 0;
    const killed = (async () => {
      await sleep(options.killAtMs - (performance.now() - t0));
      writtenAtKill = written;
      first.kill("SIGKILL");
      await first.exited;
    })();
    if (options.rotation === "copytruncate") {
      copyFileSync(file, rotated);
      await sleep(500 * scale - (performance.now() - t0));
      truncateSync(file, 0);
      write(file, 1000);
    } else {
      renameSync(file, rotated);
      write(rotated, 100); // the application writes on through its open descriptor
      await sleep(500 * scale - (performance.now() - t0));
      write(file, 1000);
    }
    await killed;
    log += first.log;

    const second = new Agent(command, conf);
    agents.push(second);
    await second.started();
    write(file, 10);
    // A memory channel's crash may have lost lines: then the last line written is the sign of progress.
    const done = options.channel === "memory" ? () => deliveredNumbers(out).includes(written - 1) : () => outCount() >= written;
    await settle(outCount, done, options.channel === "memory" ? 500 : 200, 30_000);
    second.kill("SIGTERM");
    await second.exited;
    log += `--- restarted ---\n${second.log}`;

    const numbers = deliveredNumbers(out);
    const counts = new Uint32Array(written);
    for (const n of numbers) if (n < written) counts[n]++;
    const lostSample: number[] = [];
    const duplicatedSample: number[] = [];
    let lost = 0;
    let lostAfterKill = 0;
    let duplicated = 0;
    let distinct = 0;
    for (let i = 0; i < written; i++) {
      if (counts[i] === 0) {
        lost++;
        if (i >= writtenAtKill) lostAfterKill++;
        if (lostSample.length < 5) lostSample.push(i);
      } else {
        distinct++;
        if (counts[i] > 1) {
          duplicated += counts[i] - 1;
          if (duplicatedSample.length < 5) duplicatedSample.push(i);
        }
      }
    }
    return { rotation: options.rotation, channel: options.channel, killAtMs: options.killAtMs, written, writtenAtKill, delivered: distinct, lost, lostAfterKill, duplicated, lostSample, duplicatedSample, log, dir };
  } finally {
    for (const a of agents) a.kill("SIGKILL");
    await Promise.all(agents.map((a) => a.exited));
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Kill points for a sweep, from a seeded generator: a third spread over the whole window
 * (rotation .. truncation + 3 s), a third in the 20 ms after the rotation, a third in the 20 ms
 * after the truncation (or creation), where the agent is busy reading and recording.
 */
export function killPoints(count: number, scale: number, seed: number): number[] {
  let s = seed >>> 0 || 1;
  const random = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
  const window = 3500 * scale;
  return Array.from({ length: count }, (_, i) => {
    if (i % 3 === 0) return Math.round(((i + random()) / count) * window);
    const at = i % 3 === 1 ? 0 : 500 * scale;
    return Math.round(at + random() * 20);
  });
}
