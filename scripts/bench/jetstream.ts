/**
 * `npm run bench -- jetstream`: the JetStream components through the real agent (`flume run`,
 * the built binary when present), timed from /metrics, beside the file channel in the same run:
 *   seq -> file channel -> null                       (baseline: local durable channel)
 *   seq -> jetstream channel (1 server, replicas 1) -> null
 *   seq -> jetstream channel (3-node cluster, replicas 3) -> null
 *   seq -> memory -> jetstream sink (1 server, replicas 1)
 * Starts its own nats-servers (JetStream, store in a temp dir, loopback). BENCH_EVENTS sets the
 * event count (default 200,000); bodies are seq's decimal numbers.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { NATS_SERVER, startCluster, startNats } from "../../test/support/nats.ts";
import { fmt, timeAgent } from "./_util.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 200_000);

function seqConf(channelLines: string, sinkLines = "a1.sinks.k1.type = null\na1.sinks.k1.batchSize = 1000"): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = ${EVENTS}
a1.sources.r1.batchSize = 1000
a1.sources.r1.channels = c1
${channelLines}
${sinkLines}
a1.sinks.k1.channel = c1
`;
}

function jetstreamChannel(servers: string, stream: string, replicas: number): string {
  return `a1.channels.c1.type = jetstream
a1.channels.c1.servers = ${servers}
a1.channels.c1.stream = ${stream}
a1.channels.c1.replicas = ${replicas}
a1.channels.c1.capacity = ${Math.max(EVENTS, 1_000_000)}
a1.channels.c1.transactionCapacity = 1000
a1.channels.c1.prefetch = 2000`;
}

export async function run(): Promise<void> {
  if (!NATS_SERVER) {
    console.log("jetstream: skipped (needs nats-server: apt-get install nats-server)");
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-js-"));
  const results: { name: string; rate: number; rss: number }[] = [];
  const measure = async (name: string, conf: string, group: string, key: string) => {
    const file = path.join(dir, `${results.length}.conf`);
    writeFileSync(file, conf);
    const r = await timeAgent(file, "a1", group, key, EVENTS);
    results.push({ name, ...r });
    console.log(`${name}: ${fmt(r.rate)} events/s, agent peak RSS ${r.rss.toFixed(0)} MB`);
  };
  try {
    await measure(
      "seq -> file channel -> null",
      seqConf(`a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${path.join(dir, "ckpt")}
a1.channels.c1.dataDirs = ${path.join(dir, "data")}
a1.channels.c1.transactionCapacity = 1000`),
      "CHANNEL.c1",
      "EventTakeSuccessCount",
    );
    const single = await startNats({ dir: path.join(dir, "nats1") });
    try {
      await measure("seq -> jetstream channel (replicas 1) -> null", seqConf(jetstreamChannel(single.servers, "BENCH1", 1)), "CHANNEL.c1", "EventTakeSuccessCount");
      await measure(
        "seq -> memory -> jetstream sink (replicas 1)",
        seqConf(
          "a1.channels.c1.type = memory\na1.channels.c1.capacity = 100000\na1.channels.c1.transactionCapacity = 1000",
          `a1.sinks.k1.type = jetstream
a1.sinks.k1.servers = ${single.servers}
a1.sinks.k1.stream = BENCHSINK
a1.sinks.k1.max-msgs = -1
a1.sinks.k1.retention = limits
a1.sinks.k1.batch-size = 1000`,
        ),
        "SINK.k1",
        "EventDrainSuccessCount",
      );
    } finally {
      await single.stop();
    }
    const cluster = await startCluster(3);
    try {
      await measure("seq -> jetstream channel (3-node cluster, replicas 3) -> null", seqConf(jetstreamChannel(cluster.servers, "BENCH3", 3)), "CHANNEL.c1", "EventTakeSuccessCount");
    } finally {
      await cluster.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`(${fmt(EVENTS)} events each; seq batches of 1000; one machine, loopback)`);
}
