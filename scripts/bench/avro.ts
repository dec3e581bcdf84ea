/**
 * `npm run bench -- avro`: Avro RPC throughput, our client -> avro source -> memory channel
 * -> a draining loop (what a null sink does).
 *
 * The client runs in a child process (as flume-ng avro-client or an upstream agent would),
 * over one connection on 127.0.0.1, sending appendBatch calls of 1000 events with 100-byte
 * bodies and waiting for each answer before the next (Flume's client does the same). A second
 * case keeps 4 calls in flight. Prints events/s accepted by the source and both processes'
 * peak RSS (the server figure is the bench process's high-water mark so far). A last case runs
 * `flume avro-client` itself on a 1M-line file. Target >= 500,000 events/s; Apache Flume 1.11's
 * own client into its avro source and into ours, measured in one run: `npm run bench -- flume`.
 */
import { componentContext, optionsOf } from "../../src/components/component.ts";
import { spawn } from "node:child_process";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { AvroSource, definition as avroSource } from "../../src/components/sources/avro.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fmt, peakRssMb, rpcBenchBatch, sendForever } from "./_util.ts";

const BATCH = 1000;
const BODY_SIZE = 100;
const MEASURE_MS = Number(process.env.BENCH_MS ?? 3000);
const WARMUP_MS = 500;


interface Case {
  name: string;
  inFlight: number;
  compression: "none" | "deflate";
  headers?: boolean;
}

/** Child-process side: sends batches until killed. */
async function clientMain(port: number, inFlight: number, compression: "none" | "deflate", headers: boolean): Promise<void> {
  const client = await AvroRpcClient.connect({ host: "127.0.0.1", port, compression });
  await sendForever(client, rpcBenchBatch(BATCH, BODY_SIZE, headers), inFlight);
}

async function runCase(c: Case): Promise<{ eventsPerSecond: number; serverRss: number; clientRss: number }> {
  const channel = new MemoryChannel("c1", { capacity: 200_000, transactionCapacity: 10_000, keepAlive: 3 });
  channel.start();
  const source = new AvroSource(
    componentContext("r1", { agentName: "bench", clock: systemClock, logger: silentLogger }),
    optionsOf(avroSource, { bind: "127.0.0.1", port: 0, "compression-type": c.compression }),
  );
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();

  // The draining loop: take transactions of up to 10,000 events, as a sink would.
  let draining = true;
  let drained = 0;
  const drain = (async () => {
    while (draining) {
      const tx = channel.getTransaction();
      tx.begin();
      let n = 0;
      while (n < 10_000 && tx.take() !== null) n++;
      await tx.commit();
      tx.close();
      drained += n;
      await new Promise((r) => setImmediate(r));
    }
  })();

  const child = spawn(process.execPath, [import.meta.path, "--client", String(source.port), String(c.inFlight), c.compression, c.headers ? "headers" : ""], { stdio: ["ignore", "inherit", "inherit"] });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  await sleep(WARMUP_MS);
  const accepted0 = source.counter.values.EventAcceptedCount;
  const t0 = performance.now();
  await sleep(MEASURE_MS);
  const accepted1 = source.counter.values.EventAcceptedCount;
  const t1 = performance.now();
  const clientRss = child.pid ? peakRssMb(child.pid) : NaN;
  child.kill();
  await new Promise((r) => child.once("exit", r));
  draining = false;
  await drain;
  await source.stop();
  channel.stop();
  if (drained === 0) throw new Error("nothing was drained");
  return { eventsPerSecond: ((accepted1 - accepted0) * 1000) / (t1 - t0), serverRss: peakRssMb(), clientRss };
}

/** `flume avro-client --batch-size 1000 -F file` as a user runs it: 1M lines, process start included. */
async function runCliCase(): Promise<number> {
  const lines = 1_000_000;
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-avro-"));
  const file = path.join(dir, "lines.txt");
  writeFileSync(file, `${"x".repeat(BODY_SIZE - 1)}\n`.repeat(lines));
  const channel = new MemoryChannel("c1", { capacity: lines + 10_000, transactionCapacity: 10_000 });
  channel.start();
  const source = new AvroSource(
    componentContext("r1", { agentName: "bench", clock: systemClock, logger: silentLogger }),
    optionsOf(avroSource, { bind: "127.0.0.1", port: 0 }),
  );
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();
  const cli = path.resolve(import.meta.dir, "../../src/cli.ts");
  const t0 = performance.now();
  const child = spawn(process.execPath, [cli, "avro-client", "-H", "127.0.0.1", "-p", String(source.port), "--batch-size", "1000", "-F", file], { stdio: "ignore" });
  const code = await new Promise((r) => child.once("exit", r));
  const seconds = (performance.now() - t0) / 1000;
  const accepted = source.counter.values.EventAcceptedCount;
  await source.stop();
  channel.stop();
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0 || accepted !== lines) throw new Error(`avro-client exited ${code} after ${accepted} of ${lines} events`);
  return accepted / seconds;
}

export async function run(): Promise<void> {
  const runtime = typeof Bun !== "undefined" ? `bun ${Bun.version}` : `node ${process.version}`;
  console.log(`avro bench: client process -> avro source -> memory channel -> drain; batch ${BATCH}, ${BODY_SIZE}-byte bodies, one connection, ${MEASURE_MS} ms per case (${runtime})`);
  const cases: Case[] = [
    { name: "plain, 1 call in flight (Flume's client behaviour)", inFlight: 1, compression: "none" },
    { name: "plain, 4 calls in flight", inFlight: 4, compression: "none" },
    { name: "plain, 1 in flight, 2 headers per event", inFlight: 1, compression: "none", headers: true },
    { name: "deflate, 1 call in flight", inFlight: 1, compression: "deflate" },
  ];
  let headline = 0;
  for (const c of cases) {
    const r = await runCase(c);
    if (c.inFlight === 1 && c.compression === "none" && !c.headers) headline = r.eventsPerSecond;
    console.log(`${c.name.padEnd(52)} ${fmt(r.eventsPerSecond).padStart(11)} events/s   peak RSS server ${r.serverRss.toFixed(0)} MB, client ${r.clientRss.toFixed(0)} MB`);
  }
  const cliRate = await runCliCase();
  console.log(`${"avro-client CLI, 1M-line file, batch 1000, w/ startup".padEnd(52)} ${fmt(cliRate).padStart(11)} events/s`);
  console.log(`headline (plain, 1 in flight): ${fmt(headline)} events/s (Flume 1.11 beside it: npm run bench -- flume); target 500,000: ${headline >= 500_000 ? "met" : "NOT met"}`);
}

if (import.meta.main) {
  const i = process.argv.indexOf("--client");
  if (i >= 0) await clientMain(Number(process.argv[i + 1]), Number(process.argv[i + 2]), process.argv[i + 3] === "deflate" ? "deflate" : "none", process.argv[i + 4] === "headers");
  else await run();
}
