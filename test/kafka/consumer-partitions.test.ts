/**
 * Partitions added to a topic while our consumers read it (src/kafka/consumer.ts), against a live
 * broker: as the Java consumer's group leader, the member that made the group's last assignment
 * looks at the partition counts every metadata.max.age.ms and makes the group rebalance when one
 * changed, so the new partitions are read (by a lone member, and spread over two).
 */
import { expect } from "bun:test";
import { Admin, Producer } from "@platformatic/kafka";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import { waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { cleanupsAfterEach, kafkaChannel, kafkaForFile, kafkaSource, pollChannel, putEvents, takeEvents } from "../support/kafka-tests.ts";

const kafka = kafkaForFile();
const cleanups = cleanupsAfterEach();

/** Grows the topic to `count` partitions and waits until the broker's metadata says so. */
async function grow(topic: string, count: number): Promise<void> {
  const admin = new Admin({ clientId: "grow", bootstrapBrokers: kafka.bootstrap.split(",") });
  try {
    await admin.createPartitions({ topics: [{ name: topic, count }] });
    await waitUntil(async () => (await admin.metadata({ topics: [topic], forceUpdate: true })).topics.get(topic)?.partitionsCount === count, `the broker to know ${count} partitions`, 30_000, 50);
  } finally {
    await admin.close();
  }
}

/** Sends one record `<topic>-p<partition>-<n>` to each partition given, as a producer that knows them would. */
async function produceTo(topic: string, partitions: readonly number[], n: number): Promise<string[]> {
  // Idempotent: a send retried on a loaded machine would otherwise put a record twice in the log.
  const producer = new Producer({ clientId: "to-partitions", bootstrapBrokers: kafka.bootstrap.split(","), idempotent: true });
  try {
    const values = partitions.map((p) => `p${p}-${n}`);
    await producer.send({ messages: partitions.map((partition, i) => ({ topic, partition, value: Buffer.from(values[i]) })) });
    return values;
  } finally {
    await producer.close();
  }
}

function sourceProps(topic: string, group: string): Record<string, string> {
  return {
    "kafka.bootstrap.servers": kafka.bootstrap,
    "kafka.topics": topic,
    "kafka.consumer.group.id": group,
    "kafka.consumer.auto.offset.reset": "earliest",
    "kafka.consumer.metadata.max.age.ms": "1000",
    batchDurationMillis: "100",
  };
}

const bodies = (events: readonly Event[]) => events.map((e) => bodyText(e)).sort();

needsJvm.test(
  "a lone source reads the partitions added to its topic once metadata.max.age.ms passed, and says the group rebalances",
  async () => {
    const topic = await kafka.newTopic({ partitions: 1 });
    const { source, channel, logger } = kafkaSource(sourceProps(topic, `g-${topic}`), { cleanups });
    await source.start();
    const before = await produceTo(topic, [0], 1);
    const got = await pollChannel(source, channel, 1);
    expect(bodies(got)).toEqual(before);

    await grow(topic, 3);
    const after = await produceTo(topic, [0, 1, 2], 2);
    await pollChannel(source, channel, 4, got);
    expect(bodies(got)).toEqual([...before, ...after].sort());
    expect(got.map((e) => e.headers.partition).sort()).toEqual(["0", "0", "1", "2"]);
    expect(logger.lines.map((l) => l.message)).toContainEqual(expect.stringContaining(`topic ${topic} has 3 partitions (1 before); consumer group g-${topic} rebalances to read them`));
  },
  240_000,
);

needsJvm.test(
  "two sources in one group: partitions added to the topic are spread over both, and every record is read",
  async () => {
    const topic = await kafka.newTopic({ partitions: 2 });
    const group = `g-${topic}`;
    const a = kafkaSource(sourceProps(topic, group), { cleanups, name: "ra" });
    const b = kafkaSource(sourceProps(topic, group), { cleanups, name: "rb" });
    await a.source.start();
    await b.source.start();
    const fromA: Event[] = [];
    const fromB: Event[] = [];
    const poll = async (want: number) => {
      const deadline = Date.now() + 120_000;
      while (fromA.length + fromB.length < want && Date.now() < deadline) {
        // As two source runners: a BACKOFF from both waits (and lets the client's I/O run).
        const [sa, sb] = [await a.source.process(), await b.source.process()];
        await takeEvents(a.channel, fromA);
        await takeEvents(b.channel, fromB);
        if (sa === "BACKOFF" && sb === "BACKOFF") await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const first = await produceTo(topic, [0, 1], 1);
    await poll(first.length);
    // Each member holds one of the two partitions.
    expect([fromA.length, fromB.length]).toEqual([1, 1]);
    await grow(topic, 4);
    const later = await produceTo(topic, [0, 1, 2, 3], 2);
    await poll(first.length + later.length);
    expect([...new Set(bodies([...fromA, ...fromB]))]).toEqual([...first, ...later].sort());
    // The new partitions' records came after the rebalance: now each member reads two of the four.
    const last = await produceTo(topic, [0, 1, 2, 3], 3);
    await poll(first.length + later.length + last.length);
    const lastOf = (events: Event[]) => events.filter((e) => bodyText(e).endsWith("-3")).length;
    expect([lastOf(fromA), lastOf(fromB)]).toEqual([2, 2]);
    expect([...new Set(bodies([...fromA, ...fromB]))]).toEqual([...first, ...later, ...last].sort());
    const said = [...a.logger.lines, ...b.logger.lines].map((l) => l.message);
    expect(said).toContainEqual(expect.stringContaining(`topic ${topic} has 4 partitions (2 before)`));
  },
  300_000,
);

needsJvm.test(
  "a Kafka channel takes what is put into a partition added to its topic",
  async () => {
    const topic = await kafka.newTopic({ partitions: 1 });
    const channel = kafkaChannel(
      {
        "kafka.bootstrap.servers": kafka.bootstrap,
        "kafka.topic": topic,
        "kafka.consumer.group.id": `g-${topic}`,
        "kafka.consumer.metadata.max.age.ms": "1000",
        partitionIdHeader: "p",
      },
      { cleanups },
    );
    await channel.start();
    await putEvents(channel, [createEvent("into 0", { p: "0" })]);
    const taken: Event[] = [];
    await waitUntil(async () => (await takeEvents(channel, taken)).length === 1, "the first event taken", 60_000, 50);
    await grow(topic, 2);
    await putEvents(channel, [createEvent("into 1", { p: "1" })]);
    await waitUntil(async () => (await takeEvents(channel, taken)).length === 2, "the event put into the new partition taken", 120_000, 50);
    expect(bodies(taken)).toEqual(["into 0", "into 1"]);
  },
  240_000,
);
