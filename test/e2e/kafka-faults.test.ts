/**
 * Faults on a 3-broker Kafka cluster (replication factor 3, min.insync.replicas 2), real
 * processes: the partition leader SIGKILLed while an agent's kafka sink (acks=all) sends.
 */
import { expect } from "bun:test";
import { DEFAULT_BATCHES_IN_FLIGHT } from "../../src/components/sinks/kafka.ts";
import { agentsAfterEach, freePort, tempDir, waitForMetrics } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { kafkaForFile, readTopic, seqFileKafkaConf } from "../support/kafka-tests.ts";

const { cleanups, startAgent } = agentsAfterEach();
const cluster = kafkaForFile({ size: 3, autoCreateTopics: false });

/** Every body in the topic, read by our source until nothing new came for quietMs. */
function readAll(topic: string, quietMs = 8000): Promise<string[]> {
  return readTopic(cluster.bootstrap, topic, quietMs);
}

needsJvm.test(
  "the partition leader SIGKILLed mid-stream: no acknowledged event lost, duplicates at most the batches in flight",
  async () => {
    const topic = "leader-killed";
    await cluster.createTopic(topic, { partitions: 1, replicationFactor: 3, config: { "min.insync.replicas": "2" } });
    const total = 100_000;
    // Known before the stream starts, so the kill lands within milliseconds of the trigger.
    const leader = await cluster.leaderOf(topic);
    const batch = 500;
    const { dir, cleanup } = tempDir("flume-kafka-faults-");
    cleanups.push(cleanup);
    const port = await freePort();
    startAgent(
      dir,
      "a1",
      seqFileKafkaConf({ dir, bootstrap: cluster.bootstrap, topic, total, batch, producer: { "request.timeout.ms": 5000 } }),
      port,
    );
    const before = await waitForMetrics(port, "some batches acknowledged", (m) => Number(m["SINK.k1"]?.EventDrainSuccessCount ?? 0) >= 3000, 120_000, 20);
    await leader.peer.kill("SIGKILL");
    // The leader died mid-stream.
    expect(Number(before["SINK.k1"].EventDrainSuccessCount)).toBeLessThan(total / 2);
    const m = await waitForMetrics(port, "every event acknowledged after the failover", (x) => Number(x["SINK.k1"]?.EventDrainSuccessCount ?? 0) >= total, 180_000, 100);
    const acknowledged = Number(m["SINK.k1"].EventDrainSuccessCount);
    const bodies = await readAll(topic);
    const unique = new Set(bodies);
    expect(acknowledged).toBe(total);
    expect(unique.size).toBe(total);
    // The sink's batches in flight (the default) may have been written without an answer.
    expect(bodies.length - unique.size).toBeLessThanOrEqual(DEFAULT_BATCHES_IN_FLIGHT * batch);
  },
  300_000,
);
