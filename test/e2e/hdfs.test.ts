import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type AgentProcess, agentsAfterEach, expectStopsOnSigterm, freePort, ROOT, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { definition, type HdfsSink } from "../../src/components/sinks/hdfs/index.ts";
import { systemClock } from "../../src/core/clock.ts";
import { createEvent } from "../../src/core/event.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { build, context } from "../support/components.ts";
import { startFlume } from "../support/flume.ts";
import { type HdfsCluster, startHdfs } from "../support/hdfs.ts";
import { HADOOP } from "../support/jvm-artifacts.ts";
import { needsJvm } from "../support/jvm.ts";
import { precondition } from "../support/requires.ts";
import { silentPeer } from "../support/silent-peer.ts";

const DENO = path.join(ROOT, "node_modules", ".bin", "deno");
const needsDeno = precondition(() => existsSync(DENO), "needs deno from npm (npm install)");

const { cleanups, startAgent } = agentsAfterEach();
let hdfs: HdfsCluster;

beforeAll(async () => {
  if (!needsJvm.holds) return;
  hdfs = await startHdfs();
  await hdfs.mkdirOpen("/flume");
}, 300_000);

afterAll(async () => {
  await hdfs?.stop();
}, 60_000);

const drained = (port: number, n: number, ms = 120_000) =>
  waitForMetrics(port, `EventDrainSuccessCount to reach ${n}`, (m) => Number(m["SINK.k1"]?.EventDrainSuccessCount ?? 0) >= n, ms, 100);

/** Waits until each of the sinks k0.. (one per name) drained n events. */
const allDrained = (port: number, names: string[], n: number) =>
  waitForMetrics(port, `every sink to drain ${n}`, (m) => names.every((_, i) => m[`SINK.k${i}`]?.EventDrainSuccessCount === String(n)), 120_000, 100);

/** Agent a1 running conf from a temp dir, /metrics on a free port; killed after the test if still running. */
async function runAgent(conf: string, env?: Record<string, string>): Promise<{ agent: AgentProcess; metrics: number }> {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const metrics = await freePort();
  return { agent: startAgent(tmp.dir, "a1", conf, metrics, env), metrics };
}

/** SIGTERM, then the agent must exit cleanly (code 0). */
async function stop(agent: AgentProcess): Promise<void> {
  agent.child.kill("SIGTERM");
  expect(await agent.exited()).toBe(0);
}

/** Runs seq (events) -> memory -> hdfs with sinkLines until the sink drained every event, then stops the agent. */
async function runSeqToHdfs(events: number, sinkLines: string): Promise<void> {
  const { agent, metrics } = await runAgent(seqToHdfs(events, sinkLines));
  await drained(metrics, events);
  await stop(agent);
}

/** Starts http (on a free port, or the given one) -> memory -> hdfs with sinkLines; resolves once the agent started. */
async function startHttpToHdfs(sinkLines: string, port?: number): Promise<{ agent: AgentProcess; metrics: number; port: number }> {
  const p = port ?? (await freePort());
  const { agent, metrics } = await runAgent(httpToHdfs(p, sinkLines));
  await agent.waitFor(/agent a1 started/, 30_000);
  return { agent, metrics, port: p };
}

/** Runs formatsConf(dir, total, names) until every sink drained, stops the agent, and reads the records back. */
async function runFormats(dir: string, total: number, names: string[]): Promise<Record<string, string[]>> {
  const { agent, metrics } = await runAgent(formatsConf(dir, total, names));
  await allDrained(metrics, names, total);
  await stop(agent);
  return records(dir, names, total);
}

/** Sink lines that never roll a file (it is closed at stop). */
const NEVER_ROLL = `a1.sinks.k1.hdfs.rollInterval = 0
a1.sinks.k1.hdfs.rollCount = 0
a1.sinks.k1.hdfs.rollSize = 0`;

/** seq (count events, bodies 0..count-1) -> memory -> hdfs with the given sink lines. */
function seqToHdfs(count: number, sink: string, source = ""): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = ${count}
a1.sources.r1.batchSize = 100
a1.sources.r1.channels = c1
${source}
a1.channels.c1.type = memory
a1.channels.c1.capacity = 100000
a1.channels.c1.transactionCapacity = 1000
a1.sinks.k1.type = hdfs
a1.sinks.k1.channel = c1
${sink}
`;
}

const MEMORY_CHANNEL = `a1.channels.c1.type = memory
a1.channels.c1.capacity = 100000`;

/** http source (JSON events) on 127.0.0.1:port -> c1 (memory unless channel lines are given) -> hdfs with the given sink lines. */
function httpToHdfs(port: number, sink: string, channel = MEMORY_CHANNEL): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = http
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.channels = c1
${channel}
a1.sinks.k1.type = hdfs
a1.sinks.k1.channel = c1
${sink}
`;
}

