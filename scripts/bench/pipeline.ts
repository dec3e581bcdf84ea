// seq (batchSize 1000) -> memory (capacity 100000, transactionCapacity 1000) -> null (batchSize 1000),
// run as `flume run` in a child process and timed through /metrics from the first delivered event
// to the last, the way Apache Flume 1.11 was timed on this machine (1.6-2.7 M events/s, 280-350 MB RSS).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fmt, freePort, peakRssMb } from "./_util.ts";

const TOTAL = Number(process.env.BENCH_EVENTS ?? 5_000_000);

async function metrics(port: number): Promise<Record<string, Record<string, string>> | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    return (await res.json()) as Record<string, Record<string, string>>;
  } catch {
    return null;
  }
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-"));
  const conf = path.join(dir, "pipeline.conf");
  writeFileSync(
    conf,
    [
      "a1.sources = r1",
      "a1.channels = c1",
      "a1.sinks = k1",
      "a1.sources.r1.type = seq",
      `a1.sources.r1.totalEvents = ${TOTAL}`,
      "a1.sources.r1.batchSize = 1000",
      "a1.sources.r1.channels = c1",
      "a1.channels.c1.type = memory",
      "a1.channels.c1.capacity = 100000",
      "a1.channels.c1.transactionCapacity = 1000",
      "a1.sinks.k1.type = null",
      "a1.sinks.k1.batchSize = 1000",
      "a1.sinks.k1.channel = c1",
      "",
    ].join("\n"),
  );
  const port = await freePort();
  // Measure what ships: the compiled binary (npm run build), else the sources under Bun.
  const binary = path.resolve(import.meta.dir, "../../dist/flume");
  const cmd = existsSync(binary) && !process.env.BENCH_FROM_SOURCE ? [binary] : [process.execPath, path.resolve(import.meta.dir, "../../src/cli.ts")];
  console.log(`running ${cmd.map((c) => path.relative(process.cwd(), c) || c).join(" ")}`);
  const child = spawn(cmd[0], [...cmd.slice(1), "run", "-f", conf, "-n", "a1", "--quiet", "--no-reload-conf", `-Dflume.monitoring.type=http`, `-Dflume.monitoring.port=${port}`], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  let first = 0;
  let last = 0;
  let peak = 0;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const m = await metrics(port);
    const taken = Number(m?.["CHANNEL.c1"]?.EventTakeSuccessCount ?? 0);
    peak = Math.max(peak, peakRssMb(child.pid as number) || 0);
    if (taken > 0 && first === 0) first = performance.now();
    if (taken >= TOTAL) {
      last = performance.now();
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  peak = Math.max(peak, peakRssMb(child.pid as number) || 0);
  child.kill("SIGTERM");
  await new Promise((r) => child.on("exit", r));
  rmSync(dir, { recursive: true, force: true });
  if (last === 0) {
    console.log(`pipeline: did not deliver ${fmt(TOTAL)} events within 120 s\n${stderr.slice(-2000)}`);
    process.exitCode = 1;
    return;
  }
  const secs = (last - first) / 1000;
  console.log(`pipeline seq -> memory -> null: ${fmt(TOTAL)} events in ${secs.toFixed(2)} s = ${fmt(TOTAL / secs)} events/s; peak RSS ${peakRssMb === undefined ? "?" : peak.toFixed(0)} MB`);
  console.log(`  (Apache Flume 1.11 here: 1.6-2.7 M events/s at 280-350 MB RSS; target >= 2x Flume, < 100 MB)`);
}
