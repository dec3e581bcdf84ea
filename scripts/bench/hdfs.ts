/**
 * `npm run bench -- hdfs`: stress (100-byte events) -> memory -> hdfs, batches of 1,000, on a
 * real HDFS (test/support/hdfs.ts: one NameNode, one DataNode on this machine), DataStream and
 * SequenceFile, side by side in one run with Apache Flume 1.11's HDFS sink on the same HDFS
 * and with `hdfs dfs -put` of the same bytes (the ceiling; its JVM start is not counted).
 * Events/s from the sink's first drained event to the last.
 *
 * Ours also with hdfs.concurrentBatches = 4 (BENCH_HDFS_LANES): that many takes written at once,
 * each committed after its own write.
 *
 * Then ours again on a second HDFS whose DataNode's own client retries the close of a file after
 * 20 ms instead of 400 (dfs.client.block.write.locateFollowingBlock.initial.delay.ms): every
 * WebHDFS write ends with that close, and on a stock DataNode about half of them wait the 400 ms
 * for the NameNode to hear of the block.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startFlume } from "../../test/support/flume.ts";
import { startHdfs } from "../../test/support/hdfs.ts";
import { HADOOP } from "../../test/support/jvm-artifacts.ts";
import { figureLine, fmt, timeAgent } from "./_util.ts";

const EVENTS = Number(process.env.BENCH_HDFS_EVENTS ?? 100_000);
const BODY = 100;

function conf(hdfsPath: string, fileType: string, webhdfsPort: number): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = org.apache.flume.source.StressSource
a1.sources.r1.size = ${BODY}
a1.sources.r1.maxTotalEvents = ${EVENTS}
a1.sources.r1.batchSize = 1000
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.channels.c1.capacity = 200000
a1.channels.c1.transactionCapacity = 1000
a1.sinks.k1.type = hdfs
a1.sinks.k1.channel = c1
a1.sinks.k1.hdfs.path = ${hdfsPath}
a1.sinks.k1.hdfs.webhdfs.port = ${webhdfsPort}
a1.sinks.k1.hdfs.fileType = ${fileType}
a1.sinks.k1.hdfs.batchSize = 1000
a1.sinks.k1.hdfs.rollCount = 0
a1.sinks.k1.hdfs.rollSize = 0
a1.sinks.k1.hdfs.rollInterval = 0
a1.sinks.k1.hdfs.minBlockReplicas = 1
`;
}

async function timeFlume(text: string): Promise<number> {
  const port = await (await import("../../test/support/helpers.ts")).freePort();
  const flume = await startFlume({ conf: text, extraSets: [HADOOP], metricsPort: port, jvmArgs: ["-Xmx512m", "-XX:+UseParallelGC", "--add-opens", "java.base/java.lang=ALL-UNNAMED"] });
  try {
    let first = 0;
    const deadline = Date.now() + 600_000;
    while (Date.now() < deadline) {
      const n = Number((await flume.metrics())["SINK.k1"]?.EventDrainSuccessCount ?? 0);
      if (n > 0 && first === 0) first = performance.now();
      if (n >= EVENTS) return EVENTS / ((performance.now() - first) / 1000);
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`Flume did not drain ${EVENTS} events within 600 s:\n${flume.tail(40)}`);
  } finally {
    await flume.stop(30_000);
  }
}

/** Takes written at once in the concurrentBatches rows (BENCH_HDFS_LANES, 4 by default). */
const LANES = Number(process.env.BENCH_HDFS_LANES ?? 4);

