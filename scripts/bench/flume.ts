/**
 * `npm run bench -- flume`: Flume TS beside a live Apache Flume 1.11.0 (started from Maven
 * Central's jars through test/support/flume.ts, `-Xmx1g`), the same properties file run by each,
 * one after the other, case by case, in the same run:
 *
 * - seq -> memory -> null and seq -> file channel -> null: a fixed count of events (`totalEvents`;
 *   Flume's seq counts events, not batches, and defaults to batchSize 1: both get batchSize 1000,
 *   as the null sink and the channels' transactionCapacity);
 * - avro -> memory -> null: Flume's own AvroCLIClient (NettyAvroRpcClient, batch-size 1000 from
 *   its rpcProps file, one call in flight) sends a file of 100-byte lines to each avro source;
 *   then a Flume agent, seq -> memory -> 4 avro sinks (batch-size 1000, each its own thread and
 *   NettyAvroRpcClient), sends to each, as a Flume tier does. Either sender is a JVM on the same
 *   cores: where it bounds the rate, the agents' CPU per event tells them apart;
 * - syslogtcp -> memory -> null: the same RFC 3164 lines from a client process on one connection
 *   (Flume's syslogtcp has no batchSize and commits each event alone; the key is in the file for
 *   ours);
 * - TAILDIR -> memory -> null: the same file of 100-byte lines, linked into each one's watched
 *   directory once it is up, read from its start.
 *
 * Timing, the same for both: /metrics (Flume's is `-Dflume.monitoring.type=http`) polled every
 * 20 ms; events/s is the events the channel's EventTakeSuccessCount rose by from the first poll
 * that saw one taken to the poll that saw all N taken, over the wall-clock time between those
 * two polls (so an agent's start and the time before its /metrics answers count for neither);
 * the same from the first poll that saw half of them taken is printed beside it (a JVM that has
 * compiled its hot code by then).
 * Peak RSS is the process's VmHWM (/proc), CPU its user+system time over the same window.
 *
 * Ours is the built binary (dist/flume, built when missing; BENCH_BINARY picks another).
 * BENCH_ONLY=memory,file,avro,avro-sinks,syslog,taildir picks cases; BENCH_FLUME_N=<factor>
 * scales every count (0.1 for a quick look). About 1.5-3 minutes on the project's 2-core machine.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { FLUME_VERSION, flumeClasspath, startFlume } from "../../test/support/flume.ts";
import { javaVersion, startJvm } from "../../test/support/jvm.ts";
import { cpuMs, fmt, freePort, peakRssMb, SYSLOG_CLIENT } from "./_util.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
const BINARY = process.env.BENCH_BINARY ? path.resolve(process.env.BENCH_BINARY) : path.join(ROOT, "dist", "flume");
const ONLY = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());
const SCALE = Number(process.env.BENCH_FLUME_N ?? 1);
/** Flume's JVM settings: a 1 GB heap, everything else Java's defaults. */
const JVM_ARGS = ["-Xmx1g"];
const POLL_MS = 20;
const LINE = 100;

type Metrics = Record<string, Record<string, string>>;

/** An agent under test, whichever it is. */
interface Running {
  pid: number;
  metrics(): Promise<Metrics>;
  /** The end of its output, for an error. */
  tail(): string;
  stop(): Promise<void>;
}

interface Side {
  name: "Flume TS" | "Flume 1.11";
  start(conf: string, metricsPort: number, listens: number | undefined, dir: string): Promise<Running>;
}

interface Measured {
  rate: number;
  /** The same from the first poll that saw half of them taken: a warmed-up JIT's speed. */
  secondHalf: number;
  counted: number;
  seconds: number;
  rss: number;
  cpuSeconds: number;
}

/** What a case feeds into a started agent (its source's port, the case's directory); resolves when it is on its way. */
type Load = (port: number, dir: string) => Promise<{ stop(): Promise<void> }>;

