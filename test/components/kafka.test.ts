/**
 * The Kafka sink, source and channel against a live Apache Kafka broker (test/support/kafka.ts),
 * and against Kafka's own console producer and consumer. The broker does not create topics on
 * use, so each test creates its topics and a missing one can be shown.
 */
import { expect } from "bun:test";
import type { KafkaChannel } from "../../src/components/channels/kafka/index.ts";
import { type KafkaSource, MOST_UNCOMMITTED } from "../../src/components/sources/kafka.ts";
import type { KafkaPoller } from "../../src/kafka/consumer.ts";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { consoleConsume, consoleProduce } from "../support/kafka.ts";
import { cleanupsAfterEach, committedOffset, kafkaChannel, kafkaForFile, kafkaSink, kafkaSource, putEvents as put, takeEvents } from "../support/kafka-tests.ts";

const kafka = kafkaForFile({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();
function sink(props: Record<string, string>, logger = new MemoryLogger()) {
  return kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, ...props }, { cleanups, logger });
}

function source(props: Record<string, string>, channel?: MemoryChannel, logger = new MemoryLogger(), name = "r1") {
  return kafkaSource({ "kafka.bootstrap.servers": kafka.bootstrap, batchDurationMillis: "100", "kafka.consumer.auto.offset.reset": "earliest", ...props }, { cleanups, channel, logger, name });
}

/** Runs the source's process() until `want` events are in its channel (or the bound passes). */
async function pollUntil(r: KafkaSource, channel: MemoryChannel, want: number, got: Event[] = [], ms = 60_000): Promise<Event[]> {
  const deadline = Date.now() + ms;
  while (got.length < want && Date.now() < deadline) {
    // As the source runner: a BACKOFF waits (and lets the client's I/O run).
    if ((await r.process()) === "BACKOFF") await new Promise((resolve) => setTimeout(resolve, 50));
    got.push(...(await takeEvents(channel)));
  }
  return got;
}

needsJvm.test(
  "sink to broker to source with useFlumeEventFormat keeps every header, the key and the mapped Kafka headers",
  async () => {
    const topic = await kafka.newTopic();
    const { sink: k, channel } = sink({ "kafka.topic": topic, useFlumeEventFormat: "true", "header.trace": "x-trace", "kafka.producer.acks": "all" });
    await k.start();
    const sent = Array.from({ length: 50 }, (_, i) => createEvent(`event ${i}`, { seq: String(i), key: `k${i % 3}`, trace: `tr${i}` }));
    await put(channel, sent);
    expect(await k.process()).toBe("READY");
    // The take commits once the broker acknowledged the batch (process() returns once it is sent).
    await waitUntil(() => k.counter.values.EventDrainSuccessCount === 50, "the batch acknowledged", 30_000);
    // Flume's KafkaSinkCounter names.
    expect(Object.keys(k.counter.snapshot())).toEqual(expect.arrayContaining(["KafkaEventSendTimer", "RollbackCount", "EventDrainSuccessCount"]));
    expect(channel.counter.values.ChannelSize).toBe(0);

    const { source: r, channel: out } = source({ "kafka.topics": topic, useFlumeEventFormat: "true", "header.traceCopy": "x-trace", "kafka.consumer.group.id": `g-${topic}` });
    await r.start();
    const got = await pollUntil(r, out, 50);
    expect(got.map(bodyText)).toEqual(sent.map(bodyText));
    for (let i = 0; i < 50; i++) {
      const h = got[i].headers;
      expect(h.seq).toBe(String(i));
      expect(h.key).toBe(`k${i % 3}`);
      expect(h.trace).toBe(`tr${i}`);
      expect(h.traceCopy).toBe(`tr${i}`);
      expect(h.topic).toBe(topic);
      expect(h.partition).toBe("0");
      expect(h.offset).toBe(String(i));
      expect(Number(h.timestamp)).toBeGreaterThan(Date.now() - 600_000);
    }
  },
  240_000,
);

needsJvm.test(
  "plain records from Kafka's console producer are read by the source, keys as the key header",
  async () => {
    const topic = await kafka.newTopic();
    await consoleProduce(kafka, topic, ["a\tline one", "b\tline two", "c\tline three"], { keys: true });
    const { source: r, channel } = source({ "kafka.topics": topic, "kafka.consumer.group.id": `g-${topic}` });
    await r.start();
    const got = await pollUntil(r, channel, 3);
    expect(got.map(bodyText)).toEqual(["line one", "line two", "line three"]);
    expect(got.map((e) => e.headers.key)).toEqual(["a", "b", "c"]);
    expect(got.map((e) => e.headers.offset)).toEqual(["0", "1", "2"]);
  },
  240_000,
);

