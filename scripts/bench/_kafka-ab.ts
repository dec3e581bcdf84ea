/**
 * A/B of the Kafka source, channel and sink between agent binaries, on one broker, alternating
 * runs (the machine is shared: rates swing, CPU per event less so):
 *   bun scripts/bench/_kafka-ab.ts <before-binary> <after-binary>
 *   bun scripts/bench/_kafka-ab.ts n1=<binary> n2=<binary> ...   (named sides, any number)
 * BENCH_EVENTS records (default 1,000,000) are written once with ProducerPerformance; each run
 * reads them with a fresh group. Prints rate, agent CPU (user+sys) per event, peak RSS and the
 * broker's CPU per event over the run (and its JIT compiler threads' share).
 * AB_MODES=source,channel,sink picks the pipelines (sink: stress -> memory -> Kafka sink, as
 * the benchmark); AB_SOURCE_EXTRA_<SIDE> / AB_SINK_EXTRA_<SIDE> / AB_CHANNEL_EXTRA_<SIDE> add source / sink / channel properties
 * to one side (e.g. kafka.consumer.fetch.max.bytes; a sink's
 * a1.sinks.k1.kafka.producer.max.in.flight.requests.per.connection = 1).
 * AB_BROKER_PROPS=k=v,... sets broker properties. AB_FLUME=1 adds a Flume 1.11 agent (the same configuration) to each run, measured alike.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { startFlume } from "../../test/support/flume.ts";
import { FLUME_KAFKA } from "../../test/support/jvm-artifacts.ts";
import { KAFKA_SERVER_START_JVM, kafkaTool, startKafka } from "../../test/support/kafka.ts";
import { cpuMs, fmt, freePort, jitCpuMs, peakRssMb } from "./_util.ts";
import { channelConf, sinkConf, sourceConf } from "./kafka.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const args = process.argv.slice(2);
/** [name, binary]: before and after for two bare paths, else name=binary. */
const sides: [string, string][] = args.map((a, i) => {
  const eq = a.indexOf("=");
  return eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [args.length === 2 ? ["before", "after"][i] : `side${i + 1}`, a];
});
const extra = (kind: string, side: string) => (process.env[`AB_${kind}_EXTRA_${side.toUpperCase()}`] ?? "").replaceAll("\\n", "\n");

/** An agent's process, its /metrics, and how to stop it. */
interface Agent {
  pid: number;
  metrics(): Promise<Record<string, Record<string, string>>>;
  running(): boolean;
  stop(): Promise<void>;
  log(): string;
}

async function ourAgent(binary: string, conf: string): Promise<Agent> {
  const port = await freePort();
  const child = spawn(binary, ["run", "-f", conf, "-n", "a1", "--quiet", "--no-reload-conf", "--metrics-port", String(port), "--metrics-bind", "127.0.0.1"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d) => (stderr += d));
  return {
    pid: child.pid!,
    metrics: async () => (await (await fetch(`http://127.0.0.1:${port}/metrics`)).json()) as Record<string, Record<string, string>>,
    running: () => child.exitCode === null,
    stop: async () => {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.on("exit", r)));
    },
    log: () => stderr.slice(-2000),
  };
}

async function flumeAgent(conf: string): Promise<Agent> {
  const port = await freePort();
  const flume = await startFlume({ conf: readFileSync(conf, "utf8"), metricsPort: port, extraSets: [FLUME_KAFKA], jvmArgs: ["-Xmx512m", "-XX:+UseParallelGC"] });
  return { pid: flume.pid, metrics: () => flume.metrics(), running: () => true, stop: () => flume.stop(), log: () => flume.tail(30) };
}