interface Case {
  key: string;
  label: string;
  total: number;
  /** The properties file's lines for the port the source listens on (if any) and a fresh directory of its own. */
  conf(port: number, dir: string): string[];
  listens?: boolean;
  /** Done once before either side runs (writing its input). */
  prepare?: () => void;
  load?: Load;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

async function waitFor(what: string, cond: () => Promise<boolean>, running: { tail(): string }, timeoutMs = 120_000): Promise<void> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what} not within ${timeoutMs / 1000} s:\n${running.tail()}`);
    await sleep(50);
  }
}

async function metricsAnswer(port: number): Promise<boolean> {
  try {
    await (await fetch(`http://127.0.0.1:${port}/metrics`)).arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

const flumeTs: Side = {
  name: "Flume TS",
  async start(conf, metricsPort, listens) {
    const child = spawn(BINARY, ["run", "-f", conf, "-n", "a1", "--quiet", "--no-reload-conf", "--metrics-port", String(metricsPort), "--metrics-bind", "127.0.0.1"], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d) => (err = (err + d).slice(-4000)));
    const running: Running = {
      pid: child.pid as number,
      metrics: async () => (await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).json()) as Metrics,
      tail: () => err,
      async stop() {
        if (child.exitCode !== null) return;
        child.kill("SIGTERM");
        await new Promise((r) => child.once("exit", r));
      },
    };
    const up = async (cond: () => Promise<boolean>) => {
      if (child.exitCode !== null) throw new Error(`Flume TS exited with ${child.exitCode}:\n${err}`);
      return cond();
    };
    try {
      await waitFor("Flume TS /metrics answering", () => up(() => metricsAnswer(metricsPort)), running);
      if (listens !== undefined) await waitFor(`Flume TS listening on ${listens}`, () => up(() => connects(listens)), running);
    } catch (e) {
      await running.stop();
      throw e;
    }
    return running;
  },
};

const flume111: Side = {
  name: "Flume 1.11",
  async start(conf, metricsPort, listens, dir) {
    const peer = await startFlume({
      conf: fs.readFileSync(conf, "utf8"),
      metricsPort,
      jvmArgs: JVM_ARGS,
      dir,
      ready: { log: /Starting new configuration/, http: `http://127.0.0.1:${metricsPort}/metrics`, ...(listens === undefined ? {} : { port: listens }) },
    });
    return { pid: peer.pid, metrics: () => peer.metrics(), tail: () => peer.tail(), stop: () => peer.stop(5000) };
  },
};

/** Polls /metrics until the channel has taken `total` events; see the file's comment for the timing. */
async function measure(agent: Running, total: number, timeoutMs: number): Promise<Measured> {
  const taken = async () => {
    try {
      return Number((await agent.metrics())["CHANNEL.c1"]?.EventTakeSuccessCount ?? 0);
    } catch {
      return 0;
    }
  };
  const t = performance.now();
  let first = 0;
  let atFirst = 0;
  let cpuAtFirst = 0;
  let half = 0;
  let atHalf = 0;
  for (;;) {
    const n = await taken();
    const now = performance.now();
    if (n > 0 && first === 0) {
      first = now;
      atFirst = n;
      cpuAtFirst = cpuMs(agent.pid);
    }
    if (n >= total / 2 && half === 0) {
      half = now;
      atHalf = n;
    }
    if (n >= total) {
      if (n === atFirst) throw new Error(`all ${fmt(n)} events were taken before the first poll that saw one: too few to time (raise BENCH_FLUME_N)`);
      const seconds = (now - first) / 1000;
      return { rate: (n - atFirst) / seconds, secondHalf: n > atHalf ? (n - atHalf) / ((now - half) / 1000) : NaN, counted: n - atFirst, seconds, rss: peakRssMb(agent.pid), cpuSeconds: (cpuMs(agent.pid) - cpuAtFirst) / 1000 };
    }
    if (now - t > timeoutMs) throw new Error(`${fmt(n)} of ${fmt(total)} events taken after ${timeoutMs / 1000} s:\n${agent.tail()}`);
    await sleep(POLL_MS);
  }
}

// ---- loads ----

