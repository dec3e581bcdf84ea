/**
 * `npm run bench -- thrift`: Thrift RPC throughput, our thrift client -> thrift source ->
 * memory channel -> a draining loop (what a null sink does), binary and compact protocols.
 *
 * The client runs in a child process (as an upstream agent's thrift sink would), over one
 * framed connection on 127.0.0.1, sending appendBatch calls of 1000 events with 100-byte
 * bodies and waiting for each answer before the next (Flume's ThriftRpcClient does the same).
 * Further cases keep 4 calls in flight and add two headers per event. Prints events/s accepted
 * by the source and both processes' peak RSS.
 */
import { spawn } from "node:child_process";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { componentContext, optionsOf } from "../../src/components/component.ts";
import { definition as thriftSource, ThriftSource } from "../../src/components/sources/thrift.ts";
import { ThriftRpcClient } from "../../src/rpc/thrift/client.ts";
import type { ThriftProtocolName } from "../../src/rpc/thrift/types.ts";
import { fmt, peakRssMb, rpcBenchBatch, sendForever } from "./_util.ts";

const BATCH = 1000;
const BODY_SIZE = 100;
const MEASURE_MS = Number(process.env.BENCH_MS ?? 3000);
const WARMUP_MS = 500;

interface Case {
  name: string;
  protocol: ThriftProtocolName;
  inFlight: number;
  headers?: boolean;
}

/** Child-process side: sends batches until killed. */
async function clientMain(port: number, protocol: ThriftProtocolName, inFlight: number, headers: boolean): Promise<void> {
  const client = await ThriftRpcClient.connect({ host: "127.0.0.1", port, protocol });
  await sendForever(client, rpcBenchBatch(BATCH, BODY_SIZE, headers), inFlight);
}

async function runCase(c: Case): Promise<{ eventsPerSecond: number; serverRss: number; clientRss: number }> {
  const channel = new MemoryChannel("c1", { capacity: 200_000, transactionCapacity: 10_000, keepAlive: 3 });
  channel.start();
  const source = new ThriftSource(
    componentContext("r1", { agentName: "bench" }),
    optionsOf(thriftSource, { bind: "127.0.0.1", port: 0, protocol: c.protocol }),
  );
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();

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

  const child = spawn(process.execPath, [import.meta.path, "--client", String(source.port), c.protocol, String(c.inFlight), c.headers ? "headers" : ""], { stdio: ["ignore", "inherit", "inherit"] });
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

export async function run(): Promise<void> {
  const runtime = typeof Bun !== "undefined" ? `bun ${Bun.version}` : `node ${process.version}`;
  console.log(`thrift bench: client process -> thrift source -> memory channel -> drain; batch ${BATCH}, ${BODY_SIZE}-byte bodies, one framed connection, ${MEASURE_MS} ms per case (${runtime})`);
  const cases: Case[] = [
    { name: "binary, 1 call in flight (Flume's client behaviour)", protocol: "binary", inFlight: 1 },
    { name: "compact, 1 call in flight (Flume's client behaviour)", protocol: "compact", inFlight: 1 },
    { name: "compact, 4 calls in flight", protocol: "compact", inFlight: 4 },
    { name: "compact, 1 in flight, 2 headers per event", protocol: "compact", inFlight: 1, headers: true },
  ];
  for (const c of cases) {
    const r = await runCase(c);
    console.log(`${c.name.padEnd(54)} ${fmt(r.eventsPerSecond).padStart(11)} events/s   peak RSS server ${r.serverRss.toFixed(0)} MB, client ${r.clientRss.toFixed(0)} MB`);
  }
}

if (import.meta.main) {
  const i = process.argv.indexOf("--client");
  if (i >= 0) {
    const protocol: ThriftProtocolName = process.argv[i + 2] === "binary" ? "binary" : "compact";
    await clientMain(Number(process.argv[i + 1]), protocol, Number(process.argv[i + 3]), process.argv[i + 4] === "headers");
  } else {
    await run();
  }
}