const hex = (i: number) => [...Buffer.from(String(i))].map((b) => b.toString(16).padStart(2, "0")).join(" ");

/** The file types each sink of formatsConf writes, and how Hadoop's -text shows event i. */
const KINDS: Record<string, { lines: string; value: (i: number) => string; keyed: boolean; name: RegExp }> = {
  seqWritable: { lines: "", value: hex, keyed: true, name: /^FlumeData\.\d+$/ },
  seqTextGzip: { lines: "hdfs.writeFormat = Text\nhdfs.codeC = gzip", value: String, keyed: true, name: /^FlumeData\.\d+\.gz$/ },
  seqZlib: { lines: "hdfs.codeC = DefaultCodec", value: hex, keyed: true, name: /^FlumeData\.\d+\.deflate$/ },
  seqText: { lines: "hdfs.writeFormat = Text", value: String, keyed: true, name: /^FlumeData\.\d+$/ },
  dataStream: { lines: "hdfs.fileType = DataStream", value: String, keyed: false, name: /^FlumeData\.\d+$/ },
  streamGzip: { lines: "hdfs.fileType = CompressedStream\nhdfs.codeC = gzip", value: String, keyed: false, name: /^FlumeData\.\d+\.gz$/ },
  streamZlib: { lines: "hdfs.fileType = CompressedStream\nhdfs.codeC = default", value: String, keyed: false, name: /^FlumeData\.\d+\.deflate$/ },
  seqBzip2: { lines: "hdfs.codeC = bzip2", value: hex, keyed: true, name: /^FlumeData\.\d+\.bz2$/ },
  streamBzip2: { lines: "hdfs.fileType = CompressedStream\nhdfs.codeC = BZip2Codec", value: String, keyed: false, name: /^FlumeData\.\d+\.bz2$/ },
  seqSnappy: { lines: "hdfs.codeC = snappy", value: hex, keyed: true, name: /^FlumeData\.\d+\.snappy$/ },
  streamSnappy: { lines: "hdfs.fileType = CompressedStream\nhdfs.codeC = snappy", value: String, keyed: false, name: /^FlumeData\.\d+\.snappy$/ },
  seqLz4: { lines: "hdfs.codeC = org.apache.hadoop.io.compress.Lz4Codec", value: hex, keyed: true, name: /^FlumeData\.\d+\.lz4$/ },
  streamLz4: { lines: "hdfs.fileType = CompressedStream\nhdfs.codeC = lz4", value: String, keyed: false, name: /^FlumeData\.\d+\.lz4$/ },
  // RECORD compression (a Flume TS key; Flume always compresses blocks): each value compressed on its own.
  seqTextBzip2Record: { lines: "hdfs.writeFormat = Text\nhdfs.codeC = bzip2\nhdfs.compressionType = RECORD", value: String, keyed: true, name: /^FlumeData\.\d+\.bz2$/ },
  seqSnappyRecord: { lines: "hdfs.codeC = snappy\nhdfs.compressionType = RECORD", value: hex, keyed: true, name: /^FlumeData\.\d+\.snappy$/ },
  seqTextLz4Record: { lines: "hdfs.writeFormat = Text\nhdfs.codeC = lz4\nhdfs.compressionType = RECORD", value: String, keyed: true, name: /^FlumeData\.\d+\.lz4$/ },
};
const NAMES = Object.keys(KINDS);

/**
 * One seq source replicated into one hdfs sink per KINDS entry, writing under dir/<kind>; the same
 * text for Flume and us. minBlockReplicas = 1: Flume's Hadoop client does not see the cluster's
 * dfs.replication (1) and would roll a new file after each batch of an "under-replicated" one.
 */
function formatsConf(dir: string, total: number, names = NAMES): string {
  let conf = `a1.sources = r1
a1.channels = ${names.map((_, i) => `c${i}`).join(" ")}
a1.sinks = ${names.map((_, i) => `k${i}`).join(" ")}
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = ${total}
a1.sources.r1.batchSize = 50
a1.sources.r1.channels = ${names.map((_, i) => `c${i}`).join(" ")}
`;
  names.forEach((n, i) => {
    conf += `a1.channels.c${i}.type = memory
a1.channels.c${i}.capacity = 10000
a1.sinks.k${i}.type = hdfs
a1.sinks.k${i}.channel = c${i}
a1.sinks.k${i}.hdfs.path = hdfs://127.0.0.1:${hdfs.rpcPort}${dir}/${n}
a1.sinks.k${i}.hdfs.rollCount = 0
a1.sinks.k${i}.hdfs.rollSize = 0
a1.sinks.k${i}.hdfs.rollInterval = 0
a1.sinks.k${i}.hdfs.batchSize = 70
a1.sinks.k${i}.hdfs.minBlockReplicas = 1
${KINDS[n].lines
  .split("\n")
  .filter(Boolean)
  .map((l) => `a1.sinks.k${i}.${l}`)
  .join("\n")}
`;
  });
  return conf;
}

