/**
 * `npm run bench -- file`: the durable file channel with fsyncPerTransaction true.
 *
 * 1,000,000 events of 100 bytes in transactions of 1000: put all, then take all (each commit
 * fsynced); the same through a concurrent producer and consumer (as seq -> file -> null); the
 * restart time with 1,000,000 pending events, from the closing checkpoint and from the log
 * alone (after a crash before any checkpoint); and the disk's raw fsync rate, measured here in
 * the same directory. Each scenario runs in its own child process so its peak RSS is its own.
 * BENCH_DIR picks the directory (default: the OS temp dir); BENCH_EVENTS the event count.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { FileChannel } from "../../src/components/channels/file/index.ts";
import { createEvent, type Event } from "../../src/core/event.ts";
import { fmt, freePort, peakRssMb } from "./_util.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const BATCH = 1000;
const BODY = 100;

function channel(dir: string, checkpointOnClose = true): FileChannel {
  return new FileChannel("c1", {
    checkpointDir: path.join(dir, "checkpoint"),
    dataDirs: [path.join(dir, "data")],
    useDualCheckpoints: false,
    capacity: Math.max(EVENTS, 1_000_000),
    transactionCapacity: BATCH,
    checkpointInterval: 30000,
    maxFileSize: 2146435071,
    minimumRequiredSpace: 524288000,
    keepAlive: 3,
    checkpointOnClose,
    fsyncPerTransaction: true,
    fsyncInterval: 5,
    inlineWriteLimit: 2,
  });
}

/** A batch as the seq source makes it: fresh events with 100-byte bodies. */
function batch(from: number): Event[] {
  const out: Event[] = new Array(BATCH);
  for (let i = 0; i < BATCH; i++) {
    const body = new Uint8Array(BODY);
    body.fill(97 + ((from + i) % 26));
    out[i] = createEvent(body);
  }
  return out;
}

async function putBatch(ch: FileChannel, events: Event[]): Promise<void> {
  const tx = ch.getTransaction();
  tx.begin();
  for (const e of events) tx.put(e);
  await tx.commit();
  tx.close();
}

async function takeBatch(ch: FileChannel): Promise<number> {
  const tx = ch.getTransaction();
  tx.begin();
  let n = 0;
  while (n < BATCH && tx.take() !== null) n++;
  await tx.commit();
  tx.close();
  return n;
}

async function fill(ch: FileChannel): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < EVENTS; i += BATCH) await putBatch(ch, batch(i));
  return (performance.now() - t0) / 1000;
}

async function child(mode: string, dir: string): Promise<Record<string, number>> {
  if (mode === "put-take") {
    const ch = channel(dir);
    await ch.start();
    const putSec = await fill(ch);
    const t1 = performance.now();
    let taken = 0;
    for (;;) {
      const n = await takeBatch(ch);
      if (n === 0) break;
      taken += n;
    }
    const takeSec = (performance.now() - t1) / 1000;
    await ch.stop();
    if (taken !== EVENTS) throw new Error(`took ${taken} of ${EVENTS}`);
    return { putSec, takeSec, rss: peakRssMb() };
  }
  if (mode === "pipeline") {
    const ch = channel(dir);
    await ch.start();
    const t0 = performance.now();
    let taken = 0;
    const producer = fill(ch);
    const consumer = (async () => {
      while (taken < EVENTS) {
        const n = await takeBatch(ch);
        taken += n;
        if (n === 0) await new Promise((r) => setTimeout(r, 1));
      }
    })();
    await Promise.all([producer, consumer]);
    const sec = (performance.now() - t0) / 1000;
    await ch.stop();
    return { sec, rss: peakRssMb(), perWrite: ch.writeStats.transactions / ch.writeStats.groups };
  }
  if (mode === "fill-crash") {
    const ch = channel(dir);
    await ch.start();
    const putSec = await fill(ch);
    // Exit without stop(): no closing checkpoint, as after kill -9.
    return { putSec, rss: peakRssMb() };
  }
  if (mode === "restart") {
    const t0 = performance.now();
    const ch = channel(dir, false);
    await ch.start();
    const ms = performance.now() - t0;
    const pending = ch.size;
    await ch.stop();
    return { ms, pending, rss: peakRssMb() };
  }
  throw new Error(`unknown mode ${mode}`);
}

/**
 * The pipeline through the real agent: `flume run` with seq -> file -> null (Flume's
 * recorded configuration), timed from "started" until the channel's EventTakeSuccessCount
 * reaches the event count, read from /metrics; peak RSS from /proc.
 */
