/**
 * Which partition the Kafka producer path (src/kafka/lean-send.ts, src/kafka/producer.ts) sends
 * a keyed record to, against a live Apache Kafka broker: the partition Flume 1.11's KafkaSink
 * (the Java producer's DefaultPartitioner) sends it to, compressed or not, read back with
 * Kafka's console consumer.
 */
import { expect } from "bun:test";
import { murmur2 } from "@platformatic/kafka";
import { createEvent } from "../../../src/core/event.ts";
import { startFlume } from "../../support/flume.ts";
import { FLUME_KAFKA } from "../../support/jvm-artifacts.ts";
import { needsJvm, resolveClasspath } from "../../support/jvm.ts";
import { consoleConsume } from "../../support/kafka.ts";
import { cleanupsAfterEach, kafkaForFile, kafkaSink, sendAll } from "../../support/kafka-tests.ts";

const kafka = kafkaForFile({
  autoCreateTopics: false,
  async before() {
    await resolveClasspath(FLUME_KAFKA);
  },
});
const cleanups = cleanupsAfterEach();

function sink(props: Record<string, string>) {
  return kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.producer.acks": "all", flumeBatchSize: "1000", ...props }, { cleanups });
}

/** key -> partition of the first `count` records of a topic, as Kafka's console consumer reads them. */
async function partitionsByKey(topic: string, count: number): Promise<Map<string, number>> {
  const lines = await consoleConsume(kafka, topic, count, { printKey: true, printPartition: true });
  const out = new Map<string, number>();
  for (const line of lines) {
    const [partition, key] = line.split("\t");
    out.set(key, Number(partition.replace("Partition:", "")));
  }
  return out;
}

/** Kafka's UtilsTest.testMurmur2 keys and the partition of 6 the Java producer gives them (toPositive(murmur2(key)) % 6). */
const JAVA_KEYS: [string, number][] = [
  ["21", 0],
  ["foobar", 0],
  ["a-little-bit-long-string", 2],
  ["a-little-bit-longer-string", 5],
  ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", 5],
  ["abc", 3],
];

needsJvm.test(
  "keyed events go to the partitions Flume 1.11's KafkaSink sends them to (the Java producer's murmur2 hash made positive, modulo 6 partitions), uncompressed and with gzip",
  async () => {
    const keys = Array.from({ length: 200 }, (_, i) => String(i));
    // Keys whose hash is negative: there `hash >>> 0` and `hash & 0x7fffffff` differ modulo 6.
    expect(keys.filter((k) => murmur2(Buffer.from(k)) < 0).length).toBeGreaterThan(50);
    const [java, plain, gzip] = [await kafka.newTopic({ partitions: 6 }), await kafka.newTopic({ partitions: 6 }), await kafka.newTopic({ partitions: 6 })];
    // Flume 1.11's own sink, each seq event keyed by its body ("0" to "199").
    const flume = await startFlume({
      conf: `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = ${keys.length}
a1.sources.r1.channels = c1
a1.sources.r1.interceptors = i1
a1.sources.r1.interceptors.i1.type = regex_extractor
a1.sources.r1.interceptors.i1.regex = (.+)
a1.sources.r1.interceptors.i1.serializers = s1
a1.sources.r1.interceptors.i1.serializers.s1.name = key
a1.channels.c1.type = memory
a1.sinks.k1.type = org.apache.flume.sink.kafka.KafkaSink
a1.sinks.k1.channel = c1
a1.sinks.k1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sinks.k1.kafka.topic = ${java}
`,
      extraSets: [FLUME_KAFKA],
      readyTimeoutMs: 120_000,
    });
    cleanups.push(() => flume.stop());
    for (const [topic, compression] of [
      [plain, "none"],
      [gzip, "gzip"],
    ]) {
      const { sink: k, channel } = sink({ "kafka.topic": topic, "kafka.producer.compression.type": compression });
      await k.start();
      await sendAll(
        k,
        channel,
        [...keys, ...JAVA_KEYS.map(([key]) => key)].map((key) => createEvent(key, { key })),
      );
      await k.stop();
    }
    const javaPartitions = await partitionsByKey(java, keys.length);
    expect(javaPartitions.size).toBe(keys.length);
    for (const topic of [plain, gzip]) {
      const ours = await partitionsByKey(topic, keys.length + JAVA_KEYS.length);
      expect(keys.map((key) => [key, ours.get(key)])).toEqual(keys.map((key) => [key, javaPartitions.get(key)]));
      expect(JAVA_KEYS.map(([key]) => [key, ours.get(key)])).toEqual(JAVA_KEYS);
    }
  },
  300_000,
);
