/**
 * `npm run bench -- taildir`: TAILDIR read rate in this process (run()), and, as named cases
 * (`npm run bench -- taildir:files` etc., all in `npm run bench -- footprint`), the footprint and
 * latency of a real agent (`flume run` in a child process, its RSS read from /proc):
 *
 * - run(): a file of 100-byte lines (1 GB by default; BENCH_TAILDIR_MB to change) under /tmp,
 *   tailed by the TAILDIR source driven by the core's SourceRunner into a MemoryChannel that a
 *   drain loop empties in 1000-event take transactions. Events/s and peak RSS, with batchSize
 *   100 and 1000 (BENCH_TAILDIR_BATCH overrides both).
 * - files: BENCH_TAILDIR_FILES (1,000) files of 10,000 lines of 100 bytes, one filegroup,
 *   TAILDIR (default settings) -> memory (capacity 10,000, transactionCapacity 1,000) -> null
 *   (batchSize 1,000). Lines/s, peak RSS, peak RSS per file above an idle agent's (the same
 *   configuration on an empty directory, at 2 s: after the release at its start, before the one
 *   after 3 s quiet, as the agent reading the files is), peak RSS per added file (against the
 *   peak of a tenth of the files), RSS 10 s after the last line (past the release 3 s without
 *   events bring), and the RSS of an agent restarted on the same files, 8 s after its start
 *   (tailing them at their end: the cost per file without reading).
 * - small-files: BENCH_SMALL_FILES (4,000) files of one line each, TAILDIR (default settings) ->
 *   memory -> null: when every line is in the channel, then the agent's CPU over 20 s idle
 *   (from 10 s after its spawn at the earliest).
 * - big-file: one 300 MB file (BENCH_TAILDIR_MB) through the same pipeline, batchSize 100
 *   (the default) and 1000, and 100 with --runtime-profile throughput: lines/s and peak RSS,
 *   medians of BENCH_RUNS (5) agents each; then, batchSize 100, the file renamed into
 *   the directory of an agent that has run 5 s without events (past its release of memory
 *   after 3 s quiet, as an agent in service meets a new file).
 * - latency: an idle file gets one line every 100 ms (BENCH_LATENCY_LINES lines, 150), TAILDIR
 *   with default settings -> memory -> file_roll (sink.batchSize 1): p50/p99/max from the
 *   append to the line in the sink's file (and the first line's apart: it is the first work
 *   after the agent released its memory), and the agent's CPU time over 30 s idle (from 5 s after the start),
 *   against the polling agent's before.
 * - spool-backlog: BENCH_SPOOL_FILES (2,000) files of 10 lines already in the spool, spooldir
 *   (default settings) -> memory -> null: files/s and the agent's CPU time.
 * - spooldir-latency: a file of one line renamed into the spool directory every 100 ms,
 *   spooldir with default settings -> memory -> file_roll (batchSize 1): the same figures.
 * Agents run as `bun src/cli.ts` unless BENCH_FLUME names the command (the footprint bench sets it
 * to the binary).
 */
import { componentContext } from "../../src/components/component.ts";
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { definition as taildir } from "../../src/components/sources/taildir.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { SourceRunner } from "../../src/core/runners.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { cpuMs, figureLine, fmt, freePort, median, peakRssMb, residentPartsText, RUNS, runsText } from "./_util.ts";

const LINE = 100;
const CLI = path.join(import.meta.dir, "..", "..", "src", "cli.ts");

function writeFile(file: string, mb: number): number {
  const linesPerBlock = 80_000; // 8 MB blocks
  const block = Buffer.alloc(linesPerBlock * LINE, "x");
  for (let i = 0; i < linesPerBlock; i++) {
    const tag = `line ${String(i).padStart(8, "0")} `;
    block.write(tag, i * LINE, "latin1");
    block[i * LINE + LINE - 1] = 10;
  }
  const total = Math.floor((mb * 1024 * 1024) / LINE);
  const fd = openSync(file, "w");
  let written = 0;
  while (written < total) {
    const n = Math.min(linesPerBlock, total - written);
    writeSync(fd, block, 0, n * LINE);
    written += n;
  }
  closeSync(fd);
  return total;
}

