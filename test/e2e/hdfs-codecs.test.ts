// The hdfs sink's codecs (bzip2 of our own, Snappy and LZ4 from npm libraries in Hadoop's block
// framing) where the agent really runs: under Deno and as the compiled binary, not only under Bun.
// Each writes file:// paths; Hadoop 3.3.6's own FsShell -text (no HDFS needed for local files)
// reads every file back.
import { describe, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, freePort, ROOT, tempDir, waitForMetrics } from "../support/helpers.ts";
import { hadoopClasspath } from "../support/hdfs.ts";
import { needsJvm } from "../support/jvm.ts";
import { precondition } from "../support/requires.ts";

const DENO = path.join(ROOT, "node_modules", ".bin", "deno");
const needsDeno = precondition(() => existsSync(DENO), "needs deno from npm (npm install)");
const cleanups = cleanupsAfterEach();

// Enough for bzip2 blocks coded with all six Huffman tables.
const TOTAL = 5000;
/** Sink name -> its lines (after a1.sinks.<name>.): each codec as SequenceFile blocks and as CompressedStream. */
const SINKS: Record<string, string[]> = {
  seqBzip2: ["hdfs.codeC = bzip2"],
  streamBzip2: ["hdfs.fileType = CompressedStream", "hdfs.codeC = bzip2"],
  seqSnappy: ["hdfs.codeC = snappy"],
  streamSnappy: ["hdfs.fileType = CompressedStream", "hdfs.codeC = snappy"],
  seqLz4Record: ["hdfs.codeC = lz4", "hdfs.compressionType = RECORD"],
  streamLz4: ["hdfs.fileType = CompressedStream", "hdfs.codeC = lz4"],
};
const NAMES = Object.keys(SINKS);

/** seq (bodies 0..TOTAL-1) replicated into one hdfs sink per SINKS entry, each writing out/<name>, batches of 1000. */
function conf(out: string): string {
  const lines = ["a1.sources = r1", `a1.channels = ${NAMES.map((n) => `c_${n}`).join(" ")}`, `a1.sinks = ${NAMES.join(" ")}`];
  lines.push("a1.sources.r1.type = seq", `a1.sources.r1.totalEvents = ${TOTAL}`, "a1.sources.r1.batchSize = 500", `a1.sources.r1.channels = ${NAMES.map((n) => `c_${n}`).join(" ")}`);
  for (const n of NAMES) {
    lines.push(`a1.channels.c_${n}.type = memory`, `a1.channels.c_${n}.capacity = 10000`, `a1.channels.c_${n}.transactionCapacity = 1000`, `a1.sinks.${n}.type = hdfs`, `a1.sinks.${n}.channel = c_${n}`, `a1.sinks.${n}.hdfs.path = file://${out}/${n}`);
    lines.push(`a1.sinks.${n}.hdfs.writeFormat = Text`, `a1.sinks.${n}.hdfs.batchSize = 1000`, `a1.sinks.${n}.hdfs.rollCount = 0`, `a1.sinks.${n}.hdfs.rollSize = 0`, `a1.sinks.${n}.hdfs.rollInterval = 0`);
    lines.push(...SINKS[n].map((l) => `a1.sinks.${n}.${l}`));
  }
  return `${lines.join("\n")}\n`;
}

/** Runs the agent with `command`, waits for every sink to drain TOTAL, stops it with SIGTERM (exit 0). */
async function runAgent(command: string[], dir: string): Promise<string> {
  const out = path.join(dir, "out");
  mkdirSync(out);
  const file = path.join(dir, "a1.conf");
  writeFileSync(file, conf(out));
  const metrics = await freePort();
  const [cmd, ...args] = command;
  const child = spawn(cmd, [...args, "run", "-f", file, "-n", "a1", "--quiet", "--no-reload-conf", "--metrics-port", String(metrics), "--metrics-bind", "127.0.0.1"], { cwd: dir, stdio: "ignore", env: { ...process.env, NO_COLOR: "1" } });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  cleanups.push(() => child.kill("SIGKILL"));
  await waitForMetrics(metrics, `every sink to drain ${TOTAL}`, (m) => NAMES.every((n) => m[`SINK.${n}`]?.EventDrainSuccessCount === String(TOTAL)), 120_000, 100);
  child.kill("SIGTERM");
  expect(await exited).toBe(0);
  return out;
}

/** Hadoop's FsShell -text of the one closed file in each out/<name>: its lines per name, keys dropped. */
async function hadoopText(out: string): Promise<Record<string, string[]>> {
  const files = NAMES.map((n) => {
    const names = readdirSync(path.join(out, n));
    expect({ n, names: names.length }).toEqual({ n, names: 1 });
    expect(names[0]).toMatch(/^FlumeData\.\d+\.(bz2|snappy|lz4)$/);
    return `file://${path.join(out, n, names[0])}`;
  });
  // A configuration directory with an empty core-site.xml: the local file system, nothing else.
  const confDir = path.join(out, "..", "hadoop-conf");
  mkdirSync(confDir);
  writeFileSync(path.join(confDir, "core-site.xml"), '<?xml version="1.0"?>\n<configuration></configuration>\n');
  writeFileSync(path.join(confDir, "log4j.properties"), "log4j.rootLogger=ERROR,console\nlog4j.appender.console=org.apache.log4j.ConsoleAppender\nlog4j.appender.console.target=System.err\nlog4j.appender.console.layout=org.apache.log4j.SimpleLayout\n");
  const cp = `${confDir}${path.delimiter}${await hadoopClasspath()}`;
  const r = spawnSync("java", ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp, "org.apache.hadoop.fs.FsShell", "-text", ...files], { encoding: "utf8", timeout: 120_000, maxBuffer: 64 << 20 });
  expect({ code: r.status, stderr: r.status === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
  const lines = r.stdout.split("\n").filter((l) => l !== "");
  expect(lines.length).toBe(NAMES.length * TOTAL);
  const byName: Record<string, string[]> = {};
  NAMES.forEach((n, k) => {
    const mine = lines.slice(k * TOTAL, (k + 1) * TOTAL);
    byName[n] = n.startsWith("seq") ? mine.map((l) => l.slice(l.indexOf("\t") + 1)) : mine;
  });
  return byName;
}

const expected = Object.fromEntries(NAMES.map((n) => [n, Array.from({ length: TOTAL }, (_, i) => String(i))]));

describe("hdfs sink codecs outside Bun, read back by Hadoop's -text", () => {
  needsJvm.and(needsDeno).test(
    "under Deno: bzip2, Snappy and LZ4 SequenceFiles and compressed streams, every record as written",
    async () => {
      const { dir, cleanup } = tempDir("flume-hdfs-codecs-");
      cleanups.push(cleanup);
      const out = await runAgent([DENO, "run", "-A", path.join(ROOT, "src", "cli.ts")], dir);
      expect(await hadoopText(out)).toEqual(expected);
    },
    240_000,
  );

  needsJvm.test(
    "the compiled binary: bzip2, Snappy and LZ4 SequenceFiles and compressed streams, every record as written",
    async () => {
      const { dir, cleanup } = tempDir("flume-hdfs-codecs-");
      cleanups.push(cleanup);
      const binary = path.join(dir, "flume");
      // Built as npm run build builds it (scripts/build.ts): code splitting, bytecode.
      const build = spawnSync(process.execPath, [path.join(ROOT, "scripts", "build.ts"), binary], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
      expect(build.status).toBe(0);
      const out = await runAgent([binary], dir);
      expect(await hadoopText(out)).toEqual(expected);
    },
    240_000,
  );
});