/** Ours with hdfs.concurrentBatches = LANES, DataStream and SequenceFile. */
async function concurrent(hdfs: { rpcPort: number; httpPort: number }, dir: string, rows: [string, number][], label: string): Promise<void> {
  for (const fileType of ["DataStream", "SequenceFile"]) {
    const file = path.join(dir, `ours-lanes-${fileType}.conf`);
    writeFileSync(file, `${conf(`hdfs://127.0.0.1:${hdfs.rpcPort}/bench/lanes-${fileType}-${Date.now()}`, fileType, hdfs.httpPort)}a1.sinks.k1.hdfs.concurrentBatches = ${LANES}\n`);
    const r = await timeAgent(file, "a1", "SINK.k1", "EventDrainSuccessCount", EVENTS, 600_000);
    rows.push([`Flume TS, ${fileType}, concurrentBatches ${LANES}, ${label}`, r.rate]);
    console.log(`  Flume TS ${fileType}, concurrentBatches ${LANES}, ${label}: ${fmt(r.rate)} events/s (peak RSS ${r.rss.toFixed(0)} MB)`);
  }
}

const TUNED = { "dfs.client.block.write.locateFollowingBlock.initial.delay.ms": "20" };

export async function run(): Promise<void> {
  const rows: [string, number][] = [];
  await stockCluster(rows);
  await tunedCluster(rows);
  console.log(`\n  ${EVENTS.toLocaleString("en-US")} events of ${BODY} bytes, batches of 1,000:`);
  for (const [what, rate] of rows) console.log(`  ${what.padEnd(70)} ${fmt(rate).padStart(10)} events/s`);
}

async function tunedCluster(rows: [string, number][]): Promise<void> {
  const hdfs = await startHdfs({ site: TUNED });
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-hdfs-"));
  try {
    await hdfs.mkdirOpen("/bench");
    for (const fileType of ["DataStream", "SequenceFile"]) {
      const file = path.join(dir, `ours-${fileType}.conf`);
      writeFileSync(file, conf(`hdfs://127.0.0.1:${hdfs.rpcPort}/bench/ours-${fileType}`, fileType, hdfs.httpPort));
      const ours = await timeAgent(file, "a1", "SINK.k1", "EventDrainSuccessCount", EVENTS, 600_000);
      rows.push([`Flume TS, ${fileType}, DataNode close retry 20 ms`, ours.rate]);
      console.log(`  Flume TS ${fileType}, DataNode close retry 20 ms: ${fmt(ours.rate)} events/s`);
    }
    await concurrent(hdfs, dir, rows, "DataNode close retry 20 ms");
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await hdfs.stop();
  }
}

async function stockCluster(rows: [string, number][]): Promise<void> {
  const hdfs = await startHdfs();
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-hdfs-"));
  try {
    await hdfs.mkdirOpen("/bench");
    for (const fileType of ["DataStream", "SequenceFile"]) {
      const file = path.join(dir, `ours-${fileType}.conf`);
      writeFileSync(file, conf(`hdfs://127.0.0.1:${hdfs.rpcPort}/bench/ours-${fileType}`, fileType, hdfs.httpPort));
      const ours = await timeAgent(file, "a1", "SINK.k1", "EventDrainSuccessCount", EVENTS, 600_000);
      rows.push([`Flume TS, ${fileType}`, ours.rate]);
      console.log(`  Flume TS ${fileType}: ${fmt(ours.rate)} events/s (peak RSS ${ours.rss.toFixed(0)} MB)`);
      const flume = await timeFlume(conf(`hdfs://127.0.0.1:${hdfs.rpcPort}/bench/flume-${fileType}`, fileType, hdfs.httpPort));
      rows.push([`Apache Flume 1.11, ${fileType}`, flume]);
      console.log(`  Apache Flume 1.11 ${fileType}: ${fmt(flume)} events/s`);
      console.log(figureLine({ what: `${fileType}: Flume TS / Apache Flume`, value: `${(ours.rate / flume).toFixed(2)}x`, target: "at least 3x", met: ours.rate >= 3 * flume }));
    }
    await concurrent(hdfs, dir, rows, "stock DataNode");
    // The ceiling: the same bytes in one file, put by Hadoop's own client (JVM start excluded).
    const local = path.join(dir, "events.txt");
    writeFileSync(local, Buffer.alloc(EVENTS * (BODY + 1), "x\n".repeat(50).slice(0, BODY) + "\n"));
    const t0 = performance.now();
    await hdfs.fs(["-help", "put"]);
    const jvm = performance.now() - t0;
    const t1 = performance.now();
    const put = await hdfs.fs(["-put", local, "/bench/put.txt"]);
    if (put.code !== 0) throw new Error(`hdfs dfs -put failed: ${put.stderr}`);
    const putRate = EVENTS / ((performance.now() - t1 - jvm) / 1000);
    rows.push(["hdfs dfs -put of the same bytes (JVM start excluded)", putRate]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await hdfs.stop();
  }
}
