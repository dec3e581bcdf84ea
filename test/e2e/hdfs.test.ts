import { afterAll, beforeAll, describe, expect } from "bun:test";
import { agentsAfterEach, freePort, tempDir, waitForMetrics } from "../support/helpers.ts";
import { type HdfsCluster, startHdfs } from "../support/hdfs.ts";
import { needsJvm } from "../support/jvm.ts";

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

const numbers = (n: number) => Array.from({ length: n }, (_, i) => `${i}\n`).join("");

describe("hdfs sink on a real HDFS (Hadoop's FsShell reads the files)", () => {
  needsJvm.test(
    "seq -> memory -> hdfs, DataStream over webhdfs://, rolled every 400 events: 3 closed files, in-use names gone after stop, -cat gives every line in order",
    async () => {
      const tmp = tempDir();
      cleanups.push(tmp.cleanup);
      const metrics = await freePort();
      const a = startAgent(
        tmp.dir,
        "a1",
        seqToHdfs(
          1000,
          `a1.sinks.k1.hdfs.path = webhdfs://127.0.0.1:${hdfs.httpPort}/flume/stream
a1.sinks.k1.hdfs.fileType = DataStream
a1.sinks.k1.hdfs.rollCount = 400
a1.sinks.k1.hdfs.rollSize = 0
a1.sinks.k1.hdfs.rollInterval = 0
a1.sinks.k1.hdfs.batchSize = 100`,
        ),
        metrics,
      );
      await drained(metrics, 1000);
      a.child.kill("SIGTERM");
      expect(await a.exited()).toBe(0);
      const files = await hdfs.list("/flume/stream");
      expect(files).toHaveLength(3);
      for (const f of files) expect(f).toMatch(/^\/flume\/stream\/FlumeData\.\d+$/);
      let all = "";
      for (const f of files) all += (await hdfs.cat(f)).toString("utf8");
      expect(all).toBe(numbers(1000));
    },
    300_000,
  );

  needsJvm.test(
    "one seq source into five hdfs sinks (SequenceFile Writable, Text + gzip blocks, Writable + zlib blocks; CompressedStream gzip, zlib): Hadoop's -text reads every file as the same 500 records",
    async () => {
      const tmp = tempDir();
      cleanups.push(tmp.cleanup);
      const metrics = await freePort();
      const kinds: Record<string, { lines: string; value: (i: number) => string; keyed: boolean; name: RegExp }> = {
        seqWritable: { lines: "", value: (i) => [...Buffer.from(String(i))].map((b) => b.toString(16).padStart(2, "0")).join(" "), keyed: true, name: /^FlumeData\.\d+$/ },
        seqTextGzip: { lines: "hdfs.writeFormat = Text\nhdfs.codeC = gzip", value: String, keyed: true, name: /^FlumeData\.\d+\.gz$/ },
        seqZlib: { lines: "hdfs.codeC = DefaultCodec", value: (i) => [...Buffer.from(String(i))].map((b) => b.toString(16).padStart(2, "0")).join(" "), keyed: true, name: /^FlumeData\.\d+\.deflate$/ },
        streamGzip: { lines: "hdfs.fileType = CompressedStream\nhdfs.codeC = gzip", value: String, keyed: false, name: /^FlumeData\.\d+\.gz$/ },
        streamZlib: { lines: "hdfs.fileType = CompressedStream\nhdfs.codeC = default", value: String, keyed: false, name: /^FlumeData\.\d+\.deflate$/ },
      };
      const names = Object.keys(kinds);
      let conf = `a1.sources = r1
a1.channels = ${names.map((_, i) => `c${i}`).join(" ")}
a1.sinks = ${names.map((_, i) => `k${i}`).join(" ")}
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 500
a1.sources.r1.batchSize = 50
a1.sources.r1.channels = ${names.map((_, i) => `c${i}`).join(" ")}
`;
      names.forEach((n, i) => {
        conf += `a1.channels.c${i}.type = memory
a1.channels.c${i}.capacity = 10000
a1.sinks.k${i}.type = hdfs
a1.sinks.k${i}.channel = c${i}
a1.sinks.k${i}.hdfs.path = hdfs://127.0.0.1:${hdfs.rpcPort}/flume/formats/${n}
a1.sinks.k${i}.hdfs.webhdfs.port = ${hdfs.httpPort}
a1.sinks.k${i}.hdfs.rollCount = 0
a1.sinks.k${i}.hdfs.rollSize = 0
a1.sinks.k${i}.hdfs.rollInterval = 0
a1.sinks.k${i}.hdfs.batchSize = 70
${kinds[n].lines
  .split("\n")
  .filter(Boolean)
  .map((l) => `a1.sinks.k${i}.${l}`)
  .join("\n")}
`;
      });
      const a = startAgent(tmp.dir, "a1", conf, metrics);
      await waitForMetrics(metrics, "every sink to drain 500", (m) => names.every((_, i) => m[`SINK.k${i}`]?.EventDrainSuccessCount === "500"), 120_000, 100);
      a.child.kill("SIGTERM");
      expect(await a.exited()).toBe(0);
      const started = Date.now() - 600_000;
      for (const n of names) {
        const files = await hdfs.list(`/flume/formats/${n}`);
        expect({ n, count: files.length }).toEqual({ n, count: 1 });
        expect(files[0].split("/").pop()).toMatch(kinds[n].name);
        const lines = (await hdfs.text(files[0])).split("\n").filter((l) => l !== "");
        expect({ n, count: lines.length }).toEqual({ n, count: 500 });
        lines.forEach((line, i) => {
          if (kinds[n].keyed) {
            const [key, value] = line.split("\t");
            expect(Number(key)).toBeGreaterThan(started);
            expect({ n, i, value }).toEqual({ n, i, value: kinds[n].value(i) });
          } else expect({ n, i, line }).toEqual({ n, i, line: kinds[n].value(i) });
        });
      }
    },
    300_000,
  );
});
