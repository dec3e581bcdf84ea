/**
 * The Kafka sink (src/components/sinks/kafka.ts) against a live Apache Kafka broker
 * (test/support/kafka.ts) that creates no topic on use: its topic (Flume's escapes in
 * kafka.topic, beside Flume 1.11's own KafkaSink) and partition choices, Flume's deprecated
 * names, FlumeEvents under every compression, what Kafka's console consumer reads of its records
 * (keys, headers, partitions, timestamps), and records over max.request.size or the topic's
 * max.message.bytes. Batches in flight and lost answers: kafka-in-flight.test.ts and
 * kafka-lost-answer.test.ts beside this file.
 */
import { writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { expect, test } from "bun:test";
import { componentContext } from "../../../src/components/component.ts";
import { definition, headerTimestamp } from "../../../src/components/sinks/kafka.ts";
import { bodyText, createEvent, type Event } from "../../../src/core/event.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { startCli, tempDirFor, waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { consoleConsume, uniqueName } from "../../support/kafka.ts";
import { cleanupsAfterEach, failureOf, kafkaForFile, kafkaSink, kafkaSource, memoryChannel, putEvents, sendAll, startFlumeWithKafka, takeEvents } from "../../support/kafka-tests.ts";

const kafka = kafkaForFile({ autoCreateTopics: false, withFlumeKafka: true });
const cleanups = cleanupsAfterEach();
function sink(props: Record<string, string>) {
  return kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.producer.acks": "all", ...props }, { cleanups });
}

/** The events of a topic as our source reads them (headers topic, partition, offset), until at least `atLeast` came and then nothing new for quietMs. */
async function readEvents(topic: string, quietMs = 3000, atLeast = 0): Promise<Event[]> {
  const { source: r, channel } = kafkaSource(
    { "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topics": topic, "kafka.consumer.group.id": `check-${topic}-${Date.now()}`, "kafka.consumer.auto.offset.reset": "earliest", batchDurationMillis: "100" },
    { cleanups, name: "check", channel: new MemoryChannel("check", { capacity: 10_000, transactionCapacity: 1000 }) },
  );
  await r.start();
  const out: Event[] = [];
  let last = Date.now();
  const deadline = Date.now() + 120_000;
  while ((out.length < atLeast && Date.now() < deadline) || Date.now() - last < quietMs) {
    if ((await r.process()) === "BACKOFF") await Bun.sleep(20);
    const got = await takeEvents(channel);
    out.push(...got);
    if (got.length > 0) last = Date.now();
  }
  return out;
}

const bodiesOf = (events: Event[]) => events.map(bodyText).sort();
const RULE = "1 to 249 of a-z A-Z 0-9 . _ -, not . or ..";

needsJvm.test(
  "with useFlumeEventFormat and a kafka.producer.compression.type (gzip, snappy, lz4, zstd) each event is still written as a FlumeEvent: a source with useFlumeEventFormat gets its body and headers",
  async () => {
    for (const codec of ["gzip", "snappy", "lz4", "zstd"]) {
      const topic = await kafka.newTopic();
      const { sink: k, channel } = sink({ "kafka.topic": topic, useFlumeEventFormat: "true", "kafka.producer.compression.type": codec });
      await k.start();
      const events = Array.from({ length: 20 }, (_, i) => createEvent(`${codec} ${i}`, { host: `web-${i % 3}`, seq: String(i) }));
      await sendAll(k, channel, events);
      const { source: r, channel: out } = kafkaSource(
        { "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topics": topic, "kafka.consumer.group.id": `check-${topic}`, "kafka.consumer.auto.offset.reset": "earliest", useFlumeEventFormat: "true", batchDurationMillis: "100" },
        { cleanups, name: `r-${codec}` },
      );
      await r.start();
      const got: Event[] = [];
      await waitUntil(
        async () => {
          if ((await r.process()) === "BACKOFF") await Bun.sleep(20);
          got.push(...(await takeEvents(out)));
          return got.length >= events.length;
        },
        `the ${codec} batch read back`,
        60_000,
      );
      expect(got.map(bodyText)).toEqual(events.map(bodyText));
      expect(got.map((e) => [e.headers.host, e.headers.seq])).toEqual(events.map((e) => [e.headers.host, e.headers.seq]));
      expect(r.counter.values.EventReadFail).toBe(0);
      await r.stop();
      await k.stop();
    }
  },
  240_000,
);

needsJvm.test(
  "allowTopicOverride = false: every event goes to kafka.topic, whatever its topic header or the header named by topicHeader",
  async () => {
    const [fixed, other] = [await kafka.newTopic(), await kafka.newTopic()];
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

test("allowTopicOverride = false with %{header} in kafka.topic: validation and the start both fail naming the setting and why it is not replaced", async () => {
  // Refused before any broker is asked.
  const props = { "kafka.bootstrap.servers": "127.0.0.1:9", "kafka.topic": "%{dest}", allowTopicOverride: "false" };
  const { options, errors } = definition.parse(props);
  expect(errors).toEqual([]);
  const problems = definition.validate?.(options) ?? [];
  expect(problems).toEqual([
    {
      key: "kafka.topic",
      message: '"%{dest}" is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -, not . or ..); with allowTopicOverride = false, %{header} is not replaced, nor any other escape (as Flume 1.11)',
      hint: "set allowTopicOverride = true to choose the topic from the event's headers",
    },
  ]);
  // Kafka refuses the name as written (Flume's producer fails each batch on it): the start fails naming it.
  const k = definition.create(options, componentContext("k1", { logger: new MemoryLogger() }));
  k.setChannel(memoryChannel("k1-in"));
  cleanups.push(() => k.stop());
  const err = (await k.start().catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(Error);
  expect(err.message).toContain(`kafka.topic = "%{dest}" is not a Kafka topic name`);
  expect(err.message).toContain("with allowTopicOverride = false, %{header} is not replaced");
});

/** The date as %Y-%m-%d writes it for an epoch-ms time: in the agent's (this process's) time zone, as Flume's JVM default. */
const localDate = (ms: number) => {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
};

needsJvm.test(
  "kafka.topic takes Flume's escapes: %{app}, %Y-%m-%d from the timestamp header (agent's time zone) and %[localhost]; a topic header still wins, an empty one does not (ours: kafka.topic)",
  async () => {
    const base = uniqueName("esc");
    const [day1, day2] = [Date.UTC(2024, 2, 5, 12), Date.UTC(2024, 2, 6, 12)];
    const host = hostname();
    const topicFor = (app: string, ts: number) => `${base}-${app}-${localDate(ts)}-${host}`;
    const [t1, t2, t3, named] = [topicFor("billing", day1), topicFor("billing", day2), topicFor("", day1), `${base}-named`];
    for (const t of [t1, t2, t3, named]) await kafka.createTopic(t, { partitions: 1 });
    const { sink: k, channel } = sink({ "kafka.topic": `${base}-%{app}-%Y-%m-%d-%[localhost]` });
    await k.start();
    const to1 = [createEvent("billing day 1", { app: "billing", timestamp: String(day1) }), createEvent("billing day 1, empty topic header", { app: "billing", timestamp: String(day1 + 1000), topic: "" })];
    const to2 = [createEvent("billing day 2", { app: "billing", timestamp: String(day2) })];
    // A missing header is empty, as Flume's.
    const to3 = [createEvent("no app", { timestamp: String(day1) })];
    // The topic header is taken as it is, no timestamp needed.
    const toNamed = [createEvent("named", { topic: named })];
    await sendAll(k, channel, [...to1, ...to2, ...to3, ...toNamed]);
    expect(bodiesOf(await readEvents(t1))).toEqual(bodiesOf(to1));
    expect(bodiesOf(await readEvents(t2))).toEqual(bodiesOf(to2));
    expect(bodiesOf(await readEvents(t3))).toEqual(bodiesOf(to3));
    expect(bodiesOf(await readEvents(named))).toEqual(bodiesOf(toNamed));
  },
  240_000,
);

needsJvm.test(
  "Flume 1.11's KafkaSink and ours, given kafka.topic = ...-%{app}-%Y-%m-%d-%[localhost] and the same headers, send to the same topic",
  async () => {
    const base = uniqueName("par");
    const ts = Date.UTC(2024, 2, 5, 12);
    const topic = `${base}-billing-${localDate(ts)}-${hostname()}`;
    await kafka.createTopic(topic, { partitions: 1 });
    const template = `${base}-%{app}-%Y-%m-%d-%[localhost]`;
    await startFlumeWithKafka(cleanups, `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 3
a1.sources.r1.channels = c1
a1.sources.r1.interceptors = app ts
a1.sources.r1.interceptors.app.type = static
a1.sources.r1.interceptors.app.key = app
a1.sources.r1.interceptors.app.value = billing
a1.sources.r1.interceptors.ts.type = static
a1.sources.r1.interceptors.ts.key = timestamp
a1.sources.r1.interceptors.ts.value = ${ts}
a1.channels.c1.type = memory
a1.sinks.k1.type = org.apache.flume.sink.kafka.KafkaSink
a1.sinks.k1.channel = c1
a1.sinks.k1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sinks.k1.kafka.topic = ${template}
`);
    const { sink: k, channel } = sink({ "kafka.topic": template });
    await k.start();
    const ours = [0, 1, 2].map((i) => createEvent(`ours ${i}`, { app: "billing", timestamp: String(ts) }));
    await sendAll(k, channel, ours);
    expect(bodiesOf(await readEvents(topic, 3000, 6))).toEqual(["0", "1", "2", "ours 0", "ours 1", "ours 2"]);
  },
  300_000,
);

needsJvm.test(
  "a date escape in kafka.topic and an event without a timestamp header: the batch is rolled back, nothing sent, the error says what to add; once kafka.topic is fixed every event is delivered once",
  async () => {
    const base = uniqueName("nots");
    const ts = Date.UTC(2024, 2, 5, 12);
    const [dated, fixed] = [`${base}-${localDate(ts)}`, `${base}-all`];
    for (const t of [dated, fixed]) await kafka.createTopic(t, { partitions: 1 });
    const { sink: k, channel } = sink({ "kafka.topic": `${base}-%Y-%m-%d` });
    await k.start();
    const events = [createEvent("stamped", { timestamp: String(ts) }), createEvent("unstamped"), createEvent("stamped too", { timestamp: String(ts) })];
    await putEvents(channel, events);
    const err = await failureOf(k);
    expect(err.message).toContain(`kafka sink k1: kafka.topic "${base}-%Y-%m-%d" needs the event's time, but the event has no timestamp header: add a timestamp interceptor to the source`);
    expect(k.counter.values).toMatchObject({ RollbackCount: 1, EventDrainSuccessCount: 0 });
    expect(channel.counter.values.ChannelSize).toBe(3);
    await k.stop();
    // The fix: a kafka.topic without date escapes, on the same channel.
    const { sink: k2 } = sink({ "kafka.topic": fixed });
    k2.setChannel(channel);
    await k2.start();
    expect(await k2.process()).toBe("READY");
    await waitUntil(() => k2.counter.values.EventDrainSuccessCount === 3, "the batch acknowledged", 60_000);
    expect(bodiesOf(await readEvents(fixed))).toEqual(bodiesOf(events));
    expect(await readEvents(dated, 1500)).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "a header that makes kafka.topic no Kafka topic name fails the batch naming the computed topic and kafka.topic, a topic header Kafka refuses naming the header: rolled back, nothing sent",
  async () => {
    const base = uniqueName("badname");
    await kafka.createTopic(`${base}-ok`, { partitions: 1 });
    for (const bad of ["two words", "a/b", "x".repeat(250)]) {
      const { sink: k, channel } = sink({ "kafka.topic": `${base}-%{app}` });
      await k.start();
      await putEvents(channel, [createEvent("good", { app: "ok" }), createEvent("bad", { app: bad })]);
      const err = await failureOf(k);
      expect(err.message).toContain(`kafka sink k1: kafka.topic = "${base}-%{app}" gives the topic "${base}-${bad}" for an event, which is not a Kafka topic name`);
      expect(k.counter.values).toMatchObject({ RollbackCount: 1, EventDrainSuccessCount: 0 });
      expect(channel.counter.values.ChannelSize).toBe(2);
      await k.stop();
    }
    // A topic header Kafka refuses: named with its header (the broker's refusal names neither).
    const { sink: k, channel } = sink({ "kafka.topic": `${base}-ok` });
    await k.start();
    await putEvents(channel, [createEvent("good"), createEvent("bad", { topic: "two words" })]);
    const err = await failureOf(k);
    expect(err.message).toContain(`kafka sink k1: header topic = "two words" is not a Kafka topic name`);
    expect(channel.counter.values.ChannelSize).toBe(2);
    expect(await readEvents(`${base}-ok`, 1500)).toEqual([]);
  },
  240_000,
);

test("kafka.topic is compiled at configure time: an unknown %[...] is a problem at kafka.topic, and so is a topic sent to as written that Kafka would refuse", () => {
  const problemsOf = (props: Record<string, string>) => {
    const { options, errors } = definition.parse({ "kafka.bootstrap.servers": "127.0.0.1:9", ...props });
    expect(errors).toEqual([]);
    return { problems: definition.validate?.(options) ?? [], create: () => definition.create(options, componentContext("k1", { logger: new MemoryLogger() })) };
  };
  const bad = problemsOf({ "kafka.topic": "logs-%[hostname]" });
  expect(bad.problems).toEqual([{ key: "kafka.topic", message: "the static escape %[hostname] matches none of localhost, IP, FQDN" }]);
  expect(bad.create).toThrow("kafka.topic: the static escape %[hostname] matches none of localhost, IP, FQDN");
  const asWritten = problemsOf({ "kafka.topic": "logs-%Y", allowTopicOverride: "false" });
  expect(asWritten.problems).toEqual([expect.objectContaining({ key: "kafka.topic", message: expect.stringContaining('"logs-%Y" is not a Kafka topic name') })]);
  expect(asWritten.problems[0].message).toContain("nor any other escape");
  expect(problemsOf({ "kafka.topic": "logs today" }).problems).toEqual([{ key: "kafka.topic", message: '"logs today" is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -, not . or ..)' }]);
  expect(problemsOf({ "kafka.topic": "logs.today_1-a" }).problems).toEqual([]);
  expect(problemsOf({ "kafka.topic": "logs-%Y-%{app}-%[IP]" }).problems).toEqual([]);
  expect(problemsOf({ "kafka.deadLetterTopic": "dead letters" }).problems).toEqual([{ key: "kafka.deadLetterTopic", message: `"dead letters" is not a Kafka topic name (${RULE})` }]);
  expect(problemsOf({ "kafka.deadLetterTopic": "dead", allowTopicOverride: "false", partitionIdHeader: "p" }).problems).toEqual([]);
});

needsJvm.test(
  "a custom topicHeader chooses the topic; the default header name `topic` is then an ordinary header",
  async () => {
    const [main, chosen, ignored] = [await kafka.newTopic(), await kafka.newTopic(), await kafka.newTopic()];
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
    const topic = await kafka.newTopic({ partitions: 3 });
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
    const topic = await kafka.newTopic({ partitions: 2 });
    for (const bad of ["abc", "", " 1", "1.0", "-1"]) {
      const { sink: k, channel } = sink({ "kafka.topic": topic, partitionIdHeader: "p", defaultPartitionId: "1" });
      await k.start();
      await putEvents(channel, [createEvent("good", { p: "0" }), createEvent("bad", { p: bad }), createEvent("no header")]);
      const err = await failureOf(k);
      expect(err.message).toContain(`header p = "${bad}" (partitionIdHeader) is not a partition number; the batch is rolled back and taken again: fix the event's header (or set kafka.deadLetterTopic to send such events there)`);
      expect(k.counter.values).toMatchObject({ RollbackCount: 1, EventDrainSuccessCount: 0 });
      // The whole batch is back in the channel (taken again, failing again, as Flume's).
      expect(channel.counter.values.ChannelSize).toBe(3);
    }
    expect(await readEvents(topic, 1500)).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "kafka.deadLetterTopic (ours): events whose headers choose no Kafka topic or no partition number, or whose dated topic finds no timestamp, go there with their headers and flume.dlq.error; the rest of the batch is delivered and the channel emptied",
  async () => {
    const base = uniqueName("sinkdlq");
    const ts = Date.UTC(2024, 2, 5, 12);
    const [ok, dead] = [`${base}-ok-${localDate(ts)}`, `${base}-dead`];
    await kafka.createTopic(ok, { partitions: 2 });
    await kafka.createTopic(dead, { partitions: 1 });
    const { sink: k, channel, logger } = sink({ "kafka.topic": `${base}-%{app}-%Y-%m-%d`, partitionIdHeader: "p", "kafka.deadLetterTopic": dead });
    await k.start();
    const stamp = String(ts);
    const events = [
      createEvent("good 1", { app: "ok", timestamp: stamp }),
      createEvent("bad topic", { app: "two words", timestamp: stamp, key: "k1" }),
      createEvent("bad partition", { app: "ok", timestamp: stamp, p: "x" }),
      createEvent("no timestamp", { app: "ok" }),
      createEvent("good 2", { app: "ok", timestamp: stamp, p: "1" }),
      createEvent("bad topic header", { topic: "a/b" }),
    ];
    await sendAll(k, channel, events);
    expect(channel.counter.values.ChannelSize).toBe(0);
    expect(k.counter.values).toMatchObject({ EventDrainSuccessCount: 6, EventWriteFail: 4, RollbackCount: 0 });
    expect(bodiesOf(await readEvents(ok, 1500, 2))).toEqual(["good 1", "good 2"]);
    const lines = (await consoleConsume(kafka, dead, 4, { printKey: true, printHeaders: true })).sort();
    expect(lines).toEqual([
      `app:two words,timestamp:${stamp},key:k1,flume.dlq.error:kafka.topic = "${base}-%{app}-%Y-%m-%d" gives the topic "${base}-two words-${localDate(ts)}" for an event, which is not a Kafka topic name (${RULE})\tk1\tbad topic`,
      `topic:a/b,flume.dlq.error:header topic = "a/b" is not a Kafka topic name (${RULE})\tnull\tbad topic header`,
      `app:ok,flume.dlq.error:kafka.topic "${base}-%{app}-%Y-%m-%d" needs the event's time, but the event has no timestamp header: add a timestamp interceptor to the source\tnull\tno timestamp`,
      `app:ok,timestamp:${stamp},p:x,flume.dlq.error:header p = "x" (partitionIdHeader) is not a partition number\tnull\tbad partition`,
    ].sort());
    // One line at once, the rest summed up when the sink stops (not one line per event).
    await k.stop();
    const errors = logger.lines.filter((l) => l.level === "error").map((l) => l.message);
    expect(errors[0]).toBe(`kafka sink k1: an event sent to the dead-letter topic ${dead} (kafka.deadLetterTopic): kafka.topic = "${base}-%{app}-%Y-%m-%d" gives the topic "${base}-two words-${localDate(ts)}" for an event, which is not a Kafka topic name (${RULE})`);
    expect(errors.length).toBe(2);
    expect(errors[1]).toContain("(3 more like this");
  },
  240_000,
);

needsJvm.test(
  "without kafka.deadLetterTopic the error of an event that cannot be sent says it can be set; a dead-letter topic that does not exist fails the start naming it",
  async () => {
    const topic = await kafka.newTopic();
    const { sink: k, channel } = sink({ "kafka.topic": topic });
    await k.start();
    await putEvents(channel, [createEvent("bad", { topic: "a/b" })]);
    expect((await failureOf(k)).message).toContain(
      `kafka sink k1: header topic = "a/b" is not a Kafka topic name (${RULE}); the batch is rolled back and taken again: fix the event's header, or set allowTopicOverride = false (or set kafka.deadLetterTopic to send such events there)`,
    );
    await k.stop();
    const missing = uniqueName("nodlq");
    const { sink: k2 } = sink({ "kafka.topic": topic, "kafka.deadLetterTopic": missing });
    const err = await k2.start().then(() => null, (e: Error) => e);
    expect(err?.message).toContain(`kafka sink k1: the dead-letter topic ${missing} (kafka.deadLetterTopic) cannot be written: topic ${missing} does not exist`);
    expect(err?.message).toContain("create it, or remove kafka.deadLetterTopic");
  },
  240_000,
);

needsJvm.test(
  "an agent configured only with Flume's deprecated names (brokerList, topic, batchSize, requiredAcks) delivers, each name warned about with its new one",
  async () => {
    const topic = await kafka.newTopic();
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

needsJvm.test(
  "records of the sink are read by Kafka's console consumer with their key and headers",
  async () => {
    const topic = await kafka.newTopic();
    const { sink: k, channel } = sink({ "kafka.topic": topic, "header.color": "colour" });
    await k.start();
    await putEvents(channel, [createEvent("first", { key: "k1", color: "red" }), createEvent("second", { key: "k2" })]);
    expect(await k.process()).toBe("READY");
    const lines = await consoleConsume(kafka, topic, 2, { printKey: true, printHeaders: true });
    expect(lines).toEqual(["colour:red\tk1\tfirst", "NO_HEADERS\tk2\tsecond"]);
  },
  240_000,
);

needsJvm.test(
  "a batch after one with keys, headers, partitions and timestamps: its records carry none of them over",
  async () => {
    const topic = await kafka.newTopic({ partitions: 2 });
    const { sink: k, channel } = sink({ "kafka.topic": topic, "header.color": "colour", partitionIdHeader: "p", timestampHeader: "ts" });
    await k.start();
    await putEvents(channel, [createEvent("first", { key: "k1", color: "red", p: "1", ts: "1000" }), createEvent("second", { key: "k2", color: "blue", p: "1", ts: "2000" })]);
    expect(await k.process()).toBe("READY");
    await putEvents(channel, [createEvent("third"), createEvent("fourth", { color: "green" })]);
    expect(await k.process()).toBe("READY");
    const lines = await consoleConsume(kafka, topic, 4, { printKey: true, printHeaders: true, printPartition: true, printTimestamp: true });
    const byBody = Object.fromEntries(lines.map((l) => [l.slice(l.lastIndexOf("\t") + 1), l]));
    expect(byBody.first).toBe("CreateTime:1000\tPartition:1\tcolour:red\tk1\tfirst");
    expect(byBody.second).toBe("CreateTime:2000\tPartition:1\tcolour:blue\tk2\tsecond");
    // Sent now, to any partition, without a key; the second with its own header only.
    expect(byBody.third).toMatch(/^CreateTime:\d{13}\tPartition:[01]\tNO_HEADERS\tnull\tthird$/);
    expect(byBody.fourth).toMatch(/^CreateTime:\d{13}\tPartition:[01]\tcolour:green\tnull\tfourth$/);
    expect(Number(byBody.third.slice(11, 24))).toBeGreaterThan(Date.now() - 600_000);
  },
  240_000,
);

test("a timestampHeader value is read as Java's Long.parseLong reads it, up to 2^53 - 1 (the largest a record's timestamp is written from exactly); anything else is none (-1)", () => {
  expect(["0", "1700000000123", "+1700000000123", "007", "9007199254740991"].map(headerTimestamp)).toEqual([0, 1700000000123, 1700000000123, 7, 9007199254740991]);
  expect(["9007199254740992", "9223372036854775808", "99999999999999999999", "-1", "", "+", "abc", "1.5", " 1", "1e3", "0x10"].map(headerTimestamp)).toEqual(Array(11).fill(-1));
});

needsJvm.test(
  "a timestampHeader value that is no timestamp (past 2^63, not a number, negative) is warned about naming the header and the value, and its event sent stamped now, as Flume's sink; a valid one is the record's timestamp",
  async () => {
    const topic = await kafka.newTopic();
    const { sink: k, channel, logger } = sink({ "kafka.topic": topic, timestampHeader: "ts" });
    await k.start();
    const before = Date.now();
    await putEvents(channel, [createEvent("huge", { ts: "99999999999999999999" }), createEvent("words", { ts: "abc" }), createEvent("negative", { ts: "-1" }), createEvent("valid", { ts: "1700000000123" })]);
    expect(await k.process()).toBe("READY");
    const lines = await consoleConsume(kafka, topic, 4, { printTimestamp: true, timeoutMs: 20_000 });
    const stamps = Object.fromEntries(lines.map((l) => [l.slice(l.indexOf("\t") + 1), Number(l.slice("CreateTime:".length, l.indexOf("\t")))]));
    expect(stamps.valid).toBe(1700000000123);
    for (const body of ["huge", "words", "negative"]) {
      expect(stamps[body]).toBeGreaterThanOrEqual(before);
      expect(stamps[body]).toBeLessThanOrEqual(Date.now());
    }
    await k.stop();
    // The first at once, the others summed up in one line (at the latest at stop) with the last of them.
    const warnings = logger.lines.filter((l) => l.level === "warn").map((l) => l.message);
    expect(warnings).toEqual([
      'kafka sink k1: header ts = "99999999999999999999" (timestampHeader) is no timestamp in milliseconds from 0 to 9007199254740991: the event is sent stamped with the current time',
      'kafka sink k1: header ts = "-1" (timestampHeader) is no timestamp in milliseconds from 0 to 9007199254740991: the event is sent stamped with the current time (2 more like this in the last 10 s, not logged one by one)',
    ]);
  },
  240_000,
);

needsJvm.test(
  "a topic %{header} in kafka.topic and the topic header choose the topic of each event",
  async () => {
    const a = await kafka.newTopic();
    const b = await kafka.newTopic();
    const { sink: k, channel } = sink({ "kafka.topic": "%{dest}" });
    await k.start();
    await putEvents(channel, [createEvent("to a", { dest: a }), createEvent("to b", { topic: b })]);
    expect(await k.process()).toBe("READY");
    expect(await consoleConsume(kafka, a, 1)).toEqual(["to a"]);
    expect(await consoleConsume(kafka, b, 1)).toEqual(["to b"]);
  },
  240_000,
);

needsJvm.test(
  "a record larger than kafka.producer.max.request.size is logged naming the setting; the rest of the batch is sent",
  async () => {
    const topic = await kafka.newTopic();
    const { sink: k, channel, logger } = sink({ "kafka.topic": topic, "kafka.producer.max.request.size": "1000" });
    await k.start();
    await putEvents(channel, [createEvent("small one"), createEvent("x".repeat(2000)), createEvent("small two")]);
    expect(await k.process()).toBe("READY");
    expect(await consoleConsume(kafka, topic, 2)).toEqual(["small one", "small two"]);
    expect(k.counter.values.EventWriteFail).toBe(1);
    expect(logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual([expect.stringContaining("larger than kafka.producer.max.request.size (1000); raise it")]);
  },
  240_000,
);

needsJvm.test(
  "a record larger than the topic's max.message.bytes is refused by the broker, logged naming the setting, and the rest of the batch is sent",
  async () => {
    const topic = await kafka.newTopic({ config: { "max.message.bytes": "1000" } });
    const { sink: k, channel, logger } = sink({ "kafka.topic": topic });
    await k.start();
    await putEvents(channel, [createEvent("small one"), createEvent("x".repeat(2000)), createEvent("small two")]);
    expect(await k.process()).toBe("READY");
    expect(await consoleConsume(kafka, topic, 2)).toEqual(["small one", "small two"]);
    expect(k.counter.values.EventWriteFail).toBe(1);
    expect(channel.counter.values.ChannelSize).toBe(0);
    expect(logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual([expect.stringContaining("as too large; raise the topic's max.message.bytes")]);
  },
  240_000,
);
