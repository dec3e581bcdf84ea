/**
 * The Kafka sink's topic and partition choices and Flume's deprecated names, against a live
 * Apache Kafka broker (test/support/kafka.ts) that creates no topic on use.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "bun:test";
import { componentContext } from "../../../src/components/component.ts";
import { definition, type KafkaSink } from "../../../src/components/sinks/kafka.ts";
import { bodyText, createEvent, type Event } from "../../../src/core/event.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { startCli, tempDirFor, waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { cleanupsAfterEach, kafkaForFile, kafkaSink, kafkaSource, memoryChannel, putEvents, takeEvents } from "../../support/kafka-tests.ts";

const kafka = kafkaForFile({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();
let topicNo = 0;

async function newTopic(partitions = 1): Promise<string> {
  const topic = `sink${++topicNo}-${Date.now()}`;
  await kafka.createTopic(topic, { partitions });
  return topic;
}

function sink(props: Record<string, string>) {
  return kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.producer.acks": "all", ...props }, { cleanups });
}

/** Sends the events in one batch and waits for the broker's acknowledgement. */
async function sendAll(k: KafkaSink, channel: MemoryChannel, events: Event[]): Promise<void> {
  await putEvents(channel, events);
  expect(await k.process()).toBe("READY");
  await waitUntil(() => k.counter.values.EventDrainSuccessCount >= events.length, "the batch acknowledged", 60_000);
}

/** The events of a topic as our source reads them (headers topic, partition, offset), until nothing new came for quietMs. */
async function readEvents(topic: string, quietMs = 3000): Promise<Event[]> {
  const { source: r, channel } = kafkaSource(
    { "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topics": topic, "kafka.consumer.group.id": `check-${topic}-${Date.now()}`, "kafka.consumer.auto.offset.reset": "earliest", batchDurationMillis: "100" },
    { cleanups, name: "check", channel: new MemoryChannel("check", { capacity: 10_000, transactionCapacity: 1000 }) },
  );
  await r.start();
  const out: Event[] = [];
  let last = Date.now();
  while (Date.now() - last < quietMs) {
    if ((await r.process()) === "BACKOFF") await Bun.sleep(20);
    const got = await takeEvents(channel);
    out.push(...got);
    if (got.length > 0) last = Date.now();
  }
  return out;
}

const bodiesOf = (events: Event[]) => events.map(bodyText).sort();

/** process() as the runner calls it until one fails (a batch's failure shows at the call after its send). */
async function failureOf(k: KafkaSink): Promise<Error> {
  for (let i = 0; i < 20; i++) {
    try {
      await k.process();
    } catch (err) {
      return err as Error;
    }
    await Bun.sleep(100);
  }
  throw new Error("no batch failed");
}

needsJvm.test(
  "allowTopicOverride = false: every event goes to kafka.topic, whatever its topic header or the header named by topicHeader",
  async () => {
    const [fixed, other] = [await newTopic(), await newTopic()];
    const { sink: k, channel } = sink({ "kafka.topic": fixed, allowTopicOverride: "false", topicHeader: "dest" });
    await k.start();
    const events = [createEvent("plain"), createEvent("topic header", { topic: other }), createEvent("dest header", { dest: other })];
    await sendAll(k, channel, events);
    const got = await readEvents(fixed);
    expect(bodiesOf(got)).toEqual(bodiesOf(events));
    expect(await readEvents(other, 1500)).toEqual([]);
  },
  240_000,
);

