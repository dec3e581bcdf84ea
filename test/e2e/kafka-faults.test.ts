/**
 * Faults on a 3-broker Kafka cluster (replication factor 3, min.insync.replicas 2), real
 * processes: the partition leader SIGKILLed while an agent's kafka sink (acks=all) sends, once
 * with Flume 1.11's one batch at a time and once with our default batches in flight; the group
 * coordinator SIGKILLed while an agent's kafka source reads. One cluster for all: the killed node
 * is restarted while each run's topic is read back.
 */
import path from "node:path";
import { Producer } from "@platformatic/kafka";
import { expect } from "bun:test";
import { DEFAULT_BATCHES_IN_FLIGHT } from "../../src/components/sinks/kafka.ts";
import { agentsAfterEach, freePort, type Metrics, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { rolledLines } from "../support/flume-live.ts";
import { needsJvm } from "../support/jvm.ts";
import type { KafkaNode } from "../support/kafka.ts";
import { committedOffset, kafkaForFile, readTopic, seqFileKafkaConf } from "../support/kafka-tests.ts";

const { cleanups, startAgent } = agentsAfterEach();
const cluster = kafkaForFile({ size: 3, autoCreateTopics: false });

const TOTAL = 60_000;
const BATCH = 500;
/** The node the previous run killed, coming back (the next topic needs three replicas). */
let restarting: Promise<void> | null = null;

/**
 * seq -> file channel -> kafka sink (acks=all) sends TOTAL events to a new topic; its leader is
 * SIGKILLed once some batches are acknowledged. Once every event is acknowledged, the topic must
 * hold each of them; the kill must have fallen mid-stream. As the Java idempotent producer: a
 * batch retried by the producer (same producer id and sequences) is never written twice, the
 * new leader knowing the batches replicated to it; only a batch the sink gave up and rolled back
 * into the channel (its fate unknown) may be there twice. So the repeats are at most one batch
 * per rollback, none without one.
 */
async function leaderKilled(topic: string, producer: Record<string, string | number>, setting: string): Promise<void> {
  await restarting;
  restarting = null;
  await cluster.createTopic(topic, { partitions: 1, replicationFactor: 3, config: { "min.insync.replicas": "2" } });
  // Known before the stream starts, so the kill lands within milliseconds of the trigger.
  const leader: KafkaNode = await cluster.leaderOf(topic);
  const { dir, cleanup } = tempDir("flume-kafka-faults-");
  cleanups.push(cleanup);
  const port = await freePort();
  startAgent(dir, "a1", seqFileKafkaConf({ dir, bootstrap: cluster.bootstrap, topic, total: TOTAL, batch: BATCH, producer: { "request.timeout.ms": 5000, ...producer } }), port);
  const drained = (m: Metrics) => Number(m["SINK.k1"]?.EventDrainSuccessCount ?? 0);
  await waitForMetrics(port, "some batches acknowledged", (m) => drained(m) >= 3000, 120_000, 20);
  await leader.peer.kill("SIGKILL");
  // Back for the next run's three replicas while this run's topic is read (also after a failure).
  const restart = () => (restarting ??= leader.peer.exited.then(() => leader.restart()));
  try {
    const atKill = drained(await waitForMetrics(port, "the agent answering after the kill", () => true, 10_000));
    // The leader died mid-stream: most events were still to be sent (and were, after it).
    expect(atKill).toBeLessThan(TOTAL / 2);
    const m = await waitForMetrics(port, "every event acknowledged after the failover", (x) => drained(x) >= TOTAL, 180_000, 100);
    restart();
    const bodies = await readTopic(cluster.bootstrap, topic, 8000);
    const unique = new Set(bodies);
    const duplicates = bodies.length - unique.size;
    const rollbacks = Number(m["SINK.k1"].RollbackCount);
    const bound = rollbacks * BATCH;
    console.log(`duplicates: ${duplicates} (bound ${bound}) with ${setting}; ${atKill} of ${TOTAL} acknowledged at the kill, ${rollbacks} rollback(s)`);
    expect(drained(m)).toBe(TOTAL);
    // No acknowledged event lost.
    expect(unique.size).toBe(TOTAL);
    expect(duplicates).toBeLessThanOrEqual(bound);
  } finally {
    restart();
  }
}

needsJvm.test(
  "max.in.flight.requests.per.connection = 1 (Flume 1.11's one batch at a time), the partition leader SIGKILLed mid-stream: no acknowledged event lost, a batch repeated only if rolled back",
  () => leaderKilled("leader-killed-one", { "max.in.flight.requests.per.connection": 1 }, "max.in.flight.requests.per.connection = 1"),
  300_000,
);

needsJvm.test(
  `the default ${DEFAULT_BATCHES_IN_FLIGHT} batches in flight, the partition leader SIGKILLed mid-stream: no acknowledged event lost, a batch repeated only if rolled back`,
  () => leaderKilled("leader-killed-default", {}, `the default ${DEFAULT_BATCHES_IN_FLIGHT} batches in flight`),
  400_000,
);

const PARTITIONS = 3;
const SOURCE_BATCH = 100;

/** kafka source (group) -> file channel -> file_roll in dir/out: what a collector tier runs. */
function sourceFileRollConf(dir: string, topic: string, group: string): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = kafka
a1.sources.r1.kafka.bootstrap.servers = ${cluster.bootstrap}
a1.sources.r1.kafka.topics = ${topic}
a1.sources.r1.kafka.consumer.group.id = ${group}
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
a1.sources.r1.batchSize = ${SOURCE_BATCH}
a1.sources.r1.channels = c1
a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${path.join(dir, "checkpoint")}
a1.channels.c1.dataDirs = ${path.join(dir, "data")}
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${path.join(dir, "out")}
a1.sinks.k1.sink.rollInterval = 0
`;
}

/** TOTAL distinct bodies ("c-<i>") written round-robin over the topic's partitions, acknowledged by all in-sync replicas; the count written to each partition. */
async function produceDistinct(topic: string): Promise<number[]> {
  const producer = new Producer({ clientId: "coordinator-test", bootstrapBrokers: cluster.bootstrap.split(","), idempotent: true, acks: -1 });
  const perPartition = new Array<number>(PARTITIONS).fill(0);
  try {
    for (let from = 0; from < TOTAL; from += 10_000) {
      const messages = [];
      for (let i = from; i < Math.min(TOTAL, from + 10_000); i++) {
        perPartition[i % PARTITIONS]++;
        messages.push({ topic, partition: i % PARTITIONS, value: Buffer.from(`c-${i}`) });
      }
      await producer.send({ messages });
    }
  } finally {
    await producer.close();
  }
  return perPartition;
}

needsJvm.test(
  "a kafka source's group coordinator SIGKILLed mid-stream: every record reaches the sink, and the group's committed offsets reach the log's end on the new coordinator",
  async () => {
    await restarting;
    restarting = null;
    const topic = "coordinator-killed";
    const group = "collectors";
    await cluster.createTopic(topic, { partitions: PARTITIONS, replicationFactor: 3, config: { "min.insync.replicas": "2" } });
    const { dir, cleanup } = tempDir("flume-kafka-coordinator-");
    cleanups.push(cleanup);
    const out = path.join(dir, "out");
    const agent = startAgent(dir, "a1", sourceFileRollConf(dir, topic, group), await freePort());
    // Known before the records come (the group exists once the source joined), so the kill lands mid-stream.
    let coordinator: KafkaNode | undefined;
    await waitUntil(
      async () => {
        coordinator = await cluster.coordinatorOf(group).catch(() => undefined);
        return coordinator !== undefined;
      },
      `consumer group ${group} formed by the source`,
      120_000,
      500,
    );
    const victim = coordinator as KafkaNode;
    const written = await produceDistinct(topic);
    await waitUntil(() => rolledLines(out).length >= 3000, "3000 records through the agent", 120_000, 5);
    await victim.peer.kill("SIGKILL");
    const restart = () => (restarting ??= victim.peer.exited.then(() => victim.restart()));
    try {
      const atKill = rolledLines(out).length;
      expect(atKill).toBeLessThan(TOTAL / 2);
      await waitUntil(() => new Set(rolledLines(out)).size >= TOTAL, `all ${TOTAL} records through the agent after the coordinator's node was killed`, 180_000, 100);
      // The offsets land on the group's new coordinator: an agent started now would read nothing again.
      await waitUntil(
        async () => {
          for (let p = 0; p < PARTITIONS; p++) if ((await committedOffset(cluster.bootstrap, group, topic, p)) !== written[p]) return false;
          return true;
        },
        "the group's committed offsets at each partition's end",
        120_000,
        500,
      );
      restart();
      const lines = rolledLines(out);
      const unique = new Set(lines);
      const twice = lines.length - unique.size;
      const log = agent.stdout + agent.stderr;
      const rebalanced = /consumer group collectors rebalanced/.test(log);
      console.log(`coordinator (node ${victim.nodeId}) killed at ${atKill} of ${TOTAL} delivered; ${twice} delivered twice${rebalanced ? " (the group rebalanced)" : ""}; ${log.includes("asking the brokers for their leader again") ? "fetches waited for a new leader" : "no fetch failed"}`);
      expect(unique.size).toBe(TOTAL);
      for (let i = 0; i < TOTAL; i++) if (!unique.has(`c-${i}`)) throw new Error(`c-${i} never reached the sink`);
      // The consumer waited for the new leaders and coordinator: it was not dropped and made again.
      expect(log).not.toContain("connecting again");
      // Records are read twice only from a rejoin of the group (its last committed offsets): at most what came after the kill.
      if (rebalanced) expect(twice).toBeLessThanOrEqual(TOTAL - atKill);
      else expect(twice).toBe(0);
    } finally {
      // The file's last test: the node is back before the cluster stops (a node starting while its directory is removed fails).
      await restart();
    }
  },
  400_000,
);