function writeLines(file: string, count: number): void {
  const perBlock = 10_000;
  const block = Buffer.alloc(perBlock * LINE, "x");
  for (let i = 0; i < perBlock; i++) {
    block.write(`line ${String(i).padStart(8, "0")} `, i * LINE, "latin1");
    block[i * LINE + LINE - 1] = 10;
  }
  const fd = fs.openSync(file, "w");
  for (let written = 0; written < count; written += perBlock) fs.writeSync(fd, block, 0, Math.min(perBlock, count - written) * LINE);
  fs.closeSync(fd);
}

const QUIET_LOG4J = `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn"><Appenders><Console name="out" target="SYSTEM_ERR"><PatternLayout pattern="%d %-5p %c{1} - %m%n"/></Console></Appenders>
<Loggers><Root level="warn"><AppenderRef ref="out"/></Root></Loggers></Configuration>
`;

/** Flume's AvroCLIClient (`flume-ng avro-client`) sending `file` in batches of 1000 with NettyAvroRpcClient. */
function avroCliClient(dir: string, file: string): Load {
  return async (port) => {
    const props = path.join(dir, "rpc.properties");
    fs.writeFileSync(props, ["client.type = default", "hosts = h1", `hosts.h1 = 127.0.0.1:${port}`, "batch-size = 1000", ""].join("\n"));
    const log4j = path.join(dir, "client-log4j2.xml");
    fs.writeFileSync(log4j, QUIET_LOG4J);
    const peer = await startJvm({
      name: "flume avro-client",
      classpath: await flumeClasspath(),
      mainClass: "org.apache.flume.client.avro.AvroCLIClient",
      args: ["--rpcProps", props, "-F", file],
      jvmArgs: [...JVM_ARGS, "-Djava.net.preferIPv4Stack=true", `-Dlog4j.configurationFile=${log4j}`],
    });
    return {
      async stop() {
        // It exits by itself once the file is sent; a failure shows in its log.
        const code = await Promise.race([peer.exited, sleep(10_000).then(() => "running")]);
        if (code !== 0 && code !== "running") console.log(`  avro-client exited ${code}:\n${peer.tail(20)}`);
        await peer.stop(2000);
      },
    };
  };
}

/**
 * A Flume 1.11 agent as the sender: seq -> memory -> `sinks` avro sinks (batch-size 1000, each
 * its own thread and NettyAvroRpcClient), all pointed at the avro source under test.
 */
function avroSinks(total: number, sinks: number): Load {
  return async (port) => {
    const names = Array.from({ length: sinks }, (_, i) => `k${i + 1}`);
    const conf = [
      "a1.sources = r1",
      "a1.channels = c1",
      `a1.sinks = ${names.join(" ")}`,
      "a1.sources.r1.type = seq",
      `a1.sources.r1.totalEvents = ${total}`,
      "a1.sources.r1.batchSize = 1000",
      "a1.sources.r1.channels = c1",
      "a1.channels.c1.type = memory",
      `a1.channels.c1.capacity = ${total}`,
      "a1.channels.c1.transactionCapacity = 1000",
      ...names.flatMap((k) => [`a1.sinks.${k}.type = avro`, `a1.sinks.${k}.channel = c1`, `a1.sinks.${k}.hostname = 127.0.0.1`, `a1.sinks.${k}.port = ${port}`, `a1.sinks.${k}.batch-size = 1000`]),
    ];
    const sender = await startFlume({ conf: `${conf.join("\n")}\n`, agent: "a1", jvmArgs: JVM_ARGS, logLevel: "warn", ready: { log: /./ } });
    return { stop: () => sender.stop(5000) };
  };
}

/** `total` RFC 3164 lines on one connection (the footprint bench's client). */
function syslogClient(total: number): Load {
  return async (port) => {
    const child = spawn(process.execPath, ["-e", SYSLOG_CLIENT, String(port), String(total), "1"], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => child.stdout.on("data", (d) => String(d).includes("ready") && resolve()));
    return {
      async stop() {
        child.kill();
        await new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r)));
      },
    };
  };
}

// ---- cases ----

const HEAD = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.channels = c1", "a1.sinks.k1.channel = c1", "a1.sinks.k1.type = null", "a1.sinks.k1.batchSize = 1000"];
const MEMORY = ["a1.channels.c1.type = memory", "a1.channels.c1.capacity = 100000", "a1.channels.c1.transactionCapacity = 1000"];

