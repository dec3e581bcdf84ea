/**
 * The Kafka source's ceiling on this machine, step by step, on one local broker holding
 * BENCH_EVENTS records of 100 bytes (alternated runs, a fresh group each):
 *   perf     Kafka's ConsumerPerformance (the JVM consumer reading and dropping)
 *   fetch    our consumer (KafkaPoller over our fetcher) reading batches of 1000 and dropping them
 *   commit   the same, committing each batch's offsets before the next (Flume's source loop)
 *   overlap  the same, each commit going while the next batch is read (and ending before that batch goes on)
 *   agent    the whole agent: kafka source -> memory channel -> null sink (CEILING_AGENT binary)
 *   rtt      no records: RTT_COMMITS (2000) offset commits one after the other (KafkaPoller.commit), timed
 * Prints records/s, CPU per record of the reader and of the broker, and the reader's peak RSS;
 * the mean time of an offset commit as the reader saw it, and with CEILING_REQUEST_LOG=1 as the
 * broker's request logger saw it (turned to DEBUG: it slows the broker a little).
 *   bun scripts/bench/_kafka-ceiling.ts [modes...]   (CEILING_AGENT=dist/flume, BENCH_RUNS=2)
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { silentLogger } from "../../src/core/logger.ts";
import { KafkaPoller, type KafkaMessage } from "../../src/kafka/consumer.ts";
import { consumerSettings } from "../../src/kafka/settings.ts";
import { KAFKA_SERVER_START_JVM, kafkaTool, startKafka } from "../../test/support/kafka.ts";
import { cpuMs, fmt, freePort, peakRssMb } from "./_util.ts";
import { sourceConf } from "./kafka.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const BATCH = 1000;
const RTT_COMMITS = Number(process.env.RTT_COMMITS ?? 2000);

interface Result {
  rate: number;
  cpuMs: number;
  rss: number;
  /** Offset commits made and their total time in ms, as the reader saw them. */
  commits?: number;
  commitMs?: number;
}

/** In a child process: reads EVENTS records in batches as `mode` says and prints the Result as JSON. */
async function reader(bootstrap: string, topic: string, group: string, mode: string): Promise<void> {
  const settings = consumerSettings({ bootstrap, bootstrapKey: "b", props: { "auto.offset.reset": "earliest" }, groupId: group, defaultOffsetReset: "earliest", clientId: group, label: group, logger: silentLogger });
  const poller = new KafkaPoller(group, settings, { topics: [topic] }, silentLogger, BATCH * 2);
  await poller.connect();
  let commits = 0;
  let commitMs = 0;
  const commit = (msgs: KafkaMessage[]) => {
    const t = performance.now();
    commits++;
    return poller.commit(msgs).then(() => void (commitMs += performance.now() - t));
  };
  if (mode === "rtt") {
    const one = [{ topic, partition: 0, offset: 0, leaderEpoch: -1 } as unknown as KafkaMessage];
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < RTT_COMMITS; i++) await commit(one);
    const c = process.cpuUsage(c0);
    console.log(JSON.stringify({ rate: RTT_COMMITS / ((performance.now() - t0) / 1000), cpuMs: (c.user + c.system) / 1000, rss: peakRssMb(), commits, commitMs } satisfies Result));
    await poller.close();
    process.exit(0);
  }
  await poller.waitFor(1, 60_000);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let n = 0;
  let last: Promise<void> = Promise.resolve();
  while (n < EVENTS) {
    await poller.waitFor(BATCH, 100);
    const msgs = poller.take(BATCH);
    n += msgs.length;
    if (msgs.length === 0) continue;
    if (mode === "commit") await commit(msgs);
    else if (mode === "overlap") {
      // As the source: the previous commit ends before this batch would go to the channels.
      await last;
      last = commit(msgs);
    }
  }
  await last;
  const c = process.cpuUsage(c0);
  const result: Result = { rate: EVENTS / ((performance.now() - t0) / 1000), cpuMs: (c.user + c.system) / 1000, rss: peakRssMb(), commits, commitMs };
  console.log(JSON.stringify(result));
  await poller.close();
  process.exit(0);
}