async function run(binary: string, conf: string, group: string, key: string): Promise<{ rate: number; rss: number; cpu: number; brokerCpu: number; brokerJit: number }> {
  const agent = binary === "flume" ? await flumeAgent(conf) : await ourAgent(binary, conf);
  let first = 0, last = 0, cpu0 = 0, cpu1 = 0, peak = 0, broker0 = 0, broker1 = 0, jit0 = 0, jit1 = 0;
  const deadline = Date.now() + 300_000;
  try {
    while (Date.now() < deadline && agent.running()) {
      let n = 0;
      try {
        n = Number((await agent.metrics())[group]?.[key] ?? 0);
      } catch {}
      peak = Math.max(peak, peakRssMb(agent.pid) || 0);
      if (n > 0 && first === 0) {
        first = performance.now();
        cpu0 = cpuMs(agent.pid);
        broker0 = cpuMs(brokerPid);
        jit0 = jitCpuMs(brokerPid);
      }
      if (n >= EVENTS) {
        last = performance.now();
        cpu1 = cpuMs(agent.pid);
        broker1 = cpuMs(brokerPid);
        jit1 = jitCpuMs(brokerPid);
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    peak = Math.max(peak, peakRssMb(agent.pid) || 0);
  } finally {
    await agent.stop();
  }
  if (!last) throw new Error(`${group}.${key} did not reach ${EVENTS}\n${agent.log()}`);
  return { rate: EVENTS / ((last - first) / 1000), rss: peak, cpu: cpu1 - cpu0, brokerCpu: broker1 - broker0, brokerJit: jit1 - jit0 };
}

const dir = mkdtempSync(path.join(tmpdir(), "kafka-ab-"));
/** AB_BROKER_PROPS="k=v,k=v": broker properties over the harness's (e.g. num.io.threads=8). */
const brokerProps = Object.fromEntries((process.env.AB_BROKER_PROPS ?? "").split(",").filter(Boolean).map((kv) => kv.split("=", 2) as [string, string]));
const kafka = await startKafka({ brokerJvm: KAFKA_SERVER_START_JVM, properties: brokerProps });
/** The broker's CPU over a run: half of the machine's work in the channel's pipeline. */
const brokerPid = kafka.nodes[0].peer.pid;
try {
  const modes = (process.env.AB_MODES ?? "source,channel").split(",");
  // The source reads these records; the channel and the sink write their own.
  if (modes.includes("source")) await kafka.createTopic("perf");
  if (modes.includes("source")) await kafkaTool(kafka.classpath, "org.apache.kafka.tools.ProducerPerformance", ["--topic", "perf", "--num-records", String(EVENTS), "--record-size", "100", "--throughput", "-1", "--producer-props", `bootstrap.servers=${kafka.bootstrap}`, "acks=all", "linger.ms=5"], { timeoutMs: 300_000, jvmArgs: ["-Xmx512m"] });
  let n = 0;
  for (let i = 0; i < RUNS; i++) {
    for (const [name, binary] of process.env.AB_FLUME ? [...sides, ["flume", "flume"]] : sides) {
      for (const mode of modes) {
        const file = path.join(dir, `${++n}.conf`);
        let r;
        if (mode === "sink") {
          await kafka.createTopic(`sink${n}`);
          writeFileSync(file, sinkConf(kafka.bootstrap, `sink${n}`, extra("SINK", name)));
          r = await run(binary, file, "SINK.k1", "EventDrainSuccessCount");
        } else if (mode === "channel") {
          await kafka.createTopic(`ch${n}`);
          writeFileSync(file, channelConf(kafka.bootstrap, `ch${n}`, extra("CHANNEL", name)));
          r = await run(binary, file, "CHANNEL.c1", "EventTakeSuccessCount");
        } else {
          writeFileSync(file, sourceConf(kafka.bootstrap, "perf", `g${n}`, extra("SOURCE", name)));
          r = await run(binary, file, "SOURCE.r1", "EventAcceptedCount");
        }
        console.log(`${mode.padEnd(8)} ${name.padEnd(7)} ${fmt(r.rate).padStart(9)}/s  CPU ${(r.cpu / 1000).toFixed(2)} s (${((r.cpu * 1e6) / EVENTS / 1000).toFixed(2)} µs/event)  peak RSS ${r.rss.toFixed(0)} MB  broker CPU ${((r.brokerCpu * 1e6) / EVENTS / 1000).toFixed(2)} µs/event (JIT compiling ${(r.brokerJit / 1000).toFixed(2)} s)`);
      }
    }
  }
} finally {
  await kafka.stop();
  rmSync(dir, { recursive: true, force: true });
}
