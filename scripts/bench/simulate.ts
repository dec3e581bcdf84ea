/**
 * `npm run bench -- simulate`: how long `flume simulate` takes for 1,000,000 events (under
 * 10 s asked). Scenarios run in this process: the demo topology (one agent, memory channel),
 * then the 3-agent tier of conf/tier.conf with link faults (the real avro sink and source on
 * every hop), its collector's file channel replaced by a memory channel and then as
 * configured (real disk writes and fsyncs in a scratch directory under TMPDIR), then once as
 * the CLI in a child process, as a user runs it. Prints wall time, simulated events per
 * second and the process's peak RSS.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { runSimulation } from "../../src/simulate/engine.ts";
import { DEFAULTS, parseCrashSpecs, parseFailSpec, parseLinkRates, parsePartitions, type SimulationOptions } from "../../src/simulate/options.ts";
import { fmt, peakRssMb } from "./_util.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);

const SCENARIOS: { name: string; options: Partial<SimulationOptions> }[] = [
  { name: "no faults", options: {} },
  { name: "--fail-sink 0.2 --fail-put 0.05", options: { failSink: parseFailSpec("0.2", "x"), failPut: 0.05 } },
  { name: "--fail-sink 0.2 --crash-at 30s,60s", options: { failSink: parseFailSpec("0.2", "x"), crashAt: [30_000, 60_000] } },
  { name: "--rate 0 (unlimited) --sink-latency 0", options: { rate: 0, sinkLatency: 0 } },
];

const TIER = path.resolve(import.meta.dir, "../../conf/tier.conf");
const LINK_FAULTS = "--lose-answer 0.01 --link-fail 0.005 --partition edge1->collector@20s-25s";
const linkFaults = () => [...parseLinkRates("0.01", "x", "lose-answer"), ...parseLinkRates("0.005", "x", "fail"), ...parsePartitions("edge1->collector@20s-25s", "x")];

export async function run(): Promise<void> {
  for (const s of SCENARIOS) {
    const o: SimulationOptions = { ...DEFAULTS, crashAt: [], events: EVENTS, ...s.options };
    const t0 = performance.now();
    const r = await runSimulation(o);
    const ms = performance.now() - t0;
    console.log(
      `${s.name.padEnd(40)} ${fmt(EVENTS)} events in ${(ms / 1000).toFixed(2)} s (${fmt((EVENTS / ms) * 1000)} events/s), ` +
        `${fmt(r.deliveries)} deliveries, ${(r.time / 1000).toFixed(0)} s virtual, ${r.verdict.line}`,
    );
  }
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-sim-"));
  try {
    const memoryTier = path.join(dir, "tier-memory.conf");
    writeFileSync(memoryTier, readFileSync(TIER, "utf8").replace("collector.channels.c1.type = file", "collector.channels.c1.type = memory"));
    const tiers: { name: string; options: Partial<SimulationOptions> }[] = [
      { name: `tier (memory channels) ${LINK_FAULTS}`, options: { configFile: memoryTier, links: linkFaults() } },
      { name: `tier (memory channels) ${LINK_FAULTS} --crash edge2@60s --fail-sink 0.05`, options: { configFile: memoryTier, links: linkFaults(), crashes: parseCrashSpecs("edge2@60s", "x"), failSink: parseFailSpec("0.05", "x") } },
      { name: `conf/tier.conf (collector: file channel, fsync per commit, in ${tmpdir()}) ${LINK_FAULTS}`, options: { configFile: TIER, links: linkFaults() } },
    ];
    for (const s of tiers) {
      const o: SimulationOptions = { ...DEFAULTS, crashAt: [], crashes: [], links: [], events: EVENTS, ...s.options };
      const t0 = performance.now();
      const r = await runSimulation(o);
      const ms = performance.now() - t0;
      const causes = r.duplicateCauses.filter((d) => d.count > 0).map((d) => `${d.cause} ${fmt(d.count)}`).join(", ");
      console.log(
        `${s.name}\n  ${fmt(EVENTS)} events in ${(ms / 1000).toFixed(2)} s (${fmt((EVENTS / ms) * 1000)} events/s), ${fmt(r.links.reduce((n, l) => n + l.stats.requests, 0))} appendBatch requests, ` +
          `${(r.time / 1000).toFixed(0)} s virtual, ${r.verdict.line}${causes ? ` (${causes})` : ""}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`peak RSS of this process: ${peakRssMb().toFixed(0)} MB`);
  const cli = path.resolve(import.meta.dir, "../../src/cli.ts");
  const t0 = performance.now();
  const child = spawnSync(process.execPath, [cli, "simulate", "--events", String(EVENTS), "--fail-sink", "0.2", "--json"], { encoding: "utf8" });
  const ms = performance.now() - t0;
  const ok = child.status === 0 || child.status === 1;
  console.log(`CLI: flume simulate --events ${fmt(EVENTS)} --fail-sink 0.2: ${(ms / 1000).toFixed(2)} s wall, exit ${child.status}${ok ? "" : `\n${child.stderr}`}`);
}

if (import.meta.main) await run();