function child(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): { pid: number; done: Promise<string> } {
  const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env });
  let out = "";
  p.stdout.on("data", (d) => (out += d));
  p.stderr.on("data", (d) => (out += d));
  return { pid: p.pid!, done: new Promise((resolve) => p.on("close", () => resolve(out))) };
}

async function inProcess(bootstrap: string, group: string, mode: string): Promise<Result> {
  const env = { ...process.env, FLUME_JSC_ADDED: "x", BUN_JSC_useFTLJIT: "false", BUN_JSC_heapGrowthMaxIncrease: "1" };
  const out = await child(process.execPath, [import.meta.path, "--reader", bootstrap, "perf", group, mode], env).done;
  const line = out.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`${mode} printed no result:\n${out.slice(-2000)}`);
  return JSON.parse(line) as Result;
}

async function consumerPerformance(classpath: string, bootstrap: string, group: string): Promise<Result> {
  const c = child("/usr/bin/time", ["-f", "TIME %U %S %M", "java", "-Xmx512m", "-cp", classpath, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", "perf", "--messages", String(EVENTS), "--group", group, "--timeout", "60000"]);
  const out = await c.done;
  const lines = out.trim().split("\n");
  const header = lines.findIndex((l) => l.includes("nMsg.sec"));
  const cols = lines[header].split(",").map((s) => s.trim());
  const row = lines[header + 1].split(",").map((s) => s.trim());
  const time = /TIME ([\d.]+) ([\d.]+) (\d+)/.exec(out)!;
  // Its CPU includes the JVM's start and the group join: an upper bound.
  return { rate: Number(row[cols.indexOf("nMsg.sec")]), cpuMs: (Number(time[1]) + Number(time[2])) * 1000, rss: Number(time[3]) / 1024 };
}

async function agent(binary: string, bootstrap: string, group: string, dir: string): Promise<Result> {
  const conf = path.join(dir, `${group}.conf`);
  writeFileSync(conf, sourceConf(bootstrap, "perf", group));
  const port = await freePort();
  const c = spawn(binary, ["run", "-f", conf, "-n", "a1", "--quiet", "--no-reload-conf", "--metrics-port", String(port), "--metrics-bind", "127.0.0.1"], { stdio: "ignore" });
  let first = 0, cpu0 = 0, peak = 0;
  try {
    for (const deadline = Date.now() + 300_000; Date.now() < deadline; ) {
      let n = 0;
      try {
        const m = (await (await fetch(`http://127.0.0.1:${port}/metrics`)).json()) as Record<string, Record<string, string>>;
        n = Number(m["SOURCE.r1"]?.EventAcceptedCount ?? 0);
      } catch {}
      peak = Math.max(peak, peakRssMb(c.pid!) || 0);
      if (n > 0 && first === 0) {
        first = performance.now();
        cpu0 = cpuMs(c.pid!);
      }
      if (n >= EVENTS) {
        const r: Result = { rate: EVENTS / ((performance.now() - first) / 1000), cpuMs: cpuMs(c.pid!) - cpu0, rss: Math.max(peak, peakRssMb(c.pid!)) };
        // How many offset commits it made: the broker's request log says (CEILING_REQUEST_LOG=1).
        return r;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error("the agent did not read every record in 300 s");
  } finally {
    c.kill("SIGTERM");
    await new Promise((r) => (c.exitCode !== null ? r(null) : c.on("exit", r)));
  }
}

/** The broker's mean times of the OffsetCommit requests in its request log: total and its parts, in ms. */
function offsetCommitTimes(log: string): string {
  const sums: Record<string, number> = {};
  let n = 0;
  for (const line of log.split("\n")) {
    if (!line.includes('"requestApiKeyName":"OFFSET_COMMIT"')) continue;
    n++;
    for (const m of line.matchAll(/"(totalTimeMs|requestQueueTimeMs|localTimeMs|remoteTimeMs|responseQueueTimeMs|sendTimeMs)":([\d.]+)/g)) sums[m[1]] = (sums[m[1]] ?? 0) + Number(m[2]);
  }
  if (n === 0) return "no OffsetCommit logged";
  return `${n} OffsetCommit, ${Object.entries(sums).map(([k, v]) => `${k.replace("TimeMs", "")} ${(v / n).toFixed(3)}`).join(", ")} ms`;
}

if (process.argv[2] === "--reader") {
  const [bootstrap, topic, group, mode] = process.argv.slice(3);
  await reader(bootstrap, topic, group, mode);
} else {
  const modes = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["perf", "fetch", "commit", "overlap", "agent"];
  const binary = process.env.CEILING_AGENT ?? "dist/flume";
  const runs = Number(process.env.BENCH_RUNS ?? 2);
  const dir = mkdtempSync(path.join(tmpdir(), "kafka-ceiling-"));
  const kafka = await startKafka({ brokerJvm: KAFKA_SERVER_START_JVM });
  const broker = kafka.nodes[0].peer.pid;
  const brokerLog = () => readFileSync(kafka.nodes[0].peer.logFile, "utf8");
  try {
    await kafka.createTopic("perf");
    if (process.env.CEILING_REQUEST_LOG) {
      const r = await kafkaTool(kafka.classpath, "org.apache.kafka.tools.ConfigCommand", ["--bootstrap-server", kafka.bootstrap, "--entity-type", "broker-loggers", "--entity-name", "1", "--alter", "--add-config", "kafka.request.logger=DEBUG"], { timeoutMs: 120_000 });
      if (r.code !== 0) throw new Error(`turning the request logger on failed:\n${r.output.slice(-2000)}`);
    }
    await kafkaTool(kafka.classpath, "org.apache.kafka.tools.ProducerPerformance", ["--topic", "perf", "--num-records", String(EVENTS), "--record-size", "100", "--throughput", "-1", "--producer-props", `bootstrap.servers=${kafka.bootstrap}`, "acks=all", "linger.ms=5"], { timeoutMs: 300_000, jvmArgs: ["-Xmx512m"] });
    let n = 0;
    for (let i = 0; i < runs; i++) {
      for (const mode of modes) {
        const group = `g${++n}`;
        const b0 = cpuMs(broker);
        const logAt = process.env.CEILING_REQUEST_LOG ? brokerLog().length : 0;
        const r = mode === "perf" ? await consumerPerformance(kafka.classpath, kafka.bootstrap, group) : mode === "agent" ? await agent(binary, kafka.bootstrap, group, dir) : await inProcess(kafka.bootstrap, group, mode);
        const brokerCpu = cpuMs(broker) - b0;
        const unit = mode === "rtt" ? "commit" : "record";
        const per = (ms: number) => ((ms * 1000) / (mode === "rtt" ? (r.commits ?? 1) : EVENTS)).toFixed(2);
        let line = `${mode.padEnd(8)} ${fmt(r.rate).padStart(9)} ${unit}s/s  CPU ${per(r.cpuMs)} µs/${unit}${mode === "perf" ? " (with JVM start)" : ""}  broker CPU ${per(brokerCpu)} µs/${unit} (whole run)  peak RSS ${r.rss.toFixed(0)} MB`;
        if (r.commits) line += `  commit ${(r.commitMs! / r.commits).toFixed(3)} ms (${r.commits})`;
        if (process.env.CEILING_REQUEST_LOG) line += `  broker: ${offsetCommitTimes(brokerLog().slice(logAt))}`;
        console.log(line);
      }
    }
  } finally {
    await kafka.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