function cases(base: string): Case[] {
  const n = (count: number) => Math.max(1000, Math.round(count * SCALE));
  const seq = (total: number) => ["a1.sources.r1.type = seq", `a1.sources.r1.totalEvents = ${total}`, "a1.sources.r1.batchSize = 1000"];
  const memTotal = n(5_000_000);
  const fileTotal = n(300_000);
  const syslogTotal = n(1_000_000);
  const avroTotal = n(1_000_000);
  const avroInput = path.join(base, "avro-input.log");
  const tailTotal = n(2_000_000);
  const tailInput = path.join(base, "taildir-input.log");
  return [
    { key: "memory", label: `seq -> memory -> null, ${fmt(memTotal)} events`, total: memTotal, conf: () => [...HEAD, ...seq(memTotal), ...MEMORY] },
    {
      key: "file",
      label: `seq -> file channel -> null, ${fmt(fileTotal)} events`,
      total: fileTotal,
      conf: (_port, dir) => [
        ...HEAD,
        ...seq(fileTotal),
        "a1.channels.c1.type = file",
        "a1.channels.c1.capacity = 1000000",
        "a1.channels.c1.transactionCapacity = 1000",
        `a1.channels.c1.checkpointDir = ${path.join(dir, "checkpoint")}`,
        `a1.channels.c1.dataDirs = ${path.join(dir, "data")}`,
      ],
    },
    {
      key: "avro",
      label: `Flume's avro-client (batch 1000) -> avro -> memory -> null, ${fmt(avroTotal)} events of ${LINE} bytes`,
      total: avroTotal,
      listens: true,
      conf: (port) => [...HEAD, "a1.sources.r1.type = avro", "a1.sources.r1.bind = 127.0.0.1", `a1.sources.r1.port = ${port}`, ...MEMORY],
      prepare: () => writeLines(avroInput, avroTotal),
      load: avroCliClient(base, avroInput),
    },
    {
      key: "avro-sinks",
      label: `a Flume agent's 4 avro sinks (seq -> memory -> 4 x avro, batch-size 1000) -> avro -> memory -> null, ${fmt(avroTotal)} events`,
      total: avroTotal,
      listens: true,
      conf: (port) => [...HEAD, "a1.sources.r1.type = avro", "a1.sources.r1.bind = 127.0.0.1", `a1.sources.r1.port = ${port}`, ...MEMORY],
      load: avroSinks(avroTotal, 4),
    },
    {
      key: "syslog",
      label: `syslogtcp -> memory -> null, ${fmt(syslogTotal)} RFC 3164 lines, one connection`,
      total: syslogTotal,
      listens: true,
      conf: (port) => [...HEAD, "a1.sources.r1.type = syslogtcp", "a1.sources.r1.host = 127.0.0.1", `a1.sources.r1.port = ${port}`, "a1.sources.r1.batchSize = 1000", ...MEMORY],
      load: syslogClient(syslogTotal),
    },
    {
      key: "taildir",
      label: `TAILDIR -> memory -> null, one file of ${fmt(tailTotal)} lines of ${LINE} bytes`,
      total: tailTotal,
      conf: (_port, dir) => [
        ...HEAD,
        "a1.sources.r1.type = TAILDIR",
        "a1.sources.r1.filegroups = f1",
        `a1.sources.r1.filegroups.f1 = ${path.join(dir, "tail", "lines.log")}`,
        `a1.sources.r1.positionFile = ${path.join(dir, "taildir_position.json")}`,
        "a1.sources.r1.batchSize = 1000",
        ...MEMORY,
      ],
      prepare: () => writeLines(tailInput, tailTotal),
      // The file appears (a hard link, complete) once the agent is up, as for every other case.
      load: async (_port, dir) => {
        fs.linkSync(tailInput, path.join(dir, "tail", "lines.log"));
        return { stop: async () => {} };
      },
    },
  ];
}

