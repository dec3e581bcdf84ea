/**
 * `npm run bench -- jetstream`: the JetStream components through the real agent (`flume run`,
 * the built binary when present), timed from /metrics, side by side in one run:
 *   stress (100-byte events, batches of 1000) -> file channel -> null   (local durable channel)
 *   -> jetstream channel, one server and a 3-node cluster (replicas 3), each framing -> null
 *   -> memory -> jetstream sink (one server), each framing
 *   the NATS client's own ceiling: a bare @nats-io/jetstream publisher, 1,000 publishes in
 *   flight, one 100-byte message each, into a file stream (one server, replicas 3)
 * Targets (batch framing): channel >= 1 M events/s on one server, >= 500 k with three replicas;
 * agent peak RSS <= 80 MB. Starts its own nats-servers (JetStream, store in a temp dir,
 * loopback). BENCH_EVENTS sets the batched runs' event count (default 1,000,000);
 * per-event runs and the bare publisher move a tenth of it. The sink reads from a memory channel
 * of 10 batches.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { NATS_SERVER, natsClient, startCluster, startNats } from "../../test/support/nats.ts";
import { figureLine, fmt, timeAgent } from "./_util.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const PER_EVENT = Math.max(1000, Math.round(EVENTS / 10));
const BODY = 100;
const RSS_TARGET = 80;

function stressConf(events: number, channelLines: string, sinkLines = "a1.sinks.k1.type = null\na1.sinks.k1.batchSize = 1000"): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = stress
a1.sources.r1.size = ${BODY}
a1.sources.r1.maxSuccessfulEvents = ${events}
a1.sources.r1.batchSize = 1000
a1.sources.r1.channels = c1
${channelLines}
${sinkLines}
a1.sinks.k1.channel = c1
`;
}

function jetstreamChannel(servers: string, stream: string, replicas: number, framing: string): string {
  return `a1.channels.c1.type = jetstream
a1.channels.c1.servers = ${servers}
a1.channels.c1.stream = ${stream}
a1.channels.c1.replicas = ${replicas}
a1.channels.c1.framing = ${framing}
a1.channels.c1.capacity = ${Math.max(EVENTS, 1_000_000)}
a1.channels.c1.transactionCapacity = 1000
a1.channels.c1.prefetch = 2000`;
}

/** Messages/s of the client alone: `total` publishes of BODY bytes, `inFlight` awaiting their PubAck at once. */
async function barePublisher(servers: string, stream: string, replicas: number, total: number, inFlight = 1000): Promise<number> {
  const c = await natsClient(servers);
  try {
    await c.jsm.streams.add({ name: stream, subjects: [`bare.${stream}`], num_replicas: replicas, storage: c.mod.StorageType.File });
    const body = new Uint8Array(BODY).fill(120);
    const subject = `bare.${stream}`;
    let sent = 0;
    const started = performance.now();
    const lane = async () => {
      while (sent < total) {
        sent++;
        await c.js.publish(subject, body);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, lane));
    return total / ((performance.now() - started) / 1000);
  } finally {
    await c.close();
  }
}

export async function run(): Promise<void> {
  if (!NATS_SERVER) {
    console.log("jetstream: skipped (needs nats-server: apt-get install nats-server)");
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-js-"));
  const lines: string[] = [];
  const rss: { name: string; mb: number }[] = [];
  let streams = 0;
  const measure = async (name: string, events: number, conf: string, group: string, key: string, target?: number) => {
    const file = path.join(dir, `${++streams}.conf`);
    writeFileSync(file, conf);
    const r = await timeAgent(file, "a1", group, key, events, 600_000);
    rss.push({ name, mb: r.rss });
    const line = figureLine({
      what: name,
      value: `${fmt(r.rate)} events/s, agent peak RSS ${r.rss.toFixed(0)} MB`,
      ...(target === undefined ? {} : { target: `>= ${fmt(target)} events/s`, met: r.rate >= target }),
    });
    lines.push(line);
    console.log(line);
  };
  const bare = (name: string, rate: number) => {
    const line = `  ${name}: ${fmt(rate)} messages/s (= events/s at one event per message)`;
    lines.push(line);
    console.log(line);
  };
  try {
    console.log(`jetstream: ${BODY}-byte events, stress source batches of 1000; batch framing ${fmt(EVENTS)} events, per-event framing and the bare client ${fmt(PER_EVENT)}`);
    await measure(
      "stress -> file channel -> null",
      EVENTS,
      stressConf(
        EVENTS,
        `a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${path.join(dir, "ckpt")}
a1.channels.c1.dataDirs = ${path.join(dir, "data")}
a1.channels.c1.transactionCapacity = 1000`,
      ),
      "CHANNEL.c1",
      "EventTakeSuccessCount",
    );
    const single = await startNats({ dir: path.join(dir, "nats1") });
    try {
      bare("bare client publisher, 1,000 in flight (one server)", await barePublisher(single.servers, "BARE1", 1, PER_EVENT));
      await measure("jetstream channel, one server, framing event", PER_EVENT, stressConf(PER_EVENT, jetstreamChannel(single.servers, "E1", 1, "event")), "CHANNEL.c1", "EventTakeSuccessCount");
      await measure("jetstream channel, one server, framing batch", EVENTS, stressConf(EVENTS, jetstreamChannel(single.servers, "B1", 1, "batch")), "CHANNEL.c1", "EventTakeSuccessCount", 1_000_000);
      for (const framing of ["event", "batch"]) {
        const n = framing === "batch" ? EVENTS : PER_EVENT;
        await measure(
          `memory -> jetstream sink, one server, framing ${framing}`,
          n,
          stressConf(
            n,
            "a1.channels.c1.type = memory\na1.channels.c1.capacity = 10000\na1.channels.c1.transactionCapacity = 1000",
            `a1.sinks.k1.type = jetstream
a1.sinks.k1.servers = ${single.servers}
a1.sinks.k1.stream = SINK${framing}
a1.sinks.k1.max-msgs = -1
a1.sinks.k1.retention = limits
a1.sinks.k1.framing = ${framing}
a1.sinks.k1.batch-size = 1000`,
          ),
          "SINK.k1",
          "EventDrainSuccessCount",
        );
      }
    } finally {
      await single.stop();
    }
    const cluster = await startCluster(3);
    try {
      bare("bare client publisher, 1,000 in flight (3 replicas)", await barePublisher(cluster.servers, "BARE3", 3, PER_EVENT));
      await measure("jetstream channel, 3 replicas, framing event", PER_EVENT, stressConf(PER_EVENT, jetstreamChannel(cluster.servers, "E3", 3, "event")), "CHANNEL.c1", "EventTakeSuccessCount");
      await measure("jetstream channel, 3 replicas, framing batch", EVENTS, stressConf(EVENTS, jetstreamChannel(cluster.servers, "B3", 3, "batch")), "CHANNEL.c1", "EventTakeSuccessCount", 500_000);
    } finally {
      await cluster.stop();
    }
    const peak = Math.max(...rss.filter((r) => r.name.includes("framing batch")).map((r) => r.mb));
    const line = figureLine({ what: "largest agent peak RSS with batch framing", value: `${peak.toFixed(0)} MB`, target: `<= ${RSS_TARGET} MB`, met: peak <= RSS_TARGET });
    lines.push(line);
    console.log(line);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log("(one machine, loopback; rates from the first event taken to the last)");
}