async function once(dir: string, file: string, lines: number, batchSize: number): Promise<void> {
  const ctx = componentContext("r1", { agentName: "bench", clock: systemClock, logger: silentLogger });
  const { options: config, errors } = taildir.parse({
    filegroups: "f1",
    "filegroups.f1": `${path.dirname(file)}/${path.basename(file).replace(/\./g, "\\.")}`,
    positionFile: path.join(dir, `position-${batchSize}.json`),
    batchSize: String(batchSize),
  });
  if (errors.length) throw new Error(JSON.stringify(errors));
  const source = taildir.create(config, ctx);
  const channel = new MemoryChannel("c1", { capacity: 20_000, transactionCapacity: Math.max(1000, batchSize) });
  channel.start();
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  const runner = new SourceRunner(source, systemClock, silentLogger);
  const t0 = performance.now();
  await runner.start();
  let taken = 0;
  while (taken < lines) {
    const tx = channel.getTransaction();
    tx.begin();
    let n = 0;
    for (; n < 1000; n++) if (tx.take() === null) break;
    await tx.commit();
    tx.close();
    taken += n;
    if (n === 0) await new Promise((r) => setImmediate(r));
  }
  const secs = (performance.now() - t0) / 1000;
  await runner.stop();
  console.log(`TAILDIR batchSize ${batchSize}: ${fmt(taken)} lines of ${LINE} bytes in ${secs.toFixed(2)} s = ${fmt(taken / secs)} events/s (${((taken * LINE) / secs / 1e6).toFixed(0)} MB/s); peak RSS so far ${peakRssMb().toFixed(0)} MB`);
}