needsJvm.test(
  "records of the sink are read by Kafka's console consumer with their key and headers",
  async () => {
    const topic = await kafka.newTopic();
    const { sink: k, channel } = sink({ "kafka.topic": topic, "header.color": "colour" });
    await k.start();
    await put(channel, [createEvent("first", { key: "k1", color: "red" }), createEvent("second", { key: "k2" })]);
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
    await put(channel, [createEvent("first", { key: "k1", color: "red", p: "1", ts: "1000" }), createEvent("second", { key: "k2", color: "blue", p: "1", ts: "2000" })]);
    expect(await k.process()).toBe("READY");
    await put(channel, [createEvent("third"), createEvent("fourth", { color: "green" })]);
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

needsJvm.test(
  "a topic %{header} in kafka.topic and the topic header choose the topic of each event",
  async () => {
    const a = await kafka.newTopic();
    const b = await kafka.newTopic();
    const { sink: k, channel } = sink({ "kafka.topic": "%{dest}" });
    await k.start();
    await put(channel, [createEvent("to a", { dest: a }), createEvent("to b", { topic: b })]);
    expect(await k.process()).toBe("READY");
    expect(await consoleConsume(kafka, a, 1)).toEqual(["to a"]);
    expect(await consoleConsume(kafka, b, 1)).toEqual(["to b"]);
  },
  240_000,
);

needsJvm.test(
  "a topic that does not exist, with auto-create off, fails the start with an error naming the topic",
  async () => {
    const { sink: k } = sink({ "kafka.topic": "no-such-topic-here" });
    await expect(k.start()).rejects.toThrow(/topic no-such-topic-here does not exist/);
    const { source: r } = source({ "kafka.topics": "no-such-topic-either" });
    await expect(r.start()).rejects.toThrow(/topic no-such-topic-either does not exist/);
  },
  240_000,
);

needsJvm.test(
  "records that are not Avro FlumeEvents are logged with topic, partition and offset, counted, skipped and sent to the dead-letter topic; the good ones after them arrive",
  async () => {
    const topic = await kafka.newTopic();
    const dlq = await kafka.newTopic();
    const garbage = ["this is not avro at all, just text that runs on", '{"json": "neither"}', "x"];
    await consoleProduce(kafka, topic, garbage);
    const { sink: k, channel: sinkChannel } = sink({ "kafka.topic": topic, useFlumeEventFormat: "true" });
    await k.start();
    await put(sinkChannel, [createEvent("good one", { h: "v" }), createEvent("good two", { h: "w" })]);
    expect(await k.process()).toBe("READY");
    const logger = new MemoryLogger();
    const { source: r, channel } = source({ "kafka.topics": topic, useFlumeEventFormat: "true", "kafka.deadLetterTopic": dlq, "kafka.consumer.group.id": `g-${topic}` }, undefined, logger);
    await r.start();
    const got = await pollUntil(r, channel, 2);
    expect(got.map(bodyText)).toEqual(["good one", "good two"]);
    expect(got.map((e) => e.headers.h)).toEqual(["v", "w"]);
    expect(r.counter.values.EventReadFail).toBe(3);
    expect(logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual(garbage.map((_, i) => expect.stringContaining(`topic ${topic} partition 0 offset ${i}`)));
    // As they were, with where they came from and why.
    const letters = await consoleConsume(kafka, dlq, 3, { printHeaders: true });
    expect(letters.map((l) => l.slice(l.lastIndexOf("\t") + 1))).toEqual(garbage);
    letters.forEach((l, i) => {
      expect(l).toContain(`flume.dlq.topic:${topic},flume.dlq.partition:0,flume.dlq.offset:${i},flume.dlq.error:`);
      expect(l).toContain("is not an Avro FlumeEvent");
    });
  },
  240_000,
);

needsJvm.test(
  "a dead-letter topic that refuses the bad records holds the batch: nothing skipped, nothing put, no offset committed, an error naming the topic and the reason, retried; the bad record logged once however many retries; with a topic that takes them everything goes on",
  async () => {
    const topic = await kafka.newTopic();
    // The broker refuses every dead letter on this topic as too large.
    const refusing = `refusing-${topic}`;
    await kafka.createTopic(refusing, { config: { "max.message.bytes": "64" } });
    const garbage = `not an Avro FlumeEvent: ${"x".repeat(200)}`;
    await consoleProduce(kafka, topic, [garbage]);
    const { sink: k, channel: sinkChannel } = sink({ "kafka.topic": topic, useFlumeEventFormat: "true" });
    await k.start();
    await put(sinkChannel, [createEvent("good one"), createEvent("good two")]);
    expect(await k.process()).toBe("READY");
    const group = `g-${topic}`;
    const logger = new MemoryLogger();
    const { source: r, channel } = source({ "kafka.topics": topic, useFlumeEventFormat: "true", "kafka.deadLetterTopic": refusing, "kafka.consumer.group.id": group }, undefined, logger);
    await r.start();
    const refusals = () => logger.lines.filter((l) => l.level === "error" && l.message.includes("dead-letter topic"));
    const deadline = Date.now() + 60_000;
    while (r.counter.values.KafkaDeadLetterFailCount < 3 && Date.now() < deadline) {
      expect(await r.process()).toBe("BACKOFF");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(r.counter.values.KafkaDeadLetterFailCount).toBe(3);
    expect(refusals().length).toBe(3);
    for (const refusal of refusals()) expect(refusal.message).toMatch(new RegExp(`cannot write 1 record\\(s\\) that are no FlumeEvent to the dead-letter topic ${refusing} \\(kafka\\.deadLetterTopic\\): .*(too large|TOO_LARGE).*; the batch of 3 records from topic ${topic} partition 0 offset 0 is held`, "i"));
    // The bad record itself is logged the first time it is read, not at each retry of its batch.
    const skipped = logger.lines.filter((l) => l.message.includes("skipped a record that is not an Avro FlumeEvent"));
    expect(skipped.map((l) => [l.level, l.message])).toEqual([["error", expect.stringContaining(`kafka source r1: skipped a record that is not an Avro FlumeEvent at topic ${topic} partition 0 offset 0`)]]);
    expect(logger.lines.filter((l) => l.level === "error").length).toBe(4);
    // Held: not skipped (not counted as read and dropped), and the good records behind it wait.
    expect(r.counter.values.EventReadFail).toBe(0);
    expect(await takeEvents(channel)).toEqual([]);
    await r.stop();
    // The next member of the group, with a dead-letter topic that takes them, gets every record from offset 0.
    const working = await kafka.newTopic();
    const { source: next, channel: out } = source({ "kafka.topics": topic, useFlumeEventFormat: "true", "kafka.deadLetterTopic": working, "kafka.consumer.group.id": group }, undefined, new MemoryLogger(), "r2");
    await next.start();
    expect((await pollUntil(next, out, 2)).map(bodyText)).toEqual(["good one", "good two"]);
    expect(next.counter.values.EventReadFail).toBe(1);
    expect(next.counter.values.KafkaDeadLetterFailCount).toBe(0);
    const letters = await consoleConsume(kafka, working, 1);
    expect(letters).toEqual([garbage]);
  },
  240_000,
);

needsJvm.test(
  "a dead-letter topic that does not exist (auto-create off) fails the source's start with an error naming the topic and the setting",
  async () => {
    const topic = await kafka.newTopic();
    const { source: r } = source({ "kafka.topics": topic, useFlumeEventFormat: "true", "kafka.deadLetterTopic": "no-such-dead-letters" });
    await expect(r.start()).rejects.toThrow(/kafka source r1: the dead-letter topic no-such-dead-letters \(kafka\.deadLetterTopic\) cannot be written: .*topic no-such-dead-letters does not exist/);
  },
  240_000,
);

needsJvm.test(
  "the channel with parseAsFlumeEvent skips records that are not FlumeEvents into its dead-letter topic and is not wedged by them",
  async () => {
    const topic = await kafka.newTopic();
    const dlq = await kafka.newTopic();
    await consoleProduce(kafka, topic, ["garbage in the channel"]);
    const c = channel({ "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}`, "kafka.deadLetterTopic": dlq });
    await c.start();
    const tx = c.getTransaction();
    tx.begin();
    tx.put(createEvent("after the garbage", { n: "1" }));
    await tx.commit();
    tx.close();
    const taken = await takeUntil(c, 1);
    expect(taken.map(bodyText)).toEqual(["after the garbage"]);
    expect(taken[0].headers.n).toBe("1");
    const letters = await consoleConsume(kafka, dlq, 1, { printHeaders: true });
    expect(letters).toEqual([expect.stringMatching(new RegExp(`^flume\\.dlq\\.topic:${topic},flume\\.dlq\\.partition:0,flume\\.dlq\\.offset:0,flume\\.dlq\\.error:.*not an Avro FlumeEvent.*\tgarbage in the channel$`))]);
    // Counted once its take committed.
    expect(c.counter.values.EventReadFail).toBe(1);
    // Taken and committed once: a second member of the group finds nothing left.
    await c.stop();
    const again = channel({ "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}` }, "kc2");
    await again.start();
    await waitUntil(() => again.connected, "second channel connected", 60_000);
    expect(await takeUntil(again, 1, true, 3000)).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "the channel with a dead-letter topic that refuses the bad record fails the take's commit naming the topic and the reason, committing no offset; the next member of the group, with a topic that takes it, gets everything",
  async () => {
    const topic = await kafka.newTopic();
    const refusing = `refusing-${topic}`;
    await kafka.createTopic(refusing, { config: { "max.message.bytes": "64" } });
    await consoleProduce(kafka, topic, [`garbage in the channel ${"x".repeat(200)}`]);
    const group = `g-${topic}`;
    const logger = new MemoryLogger();
    const c = channel({ "kafka.topic": topic, "kafka.consumer.group.id": group, "kafka.deadLetterTopic": refusing }, "kc", logger);
    await c.start();
    const put = c.getTransaction();
    put.begin();
    put.put(createEvent("after the garbage"));
    await put.commit();
    put.close();
    // Twice: the take comes back after its failed commit, and fails again.
    for (let attempt = 0; attempt < 2; attempt++) {
      const [e] = await takeUntil(c, 1, false);
      expect(bodyText(e)).toBe("after the garbage");
      const tx = c.getTransaction();
      tx.begin();
      const again = tx.take();
      expect(again && bodyText(again)).toBe("after the garbage");
      await expect(tx.commit()).rejects.toThrow(new RegExp(`kafka channel kc: sending 1 record\\(s\\) that are no FlumeEvent to the dead-letter topic ${refusing} \\(kafka\\.deadLetterTopic\\) failed: .*too large.*; the take of 2 records from topic ${topic} partition 0 offset 0 is not committed, its records are read again`, "i"));
      await tx.rollback();
      tx.close();
    }
    // Read again by every take after a rollback, logged once.
    const skipped = logger.lines.filter((l) => l.message.includes("skipped a record that is not an Avro FlumeEvent"));
    expect(skipped.map((l) => l.message)).toEqual([expect.stringContaining(`kafka channel kc: skipped a record that is not an Avro FlumeEvent at topic ${topic} partition 0 offset 0`)]);
    // Not counted while its take is not committed.
    expect(c.counter.values.EventReadFail).toBe(0);
    await c.stop();
    const working = await kafka.newTopic();
    const next = channel({ "kafka.topic": topic, "kafka.consumer.group.id": group, "kafka.deadLetterTopic": working }, "kc2");
    await next.start();
    expect((await takeUntil(next, 1)).map(bodyText)).toEqual(["after the garbage"]);
    expect(next.counter.values.EventReadFail).toBe(1);
    expect(await consoleConsume(kafka, working, 1)).toEqual([`garbage in the channel ${"x".repeat(200)}`]);
  },
  240_000,
);

needsJvm.test(
  "a batch with a bad record that the channel refuses is read again: the bad record is logged, counted and dead-lettered once, however often its batch comes back",
  async () => {
    const topic = await kafka.newTopic();
    const dlq = await kafka.newTopic();
    await consoleProduce(kafka, topic, ["not an Avro FlumeEvent"]);
    const { sink: k, channel: sinkChannel } = sink({ "kafka.topic": topic, useFlumeEventFormat: "true" });
    await k.start();
    await put(sinkChannel, [createEvent("good one"), createEvent("good two")]);
    expect(await k.process()).toBe("READY");
    // Room for two events, one taken already: the batch of two is refused until it is drained.
    const small = new MemoryChannel("small", { capacity: 2, transactionCapacity: 2, keepAlive: 0 });
    await put(small, [createEvent("already there")]);
    const logger = new MemoryLogger();
    const { source: r } = source({ "kafka.topics": topic, useFlumeEventFormat: "true", "kafka.deadLetterTopic": dlq, "kafka.consumer.group.id": `g-${topic}` }, small, logger);
    await r.start();
    await waitUntil(async () => (await r.process()) === "BACKOFF" && r.counter.values.ChannelWriteFail >= 3, "the batch refused three times", 60_000, 50);
    expect(r.counter.values.EventReadFail).toBe(1);
    expect((await takeEvents(small, [], 2)).map(bodyText)).toEqual(["already there"]);
    await waitUntil(async () => (await r.process()) === "READY", "the batch put once there is room", 60_000, 50);
    expect((await takeEvents(small, [], 2)).map(bodyText)).toEqual(["good one", "good two"]);
    expect(r.counter.values.EventReadFail).toBe(1);
    const skipped = logger.lines.filter((l) => l.message.includes("skipped a record that is not an Avro FlumeEvent"));
    expect(skipped.map((l) => l.message)).toEqual([expect.stringContaining(`at topic ${topic} partition 0 offset 0`)]);
    // The dead-letter topic holds the bad record once: the marker written after the batch went on comes next.
    await consoleProduce(kafka, dlq, ["marker"]);
    expect(await consoleConsume(kafka, dlq, 2)).toEqual(["not an Avro FlumeEvent", "marker"]);
  },
  240_000,
);

needsJvm.test(
  "offsets are committed only after the channel committed: a refused batch is read again by the next member of the group",
  async () => {
    const topic = await kafka.newTopic();
    await consoleProduce(kafka, topic, ["one", "two", "three"]);
    const group = `g-${topic}`;
    // A channel that holds two events refuses the batch of three: nothing may be committed.
    const small = new MemoryChannel("small", { capacity: 2, transactionCapacity: 2, keepAlive: 0 });
    const first = source({ "kafka.topics": topic, "kafka.consumer.group.id": group }, small);
    await first.source.start();
    await waitUntil(async () => (await first.source.process()) === "BACKOFF" && first.source.counter.values.ChannelWriteFail > 0, "the batch refused", 60_000, 50);
    expect(small.counter.values.ChannelSize).toBe(0);
    await first.source.stop();
    // A second member of the group gets every event: the refused batch was not committed.
    const second = source({ "kafka.topics": topic, "kafka.consumer.group.id": group }, undefined, undefined, "r2");
    await second.source.start();
    const got = await pollUntil(second.source, second.channel, 3);
    expect(got.map(bodyText)).toEqual(["one", "two", "three"]);
    await second.source.stop();
    // And once committed, a third member reads nothing of them again.
    await consoleProduce(kafka, topic, ["four"]);
    const third = source({ "kafka.topics": topic, "kafka.consumer.group.id": group }, undefined, undefined, "r3");
    await third.source.start();
    expect((await pollUntil(third.source, third.channel, 1)).map(bodyText)).toEqual(["four"]);
  },
  240_000,
);

/** The source's consumer, reached into: its takes counted, its offset commits held at the broker's door until released or dropped. */
function holdCommits(r: KafkaSource) {
  const poller = (r as unknown as { poller: KafkaPoller }).poller;
  // What sends the poller's offset commits (the library's way or straight to the coordinator: commit-api.ts).
  const commits = (poller as unknown as { commits: { commit(offsets: { offset: bigint }[]): Promise<void> } }).commits;
  const commit = commits.commit.bind(commits);
  const held: { send(): void; drop(err: Error): void }[] = [];
  const take = poller.take.bind(poller);
  const spy = {
    takes: 0,
    /** The offsets of each commit asked, in order. */
    asked: [] as number[][],
    get waiting() {
      return held.length;
    },
    /** Sends the held commits to the broker. */
    release: () => held.splice(0).forEach((h) => h.send()),
    /** The held commits fail unsent, as when the process dies. */
    drop: () => held.splice(0).forEach((h) => h.drop(new Error("connection lost"))),
  };
  poller.take = (max: number) => {
    spy.takes++;
    return take(max);
  };
  commits.commit = (offsets) => {
    spy.asked.push(offsets.map((x) => Number(x.offset)));
    return new Promise<void>((resolve, reject) => held.push({ send: () => void commit(offsets).then(resolve, reject), drop: reject }));
  };
  return { poller, spy };
}

needsJvm.test(
  "offsets are committed while the next batches are read and put, one commit at a time covering the batches put meanwhile, at most four batches uncommitted: a crash re-reads at most those, and skips none",
  async () => {
    const topic = await kafka.newTopic();
    const all = Array.from({ length: 60 }, (_, i) => `m${i}`);
    await consoleProduce(kafka, topic, all);
    const props = { "kafka.topics": topic, "kafka.consumer.group.id": `g-${topic}`, batchSize: "10", "kafka.consumer.session.timeout.ms": "6000", "kafka.consumer.heartbeat.interval.ms": "1000" };
    const logger = new MemoryLogger();
    const a = source(props, undefined, logger);
    await a.source.start();
    const { poller, spy } = holdCommits(a.source);
    // Records fetched: each process() below takes a whole batch of 10.
    await waitUntil(() => poller.buffered >= 20, "the records fetched", 60_000, 10);
    // The first batch's commit is held; the next three batches go to the channel meanwhile.
    for (let i = 0; i < MOST_UNCOMMITTED; i++) expect(await a.source.process()).toBe("READY");
    expect((await takeEvents(a.channel)).map(bodyText)).toEqual(all.slice(0, 40));
    expect(spy.asked).toEqual([[10]]);
    // A fifth batch is read, and waits for the commit before the channel.
    const fifth = a.source.process();
    await waitUntil(() => spy.takes > MOST_UNCOMMITTED, "the fifth batch taken", 60_000, 10);
    expect(a.channel.counter.values.ChannelSize).toBe(0);
    // The first commit lands; the three batches put while it went are committed by one commit; the fifth batch goes on.
    spy.release();
    expect(await fifth).toBe("READY");
    expect(spy.asked).toEqual([[10], [40]]);
    expect((await takeEvents(a.channel)).map(bodyText)).toEqual(all.slice(40, 50));
    // Four batches are in the channel with their offsets not committed when the process dies.
    spy.drop();
    await poller.crash();
    await waitUntil(() => logger.lines.some((l) => l.level === "warn" && l.message.endsWith("committing offsets failed (connection lost); those 30 events may be read again")), "the failed commit logged", 10_000, 10);

    // The next member of the group reads those four batches again, nothing of the first, and the rest.
    const b = source(props, undefined, undefined, "r2");
    await b.source.start();
    const got = await pollUntil(b.source, b.channel, 50);
    expect(got.map(bodyText)).toEqual(all.slice(10));
  },
  240_000,
);

needsJvm.test(
  "uncommittedBatches = 1 keeps Flume's bound: a batch goes to the channel only once the commit before it ended, so a crash re-reads one batch at most",
  async () => {
    const topic = await kafka.newTopic();
    const all = Array.from({ length: 30 }, (_, i) => `u${i}`);
    await consoleProduce(kafka, topic, all);
    const props = { "kafka.topics": topic, "kafka.consumer.group.id": `g-${topic}`, batchSize: "10", uncommittedBatches: "1", "kafka.consumer.session.timeout.ms": "6000", "kafka.consumer.heartbeat.interval.ms": "1000" };
    const a = source(props);
    await a.source.start();
    const { poller, spy } = holdCommits(a.source);
    await waitUntil(() => poller.buffered >= 20, "the records fetched", 60_000, 10);
    expect(await a.source.process()).toBe("READY");
    expect((await takeEvents(a.channel)).map(bodyText)).toEqual(all.slice(0, 10));
    // The second batch is read while the first commit is held, and waits for it before the channel.
    const second = a.source.process();
    await waitUntil(() => spy.takes > 1, "the second batch taken", 60_000, 10);
    expect(a.channel.counter.values.ChannelSize).toBe(0);
    spy.release();
    expect(await second).toBe("READY");
    expect(spy.asked).toEqual([[10], [20]]);
    expect((await takeEvents(a.channel)).map(bodyText)).toEqual(all.slice(10, 20));
    // The process dies with the second batch's commit held: the next member re-reads that batch only.
    spy.drop();
    await poller.crash();
    const b = source(props, undefined, undefined, "r2");
    await b.source.start();
    const got = await pollUntil(b.source, b.channel, 20);
    expect(got.map(bodyText)).toEqual(all.slice(10));
  },
  240_000,
);

function channel(props: Record<string, string>, name = "kc", logger?: MemoryLogger): KafkaChannel {
  return kafkaChannel({ "kafka.bootstrap.servers": kafka.bootstrap, ...props }, { cleanups, name, logger });
}

async function takeUntil(c: KafkaChannel, want: number, commit = true, ms = 60_000): Promise<Event[]> {
  const deadline = Date.now() + ms;
  await waitUntil(() => c.connected, "channel connected", ms);
  for (;;) {
    const tx = c.getTransaction();
    tx.begin();
    const out: Event[] = [];
    for (let i = 0; i < want; i++) {
      const e = tx.take();
      if (!e) break;
      out.push(e);
    }
    if (out.length === want || Date.now() > deadline) {
      if (commit) await tx.commit();
      else await tx.rollback();
      tx.close();
      return out;
    }
    await tx.rollback();
    tx.close();
    await new Promise((r) => setTimeout(r, 100));
  }
}

needsJvm.test(
  "the channel: puts are visible once committed, a rolled-back take comes back in order, a crash re-reads what was not committed",
  async () => {
    const topic = await kafka.newTopic();
    const props = { "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}` };
    const c = channel(props);
    await c.start();
    const tx = c.getTransaction();
    tx.begin();
    for (let i = 0; i < 5; i++) tx.put(createEvent(`e${i}`, { n: String(i) }));
    await tx.commit();
    tx.close();
    expect(c.counter.values.EventPutSuccessCount).toBe(5);

    const rolledBack = await takeUntil(c, 2, false);
    expect(rolledBack.map(bodyText)).toEqual(["e0", "e1"]);
    // Flume's KafkaChannelCounter names.
    expect(c.counter.values.RollbackCount).toBeGreaterThan(0);
    expect(Object.keys(c.counter.snapshot())).toEqual(expect.arrayContaining(["KafkaEventGetTimer", "KafkaEventSendTimer", "KafkaCommitTimer", "RollbackCount", "ChannelSize"]));
    const taken = await takeUntil(c, 2);
    expect(taken.map(bodyText)).toEqual(["e0", "e1"]);
    expect(taken.map((e) => e.headers.n)).toEqual(["0", "1"]);
    // Taken and not committed when the process dies: read again after the restart.
    const open = c.getTransaction();
    open.begin();
    expect(bodyText(open.take()!)).toBe("e2");
    await c.crash();

    const again = channel(props, "kc2");
    await again.start();
    const rest = await takeUntil(again, 3);
    expect(rest.map(bodyText)).toEqual(["e2", "e3", "e4"]);
  },
  240_000,
);

needsJvm.test(
  "the channel's puts go to the partition of partitionIdHeader, else defaultPartitionId, with the key header as the record key, each partition's records in put order",
  async () => {
    const topic = await kafka.newTopic({ partitions: 3 });
    const c = channel({ "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}`, parseAsFlumeEvent: "false", partitionIdHeader: "p", defaultPartitionId: "2" });
    await c.start();
    await put(c, [
      createEvent("a0", { p: "0", key: "ka" }),
      createEvent("a1"),
      createEvent("a2", { p: "1" }),
      createEvent("a3", { key: "kb" }),
      createEvent("a4", { p: "0" }),
      createEvent("a5", { p: "not a number" }),
    ]);
    await put(c, [createEvent("b0", { p: "1" }), createEvent("b1")]);
    expect(c.counter.values.EventPutSuccessCount).toBe(8);
    const lines = await consoleConsume(kafka, topic, 8, { printPartition: true, printKey: true });
    const inPartition = (n: number) => lines.filter((l) => l.startsWith(`Partition:${n}\t`)).map((l) => l.split("\t").slice(1).join(" "));
    expect(inPartition(0)).toEqual(["ka a0", "null a4"]);
    expect(inPartition(1)).toEqual(["null a2", "null b0"]);
    // A header that is no number leaves the record on defaultPartitionId.
    expect(inPartition(2)).toEqual(["null a1", "kb a3", "null a5", "null b1"]);
  },
  240_000,
);

needsJvm.test(
  "the channel's puts without partition settings (idempotent producer, acks all): every put's events are taken back in their order, none lost or repeated",
  async () => {
    const topic = await kafka.newTopic({ partitions: 3 });
    const c = channel({ "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}` });
    await c.start();
    const puts = Array.from({ length: 6 }, (_, p) => Array.from({ length: 150 }, (_, i) => createEvent(`p${p}-${i}`, { put: String(p), i: String(i) })));
    for (const events of puts) await put(c, events);
    const taken = await takeUntil(c, 900);
    expect(taken.length).toBe(900);
    for (let p = 0; p < puts.length; p++) {
      expect(taken.filter((e) => e.headers.put === String(p)).map(bodyText)).toEqual(puts[p].map(bodyText));
    }
  },
  240_000,
);

needsJvm.test(
  "a record larger than kafka.producer.max.request.size is logged naming the setting; the rest of the batch is sent",
  async () => {
    const topic = await kafka.newTopic();
    const { sink: k, channel, logger } = sink({ "kafka.topic": topic, "kafka.producer.max.request.size": "1000" });
    await k.start();
    await put(channel, [createEvent("small one"), createEvent("x".repeat(2000)), createEvent("small two")]);
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
    await put(channel, [createEvent("small one"), createEvent("x".repeat(2000)), createEvent("small two")]);
    expect(await k.process()).toBe("READY");
    expect(await consoleConsume(kafka, topic, 2)).toEqual(["small one", "small two"]);
    expect(k.counter.values.EventWriteFail).toBe(1);
    expect(channel.counter.values.ChannelSize).toBe(0);
    expect(logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual([expect.stringContaining("as too large; raise the topic's max.message.bytes")]);
  },
  240_000,
);

needsJvm.test(
  "the channel refuses a put with a record over kafka.producer.max.request.size naming the setting, and takes the next put",
  async () => {
    const topic = await kafka.newTopic();
    const c = channel({ "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}`, "kafka.producer.max.request.size": "1000" });
    await c.start();
    const big = c.getTransaction();
    big.begin();
    big.put(createEvent("small"));
    big.put(createEvent("x".repeat(2000)));
    await expect(big.commit()).rejects.toThrow(/larger than kafka.producer.max.request.size \(1000\); raise it/);
    await big.rollback();
    big.close();
    await put(c, [createEvent("next")]);
    expect((await takeUntil(c, 1)).map(bodyText)).toEqual(["next"]);
  },
  240_000,
);

needsJvm.test(
  "a second member joining the group and the first leaving lose nothing and repeat at most the batches not committed",
  async () => {
    const topic = await kafka.newTopic({ partitions: 4 });
    const total = 3000;
    await consoleProduce(kafka, topic, Array.from({ length: total }, (_, i) => `m${i}`));
    const group = `g-${topic}`;
    const props = { "kafka.topics": topic, "kafka.consumer.group.id": group, batchSize: "100", "kafka.consumer.session.timeout.ms": "10000", "kafka.consumer.heartbeat.interval.ms": "500" };
    const a = source(props, undefined, undefined, "ra");
    await a.source.start();
    const got: Event[] = [];
    await pollUntil(a.source, a.channel, 500, got);
    // B joins: the group rebalances while A keeps polling.
    const b = source(props, undefined, undefined, "rb");
    const joining = b.source.start();
    const gotB: Event[] = [];
    await pollUntil(a.source, a.channel, 1000, got, 20_000);
    await joining;
    // A leaves; B ends up with every partition.
    await a.source.stop();
    const unique = new Set(got.map(bodyText));
    const deadline = Date.now() + 90_000;
    while (unique.size < total && Date.now() < deadline) {
      await b.source.process();
      for (const e of await takeEvents(b.channel)) {
        gotB.push(e);
        unique.add(bodyText(e));
      }
    }
    const all = [...got, ...gotB];
    expect(unique.size).toBe(total);
    // A's batches not committed when its partitions moved (and the batch it was reading).
    expect(all.length - unique.size).toBeLessThanOrEqual((MOST_UNCOMMITTED + 1) * 100);
  },
  240_000,
);

// Last in this file: it restarts the shared broker.
needsJvm.test(
  "a source whose broker was SIGKILLed and restarted reads what is written after the restart",
  async () => {
    const topic = await kafka.newTopic();
    await consoleProduce(kafka, topic, ["before"]);
    const group = `g-${topic}`;
    const { source: r, channel, logger } = source({ "kafka.topics": topic, "kafka.consumer.group.id": group, "kafka.consumer.session.timeout.ms": "6000", "kafka.consumer.request.timeout.ms": "5000" });
    await r.start();
    expect((await pollUntil(r, channel, 1)).map(bodyText)).toEqual(["before"]);
    // Its offset commit goes while the source reads on: landed before the broker dies.
    await waitUntil(async () => (await committedOffset(kafka.bootstrap, group, topic)) === 1, "the offset after before committed", 60_000, 50);
    const node = kafka.nodes[0];
    await node.peer.kill("SIGKILL");
    // Polled while the broker is down: nothing, and no crash.
    for (let i = 0; i < 5; i++) expect(await r.process()).toBe("BACKOFF");
    await node.restart();
    await consoleProduce(kafka, topic, ["after"]);
    const got = await pollUntil(r, channel, 1, [], 60_000);
    // "before" was committed: only what came after the restart.
    expect(got.map(bodyText)).toEqual(["after"]);
    expect(logger.lines.map((l) => l.message)).toContainEqual(expect.stringContaining("connected again"));
  },
  240_000,
);