/** One case on one side: a fresh directory, the agent, its load, the measurement. */
async function runSide(side: Side, c: Case, base: string): Promise<Measured> {
  const dir = fs.mkdtempSync(path.join(base, `${c.key}-${side.name === "Flume TS" ? "ts" : "flume"}-`));
  const port = await freePort();
  const metricsPort = await freePort();
  const conf = path.join(dir, "a1.properties");
  fs.mkdirSync(path.join(dir, "tail"));
  fs.writeFileSync(conf, `${c.conf(port, dir).join("\n")}\n`);
  const agent = await side.start(conf, metricsPort, c.listens ? port : undefined, dir);
  try {
    const load = c.load ? await c.load(port, dir) : null;
    try {
      return await measure(agent, c.total, 180_000);
    } finally {
      await load?.stop();
    }
  } finally {
    await agent.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const rateText = (r: number) => (r >= 1e6 ? `${(r / 1e6).toFixed(2)} M/s` : `${fmt(r / 1000)} k/s`);

export async function run(): Promise<void> {
  const java = javaVersion();
  if (!java) throw new Error("flume bench: java is not on PATH (Debian: apt-get install default-jdk-headless maven)");
  if (!fs.existsSync(BINARY)) {
    console.log(`building ${path.relative(ROOT, BINARY)} (npm run build)`);
    const b = spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: "inherit" });
    if (b.status !== 0) throw new Error("npm run build failed");
  }
  await flumeClasspath();
  console.log(`Flume TS: ${BINARY}; Apache Flume ${FLUME_VERSION}: ${java}, JVM options ${JVM_ARGS.join(" ")} (otherwise Java's defaults)`);
  console.log(`${os.cpus().length} CPUs, load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}; ${new Date().toISOString()}`);
  console.log(`events/s: events taken (CHANNEL.c1.EventTakeSuccessCount) from the first /metrics poll that saw one to the poll that saw all, over the wall-clock time between them (polls every ${POLL_MS} ms)`);
  const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), "flume-bench-flume-"));
  const rows: string[] = [];
  try {
    for (const c of cases(base)) {
      if (ONLY && !ONLY.includes(c.key)) continue;
      console.log(`-- ${c.label}`);
      c.prepare?.();
      const got: Partial<Record<Side["name"], Measured>> = {};
      for (const side of [flume111, flumeTs]) {
        try {
          const m = await runSide(side, c, base);
          got[side.name] = m;
          const short = m.counted < c.total / 2 ? ` (only ${fmt(m.counted)} of them after the first poll that saw one: the figure is rough)` : "";
          console.log(`  ${side.name.padEnd(10)} ${fmt(m.rate).padStart(11)} events/s (${fmt(m.counted)} events in ${m.seconds.toFixed(2)} s, CPU ${m.cpuSeconds.toFixed(2)} s; from half of them taken: ${Number.isNaN(m.secondHalf) ? "n/a" : fmt(m.secondHalf)} events/s), peak RSS ${m.rss.toFixed(0)} MB${short}`);
        } catch (e) {
          console.log(`  ${side.name} failed: ${(e as Error).message}`);
          process.exitCode = 1;
        }
      }
      const ts = got["Flume TS"];
      const fl = got["Flume 1.11"];
      const cell = (m: Measured | undefined) => (m ? `${rateText(m.rate)}, ${m.rss.toFixed(0)} MB, CPU ${m.cpuSeconds.toFixed(2)} s` : "failed");
      const ratio = ts && fl ? `${(ts.rate / fl.rate).toFixed(1)}x events/s (from half of them taken: ${(ts.secondHalf / fl.secondHalf).toFixed(1)}x), ${(fl.rss / ts.rss).toFixed(1)}x less RSS, ${(fl.cpuSeconds / fl.counted / (ts.cpuSeconds / ts.counted)).toFixed(1)}x less CPU per event` : "";
      rows.push(`| ${c.label} | ${cell(ts)} | ${cell(fl)} | ${ratio} |`);
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
  console.log(`\n| case | Flume TS (events/s, peak RSS, CPU) | Flume ${FLUME_VERSION}, ${JVM_ARGS.join(" ")} (events/s, peak RSS, CPU) | ratio |\n| --- | --- | --- | --- |`);
  for (const r of rows) console.log(r);
}

if (import.meta.main) await run();