/**
 * The records of the one file in each dir/<kind> (each holding `total`), as -text shows them, keys
 * dropped for SequenceFiles (they are the write times). One -ls and one -text for all: each
 * FsShell is a JVM start.
 */
async function records(dir: string, names: string[], total: number): Promise<Record<string, string[]>> {
  const files = await hdfs.list(dir);
  const ordered = names.map((n) => {
    const mine = files.filter((f) => f.startsWith(`${dir}/${n}/`));
    expect({ n, count: mine.length }).toEqual({ n, count: 1 });
    expect(mine[0].split("/").pop()).toMatch(KINDS[n].name);
    return mine[0];
  });
  const r = await hdfs.fs(["-text", ...ordered]);
  expect(r.code).toBe(0);
  const lines = r.stdout.split("\n").filter((l) => l !== "");
  expect(lines.length).toBe(names.length * total);
  const out: Record<string, string[]> = {};
  names.forEach((n, k) => {
    const mine = lines.slice(k * total, (k + 1) * total);
    out[n] = KINDS[n].keyed ? mine.map((l) => l.slice(l.indexOf("\t") + 1)) : mine;
  });
  return out;
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => `${i}\n`).join("");

/** The files' contents, in order, as one text: one -cat for all (each FsShell is a JVM start). */
async function catAll(cluster: HdfsCluster, files: string[]): Promise<string> {
  const r = await cluster.fs(["-cat", ...files]);
  expect(r.code).toBe(0);
  return r.stdout;
}

/** POSTs one event (no headers) per body to the http source on port; it answers 200. */
async function postBodies(port: number, bodies: string[]): Promise<void> {
  const r = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: JSON.stringify(bodies.map((body) => ({ headers: {}, body }))) });
  expect(r.status).toBe(200);
}

/** Bodies e<from> .. e<from+n-1>. */
const numbered = (from: number, n: number) => Array.from({ length: n }, (_, i) => `e${from + i}`);