export async function run(): Promise<void> {
  const mb = Number(process.env.BENCH_TAILDIR_MB ?? 1024);
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-taildir-"));
  const file = path.join(dir, "big.log");
  try {
    const t0 = performance.now();
    const lines = writeFile(file, mb);
    console.log(`wrote ${fmt(lines)} lines (${mb} MB) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const batches = process.env.BENCH_TAILDIR_BATCH ? [Number(process.env.BENCH_TAILDIR_BATCH)] : [100, 1000];
    for (const b of batches) await once(dir, file, lines, b);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- a real agent in a child process ----

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function procStatus(pid: number, key: "VmHWM" | "VmRSS"): number {
  try {
    const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

interface Agent {
  child: ChildProcess;
  pid: number;
  port: number;
  log: () => string;
  metric: (group: string, key: string) => Promise<number>;
  stop: () => Promise<void>;
}

async function startAgent(dir: string, conf: string, extra: string[] = []): Promise<Agent> {
  const file = path.join(dir, `agent-${Date.now()}.conf`);
  writeFileSync(file, conf);
  const port = await freePort();
  const command = process.env.BENCH_FLUME ? process.env.BENCH_FLUME.split(" ") : [process.execPath, CLI];
  const child = spawn(command[0], [...command.slice(1), "run", "-f", file, "-n", "a1", "--metrics-port", String(port), "--metrics-bind", "127.0.0.1", "--no-reload-conf", "--quiet", ...extra], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (d) => (out += d));
  child.stderr?.on("data", (d) => (out += d));
  const t0 = performance.now();
  while (!out.includes("agent a1 started")) {
    if (child.exitCode !== null || performance.now() - t0 > 20000) throw new Error(`agent did not start:\n${out}`);
    await sleep(2);
  }
  const metric = async (group: string, key: string) => {
    try {
      const m = (await (await fetch(`http://127.0.0.1:${port}/metrics`)).json()) as Record<string, Record<string, string>>;
      return Number(m[group]?.[key] ?? NaN);
    } catch {
      return NaN;
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  };
  return { child, pid: child.pid as number, port, log: () => out, metric, stop };
}

function taildirToNull(logs: string, pos: string, extra = ""): string {
  return sourceToNull(`a1.sources.r1.type = TAILDIR
a1.sources.r1.filegroups = g1
a1.sources.r1.filegroups.g1 = ${logs}/.*\\.log
a1.sources.r1.positionFile = ${pos}
${extra}`);
}

/** An agent of source r1 (its lines given) -> memory c1 -> null k1. */
function sourceToNull(source: string): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.channels = c1
${source}
a1.channels.c1.type = memory
a1.channels.c1.capacity = ${process.env.BENCH_CAPACITY ?? 10000}
a1.channels.c1.transactionCapacity = 1000
a1.sinks.k1.type = null
a1.sinks.k1.batchSize = 1000
a1.sinks.k1.channel = c1
`;
}

/** Waits until the channel's takes reach `total`; ms from the call, or NaN after `maxMs`. */
async function untilTaken(agent: Agent, total: number, maxMs = 300_000): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if ((await agent.metric("CHANNEL.c1", "EventTakeSuccessCount")) >= total) return performance.now() - t0;
    if (performance.now() - t0 > maxMs) return NaN;
    await sleep(5);
  }
}

function writeManyFiles(logs: string, files: number, linesPerFile: number): void {
  const block = Buffer.alloc(linesPerFile * LINE, "x");
  for (let f = 0; f < files; f++) {
    for (let i = 0; i < linesPerFile; i++) {
      block.write(`f${String(f).padStart(5, "0")} line ${String(i).padStart(8, "0")} `, i * LINE, "latin1");
      block[i * LINE + LINE - 1] = 10;
    }
    writeFileSync(path.join(logs, `app-${f}.log`), block);
  }
}

/** RSS of an agent on an empty directory: at 2 s (after the release at its start, before the one 3 s later) and at 8 s (after both). */
async function idleRss(dir: string): Promise<{ early: number; released: number }> {
  const logs = path.join(dir, "idle-logs");
  mkdirSync(logs, { recursive: true });
  const agent = await startAgent(dir, taildirToNull(logs, path.join(dir, "idle-pos.json")));
  try {
    await sleep(2000);
    const early = procStatus(agent.pid, "VmRSS");
    await sleep(6000);
    return { early, released: procStatus(agent.pid, "VmRSS") };
  } finally {
    await agent.stop();
  }
}

/** What reading `count` files of `perFile` lines to the end took: time, the agent's CPU, its peak RSS, and RSS `settleMs` later. */
async function readManyFiles(dir: string, name: string, count: number, perFile: number, settleMs: number): Promise<{ ms: number; cpu: number; peak: number; after: number }> {
  const logs = path.join(dir, name);
  mkdirSync(logs);
  writeManyFiles(logs, count, perFile);
  const agent = await startAgent(dir, taildirToNull(logs, path.join(dir, `${name}.json`)));
  try {
    const cpu0 = cpuMs(agent.pid);
    const ms = await untilTaken(agent, count * perFile);
    const cpu = cpuMs(agent.pid) - cpu0;
    const peak = procStatus(agent.pid, "VmHWM");
    await sleep(settleMs);
    return { ms, cpu, peak, after: procStatus(agent.pid, "VmRSS") };
  } finally {
    await agent.stop();
  }
}

/** 1,000 files: throughput at default settings, memory per tailed file, RSS afterwards. */
export async function files(): Promise<void> {
  const count = Number(process.env.BENCH_TAILDIR_FILES ?? 1000);
  const few = Math.max(1, Math.round(count / 10));
  const perFile = 10_000;
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-taildir-files-"));
  try {
    const idle = await idleRss(dir);
    // A tenth of the files first: the peak's growth from there is what each added file costs,
    // apart from what reading at full speed costs whatever the number of files.
    const small = await readManyFiles(dir, "few-logs", few, perFile, 0);
    const r = await readManyFiles(dir, "logs", count, perFile, 10000);
    const total = count * perFile;
    console.log(
      `TAILDIR ${fmt(count)} files x ${fmt(perFile)} lines of ${LINE} bytes -> memory -> null, default TAILDIR settings: ${fmt(total / (r.ms / 1000))} lines/s (agent CPU ${(r.cpu / 1000).toFixed(2)} s); ` +
        `peak RSS ${r.peak.toFixed(0)} MB (idle agent ${idle.early.toFixed(0)} MB: ${(((r.peak - idle.early) * 1024) / count).toFixed(1)} KiB per file; ` +
        `${fmt(few)} files peaked at ${small.peak.toFixed(0)} MB: ${(((r.peak - small.peak) * 1024) / (count - few)).toFixed(1)} KiB per added file); ` +
        `RSS 10 s later ${r.after.toFixed(0)} MB (idle agent after its release ${idle.released.toFixed(0)} MB)`,
    );
    // The issue's targets are for 1,000 files of 10,000 lines.
    if (count === 1000) {
      // What a tailed file costs is what each added file adds to the peak: the issue's own
      // figures read so (1 file 68 MB, 1,000 files 1.2 GB: about 1.1 MB per file; 64 KiB per file
      // with 1,000 files under 150 MB). The peak above idle over 1,000 also charges every file
      // with what reading at full speed costs for any number of files (the code it pages in, the
      // collector's slack): printed beside it.
      const perAddedKiB = ((r.peak - small.peak) * 1024) / (count - few);
      const aboveIdleKiB = ((r.peak - idle.early) * 1024) / count;
      const rate = total / (r.ms / 1000);
      console.log(figureLine({ what: `TAILDIR, 1,000 files: peak RSS per tailed file (its growth from ${fmt(few)} to 1,000 files)`, value: `${perAddedKiB.toFixed(1)} KiB`, target: "<= 64 KiB (before: about 1.1 MB)", met: perAddedKiB <= 64 }));
      console.log(figureLine({ what: "TAILDIR, 1,000 files: peak RSS above the idle agent, over 1,000", value: `${aboveIdleKiB.toFixed(1)} KiB` }));
      console.log(figureLine({ what: "TAILDIR, 1,000 files: peak RSS", value: `${r.peak.toFixed(0)} MB`, target: "< 150 MB (before: 1,168-1,232 MB)", met: r.peak < 150 }));
      console.log(figureLine({ what: "TAILDIR, 1,000 files, default settings", value: `${fmt(rate)} lines/s`, target: ">= Fluent Bit's 0.68-0.76 M lines/s (before: 0.42-0.55 M)", met: rate >= 0.76e6 }));
    }
    // The same files once read: the cost of tailing them, without the reading's churn.
    const again = await startAgent(dir, taildirToNull(path.join(dir, "logs"), path.join(dir, "logs.json")));
    try {
      await sleep(8000);
      const rss = procStatus(again.pid, "VmRSS");
      console.log(`TAILDIR tailing the ${fmt(count)} files at their end (after a restart, at 8 s): RSS ${rss.toFixed(0)} MB, ${(((rss - idle.released) * 1024) / count).toFixed(1)} KiB per file above the idle agent at 8 s`);
    } finally {
      await again.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** BENCH_SMALL_FILES (4,000) files of one line: time until every line is in the channel, then the agent's CPU over 20 s idle. */
export async function smallFiles(): Promise<void> {
  const count = Number(process.env.BENCH_SMALL_FILES ?? 4000);
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-taildir-small-"));
  try {
    const logs = path.join(dir, "logs");
    mkdirSync(logs);
    writeManyFiles(logs, count, 1);
    const t0 = performance.now();
    const agent = await startAgent(dir, taildirToNull(logs, path.join(dir, "pos.json")));
    try {
      const ms = await untilTaken(agent, count, 120_000);
      const taken = Number.isNaN(ms) ? "not within 120 s" : `${((performance.now() - t0) / 1000).toFixed(2)} s after the spawn (${(ms / 1000).toFixed(2)} s after "started")`;
      // Idle from here: at least 10 s after the spawn, so that the start's work is over.
      await sleep(Math.max(0, 10_000 - (performance.now() - t0)));
      const from = (performance.now() - t0) / 1000;
      const cpu0 = cpuMs(agent.pid);
      await sleep(20_000);
      const cpu = cpuMs(agent.pid) - cpu0;
      console.log(
        `TAILDIR ${fmt(count)} files of one line -> memory -> null, default settings: every line taken ${taken}; ` +
          `then tailing them idle, agent CPU ${cpu} ms over 20 s from ${from.toFixed(0)} s after the spawn (${(cpu / 200).toFixed(2)} %), RSS ${procStatus(agent.pid, "VmRSS").toFixed(0)} MB`,
      );
    } finally {
      await agent.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One 300 MB file: throughput and peak RSS, batchSize 100 and 1000, and batchSize 100 with --runtime-profile throughput. */
export async function bigFile(): Promise<void> {
  const mb = Number(process.env.BENCH_TAILDIR_MB ?? 300);
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-taildir-big-"));
  try {
    const logs = path.join(dir, "logs");
    mkdirSync(logs);
    const lines = writeFile(path.join(logs, "big.log"), mb);
    for (const [batch, profile] of [[100, "footprint"], [1000, "footprint"], [100, "throughput"]] as const) {
      const extra = profile === "footprint" ? [] : ["--runtime-profile", profile];
      const rates: number[] = [];
      const peaks: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        const agent = await startAgent(dir, taildirToNull(logs, path.join(dir, `pos-${batch}-${profile}-${run}.json`), `a1.sources.r1.batchSize = ${batch}`), extra);
        try {
          const cpu0 = cpuMs(agent.pid);
          const ms = await untilTaken(agent, lines);
          const cpu = cpuMs(agent.pid) - cpu0;
          const parts = residentPartsText(agent.pid);
          const peak = procStatus(agent.pid, "VmHWM");
          const rate = lines / (ms / 1000);
          rates.push(rate);
          peaks.push(peak);
          console.log(`TAILDIR one ${mb} MB file (${fmt(lines)} lines), batchSize ${batch} -> memory -> null${extra.length ? `, ${extra.join(" ")}` : ""}, run ${run + 1}: ${fmt(rate)} lines/s (agent CPU ${(cpu / 1000).toFixed(2)} s); peak RSS ${peak.toFixed(0)} MB (RSS at the end: ${parts})`);
        } finally {
          await agent.stop();
        }
      }
      const rate = median(rates);
      const peak = median(peaks);
      const runs = runsText(rates, peaks, { unit: "lines/s" });
      if (profile === "throughput" && mb === 300) {
        // For comparison with the default profile, whose figures the targets are for.
        console.log(figureLine({ what: "TAILDIR, one 300 MB file, from the start, --runtime-profile throughput: peak RSS", value: `${peak.toFixed(0)} MB at ${fmt(rate)} lines/s (${runs})` }));
      }
      // The issue's load: 300 MB at the default batchSize, 4.96 M lines/s at 127 MB before (medians of 3).
      if (batch === 100 && profile === "footprint" && mb === 300) {
        console.log(figureLine({ what: "TAILDIR, one 300 MB file, from the start: peak RSS", value: `${peak.toFixed(0)} MB (${runs})`, target: "<= 64 MB (before: 127 MB)", met: peak <= 64 }));
        console.log(figureLine({ what: "TAILDIR, one 300 MB file, from the start: throughput", value: `${fmt(rate)} lines/s (median)`, target: ">= 4.96 M lines/s (before)", met: rate >= 4.96e6 }));
      }
    }
    const later = path.join(dir, "later");
    mkdirSync(later);
    const agent = await startAgent(dir, taildirToNull(later, path.join(dir, "pos-later.json")));
    try {
      await sleep(5000);
      const idle = procStatus(agent.pid, "VmRSS");
      renameSync(path.join(logs, "big.log"), path.join(later, "big.log"));
      const ms = await untilTaken(agent, lines);
      const peak = procStatus(agent.pid, "VmHWM");
      const parts = residentPartsText(agent.pid);
      const rate = lines / (ms / 1000);
      await sleep(5000);
      console.log(
        `TAILDIR one ${mb} MB file moved into the directory of an agent idle for 5 s (RSS ${idle.toFixed(0)} MB), batchSize 100: ${fmt(rate)} lines/s; peak RSS ${peak.toFixed(0)} MB (RSS at the end: ${parts}), ${procStatus(agent.pid, "VmRSS").toFixed(0)} MB 5 s later`,
      );
      if (mb === 300) console.log(figureLine({ what: "TAILDIR, one 300 MB file, after 5 s idle: peak RSS", value: `${peak.toFixed(0)} MB at ${fmt(rate)} lines/s`, target: "<= 64 MB (before: 127 MB)", met: peak <= 64 }));
    } finally {
      await agent.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Reads the sink's output as it grows and records when each stamped line arrives. */
function outputWatcher(out: string): { arrivals: Map<number, number>; stop: () => void } {
  const arrivals = new Map<number, number>();
  let offset = 0;
  let carry = "";
  let running = true;
  const tick = () => {
    if (!running) return;
    for (const name of existsSync(out) ? readdirSync(out) : []) {
      const f = path.join(out, name);
      const size = statSync(f).size;
      if (size > offset) {
        const fd = openSync(f, "r");
        const buf = Buffer.alloc(size - offset);
        readSync(fd, buf, 0, buf.length, offset);
        closeSync(fd);
        offset = size;
        const now = performance.now();
        const text = carry + buf.toString("latin1");
        const parts = text.split("\n");
        carry = parts.pop() ?? "";
        for (const p of parts) {
          const m = /^seq (\d+) /.exec(p);
          if (m) arrivals.set(Number(m[1]), now);
        }
      }
    }
    setTimeout(tick, 1);
  };
  tick();
  return { arrivals, stop: () => (running = false) };
}

function latencyReport(what: string, sent: Map<number, number>, arrivals: Map<number, number>): { text: string; p99: number; missing: number } {
  const lat: number[] = [];
  let missing = 0;
  for (const [seq, t] of sent) {
    const a = arrivals.get(seq);
    if (a === undefined) missing++;
    else lat.push(a - t);
  }
  const f = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`);
  // Which lines were slowest tells a stall (several lines in a row) from one late line.
  const slowest = [...sent.keys()]
    .filter((k) => arrivals.has(k))
    .map((k) => ({ k, ms: (arrivals.get(k) as number) - (sent.get(k) as number) }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 3);
  lat.sort((a, b) => a - b);
  const text = `${what}: ${lat.length} lines, latency p50 ${f(percentile(lat, 50))}, p99 ${f(percentile(lat, 99))}, max ${f(lat[lat.length - 1])} (slowest: ${slowest.map((s) => `line ${s.k} ${f(s.ms)}`).join(", ")})${missing ? `, ${missing} not delivered` : ""}`;
  return { text, p99: lat.length ? percentile(lat, 99) : Number.NaN, missing };
}

