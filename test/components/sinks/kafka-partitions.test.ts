/**
 * Which partition the Kafka producer path (src/kafka/lean-send.ts, src/kafka/producer.ts) sends
 * a record to, against a live Apache Kafka broker: a keyed record to the partition Flume 1.11's
 * KafkaSink (the Java producer's DefaultPartitioner) sends it to, compressed or not; the records
 * without key of one batch to one partition; a partition chosen by partitionIdHeader or
 * defaultPartitionId that the topic does not have fails the sink's batch and the Kafka channel's
 * put, as in Flume, instead of going to another partition; one the topic gained since the
 * producer last looked is written to. Partitions and offsets are read back with Kafka's own tools.
 */
import { expect } from "bun:test";
import { Admin, murmur2 } from "@platformatic/kafka";
import { ChannelException } from "../../../src/core/errors.ts";
import { createEvent } from "../../../src/core/event.ts";
import { waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { consoleConsume, kafkaTool } from "../../support/kafka.ts";
import { JAVA_KEYS } from "../../support/kafka-keys.ts";
import { cleanupsAfterEach, failureOf, kafkaChannel, kafkaForFile, kafkaSink, putEvents, sendAll, startFlumeWithKafka } from "../../support/kafka-tests.ts";

const kafka = kafkaForFile({ autoCreateTopics: false, withFlumeKafka: true });
const cleanups = cleanupsAfterEach();

function sink(props: Record<string, string>) {
  return kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.producer.acks": "all", flumeBatchSize: "1000", ...props }, { cleanups });
}

/** Each partition's end offset (how many records it holds), by Kafka's GetOffsetShell. */
async function endOffsets(topic: string): Promise<number[]> {
  const r = await kafkaTool(kafka.classpath, "org.apache.kafka.tools.GetOffsetShell", ["--bootstrap-server", kafka.bootstrap, "--topic", topic]);
  if (r.code !== 0) throw new Error(`GetOffsetShell failed (exit ${r.code}):\n${r.output.slice(-4000)}`);
  const out: number[] = [];
  for (const line of r.stdout.split("\n")) {
    const m = line.match(/^(.+):(\d+):(\d+)$/);
    if (m && m[1] === topic) out[Number(m[2])] = Number(m[3]);
  }
  return out;
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

needsJvm.test(
  "keyed events go to the partitions Flume 1.11's KafkaSink sends them to (the Java producer's murmur2 hash made positive, modulo 6 partitions), uncompressed and with gzip",
  async () => {
    const keys = Array.from({ length: 200 }, (_, i) => String(i));
    // Keys whose hash is negative: there `hash >>> 0` and `hash & 0x7fffffff` differ modulo 6.
    expect(keys.filter((k) => murmur2(Buffer.from(k)) < 0).length).toBeGreaterThan(50);
    const [java, plain, gzip] = [await kafka.newTopic({ partitions: 6 }), await kafka.newTopic({ partitions: 6 }), await kafka.newTopic({ partitions: 6 })];
    // Flume 1.11's own sink, each seq event keyed by its body ("0" to "199").
    await startFlumeWithKafka(cleanups, `a1.sources = r1
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
`);
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
      expect(JAVA_KEYS.map(([key]) => [key, ours.get(key)])).toEqual(JAVA_KEYS.map(([key, , partition]) => [key, partition]));
    }
  },
  300_000,
);

needsJvm.test(
  "events without key: a batch goes to one partition and the next batch to another, uncompressed and with gzip (one record batch a send, as the Java producer's sticky partitioning)",
  async () => {
    for (const compression of ["none", "gzip"]) {
      const topic = await kafka.newTopic({ partitions: 3 });
      const { sink: k, channel } = sink({ "kafka.topic": topic, "kafka.producer.compression.type": compression });
      await k.start();
      const batch = (n: number) => Array.from({ length: 50 }, (_, i) => createEvent(`batch ${n} event ${i}`));
      await sendAll(k, channel, batch(1));
      const first = await endOffsets(topic);
      expect([compression, [...first].sort()]).toEqual([compression, [0, 0, 50]]);
      await sendAll(k, channel, batch(2));
      const second = await endOffsets(topic);
      expect([compression, [...second].sort()]).toEqual([compression, [0, 50, 50]]);
      await k.stop();
    }
  },
  300_000,
);

needsJvm.test(
  "a partition the topic does not have, chosen by defaultPartitionId or the partitionIdHeader header, fails the sink's batch naming partition, topic, partition count and the setting: rolled back, nothing written (also with gzip)",
  async () => {
    for (const compression of ["none", "gzip"]) {
      const topic = await kafka.newTopic({ partitions: 3 });
      const byDefault = sink({ "kafka.topic": topic, defaultPartitionId: "5", partitionIdHeader: "p", "kafka.producer.compression.type": compression });
      await byDefault.sink.start();
      await putEvents(byDefault.channel, [createEvent("to 1", { p: "1" }), createEvent("to the default")]);
      const err = await failureOf(byDefault.sink);
      expect(err.message).toContain(`kafka sink k1: partition 5 of topic ${topic} does not exist: the topic has 3 partitions (0 to 2); defaultPartitionId = 5 chose it`);
      expect(err.message).toContain(`kafka-topics.sh --alter --topic ${topic} --partitions 6`);
      expect(byDefault.sink.counter.values).toMatchObject({ RollbackCount: 1, EventDrainSuccessCount: 0 });
      expect(byDefault.channel.counter.values.ChannelSize).toBe(2);
      await byDefault.sink.stop();

      const byHeader = sink({ "kafka.topic": topic, partitionIdHeader: "p", "kafka.producer.compression.type": compression });
      await byHeader.sink.start();
      await putEvents(byHeader.channel, [createEvent("to 0", { p: "0" }), createEvent("to 3", { p: "3" })]);
      const err2 = await failureOf(byHeader.sink);
      expect(err2.message).toContain(`kafka sink k1: partition 3 of topic ${topic} does not exist: the topic has 3 partitions (0 to 2); the event's header p (partitionIdHeader) chose it`);
      expect(byHeader.channel.counter.values.ChannelSize).toBe(2);
      await byHeader.sink.stop();
      expect(await endOffsets(topic)).toEqual([0, 0, 0]);
    }
  },
  300_000,
);

needsJvm.test(
  "a partition the topic gained after the sink last looked at it is written to, not refused nor wrapped around",
  async () => {
    const topic = await kafka.newTopic({ partitions: 2 });
    const { sink: k, channel } = sink({ "kafka.topic": topic, partitionIdHeader: "p" });
    await k.start();
    await sendAll(k, channel, [createEvent("to 1", { p: "1" })]);
    // Grown at once, with the client's admin (Kafka's CLI would take longer than the producer's metadata stays cached).
    const admin = new Admin({ clientId: "grow", bootstrapBrokers: kafka.bootstrap.split(",") });
    cleanups.push(() => admin.close());
    await admin.createPartitions({ topics: [{ name: topic, count: 4 }] });
    await waitUntil(async () => (await admin.metadata({ topics: [topic], forceUpdate: true })).topics.get(topic)?.partitionsCount === 4, "the broker to know 4 partitions", 30_000, 50);
    await sendAll(k, channel, [createEvent("to 3", { p: "3" })]);
    expect(await endOffsets(topic)).toEqual([0, 1, 0, 1]);
  },
  240_000,
);

needsJvm.test(
  "the Kafka channel's put of an event to a partition the topic does not have (defaultPartitionId) fails at commit with a ChannelException naming it; nothing is written, nothing can be taken",
  async () => {
    const topic = await kafka.newTopic({ partitions: 3 });
    const c = kafkaChannel({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}`, defaultPartitionId: "5" }, { cleanups });
    await c.start();
    const tx = c.getTransaction();
    tx.begin();
    tx.put(createEvent("a"));
    tx.put(createEvent("b"));
    const err = await tx.commit().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain(`partition 5 of topic ${topic} does not exist: the topic has 3 partitions (0 to 2); defaultPartitionId = 5 chose it`);
    await tx.rollback();
    tx.close();
    expect(await endOffsets(topic)).toEqual([0, 0, 0]);
    const take = c.getTransaction();
    take.begin();
    expect(take.take()).toBeNull();
    await take.commit();
    take.close();
  },
  240_000,
);