describe("hdfs sink on a real HDFS (Hadoop's FsShell reads the files)", () => {
  needsJvm.test(
    "seq -> memory -> hdfs, DataStream over webhdfs://, rolled every 400 events: 3 closed files, in-use names gone after stop, -cat gives every line in order",
    async () => {
      await runSeqToHdfs(
        1000,
        `a1.sinks.k1.hdfs.path = webhdfs://127.0.0.1:${hdfs.httpPort}/flume/stream
a1.sinks.k1.hdfs.fileType = DataStream
a1.sinks.k1.hdfs.rollCount = 400
a1.sinks.k1.hdfs.rollSize = 0
a1.sinks.k1.hdfs.rollInterval = 0
a1.sinks.k1.hdfs.batchSize = 100`,
      );
      const files = await hdfs.list("/flume/stream");
      expect(files).toHaveLength(3);
      for (const f of files) expect(f).toMatch(/^\/flume\/stream\/FlumeData\.\d+$/);
      expect(await catAll(hdfs, files)).toBe(numbers(1000));
    },
    300_000,
  );

  needsJvm.test(
    "concurrentBatches 4 over hdfs:// (Hadoop RPC): takes written at once into files of their own, every event exactly once, all files closed at stop",
    async () => {
      await runSeqToHdfs(
        3000,
        `a1.sinks.k1.hdfs.path = hdfs://127.0.0.1:${hdfs.rpcPort}/flume/lanes
a1.sinks.k1.hdfs.fileType = DataStream
a1.sinks.k1.hdfs.concurrentBatches = 4
a1.sinks.k1.hdfs.batchSize = 100
${NEVER_ROLL}`,
      );
      const files = await hdfs.list("/flume/lanes");
      expect(files.length).toBeGreaterThan(1);
      for (const f of files) expect(f).toMatch(/^\/flume\/lanes\/FlumeData\.\d+$/);
      const lines = (await catAll(hdfs, files)).split("\n").filter(Boolean);
      expect(lines.map(Number).sort((x, y) => x - y)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    },
    300_000,
  );

  for (const scheme of ["hdfs", "webhdfs"]) {
  needsJvm.test(
    `a take commits only after its batch is in HDFS (${scheme}://): at each commit, a read of the in-use file (WebHDFS OPEN) already returns the batch`,
    async () => {
      const clock = systemClock;
      const sink = build(
        definition,
        {
          "hdfs.path": `${scheme}://127.0.0.1:${scheme === "hdfs" ? hdfs.rpcPort : hdfs.httpPort}/flume/durable-${scheme}`,
          "hdfs.fileType": "DataStream",
          "hdfs.batchSize": "50",
          "hdfs.rollCount": "0",
          "hdfs.rollSize": "0",
          "hdfs.rollInterval": "0",
        },
        { ...context("k1"), clock },
      ) as HdfsSink;
      const channel = new MemoryChannel("c1", { capacity: 1000, transactionCapacity: 200 });
      channel.start();
      sink.setChannel(channel);
      await sink.start();
      const put = channel.getTransaction();
      put.begin();
      for (let i = 0; i < 120; i++) put.put(createEvent(`e${i}`, {}));
      await put.commit();
      put.close();
      const seenAtCommit: string[] = [];
      const orig = channel.getTransaction.bind(channel);
      channel.getTransaction = () => {
        const tx = orig();
        const commit = tx.commit.bind(tx);
        tx.commit = async () => {
          const file = sink.currentFiles()[0];
          const r = await fetch(`http://127.0.0.1:${hdfs.httpPort}/webhdfs/v1${file}?op=OPEN&user.name=root`);
          seenAtCommit.push(await r.text());
          return commit();
        };
        return tx;
      };
      for (let i = 0; i < 3; i++) await sink.process();
      await sink.stop();
      const lines = (n: number) => Array.from({ length: n }, (_, i) => `e${i}\n`).join("");
      expect(seenAtCommit).toEqual([lines(50), lines(100), lines(120)]);
    },
    300_000,
  );
  }

  needsJvm.and(needsDeno).test(
    "the agent under Deno: seq -> memory -> hdfs SequenceFile over hdfs:// (Hadoop RPC), read back by -text",
    async () => {
      const tmp = tempDir();
      cleanups.push(tmp.cleanup);
      const metrics = await freePort();
      const file = path.join(tmp.dir, "a1.conf");
      writeFileSync(
        file,
        seqToHdfs(
          500,
          `a1.sinks.k1.hdfs.path = hdfs://127.0.0.1:${hdfs.rpcPort}/flume/deno
a1.sinks.k1.hdfs.writeFormat = Text
${NEVER_ROLL}`,
        ),
      );
      const agent = spawn(DENO, ["run", "-A", path.join(ROOT, "src", "cli.ts"), "run", "-f", file, "-n", "a1", "--quiet", "--no-reload-conf", "--metrics-port", String(metrics), "--metrics-bind", "127.0.0.1"], { cwd: ROOT, stdio: "ignore" });
      const exited = new Promise<number | null>((resolve) => agent.on("exit", (code) => resolve(code)));
      cleanups.push(() => agent.kill("SIGKILL"));
      await drained(metrics, 500);
      agent.kill("SIGTERM");
      expect(await exited).toBe(0);
      const files = await hdfs.list("/flume/deno");
      expect(files).toHaveLength(1);
      const values = (await hdfs.text(files[0])).split("\n").filter(Boolean).map((l) => l.split("\t")[1]);
      expect(values).toEqual(Array.from({ length: 500 }, (_, i) => String(i)));
    },
    300_000,
  );

  needsJvm.test(
    "one seq source into an hdfs sink per file type and codec (SequenceFile Writable and Text, uncompressed, gzip, zlib, bzip2, snappy and lz4 blocks, bzip2, snappy and lz4 records; DataStream; CompressedStream gzip, zlib, bzip2, snappy, lz4): Hadoop's -text reads every file as the same 500 records",
    async () => {
      const all = await runFormats("/flume/formats", 500, NAMES);
      for (const n of NAMES) expect({ n, values: all[n] }).toEqual({ n, values: Array.from({ length: 500 }, (_, i) => KINDS[n].value(i)) });
      // The SequenceFile keys are the write times (no timestamp header): LongWritable milliseconds.
      const seq = (await hdfs.text((await hdfs.list("/flume/formats/seqWritable"))[0])).split("\n")[0];
      expect(Math.abs(Number(seq.split("\t")[0]) - Date.now())).toBeLessThan(600_000);
    },
    300_000,
  );

  needsJvm.test(
    "http source -> hdfs with %{app}/%Y-%m-%d/%H in UTC rounded to the hour: buckets by header and time; a header of ../../ stays inside /flume/esc",
    async () => {
      const { agent: a, metrics, port } = await startHttpToHdfs(
        `a1.sinks.k1.hdfs.path = hdfs://127.0.0.1:${hdfs.rpcPort}/flume/esc/%{app}/%Y-%m-%d/%H
a1.sinks.k1.hdfs.filePrefix = events-%{app}
a1.sinks.k1.hdfs.fileType = DataStream
a1.sinks.k1.hdfs.timeZone = UTC
a1.sinks.k1.hdfs.round = true
a1.sinks.k1.hdfs.roundValue = 1
a1.sinks.k1.hdfs.roundUnit = hour
${NEVER_ROLL}`,
      );
      const t1 = Date.UTC(2024, 2, 5, 7, 59, 59);
      const t2 = Date.UTC(2024, 2, 5, 8, 0, 1);
      const events = [
        { headers: { app: "billing", timestamp: String(t1) }, body: "b1" },
        { headers: { app: "billing", timestamp: String(t2) }, body: "b2" },
        // Built, not written out: the repository test refuses literal ../ chains that leave test/.
        { headers: { app: Array(3).fill("..").join("/"), timestamp: String(t1) }, body: "evil1" },
        { headers: { app: "../x/../../y", timestamp: String(t1) }, body: "evil2" },
      ];
      const r = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: JSON.stringify(events), headers: { "content-type": "application/json" } });
      expect(r.status).toBe(200);
      await drained(metrics, 4);
      await stop(a);
      // Every file of this sink anywhere in HDFS (their names start with events-).
      const ours = (await hdfs.list("/")).filter((f) => f.split("/").pop()?.startsWith("events-"));
      const shape = ours.map((f) => f.replace(/\.\d+$/, ".N")).sort();
      expect(shape).toEqual(
        [
          "/flume/esc/%2E%2E%2F%2E%2E%2F%2E%2E/2024-03-05/07/events-%2E%2E%2F%2E%2E%2F%2E%2E.N",
          "/flume/esc/%2E%2E%2Fx%2F%2E%2E%2F%2E%2E%2Fy/2024-03-05/07/events-%2E%2E%2Fx%2F%2E%2E%2F%2E%2E%2Fy.N",
          "/flume/esc/billing/2024-03-05/07/events-billing.N",
          "/flume/esc/billing/2024-03-05/08/events-billing.N",
        ].map((f) => f.replace(/%2E/g, ".")).sort(),
      );
      const billing7 = ours.find((f) => f.includes("/billing/2024-03-05/07/")) as string;
      expect((await hdfs.cat(billing7)).toString()).toBe("b1\n");
    },
    300_000,
  );

  needsJvm.test(
    "SIGKILL with a file in use: the restarted sink renames it (its batches were committed, so it is complete), then writes a new file; nothing lost",
    async () => {
      const sinkLines = `a1.sinks.k1.hdfs.path = hdfs://127.0.0.1:${hdfs.rpcPort}/flume/crash
a1.sinks.k1.hdfs.fileType = DataStream
${NEVER_ROLL}`;
      const first = await startHttpToHdfs(sinkLines);
      const post = (bodies: string[]) => postBodies(first.port, bodies);
      await post(["one", "two"]);
      await drained(first.metrics, 2);
      await post(["three"]);
      await drained(first.metrics, 3);
      first.agent.child.kill("SIGKILL");
      await first.agent.exited();
      const left = await hdfs.list("/flume/crash");
      expect(left).toHaveLength(1);
      expect(left[0]).toMatch(/\/FlumeData\.\d+\.tmp$/);
      const second = await startHttpToHdfs(sinkLines, first.port);
      const renamed = left[0].replace(/\.tmp$/, "");
      await waitUntil(async () => (await hdfs.list("/flume/crash")).includes(renamed), "the left in-use file to be renamed", 60_000, 500);
      expect((await hdfs.cat(renamed)).toString()).toBe("one\ntwo\nthree\n");
      await post(["four"]);
      await drained(second.metrics, 1);
      await stop(second.agent);
      const files = await hdfs.list("/flume/crash");
      expect(files).toHaveLength(2);
      expect(files.every((f) => !f.endsWith(".tmp"))).toBe(true);
      expect((await hdfs.cat(files.find((f) => f !== renamed) as string)).toString()).toBe("four\n");
    },
    300_000,
  );

  needsJvm.test(
    "permission denied on a path on fs.defaultFS (HADOOP_CONF_DIR): one clear error naming the path and HDFS's AccessControlException, events stay in the channel, delivery resumes after chmod, none lost",
    async () => {
      await hdfs.fs(["-mkdir", "-p", "/flume/locked"]);
      await hdfs.fs(["-chmod", "700", "/flume/locked"]);
      const { agent: a, metrics } = await runAgent(
        seqToHdfs(
          300,
          // A path as Flume's guide writes them: on fs.defaultFS of the Hadoop configuration.
          `a1.sinks.k1.hdfs.path = /flume/locked
a1.sinks.k1.hdfs.fileType = DataStream
${NEVER_ROLL}`,
        ),
        { HADOOP_USER_NAME: "flume", HADOOP_CONF_DIR: hdfs.confDir },
      );
      await a.waitFor(/CREATE .*Permission denied/, 60_000);
      const log = a.stdout + a.stderr;
      expect(log).toMatch(/failed to deliver 100 events to hdfs:\/\/127\.0\.0\.1:\d+\/flume\/locked: CREATE \/flume\/locked\/FlumeData\.\d+\.tmp: AccessControlException: Permission denied: user=flume, access=EXECUTE, inode="\/flume\/locked"/);
      const m = await waitForMetrics(metrics, "the channel to hold every event", (x) => x["CHANNEL.c1"]?.ChannelSize === "300", 60_000, 100);
      expect(m["SINK.k1"]?.EventDrainSuccessCount).toBe("0");
      await hdfs.fs(["-chmod", "777", "/flume/locked"]);
      await drained(metrics, 300);
      await stop(a);
      const files = await hdfs.list("/flume/locked");
      expect(files).toHaveLength(1);
      expect((await hdfs.cat(files[0])).toString()).toBe(numbers(300));
    },
    300_000,
  );

  needsJvm.test(
    "Apache Flume 1.11's HDFS sink and ours, same config and events, into the same HDFS: Hadoop's -text reads the same records from both, for every file type",
    async () => {
      const flumeMetrics = await freePort();
      // Flume's SequenceFile writer refuses GzipCodec without Hadoop's native library (ours writes it, see above);
      // RECORD compression is ours only.
      const names = NAMES.filter((n) => n !== "seqTextGzip" && !n.endsWith("Record"));
      const flume = await startFlume({
        conf: formatsConf("/flume/real", 300, names),
        extraSets: [HADOOP],
        metricsPort: flumeMetrics,
        jvmArgs: ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "--add-opens", "java.base/java.lang=ALL-UNNAMED"],
      });
      try {
        await waitUntil(
          async () => {
            const m = await flume.metrics();
            return names.every((_, i) => m[`SINK.k${i}`]?.EventDrainSuccessCount === "300");
          },
          "Flume's sinks to drain 300 events each",
          120_000,
          200,
        );
      } catch (e) {
        throw new Error(`${(e as Error).message}: ${JSON.stringify(await flume.metrics())}\n${flume.tail(80)}`);
      } finally {
        await flume.stop(30_000);
      }
      const ours = await runFormats("/flume/ours", 300, names);
      const theirs = await records("/flume/real", names, 300);
      for (const n of names) expect({ n, ours: ours[n] }).toEqual({ n, ours: theirs[n] });
      expect(ours.dataStream).toEqual(Array.from({ length: 300 }, (_, i) => String(i)));
    },
    300_000,
  );

  needsJvm.test(
    "NameNode restarted mid-stream: failed batches name the path and the cause and stay in the channel, delivery resumes by itself, every event is in HDFS, the failed file renamed",
    async () => {
      const { agent: a, metrics, port } = await startHttpToHdfs(
        `a1.sinks.k1.hdfs.path = hdfs://127.0.0.1:${hdfs.rpcPort}/flume/nnrestart
a1.sinks.k1.hdfs.fileType = DataStream
a1.sinks.k1.hdfs.rollInterval = 0
a1.sinks.k1.hdfs.rollCount = 100
a1.sinks.k1.hdfs.rollSize = 0
a1.sinks.k1.hdfs.retryInterval = 1
a1.sinks.k1.hdfs.callTimeout = 10000`,
      );
      const post = (from: number, n: number) => postBodies(port, numbered(from, n));
      await post(0, 100);
      await drained(metrics, 100);
      const restarting = hdfs.restartNameNode();
      // Posted while the NameNode is down or starting: each batch rolls its file, so this one needs
      // a new file from the NameNode; the sink fails and keeps them in the channel.
      await waitUntil(() => !hdfs.nameNode.running, "the NameNode to stop", 60_000, 50);
      await post(100, 100);
      await a.waitFor(/failed to deliver 100 events to hdfs:\/\/127\.0\.0\.1:\d+\/flume\/nnrestart: CREATE \/flume\/nnrestart\/FlumeData\.\d+\.tmp: NameNode 127\.0\.0\.1:\d+: /, 60_000);
      await restarting;
      await post(200, 100);
      await drained(metrics, 300, 180_000);
      // Every file rolled after its batch: none left in use, even one whose close met the restart.
      await waitUntil(async () => (await hdfs.list("/flume/nnrestart")).filter((f) => f.endsWith(".tmp")).length === 0, "every file to be renamed", 60_000, 1000);
      await stop(a);
      const files = await hdfs.list("/flume/nnrestart");
      expect(files.length).toBeGreaterThan(1);
      expect(files.filter((f) => f.endsWith(".tmp"))).toEqual([]);
      const lines = (await catAll(hdfs, files)).split("\n").filter(Boolean);
      const unique = new Set(lines);
      expect(unique.size).toBe(300);
      // A batch whose append reached the DataNodes before its failure was reported is written again: at most one.
      expect(lines.length - unique.size).toBeLessThanOrEqual(100);
    },
    300_000,
  );

  needsJvm.test(
    "space quota reached (dfsadmin -setSpaceQuota): one clear error naming the path and DSQuotaExceededException, events stay in the channel, delivery resumes after -clrSpaceQuota, none lost",
    async () => {
      await hdfs.mkdirOpen("/flume/quota");
      // Less than one block: a new block reserves its whole size against the quota.
      const set = await hdfs.admin(["-setSpaceQuota", "1m", "/flume/quota"]);
      expect(set.code).toBe(0);
      const { agent: a, metrics } = await runAgent(
        seqToHdfs(
          300,
          `a1.sinks.k1.hdfs.path = hdfs://127.0.0.1:${hdfs.rpcPort}/flume/quota
a1.sinks.k1.hdfs.fileType = DataStream
${NEVER_ROLL}`,
        ),
      );
      await a.waitFor(/DSQuotaExceededException/, 60_000);
      expect(a.stdout + a.stderr).toMatch(/failed to deliver 100 events to hdfs:\/\/127\.0\.0\.1:\d+\/flume\/quota: CREATE \/flume\/quota\/FlumeData\.\d+\.tmp: DSQuotaExceededException: The DiskSpace quota of \/flume\/quota is exceeded/);
      const m = await waitForMetrics(metrics, "the channel to hold every event", (x) => x["CHANNEL.c1"]?.ChannelSize === "300", 60_000, 100);
      expect(m["SINK.k1"]?.EventDrainSuccessCount).toBe("0");
      expect((await hdfs.admin(["-clrSpaceQuota", "/flume/quota"])).code).toBe(0);
      await drained(metrics, 300);
      await stop(a);
      // The files whose block the quota refused were deleted: one file, closed, with every event.
      const files = await hdfs.list("/flume/quota");
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/\/FlumeData\.\d+$/);
      expect((await hdfs.cat(files[0])).toString()).toBe(numbers(300));
    },
    300_000,
  );
});

