/**
 * `npm run bench -- hdfs`: stress (100-byte events) -> memory -> hdfs, batches of 1,000, on a
 * real HDFS (test/support/hdfs.ts: one NameNode, one DataNode on this machine), DataStream and
 * SequenceFile, side by side in one run with Apache Flume 1.11's HDFS sink on the same HDFS
 * and with `hdfs dfs -put` of the same bytes (the ceiling; its JVM start is not counted).
 * Events/s from the sink's first drained event to the last.
 *
 * Ours both ways: hdfs:// (Hadoop RPC and the DataNode pipeline, the file kept open, each batch
 * hflushed) and webhdfs:// (one HTTP CREATE or APPEND per batch, each closing the file). Then the
 * cost of one batch of 1,000 x 100 bytes through each client alone (no agent): the file's first
 * batch (create) and the next ones (append), median and 90th percentile.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startFlume } from "../../test/support/flume.ts";
import { startHdfs } from "../../test/support/hdfs.ts";
import { HADOOP } from "../../test/support/jvm-artifacts.ts";
import { userInfo } from "node:os";
import type { DfsClient } from "../../src/io/hdfs/file-system.ts";
import { NativeHdfsClient } from "../../src/io/hdfs/native/client.ts";
import { WebHdfsClient } from "../../src/io/hdfs/webhdfs.ts";
import { figureLine, fmt, median, timeAgent } from "./_util.ts";

const EVENTS = Number(process.env.BENCH_HDFS_EVENTS ?? 100_000);
const BODY = 100;

function conf(hdfsPath: string, fileType: string): string {
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

/** Batches timed per client in the per-batch figures. */
const BATCHES = Number(process.env.BENCH_HDFS_BATCHES ?? 50);

/** One batch's cost through each DfsClient alone: creates (first batch of a file) and appends. */
async function perBatch(hdfs: { rpcPort: number; httpPort: number }): Promise<string[]> {
  const batch = new Uint8Array(1000 * (BODY + 1)).fill(0x78);
  const clients: [string, DfsClient][] = [
    ["hdfs:// (Hadoop RPC)", new NativeHdfsClient({ host: "127.0.0.1", port: hdfs.rpcPort, user: userInfo().username, timeoutMs: 30_000 })],
    ["webhdfs://", new WebHdfsClient({ nameNode: new URL(`http://127.0.0.1:${hdfs.httpPort}`), user: userInfo().username, timeoutMs: 30_000 })],
  ];
  const lines: string[] = [];
  for (const [name, fs] of clients) {
    const creates: number[] = [];
    const appends: number[] = [];
    for (let f = 0; f < 5; f++) {
      const file = `/bench/batch-${name.replace(/\W+/g, "")}-${f}.tmp`;
      let t = performance.now();
      await fs.create(file, batch);
      creates.push(performance.now() - t);
      for (let i = 0; i < BATCHES / 5; i++) {
        t = performance.now();
        await fs.append(file, batch);
        appends.push(performance.now() - t);
      }
      await fs.rename(file, file.replace(/\.tmp$/, ""));
    }
    await fs.close();
    const p90 = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length * 0.9)];
    lines.push(`  one batch of 1,000 x ${BODY} B, ${name.padEnd(22)} create ${median(creates).toFixed(1)} ms (p90 ${p90(creates).toFixed(1)}), append ${median(appends).toFixed(1)} ms (p90 ${p90(appends).toFixed(1)})`);
  }
  return lines;
}

export async function run(): Promise<void> {
  const rows: [string, number][] = [];
  const hdfs = await startHdfs();
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-hdfs-"));
  const figures: string[] = [];
  let batchLines: string[] = [];
  try {
    await hdfs.mkdirOpen("/bench");
    for (const fileType of ["DataStream", "SequenceFile"]) {
      const rate = async (uri: string, label: string) => {
        const file = path.join(dir, `ours-${label}-${fileType}.conf`);
        writeFileSync(file, conf(`${uri}/bench/ours-${label}-${fileType}`, fileType));
        const r = await timeAgent(file, "a1", "SINK.k1", "EventDrainSuccessCount", EVENTS, 600_000);
        console.log(`  Flume TS ${fileType} over ${label}: ${fmt(r.rate)} events/s (peak RSS ${r.rss.toFixed(0)} MB)`);
        return r.rate;
      };
      const native = await rate(`hdfs://127.0.0.1:${hdfs.rpcPort}`, "hdfs");
      rows.push([`Flume TS, ${fileType}, hdfs:// (Hadoop RPC)`, native]);
      const web = await rate(`webhdfs://127.0.0.1:${hdfs.httpPort}`, "webhdfs");
      rows.push([`Flume TS, ${fileType}, webhdfs://`, web]);
      const flume = await timeFlume(conf(`hdfs://127.0.0.1:${hdfs.rpcPort}/bench/flume-${fileType}`, fileType));
      rows.push([`Apache Flume 1.11, ${fileType}`, flume]);
      console.log(`  Apache Flume 1.11 ${fileType}: ${fmt(flume)} events/s`);
      figures.push(figureLine({ what: `${fileType}: Flume TS (hdfs://) / Apache Flume`, value: `${(native / flume).toFixed(2)}x`, target: "at least 3x", met: native >= 3 * flume }));
    }
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
    const best = Math.max(...rows.filter(([w]) => w.includes("hdfs://")).map(([, r]) => r));
    figures.push(`  Flume TS over hdfs:// at its best: ${((best / putRate) * 100).toFixed(0)}% of -put's rate`);
    batchLines = await perBatch(hdfs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await hdfs.stop();
  }
  console.log(`\n  ${EVENTS.toLocaleString("en-US")} events of ${BODY} bytes, batches of 1,000:`);
  for (const [what, r] of rows) console.log(`  ${what.padEnd(60)} ${fmt(r).padStart(10)} events/s`);
  for (const f of figures) console.log(f);
  for (const l of batchLines) console.log(l);
}
