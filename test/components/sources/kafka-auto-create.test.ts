/**
 * The Kafka source on brokers that create topics on use (auto.create.topics.enable, Kafka's
 * default): as the Java consumer Flume 1.11's KafkaSource runs, a topic named in kafka.topics
 * that does not exist yet is created when the source starts, unless
 * kafka.consumer.allow.auto.create.topics = false.
 */
import { expect } from "bun:test";
import { bodyText, type Event } from "../../../src/core/event.ts";
import { waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { consoleProduce, uniqueName } from "../../support/kafka.ts";
import { cleanupsAfterEach, kafkaForFile, kafkaSource, takeEvents } from "../../support/kafka-tests.ts";

const kafka = kafkaForFile({ autoCreateTopics: true });
const cleanups = cleanupsAfterEach();

function source(topic: string, extra: Record<string, string> = {}) {
  const props = { "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topics": topic, "kafka.consumer.group.id": `g-${topic}`, "kafka.consumer.auto.offset.reset": "earliest", batchDurationMillis: "100", ...extra };
  return kafkaSource(props, { cleanups });
}

needsJvm.test(
  "a topic that does not exist is created when the source starts, and what is then written to it is read",
  async () => {
    const topic = uniqueName("made-on-use");
    const { source: r, channel } = source(topic);
    await r.start();
    // The topic exists before anything wrote to it: the source's start made it.
    expect((await kafka.leaderOf(topic)).nodeId).toBe(kafka.nodes[0].nodeId);
    await consoleProduce(kafka, topic, ["one", "two"]);
    const got: Event[] = [];
    await waitUntil(
      async () => {
        await r.process();
        await takeEvents(channel, got);
        return got.length >= 2;
      },
      "the two records read",
      60_000,
      50,
    );
    expect(got.map(bodyText)).toEqual(["one", "two"]);
  },
  240_000,
);

needsJvm.test(
  "with kafka.consumer.allow.auto.create.topics = false the start fails naming the topic and the setting, and the topic is not made",
  async () => {
    const topic = uniqueName("not-made");
    const { source: r } = source(topic, { "kafka.consumer.allow.auto.create.topics": "false" });
    const err = await r.start().then(() => null, (e: Error) => e);
    expect(err?.message).toContain(`topic ${topic} does not exist on ${kafka.bootstrap}`);
    expect(err?.message).toContain("kafka.consumer.allow.auto.create.topics = true");
    await expect(kafka.leaderOf(topic)).rejects.toThrow(/no leader/);
  },
  240_000,
);