async function idleCpu(agent: Agent, ms: number): Promise<{ text: string; percent: number }> {
  const c0 = cpuMs(agent.pid);
  await sleep(ms);
  const used = cpuMs(agent.pid) - c0;
  const percent = (used / ms) * 100;
  return { text: `idle CPU ${used} ms over ${ms / 1000} s (${percent.toFixed(2)} %)`, percent };
}

/**
 * Idle CPU of this case's agent before file-system events woke it: polling only, the binary of
 * a25644a measured by this bench (30 s from 5 s after the start; /proc counts CPU in 10 ms
 * ticks). The target is its highest reading.
 */
const POLLING_IDLE_CPU = {
  taildir: { text: "3 runs: 0.20-0.23 %, median 0.20 %", most: 0.234 },
  spooldir: { text: "5 runs: 0.37-0.43 %, median 0.40 %", most: 0.434 },
};

function fileRoll(sourceLines: string): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
${sourceLines}
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.batchSize = 1
`;
}

/**
 * Starts the agent, measures its CPU over 30 s idle, then calls `send(i)` every 100 ms (it
 * writes line `seq i`) and reports when each line reached the sink's directory.
 */
async function pickup(what: string, before: string, idleBefore: { text: string; most: number }, dir: string, conf: string, send: (i: number) => void): Promise<void> {
  const n = Number(process.env.BENCH_LATENCY_LINES ?? 150);
  const agent = await startAgent(dir, conf);
  try {
    // Past the agent's release of memory 3 s after the start: that is once, not idle CPU.
    await sleep(5000);
    // 30 s: /proc counts CPU in 10 ms ticks, and an idle agent uses a few of them a second.
    const idle = await idleCpu(agent, 30_000);
    const watcher = outputWatcher(path.join(dir, "out"));
    const sent = new Map<number, number>();
    const blocked: number[] = [];
    const c0 = cpuMs(agent.pid);
    for (let i = 0; i < n; i++) {
      await sleep(100);
      sent.set(i, performance.now());
      send(i);
      // The writer's own write or rename can wait in the kernel (behind an fsync's journal
      // commit): that wait is part of the latency, and this says how much of it there was.
      const took = performance.now() - (sent.get(i) as number);
      if (took > 10) blocked.push(took);
    }
    await sleep(6000);
    watcher.stop();
    const busy = cpuMs(agent.pid) - c0;
    const first = (watcher.arrivals.get(0) ?? Number.NaN) - (sent.get(0) ?? 0);
    const writer = blocked.length === 0 ? "no write blocked over 10 ms" : `${blocked.length} writes blocked over 10 ms (longest ${Math.max(...blocked).toFixed(0)} ms)`;
    const report = latencyReport(what, sent, watcher.arrivals);
    console.log(`${report.text} (the first, after the agent's release of memory: ${first.toFixed(1)} ms; ${writer}); ${idle.text}; CPU ${busy} ms while the ${n} lines came (${(n * 0.1 + 6).toFixed(0)} s)`);
    console.log(
      figureLine({
        what: `${what.split(",")[0]}: p99 from the write to the sink`,
        value: `${report.p99.toFixed(1)} ms${report.missing ? `, ${report.missing} lines not delivered` : ""}`,
        target: `<= 50 ms, every line delivered (before: ${before})`,
        met: report.p99 <= 50 && report.missing === 0,
      }),
    );
    console.log(
      figureLine({
        what: `${what.split(",")[0]}: idle CPU`,
        value: `${idle.percent.toFixed(2)} %`,
        target: `no more than polling alone before (${idleBefore.text})`,
        met: idle.percent <= idleBefore.most,
      }),
    );
  } finally {
    await agent.stop();
  }
}