for (const scheme of ["hdfs", "webhdfs"]) {
  test(`SIGTERM while an hdfs sink starts, looking for in-use files on a NameNode that never answers (${scheme}://): the start is given up at once and the agent exits, though hdfs.callTimeout is 300 s`, async () => {
    const peer = await silentPeer();
    cleanups.push(() => peer.close());
    const { agent } = await runAgent(httpToHdfs(await freePort(), `a1.sinks.k1.hdfs.path = ${scheme}://127.0.0.1:${peer.port}/flume/events\na1.sinks.k1.hdfs.callTimeout = 300000`));
    await waitUntil(() => peer.accepted() >= 1, "the hdfs sink connected to the NameNode", 60_000, 50);
    // Before, the start waited 300 s for the listing's answer, and the stop for the start.
    await expectStopsOnSigterm(agent, 60_000);
    const log = agent.stdout + agent.stderr;
    expect(log).toContain(`k1: start given up, as it stops (hdfs sink k1: the agent stopped while the sink started (looking for in-use files left in /flume/events on ${scheme}://127.0.0.1:${peer.port}))`);
    expect(log).not.toContain("could not look for in-use files");
    expect(log).toContain("agent a1 stopped");
  });
}

describe("hdfs sink on a real HDFS frozen mid-stream", () => {
  // webhdfs:// closes each file after its batch; its stop still renames each bucket's file (a NameNode call each).
  const schemes = [
    { scheme: "hdfs", open: "with five files open", nameNode: () => `hdfs://127.0.0.1:${hdfs.rpcPort}` },
    { scheme: "webhdfs", open: "with five buckets", nameNode: () => `webhdfs://127.0.0.1:${hdfs.httpPort}` },
  ];
  for (const { scheme, open, nameNode } of schemes) {
    needsJvm.test(
      `${scheme}://: the NameNode and DataNode stopped (SIGSTOP) ${open} and a batch under way: SIGTERM stops the agent within the drain and one hdfs.callTimeout in all, not one per call; the next run renames the files left in use and delivers the batch from the file channel, none lost`,
      async () => {
        const dir = `/flume/frozen-${scheme}`;
        const tmp = tempDir();
        cleanups.push(tmp.cleanup);
        const port = await freePort();
        const conf = httpToHdfs(
          port,
          `a1.sinks.k1.hdfs.path = ${nameNode()}${dir}/%{app}
a1.sinks.k1.hdfs.fileType = DataStream
a1.sinks.k1.hdfs.callTimeout = 10000
${NEVER_ROLL}`,
          `a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${tmp.dir}/checkpoint
a1.channels.c1.dataDirs = ${tmp.dir}/data`,
        );
        const post = async (app: string, bodies: string[]) => {
          const r = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: JSON.stringify(bodies.map((body) => ({ headers: { app }, body }))) });
          expect(r.status).toBe(200);
        };
        const apps = ["a", "b", "c", "d", "e"];
        const first = await runAgent(conf);
        await first.agent.waitFor(/agent a1 started/, 60_000);
        for (const [i, app] of apps.entries()) await post(app, numbered(i * 10, 10));
        await drained(first.metrics, 50);
        const frozen = [hdfs.nameNode, ...hdfs.dataNodes];
        for (const p of frozen) process.kill(p.pid, "SIGSTOP");
        let elapsed: number;
        try {
          await post("a", numbered(50, 10));
          await waitForMetrics(first.metrics, "the sink taking the batch", (m) => Number(m["SINK.k1"]?.EventDrainAttemptCount ?? 0) >= 60, 60_000, 50);
          const t0 = Date.now();
          // Before: the batch's append, then each open file's close, each call waiting its own 10 s.
          await expectStopsOnSigterm(first.agent, 60_000);
          elapsed = Date.now() - t0;
        } finally {
          for (const p of frozen) process.kill(p.pid, "SIGCONT");
        }
        const log = first.agent.stdout + first.agent.stderr;
        expect(log).toContain(`hdfs sink k1: stopping: ${nameNode()} did not finish within hdfs.callTimeout (10000 ms)`);
        // Nothing is tried again once stopped (the client is closed): the next start renames the files.
        expect(log.slice(log.indexOf("hdfs sink k1 stopped"))).not.toContain("trying again");
        // The drain (5 s) and one callTimeout (10 s), and what the machine adds; before, the batch and
        // then four closes waited 10 s each: 50 s.
        expect(elapsed).toBeLessThan(35_000);
        const second = await runAgent(conf);
        await second.agent.waitFor(/agent a1 started/, 60_000);
        // The other apps get an event too, so that the second run looks at each directory's in-use files.
        for (const [i, app] of apps.slice(1).entries()) await post(app, numbered(60 + i, 1));
        try {
          await drained(second.metrics, 14, 120_000);
        } catch (err) {
          throw new Error(`${(err as Error).message}\nfirst run:\n${log}\nsecond run:\n${second.agent.stdout}${second.agent.stderr}\nfiles: ${(await hdfs.list(dir)).join(" ")}`);
        }
        // The stop closes the second run's files: then none is left in use.
        await stop(second.agent);
        const files = await hdfs.list(dir);
        expect(files.filter((f) => f.endsWith(".tmp"))).toEqual([]);
        const lines = (await catAll(hdfs, files)).split("\n").filter(Boolean);
        expect(new Set(lines)).toEqual(new Set(numbered(0, 64)));
        // The batch under way at the freeze may be in its file as well as written again: at most once more.
        expect(lines.length - 64).toBeLessThanOrEqual(10);
      },
      400_000,
    );
  }
});

