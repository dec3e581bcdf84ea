/**
 * The consumer wrapper (src/kafka/consumer.ts) against a live Apache Kafka broker: a pattern
 * subscription (kafka.topics.regex) follows topics created after the start, as the Java
 * consumer's pattern subscription does.
 */
import { afterAll, beforeAll, expect } from "bun:test";
import { componentContext } from "../../src/components/component.ts";
import { definition as sourceDefinition } from "../../src/components/sources/kafka.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { bodyText, type Event } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { needsJvm } from "../support/jvm.ts";
import { consoleProduce, type KafkaCluster, startKafka } from "../support/kafka.ts";

let kafka: KafkaCluster;

beforeAll(async () => {
  if (needsJvm.holds) kafka = await startKafka({ autoCreateTopics: false });
}, 300_000);
afterAll(async () => {
  await kafka?.stop();
}, 60_000);

function drain(channel: MemoryChannel): Event[] {
  const tx = channel.getTransaction();
  tx.begin();
  const out: Event[] = [];
  for (let e = tx.take(); e; e = tx.take()) out.push(e);
  void tx.commit();
  tx.close();
  return out;
}

needsJvm.test(
  "kafka.topics.regex reads a matching topic created after the source started, and not one that does not match",
  async () => {
    const stem = `rx${Date.now()}`;
    await kafka.createTopic(`${stem}-a`);
    await consoleProduce(kafka, `${stem}-a`, ["from a"]);
    const logger = new MemoryLogger();
    const { options, errors } = sourceDefinition.parse({
      "kafka.bootstrap.servers": kafka.bootstrap,
      "kafka.topics.regex": `^${stem}-.*`,
      "kafka.consumer.group.id": `g-${stem}`,
      "kafka.consumer.auto.offset.reset": "earliest",
      "kafka.consumer.metadata.max.age.ms": "1000",
      batchDurationMillis: "100",
    });
    expect(errors).toEqual([]);
    const source = sourceDefinition.create(options, componentContext("r1", { logger }));
    const channel = new MemoryChannel("c1", { capacity: 1000, transactionCapacity: 100 });
    channel.start();
    const processor = new ChannelProcessor(new ReplicatingChannelSelector([channel]));
    processor.initialize();
    source.setChannelProcessor(processor);
    try {
      await source.start();
      const got: Event[] = [];
      const until = async (want: string[], ms: number) => {
        const deadline = Date.now() + ms;
        while (!want.every((w) => got.some((e) => bodyText(e) === w)) && Date.now() < deadline) {
          if ((await source.process()) === "BACKOFF") await new Promise((r) => setTimeout(r, 50));
          got.push(...drain(channel));
        }
      };
      await until(["from a"], 60_000);
      // Created after the start: one matches the pattern, one does not.
      await kafka.createTopic(`${stem}-b`);
      await kafka.createTopic(`other-${stem}`);
      await consoleProduce(kafka, `${stem}-b`, ["from b"]);
      await consoleProduce(kafka, `other-${stem}`, ["from other"]);
      await until(["from a", "from b"], 90_000);
      // The other topic's record would have come with b's, from the same kind of start.
      await until(["from other"], 3_000);
      expect(got.map((e) => [bodyText(e), e.headers.topic]).sort()).toEqual([
        ["from a", `${stem}-a`],
        ["from b", `${stem}-b`],
      ]);
      expect(logger.lines.map((l) => l.message)).toContainEqual(expect.stringContaining(`reading topic ${stem}-b too`));
    } finally {
      await source.stop();
    }
  },
  300_000,
);