async function agentRun(dir: string): Promise<{ sec: number; rss: number }> {
  fs.mkdirSync(dir, { recursive: true });
  const conf = path.join(dir, "agent.conf");
  fs.writeFileSync(
    conf,
    [
      "a1.sources = r1",
      "a1.channels = c1",
      "a1.sinks = k1",
      "a1.sources.r1.type = seq",
      `a1.sources.r1.totalEvents = ${EVENTS}`,
      `a1.sources.r1.batchSize = ${BATCH}`,
      "a1.sources.r1.channels = c1",
      "a1.sinks.k1.type = null",
      `a1.sinks.k1.batchSize = ${BATCH}`,
      "a1.sinks.k1.channel = c1",
      `a1.channels.c1.transactionCapacity = ${BATCH}`,
      "a1.channels.c1.type = file",
      `a1.channels.c1.capacity = ${Math.max(EVENTS, 1_000_000)}`,
      `a1.channels.c1.checkpointDir = ${path.join(dir, "checkpoint")}`,
      `a1.channels.c1.dataDirs = ${path.join(dir, "data")}`,
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const cli = path.join(import.meta.dir, "..", "..", "src", "cli.ts");
  const child = spawn(process.execPath, [cli, "run", "-f", conf, "-n", "a1", "--metrics-port", String(port), "--metrics-bind", "127.0.0.1", "--no-reload-conf", "--quiet"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  try {
    const begin = performance.now();
    while (!out.includes("agent a1 started")) {
      if (child.exitCode !== null || performance.now() - begin > 20000) throw new Error(`agent did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    const t0 = performance.now();
    for (;;) {
      await new Promise((r) => setTimeout(r, 10));
      if (performance.now() - t0 > 120000) throw new Error(`agent did not finish:\n${out}`);
      try {
        const m = (await (await fetch(`http://127.0.0.1:${port}/metrics`)).json()) as Record<string, Record<string, string>>;
        if (Number(m["CHANNEL.c1"]?.EventTakeSuccessCount) >= EVENTS) break;
      } catch {
        // the metrics server is not up yet
      }
    }
    const sec = (performance.now() - t0) / 1000;
    const rss = peakRssMb(child.pid ?? "self");
    return { sec, rss };
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

function runChild(mode: string, dir: string): Record<string, number> {
  const r = spawnSync(process.execPath, [import.meta.path, "--child", mode, dir], { encoding: "utf8", env: { ...process.env } });
  const line = r.stdout.trim().split("\n").pop() ?? "";
  if (r.status !== 0 || !line.startsWith("{")) throw new Error(`bench child ${mode} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(line) as Record<string, number>;
}

/** fdatasync rate of the disk: small appends each followed by fdatasync, for about a second. */
function fsyncRate(dir: string, bytes: number): number {
  const file = path.join(dir, `fsync-probe-${bytes}`);
  const fd = fs.openSync(file, "w");
  const buf = Buffer.alloc(bytes, 120);
  let n = 0;
  let pos = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 1000) {
    fs.writeSync(fd, buf, 0, bytes, pos);
    pos += bytes;
    fs.fdatasyncSync(fd);
    n++;
  }
  const sec = (performance.now() - t0) / 1000;
  fs.closeSync(fd);
  fs.rmSync(file);
  return n / sec;
}

export async function run(): Promise<void> {
  const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), "flume-bench-file-"));
  try {
    const small = fsyncRate(base, 4096);
    const large = fsyncRate(base, 130 * 1024);
    console.log(`disk (${base}): ${fmt(small)} fdatasync/s after 4 KB appends, ${fmt(large)} fdatasync/s after 130 KB appends`);

    const g = await agentRun(path.join(base, "g"));
    console.log(`flume run, seq -> file -> null (fsyncPerTransaction true): ${fmt(EVENTS / g.sec)} events/s, agent peak RSS ${g.rss.toFixed(0)} MB`);

    const a = runChild("put-take", path.join(base, "a"));
    const total = a.putSec + a.takeSec;
    console.log(
      `put then take ${fmt(EVENTS)} x ${BODY} B, batches of ${BATCH}, fsync per commit: ${fmt((2 * EVENTS) / total)} ops/s = ${fmt(EVENTS / total)} events/s end to end ` +
        `(put ${fmt(EVENTS / a.putSec)} events/s, take ${fmt(EVENTS / a.takeSec)} events/s), peak RSS ${a.rss.toFixed(0)} MB`,
    );
    const p = runChild("pipeline", path.join(base, "p"));
    console.log(
      `concurrent producer and consumer, same process: ${fmt(EVENTS / p.sec)} events/s, ${p.perWrite.toFixed(2)} commits per write+fsync (group commit), peak RSS ${p.rss.toFixed(0)} MB`,
    );

    const dir = path.join(base, "r");
    runChild("fill-crash", dir);
    const replay = runChild("restart", dir);
    console.log(`restart with ${fmt(replay.pending)} pending events after a crash (no checkpoint, full log replay): ${fmt(replay.ms)} ms, peak RSS ${replay.rss.toFixed(0)} MB`);
    const ckpt = runChild("restart", dir);
    console.log(`restart with ${fmt(ckpt.pending)} pending events from a checkpoint: ${fmt(ckpt.ms)} ms, peak RSS ${ckpt.rss.toFixed(0)} MB`);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--child") {
  const result = await child(process.argv[3], process.argv[4]);
  console.log(JSON.stringify(result));
  process.exit(0);
}