describe("hdfs sink on two DataNodes, replication 2", () => {
  let two: HdfsCluster | undefined;
  afterAll(async () => {
    await two?.stop();
  }, 60_000);

  needsJvm.test(
    "a DataNode killed mid-stream: delivery goes on through the other, every event is in HDFS (at most one batch twice)",
    async () => {
      two = await startHdfs({ dataNodes: 2, replication: 2 });
      await two.mkdirOpen("/flume");
      const { agent: a, metrics, port } = await startHttpToHdfs(
        `a1.sinks.k1.hdfs.path = hdfs://127.0.0.1:${two.rpcPort}/flume/dnkill
a1.sinks.k1.hdfs.fileType = DataStream
a1.sinks.k1.hdfs.retryInterval = 1
${NEVER_ROLL}`,
      );
      const post = (from: number, n: number) => postBodies(port, numbered(from, n));
      await post(0, 100);
      await drained(metrics, 100);
      await two.dataNodes[0].kill("SIGKILL");
      await post(100, 100);
      await drained(metrics, 200, 180_000);
      await post(200, 100);
      await drained(metrics, 300, 180_000);
      await stop(a);
      const lines = (await catAll(two, await two.list("/flume/dnkill"))).split("\n").filter(Boolean);
      const unique = new Set(lines);
      expect(unique.size).toBe(300);
      expect(lines.length - unique.size).toBeLessThanOrEqual(100);
    },
    300_000,
  );
});
