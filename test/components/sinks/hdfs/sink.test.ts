import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { definition, type HdfsSink, parseHdfsPath } from "../../../../src/components/sinks/hdfs/index.ts";
import { readHadoopConf } from "../../../../src/io/hdfs/hadoop-conf.ts";
import { createEvent } from "../../../../src/core/event.ts";
import { MemoryChannel } from "../../../../src/core/memory-channel.ts";
import { VirtualClock } from "../../../../src/core/virtual-clock.ts";
import { build, context } from "../../../support/components.ts";
import { cleanupsAfterEach, tempDir, waitUntil } from "../../../support/helpers.ts";

const cleanups = cleanupsAfterEach();
const START = 1_700_000_000_000;

function setup(props: Record<string, string> = {}) {
  const t = tempDir("flume-hdfs-sink-");
  cleanups.push(t.cleanup);
  const clock = new VirtualClock(START);
  const ctx = { ...context("k1"), clock };
  const sink = build(definition, { "hdfs.path": `file://${t.dir}/out`, "hdfs.fileType": "DataStream", ...props }, ctx) as HdfsSink;
  const channel = new MemoryChannel("c1", { capacity: 10000, transactionCapacity: 1000 });
  channel.start();
  sink.setChannel(channel);
  const dir = path.join(t.dir, "out");
  const files = () => {
    try {
      return readdirSync(dir).sort();
    } catch {
      return [];
    }
  };
  const read = (f: string) => readFileSync(path.join(dir, f), "utf8");
  return { dir, sink, channel, clock, files, read, ctx };
}

async function put(channel: MemoryChannel, bodies: string[], headers: Record<string, string> = {}): Promise<void> {
  const tx = channel.getTransaction();
  tx.begin();
  for (const b of bodies) tx.put(createEvent(b, { ...headers }));
  await tx.commit();
  tx.close();
}

describe("hdfs sink rolling (file:// paths)", () => {
  test("rollCount 3: 7 events in one batch make two closed files of 3 and one in-use file; stop renames it; names count up from the clock", async () => {
    const { sink, channel, files, read } = setup({ "hdfs.rollCount": "3", "hdfs.rollSize": "0", "hdfs.rollInterval": "0", "hdfs.batchSize": "10" });
    await sink.start();
    await put(channel, ["a", "b", "c", "d", "e", "f", "g"]);
    expect(await sink.process()).toBe("BACKOFF");
    expect(files()).toEqual([`FlumeData.${START + 1}`, `FlumeData.${START + 2}`, `FlumeData.${START + 3}.tmp`]);
    expect(files().map(read)).toEqual(["a\nb\nc\n", "d\ne\nf\n", "g\n"]);
    await sink.stop();
    expect(files()).toEqual([`FlumeData.${START + 1}`, `FlumeData.${START + 2}`, `FlumeData.${START + 3}`]);
    expect(sink.counter.values.ConnectionCreatedCount).toBe(3);
    expect(sink.counter.values.ConnectionClosedCount).toBe(3);
  });

  test("rollSize 10 bytes of bodies: a file rolls once it holds 10 or more (Flume checks before each event)", async () => {
    const { sink, channel, files, read } = setup({ "hdfs.rollCount": "0", "hdfs.rollSize": "10", "hdfs.rollInterval": "0" });
    await sink.start();
    await put(channel, ["aaaa", "bbbb", "cccc", "dddd"]);
    await sink.process();
    await sink.stop();
    expect(files().map(read)).toEqual(["aaaa\nbbbb\ncccc\n", "dddd\n"]);
  });

  test("rollInterval 30 s: the in-use file is renamed 30 s after it was opened, the next batch opens a new one", async () => {
    const { sink, channel, clock, files } = setup({ "hdfs.rollCount": "0", "hdfs.rollSize": "0", "hdfs.rollInterval": "30" });
    await sink.start();
    await put(channel, ["a"]);
    await sink.process();
    expect(files()).toEqual([`FlumeData.${START + 1}.tmp`]);
    await clock.advance(29_000);
    expect(files()).toEqual([`FlumeData.${START + 1}.tmp`]);
    await clock.advance(1_000);
    await waitUntil(() => files()[0] === `FlumeData.${START + 1}`, "the roll's rename");
    await put(channel, ["b"]);
    await sink.process();
    expect(files()).toEqual([`FlumeData.${START + 1}`, `FlumeData.${START + 2}.tmp`]);
    await sink.stop();
  });

  test("idleTimeout 5 s: a bucket without writes for 5 s is closed; each write restarts the wait", async () => {
    const { sink, channel, clock, files } = setup({ "hdfs.rollCount": "0", "hdfs.rollSize": "0", "hdfs.rollInterval": "0", "hdfs.idleTimeout": "5" });
    await sink.start();
    await put(channel, ["a"]);
    await sink.process();
    await clock.advance(4_000);
    await put(channel, ["b"]);
    await sink.process();
    await clock.advance(4_000);
    expect(files()).toEqual([`FlumeData.${START + 1}.tmp`]);
    await clock.advance(1_000);
    await waitUntil(() => files()[0] === `FlumeData.${START + 1}`, "the idle close");
    await sink.stop();
  });

  test("maxOpenFiles 2 with a bucket per header: the least recently used bucket is closed when a third opens", async () => {
    const { sink, channel, files } = setup({ "hdfs.rollCount": "0", "hdfs.rollSize": "0", "hdfs.rollInterval": "0", "hdfs.maxOpenFiles": "2", "hdfs.filePrefix": "%{k}" });
    await sink.start();
    for (const k of ["x", "y", "x", "z"]) {
      await put(channel, [k], { k });
      await sink.process();
    }
    expect(files()).toEqual([`x.${START + 1}.tmp`, `y.${START + 1}`, `z.${START + 1}.tmp`]);
    await sink.stop();
  });

  test("inUsePrefix, emptyInUseSuffix, fileSuffix; CompressedStream gzip adds .gz when no suffix is set", async () => {
    const a = setup({ "hdfs.inUsePrefix": "_", "hdfs.emptyInUseSuffix": "true", "hdfs.fileSuffix": ".log", "hdfs.rollCount": "0", "hdfs.rollSize": "0", "hdfs.rollInterval": "0" });
    await a.sink.start();
    await put(a.channel, ["a"]);
    await a.sink.process();
    expect(a.files()).toEqual([`_FlumeData.${START + 1}.log`]);
    await a.sink.stop();
    expect(a.files()).toEqual([`FlumeData.${START + 1}.log`]);
    const b = setup({ "hdfs.fileType": "CompressedStream", "hdfs.codeC": "gzip", "hdfs.rollInterval": "0" });
    await b.sink.start();
    await put(b.channel, ["a"]);
    await b.sink.process();
    await b.sink.stop();
    expect(b.files()).toEqual([`FlumeData.${START + 1}.gz`]);
  });

  test("file:// paths carry no writer mark: a restarted sink leaves in-use files there as they are (on HDFS it renames its own, see the e2e test)", async () => {
    const first = setup({ "hdfs.rollInterval": "0" });
    await first.sink.start();
    await put(first.channel, ["a"]);
    await first.sink.process();
    // Killed: no stop. The local file system has no marks, so nothing is claimed there.
    const second = build(definition, { "hdfs.path": `file://${first.dir}`, "hdfs.fileType": "DataStream" }, { ...context("k1"), clock: first.clock }) as HdfsSink;
    await second.start();
    expect(first.files()).toEqual([`FlumeData.${START + 1}.tmp`]);
    await second.stop();
  });
});