test("allowTopicOverride = false with %{header} in kafka.topic: validation warns that it is not replaced, and the start fails naming the setting", async () => {
  // Refused before any broker is asked.
  const props = { "kafka.bootstrap.servers": "127.0.0.1:9", "kafka.topic": "%{dest}", allowTopicOverride: "false" };
  const { options, errors } = definition.parse(props);
  expect(errors).toEqual([]);
  const problems = definition.validate?.(options) ?? [];
  expect(problems).toEqual([expect.objectContaining({ key: "kafka.topic", severity: "warning", message: expect.stringContaining("%{header} is not replaced") })]);
  // Kafka refuses the name as written (Flume's producer fails each batch on it): the start fails naming it.
  const k = definition.create(options, componentContext("k1", { logger: new MemoryLogger() }));
  k.setChannel(memoryChannel("k1-in"));
  cleanups.push(() => k.stop());
  const err = (await k.start().catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(Error);
  expect(err.message).toContain(`kafka.topic = "%{dest}" is not a Kafka topic name`);
  expect(err.message).toContain("with allowTopicOverride = false, %{header} is not replaced");
});

needsJvm.test(
  "a custom topicHeader chooses the topic; the default header name `topic` is then an ordinary header",
  async () => {
    const [main, chosen, ignored] = [await newTopic(), await newTopic(), await newTopic()];
    const { sink: k, channel } = sink({ "kafka.topic": main, topicHeader: "dest" });
    await k.start();
    const toChosen = [createEvent("by dest 1", { dest: chosen }), createEvent("by dest 2", { dest: chosen, topic: ignored })];
    const toMain = [createEvent("no header"), createEvent("topic header only", { topic: ignored })];
    await sendAll(k, channel, [...toChosen, ...toMain]);
    expect(bodiesOf(await readEvents(chosen))).toEqual(bodiesOf(toChosen));
    expect(bodiesOf(await readEvents(main))).toEqual(bodiesOf(toMain));
    expect(await readEvents(ignored, 1500)).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "defaultPartitionId sends every record to that partition, whatever its key; partitionIdHeader overrides it per event",
  async () => {
    const topic = await newTopic(3);
    const { sink: k, channel } = sink({ "kafka.topic": topic, defaultPartitionId: "2", partitionIdHeader: "p" });
    await k.start();
    const keyed = Array.from({ length: 30 }, (_, i) => createEvent(`keyed ${i}`, { key: `key-${i}` }));
    const unkeyed = Array.from({ length: 30 }, (_, i) => createEvent(`unkeyed ${i}`));
    const overridden = [createEvent("to 0", { p: "0", key: "x" }), createEvent("to 1", { p: "+1" })];
    await sendAll(k, channel, [...keyed, ...unkeyed, ...overridden]);
    const got = await readEvents(topic);
    expect(got.length).toBe(62);
    const partitionOf = Object.fromEntries(got.map((e) => [bodyText(e), e.headers.partition]));
    for (const e of [...keyed, ...unkeyed]) expect(partitionOf[bodyText(e)]).toBe("2");
    expect(partitionOf["to 0"]).toBe("0");
    expect(partitionOf["to 1"]).toBe("1");
  },
  240_000,
);

needsJvm.test(
  "a partitionIdHeader value that is not a partition number fails the batch naming the header and its value, as Flume's sink: rolled back, nothing sent",
  async () => {
    const topic = await newTopic(2);
    for (const bad of ["abc", "", " 1", "1.0", "-1"]) {
      const { sink: k, channel } = sink({ "kafka.topic": topic, partitionIdHeader: "p", defaultPartitionId: "1" });
      await k.start();
      await putEvents(channel, [createEvent("good", { p: "0" }), createEvent("bad", { p: bad }), createEvent("no header")]);
      const err = await failureOf(k);
      expect(err.message).toContain(`header p = "${bad}" is not a partition number`);
      expect(k.counter.values).toMatchObject({ RollbackCount: 1, EventDrainSuccessCount: 0 });
      // The whole batch is back in the channel (taken again, failing again, as Flume's).
      expect(channel.counter.values.ChannelSize).toBe(3);
    }
    expect(await readEvents(topic, 1500)).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "an agent configured only with Flume's deprecated names (brokerList, topic, batchSize, requiredAcks) delivers, each name warned about with its new one",
  async () => {
    const topic = await newTopic();
    const dir = tempDirFor(cleanups, "flume-kafka-deprecated-");
    const file = path.join(dir, "a1.conf");
    writeFileSync(
      file,
      `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 25
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = org.apache.flume.sink.kafka.KafkaSink
a1.sinks.k1.channel = c1
a1.sinks.k1.brokerList = ${kafka.bootstrap}
a1.sinks.k1.topic = ${topic}
a1.sinks.k1.batchSize = 10
a1.sinks.k1.requiredAcks = -1
`,
    );
    // Read as the new names.
    expect(definition.parse({ brokerList: kafka.bootstrap, topic, batchSize: "10", requiredAcks: "-1" }).options).toMatchObject({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topic": topic, flumeBatchSize: 10, "kafka.producer.acks": "-1" });
    const agent = startCli(["run", "-f", file, "-n", "a1", "--no-reload-conf"]);
    cleanups.push(async () => {
      agent.child.kill("SIGTERM");
      await agent.exited();
    });
    await agent.waitFor(/kafka sink k1 started/, 120_000);
    const out = () => agent.stdout + agent.stderr;
    for (const [old, now] of [["brokerList", "kafka.bootstrap.servers"], ["topic", "kafka.topic"], ["batchSize", "flumeBatchSize"], ["requiredAcks", "kafka.producer.acks"]]) {
      expect(out()).toContain(`warning: sink k1: ${old}: is deprecated; Flume reads it as ${now}`);
    }
    // The sink names its topic and acks as read from the old names.
    expect(out()).toContain(`topic ${topic}, acks all`);
    const got = await readEvents(topic);
    expect(got.map(bodyText).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 25 }, (_, i) => String(i)));
  },
  240_000,
);