const stamped = (i: number) => `seq ${i} ${"x".repeat(80)}\n`;

/** Pickup latency of TAILDIR on an idle file, one line every 100 ms; idle CPU. */
export async function latency(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-taildir-latency-"));
  try {
    const logs = path.join(dir, "logs");
    mkdirSync(logs);
    const file = path.join(logs, "app.log");
    writeFileSync(file, "seq -1 first\n");
    const conf = fileRoll(`a1.sources.r1.type = TAILDIR
a1.sources.r1.filegroups = g1
a1.sources.r1.filegroups.g1 = ${logs}/app\\.log
a1.sources.r1.positionFile = ${path.join(dir, "pos.json")}
a1.sinks.k1.sink.directory = ${path.join(dir, "out")}`);
    const fd = openSync(file, "a");
    try {
      await pickup("TAILDIR pickup, default settings, a line every 100 ms -> file_roll batchSize 1", "4.99 s", POLLING_IDLE_CPU.taildir, dir, conf, (i) => writeSync(fd, stamped(i)));
    } finally {
      closeSync(fd);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Pickup latency of spooldir: a one-line file renamed into the directory every 100 ms. */
export async function spooldirLatency(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-spool-latency-"));
  try {
    const spool = path.join(dir, "spool");
    const staging = path.join(dir, "staging");
    mkdirSync(spool);
    mkdirSync(staging);
    const conf = fileRoll(`a1.sources.r1.type = spooldir
a1.sources.r1.spoolDir = ${spool}
a1.sinks.k1.sink.directory = ${path.join(dir, "out")}`);
    await pickup("spooldir pickup, default settings, a file every 100 ms -> file_roll batchSize 1", "polled every 500 ms", POLLING_IDLE_CPU.spooldir, dir, conf, (i) => {
      const f = path.join(staging, `f${i}.log`);
      writeFileSync(f, stamped(i));
      renameSync(f, path.join(spool, `f${i}.log`));
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A spool backlog: BENCH_SPOOL_FILES (2,000) files of 10 lines, spooldir (defaults) -> memory -> null. */
export async function spoolBacklog(): Promise<void> {
  const count = Number(process.env.BENCH_SPOOL_FILES ?? 2000);
  const perFile = 10;
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-spool-backlog-"));
  try {
    const spool = path.join(dir, "spool");
    mkdirSync(spool);
    writeManyFiles(spool, count, perFile);
    const agent = await startAgent(dir, sourceToNull(`a1.sources.r1.type = spooldir\na1.sources.r1.spoolDir = ${spool}`));
    try {
      const cpu0 = cpuMs(agent.pid);
      const ms = await untilTaken(agent, count * perFile, 120_000);
      const cpu = cpuMs(agent.pid) - cpu0;
      const done = Number.isNaN(ms) ? readdirSync(spool).filter((n) => n.endsWith(".COMPLETED")).length : count;
      const secs = Number.isNaN(ms) ? 120 : ms / 1000;
      console.log(`spooldir backlog of ${fmt(count)} files x ${perFile} lines -> memory -> null, default settings: ${fmt(done / secs)} files/s (${fmt(done)} files in ${secs.toFixed(1)} s, agent CPU ${(cpu / 1000).toFixed(2)} s)`);
    } finally {
      await agent.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Named cases for `npm run bench -- taildir:<case>` and the footprint group. */
export const cases: Record<string, () => Promise<void>> = { files, "small-files": smallFiles, "big-file": bigFile, latency, "spooldir-latency": spooldirLatency, "spool-backlog": spoolBacklog };

if (import.meta.main) await run();