describe("hdfs sink with concurrentBatches", () => {
  test("3 lanes: takes are written at once into files of their own (names from one counter), every event once, all renamed at stop", async () => {
    const { sink, channel, files, read } = setup({ "hdfs.concurrentBatches": "3", "hdfs.batchSize": "100", "hdfs.rollCount": "0", "hdfs.rollSize": "0", "hdfs.rollInterval": "0" });
    await sink.start();
    const bodies = Array.from({ length: 2000 }, (_, i) => `e${i}`);
    for (let i = 0; i < bodies.length; i += 500) await put(channel, bodies.slice(i, i + 500));
    let statuses = 0;
    while (channel.size > 0 && statuses++ < 1000) await sink.process();
    await sink.stop();
    const names = files();
    expect(names.length).toBeGreaterThan(1);
    expect(names.length).toBeLessThanOrEqual(3);
    for (const n of names) expect(n).toMatch(new RegExp(`^FlumeData\\.${String(START).slice(0, 6)}\\d+$`));
    const lines = names.flatMap((n) => read(n).split("\n").filter(Boolean));
    expect(lines.sort()).toEqual([...bodies].sort());
    expect(sink.counter.values.EventDrainSuccessCount).toBe(2000);
  });
});

describe("hdfs sink configuration", () => {
  const errors = (props: Record<string, string>) => {
    const { options, errors } = definition.parse({ "hdfs.path": "hdfs://nn:8020/flume", ...props });
    return [...errors, ...(definition.validate?.(options) ?? [])].map((e) => `${e.key}: ${e.message}`);
  };

  test("a path without a file system goes to fs.defaultFS of $HADOOP_CONF_DIR; hdfs:// reaches the NameNode's RPC port (8020 by default), webhdfs:// its HTTP port (9870)", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "flume-hadoop-conf-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const prop = (n: string, v: string) => `<property>\n  <name>${n}</name>\n  <value>${v}</value>\n</property>`;
    writeFileSync(path.join(dir, "core-site.xml"), `<?xml version="1.0"?>\n<configuration>${prop("fs.defaultFS", "hdfs://nn1.example.com:8021")}</configuration>`);
    writeFileSync(path.join(dir, "hdfs-site.xml"), `<configuration>${prop("dfs.replication", "3")}${prop("dfs.blocksize", "64m")}${prop("dfs.namenode.http-address", "nn1.example.com:50070")}</configuration>`);
    const conf = readHadoopConf({ HADOOP_CONF_DIR: dir });
    expect(conf).toEqual({ dir, defaultFS: "hdfs://nn1.example.com:8021", httpAddress: "nn1.example.com:50070", replication: 3, blockSize: 64 * 1024 * 1024 });
    // The client configuration's replication and block size go with new files, as in Hadoop's client.
    expect(parseHdfsPath("/flume/events/%Y", conf)).toEqual({ path: "/flume/events/%Y", target: { kind: "hdfs", host: "nn1.example.com", port: 8021, replication: 3, blockSize: 64 * 1024 * 1024 } });
    expect(parseHdfsPath("hdfs://other/x", { dir }).target).toEqual({ kind: "hdfs", host: "other", port: 8020 });
    const w = parseHdfsPath("webhdfs://other/x", { dir });
    expect(w.target.kind === "webhdfs" ? w.target.nameNode.href : "").toBe("http://other:9870/");
  });

  test("Flume 1.11's defaults", () => {
    const { options } = definition.parse({ "hdfs.path": "hdfs://nn:8020/x" });
    expect(options).toMatchObject({
      "hdfs.filePrefix": "FlumeData", "hdfs.inUseSuffix": ".tmp", "hdfs.rollInterval": 30, "hdfs.rollSize": 1024, "hdfs.rollCount": 10,
      "hdfs.idleTimeout": 0, "hdfs.batchSize": 100, "hdfs.fileType": "SequenceFile", "hdfs.writeFormat": "Writable", "hdfs.maxOpenFiles": 5000,
      "hdfs.roundValue": 1, "hdfs.roundUnit": "second", "hdfs.retryInterval": 180, "hdfs.callTimeout": 30000, "hdfs.threadsPoolSize": 10, "hdfs.rollTimerPoolSize": 1,
      serializer: "TEXT",
    });
    expect(errors({})).toEqual([]);
  });

  test("refused with a clear message: Kerberos, DataStream with a codec, CompressedStream without, codecs we cannot write, a path without a file system", () => {
    expect(errors({ "hdfs.kerberosPrincipal": "flume/_HOST@EXAMPLE.COM" })[0]).toMatch(/^hdfs\.kerberosPrincipal: Kerberos is not supported: .*simple authentication/);
    expect(errors({ "hdfs.kerberosKeytab": "/etc/flume.keytab" })[0]).toMatch(/^hdfs\.kerberosKeytab: Kerberos is not supported/);
    expect(errors({ "hdfs.fileType": "DataStream", "hdfs.codeC": "gzip" })).toEqual(["hdfs.codeC: fileType DataStream writes no compressed output: remove codeC, or set fileType = CompressedStream"]);
    expect(errors({ "hdfs.fileType": "CompressedStream" })).toEqual(["hdfs.codeC: fileType CompressedStream needs a codec (codeC = gzip)"]);
    expect(errors({ "hdfs.codeC": "zstandard" })).toEqual([
      "hdfs.codeC: codec ZStandardCodec is not supported by Flume TS: Hadoop 3.3's ZStandardCodec reads and writes only through libhadoop built with zstd (native), so files cannot be checked with Hadoop's own reader here; choose from None, gzip (GzipCodec), bzip2 (BZip2Codec), snappy (SnappyCodec), lz4 (Lz4Codec), default (DefaultCodec), deflate (DeflateCodec)",
    ]);
    expect(errors({ "hdfs.codeC": "com.hadoop.compression.lzo.LzopCodec" })[0]).toMatch(/unsupported compression codec/);
    expect(errors({ "hdfs.codeC": "LzoCodec" })[0]).toMatch(/codec LzoCodec is not supported by Flume TS: LZO is not part of Hadoop/);
    expect(errors({ "hdfs.codeC": "zip" })[0]).toMatch(/unsupported compression codec "zip"/);
    const noConf = mkdtempSync(path.join(tmpdir(), "flume-no-hadoop-conf-"));
    cleanups.push(() => rmSync(noConf, { recursive: true, force: true }));
    const saved = process.env.HADOOP_CONF_DIR;
    process.env.HADOOP_CONF_DIR = noConf;
    try {
      expect(errors({ "hdfs.path": "/flume/events" })[0]).toBe(
        `hdfs.path: "/flume/events" has no file system and no fs.defaultFS was found in ${noConf}/core-site.xml (set HADOOP_CONF_DIR): write hdfs://namenode:8020/dir, webhdfs://namenode:9870/dir or file:///dir`,
      );
    } finally {
      if (saved === undefined) delete process.env.HADOOP_CONF_DIR;
      else process.env.HADOOP_CONF_DIR = saved;
    }
    expect(errors({ "hdfs.path": "s3a://bucket/x" })[0]).toMatch(/file system "s3a" is not supported/);
    expect(errors({ "hdfs.round": "true", "hdfs.roundUnit": "hour", "hdfs.roundValue": "25" })).toEqual(["hdfs.roundValue: must be at most 24 for roundUnit hour"]);
    expect(errors({ "hdfs.timeZone": "Nowhere/City" })[0]).toMatch(/unknown time zone/);
  });
});
