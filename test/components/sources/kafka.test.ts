/**
 * The Kafka source (src/components/sources/kafka.ts) against a live Apache Kafka broker that
 * creates no topic on use, and against Kafka's own console producer and consumer.
 *
 * Its header options: the headers Flume 1.11's source sets on each event (timestamp, topic,
 * partition, offset, key), setTopicHeader, topicHeader, timestampHeader, header.NAME, and which
 * headers win when a FlumeEvent already has them. Those records are written by our Kafka sink;
 * the source is built from its definition only. Each event's headers are read the ways the
 * pipeline reads them (readHeaders, JSON, a file channel written to disk and opened again), not
 * only through `headers`.
 *
 * Then: a missing topic, records that are not FlumeEvents and the dead-letter topic, offsets
 * committed only after the channel committed (and while the next batches are read), the group's
 * rebalances, and the broker SIGKILLed and restarted under a running source.
 */
import { expect } from "bun:test";
import { componentContext } from "../../../src/components/component.ts";
import { definition as sourceDefinition, type KafkaSource, MOST_UNCOMMITTED } from "../../../src/components/sources/kafka.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { bodyText, createEvent, type Event, readHeaders } from "../../../src/core/event.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import type { KafkaPoller } from "../../../src/kafka/consumer.ts";
import type { KafkaPublisher } from "../../../src/kafka/producer.ts";
import { openChannel, takeSome } from "../../support/file-channel.ts";
import { tempDir, waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { consoleConsume, consoleProduce } from "../../support/kafka.ts";
import { cleanupsAfterEach, committedOffset, kafkaForFile, kafkaSink, kafkaSource, pollChannel, putEvents, takeEvents } from "../../support/kafka-tests.ts";

const kafka = kafkaForFile({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();
/** Writes the events to `topic` with our sink (its other settings in `props`), acknowledged by the broker. */
async function produce(topic: string, events: Event[], props: Record<string, string> = {}): Promise<void> {
  const { sink, channel } = kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topic": topic, "kafka.producer.acks": "all", ...props }, { cleanups, name: `k-${topic}` });
  await sink.start();
  await putEvents(channel, events);
  expect(await sink.process()).toBe("READY");
  await waitUntil(() => sink.counter.values.EventDrainSuccessCount === events.length, "the batch acknowledged", 60_000);
  await sink.stop();
}

let groupNo = 0;

function sourceProps(topic: string, props: Record<string, string>): Record<string, string> {
  return { "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topics": topic, "kafka.consumer.group.id": `g${++groupNo}`, "kafka.consumer.auto.offset.reset": "earliest", batchDurationMillis: "100", ...props };
}

/** Runs the source until `want` events are in its channel. */
async function pollUntil(r: KafkaSource, want: number, collect: () => Promise<Event[]>): Promise<Event[]> {
  const got: Event[] = [];
  await waitUntil(
    async () => {
      if ((await r.process()) === "BACKOFF") await new Promise((resolve) => setTimeout(resolve, 50));
      got.push(...(await collect()));
      return got.length >= want;
    },
    `${want} events from the source`,
    120_000,
    0,
  );
  return got;
}

/** Reads `want` events of `topic` with a source of `props`, through a memory channel. */
async function read(topic: string, want: number, props: Record<string, string> = {}): Promise<Event[]> {
  const { source, channel } = kafkaSource(sourceProps(topic, props), { cleanups, name: `r${groupNo}` });
  await source.start();
  return pollUntil(source, want, () => takeEvents(channel));
}

/**
 * Each event's headers as readHeaders and JSON give them, read BEFORE `headers` is touched (an
 * event whose headers are made on demand must not read as headerless there), and checked equal
 * to `headers`.
 */
function headersOf(events: Event[]): Record<string, string>[] {
  return events.map((e) => {
    const early = { ...readHeaders(e) };
    const json = (JSON.parse(JSON.stringify(e)) as { headers: Record<string, string> }).headers;
    expect(json).toEqual(early);
    expect({ ...e.headers }).toEqual(early);
    return early;
  });
}

const MILLIS = /^\d{13}$/;

needsJvm.test(
  "plain records: timestamp, topic, partition, offset and the key as headers and nothing more, alike in headers, readHeaders and JSON",
  async () => {
    const topic = await kafka.newTopic();
    await produce(topic, [createEvent("one", { key: "k1" }), createEvent("two"), createEvent("three", { key: "k3", other: "not sent" })]);
    const got = await read(topic, 3);
    expect(got.map(bodyText)).toEqual(["one", "two", "three"]);
    const h = headersOf(got);
    expect(h).toEqual([
      { timestamp: expect.stringMatching(MILLIS), topic, partition: "0", offset: "0", key: "k1" },
      { timestamp: expect.stringMatching(MILLIS), topic, partition: "0", offset: "1" },
      { timestamp: expect.stringMatching(MILLIS), topic, partition: "0", offset: "2", key: "k3" },
    ]);
  },
  240_000,
);

needsJvm.test(
  "timestampHeader holds the record's Kafka timestamp; setTopicHeader = false sets no topic header; a topicHeader puts the topic there instead of in topic",
  async () => {
    const topic = await kafka.newTopic();
    // The sink's timestampHeader makes the records' Kafka timestamps 1000, 2000.
    await produce(topic, [createEvent("a", { ts: "1000" }), createEvent("b", { ts: "2000" })], { timestampHeader: "ts" });

    const stamped = headersOf(await read(topic, 2, { timestampHeader: "kafkaTime", setTopicHeader: "false" }));
    expect(stamped).toEqual([
      { timestamp: "1000", kafkaTime: "1000", partition: "0", offset: "0" },
      { timestamp: "2000", kafkaTime: "2000", partition: "0", offset: "1" },
    ]);

    const renamed = headersOf(await read(topic, 2, { topicHeader: "from" }));
    expect(renamed).toEqual([
      { timestamp: "1000", from: topic, partition: "0", offset: "0" },
      { timestamp: "2000", from: topic, partition: "0", offset: "1" },
    ]);
  },
  240_000,
);

needsJvm.test(
  "header.NAME brings a record header into the event; record headers not named stay out",
  async () => {
    const topic = await kafka.newTopic();
    // The sink sends the event headers trace and color as the record headers trace and color.
    await produce(topic, [createEvent("x", { trace: "t-1", color: "red" }), createEvent("y", { color: "blue" })], { "header.trace": "trace", "header.color": "color" });
    // The same name on both sides of header.NAME, so the mapping reads alike either way round.
    const h = headersOf(await read(topic, 2, { "header.trace": "trace" }));
    expect(h[0]).toEqual({ timestamp: expect.stringMatching(/^\d+$/), topic, partition: "0", offset: "0", trace: "t-1" });
    expect(h[1]).toEqual({ timestamp: expect.stringMatching(/^\d+$/), topic, partition: "0", offset: "1" });
  },
  240_000,
);

needsJvm.test(
  "header.NAME = KAFKA_HEADER puts the record header KAFKA_HEADER in the event header NAME, as Flume 1.11's source (and as the sink's header.NAME, the other way)",
  async () => {
    const topic = await kafka.newTopic();
    // The sink sends the event header trace as the record header x-trace.
    await produce(topic, [createEvent("x", { trace: "t-1", color: "red" })], { "header.trace": "x-trace", "header.color": "color" });
    const [h] = headersOf(await read(topic, 1, { "header.traceId": "x-trace" }));
    expect(h).toEqual({ timestamp: expect.stringMatching(MILLIS), topic, partition: "0", offset: "0", traceId: "t-1" });
  },
  240_000,
);

needsJvm.test(
  "without a timestamp header in the event, timestamp is the record's Kafka timestamp, as Flume 1.11's source",
  async () => {
    const topic = await kafka.newTopic();
    // The sink's timestampHeader sets the records' Kafka timestamps.
    await produce(topic, [createEvent("a", { ts: "1000" }), createEvent("b", { ts: "1234567890123" })], { timestampHeader: "ts" });
    expect(headersOf(await read(topic, 2)).map((h) => h.timestamp)).toEqual(["1000", "1234567890123"]);
  },
  240_000,
);

needsJvm.test(
  "useFlumeEventFormat: a FlumeEvent's own timestamp, topic, partition and offset headers win over the record's (as Flume's source); its key is the record's key; every other header kept as sent",
  async () => {
    const topic = await kafka.newTopic();
    const own = { timestamp: "5", topic: "elsewhere", partition: "7", offset: "99", from: "its own", key: "own-key", text: "café ✓", empty: "" };
    // allowTopicOverride off: the event's topic header is data, not where it goes.
    await produce(topic, [createEvent("with own headers", own), createEvent("with none", { only: "this" })], { useFlumeEventFormat: "true", allowTopicOverride: "false" });

    const h = headersOf(await read(topic, 2, { useFlumeEventFormat: "true" }));
    expect(h[0]).toEqual(own);
    expect(h[1]).toEqual({ only: "this", timestamp: expect.stringMatching(MILLIS), topic, partition: "0", offset: "1" });

    // A topicHeader the event has is kept too, and the topic goes nowhere else.
    const other = headersOf(await read(topic, 2, { useFlumeEventFormat: "true", topicHeader: "from" }));
    expect(other[0]).toEqual(own);
    expect(other[1]).toEqual({ only: "this", timestamp: expect.stringMatching(MILLIS), from: topic, partition: "0", offset: "1" });
  },
  240_000,
);

needsJvm.test(
  "the headers the source sets are written to a file channel: the channel opened again gives every event its headers",
  async () => {
    const plain = await kafka.newTopic();
    const avro = await kafka.newTopic();
    await produce(plain, [createEvent("plain one", { key: "p1", trace: "t1", ts: "3000" }), createEvent("plain two", { ts: "4000" })], { "header.trace": "trace", timestampHeader: "ts" });
    await produce(avro, [createEvent("avro one", { a: "1", text: "café ✓" }), createEvent("avro two", { offset: "42" })], { useFlumeEventFormat: "true" });

    const dir = tempDir("flume-kafka-headers-fc-");
    cleanups.push(dir.cleanup);
    const { ch } = await openChannel(dir.dir);
    let open = true;
    cleanups.push(async () => {
      if (open) await ch.stop();
    });
    const logger = new MemoryLogger();
    // Both sources put into the one file channel, as an agent's sources would.
    for (const [topic, props] of [
      [plain, { "header.trace": "trace", timestampHeader: "kafkaTime" }],
      [avro, { useFlumeEventFormat: "true" }],
    ] as const) {
      const { options, errors } = sourceDefinition.parse(sourceProps(topic, props));
      expect(errors).toEqual([]);
      const source = sourceDefinition.create(options, componentContext(`r-${topic}`, { logger }));
      const processor = new ChannelProcessor(new ReplicatingChannelSelector([ch]));
      processor.initialize();
      source.setChannelProcessor(processor);
      let running = true;
      cleanups.push(async () => {
        if (running) await source.stop();
      });
      await source.start();
      // Counted by what the source accepted: takes would empty the channel this test reopens.
      await waitUntil(
        async () => {
          if ((await source.process()) === "BACKOFF") await new Promise((resolve) => setTimeout(resolve, 50));
          return source.counter.values.EventAcceptedCount >= 2;
        },
        `2 events of ${topic} in the file channel`,
        120_000,
        0,
      );
      running = false;
      await source.stop();
    }
    await ch.stop();
    open = false;

    // Opened again: the events come from the files on disk.
    const { ch: again } = await openChannel(dir.dir);
    cleanups.push(() => again.stop());
    const got = await takeSome(again, 10);
    const byBody = Object.fromEntries(got.map((e) => [bodyText(e), { ...e.headers }]));
    expect(Object.keys(byBody).sort()).toEqual(["avro one", "avro two", "plain one", "plain two"]);
    expect(byBody["plain one"]).toEqual({ timestamp: "3000", topic: plain, partition: "0", offset: "0", key: "p1", trace: "t1", kafkaTime: "3000" });
    expect(byBody["plain two"]).toEqual({ timestamp: "4000", topic: plain, partition: "0", offset: "1", kafkaTime: "4000" });
    expect(byBody["avro one"]).toEqual({ a: "1", text: "café ✓", timestamp: expect.stringMatching(MILLIS), topic: avro, partition: "0", offset: "0" });
    expect(byBody["avro two"]).toEqual({ offset: "42", timestamp: expect.stringMatching(MILLIS), topic: avro, partition: "0" });
  },
  240_000,
);

function sink(props: Record<string, string>, logger = new MemoryLogger()) {
  return kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, ...props }, { cleanups, logger });
}

function source(props: Record<string, string>, channel?: MemoryChannel, logger = new MemoryLogger(), name = "r1") {
  return kafkaSource({ "kafka.bootstrap.servers": kafka.bootstrap, batchDurationMillis: "100", "kafka.consumer.auto.offset.reset": "earliest", ...props }, { cleanups, channel, logger, name });
}

/** The source's consumer, reached into: its takes counted, its offset commits held at the broker's door until released or dropped. */
function holdCommits(r: KafkaSource) {
  const poller = (r as unknown as { poller: KafkaPoller }).poller;
  // What sends the poller's offset commits (the library's way or straight to the coordinator: commit-api.ts).
  const commits = (poller as unknown as { commits: { commit(offsets: { offset: bigint }[], generationId: number): Promise<void> } }).commits;
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
  commits.commit = (offsets, generationId) => {
    spy.asked.push(offsets.map((x) => Number(x.offset)));
    return new Promise<void>((resolve, reject) => held.push({ send: () => void commit(offsets, generationId).then(resolve, reject), drop: reject }));
  };
  return { poller, spy };
}

needsJvm.test(
  "an offset commit that failed goes again with the next one, a second later at the soonest: the group's offset reaches the last batch though no record comes after it",
  async () => {
    const topic = await kafka.newTopic();
    const all = Array.from({ length: 10 }, (_, i) => `m${i}`);
    await consoleProduce(kafka, topic, all);
    const group = `g-${topic}`;
    const logger = new MemoryLogger();
    const a = source({ "kafka.topics": topic, "kafka.consumer.group.id": group, batchSize: "10" }, undefined, logger);
    await a.source.start();
    const { poller, spy } = holdCommits(a.source);
    await waitUntil(() => poller.buffered >= 10, "the records fetched", 60_000, 10);
    expect(await a.source.process()).toBe("READY");
    expect((await takeEvents(a.channel)).map(bodyText)).toEqual(all);
    await waitUntil(() => spy.waiting === 1, "the batch's commit asked", 10_000, 10);
    // The coordinator gone: the commit fails, the consumer goes on.
    spy.drop();
    const warned = "committing the offsets of 10 events failed (connection lost); they go with the next commit, in 1000 ms at the soonest (until it lands, a restart or a rebalance reads them again)";
    await waitUntil(() => logger.lines.some((l) => l.level === "warn" && l.message.endsWith(warned)), "the failed commit logged", 10_000, 10);
    expect(spy.waiting).toBe(0);
    // Nothing else read: the offsets go again by themselves.
    await waitUntil(() => spy.waiting === 1, "the commit asked again", 10_000, 10);
    expect(spy.asked).toEqual([[10], [10]]);
    spy.release();
    await waitUntil(async () => (await committedOffset(kafka.bootstrap, group, topic)) === 10, "the group's offset after the last batch", 30_000, 100);
    await a.source.stop();
  },
  240_000,
);

needsJvm.test(
  "sink to broker to source with useFlumeEventFormat keeps every header, the key and the mapped Kafka headers",
  async () => {
    const topic = await kafka.newTopic();
    const { sink: k, channel } = sink({ "kafka.topic": topic, useFlumeEventFormat: "true", "header.trace": "x-trace", "kafka.producer.acks": "all" });
    await k.start();
    const sent = Array.from({ length: 50 }, (_, i) => createEvent(`event ${i}`, { seq: String(i), key: `k${i % 3}`, trace: `tr${i}` }));
    await putEvents(channel, sent);
    expect(await k.process()).toBe("READY");
    // The take commits once the broker acknowledged the batch (process() returns once it is sent).
    await waitUntil(() => k.counter.values.EventDrainSuccessCount === 50, "the batch acknowledged", 30_000);
    // Flume's KafkaSinkCounter names.
    expect(Object.keys(k.counter.snapshot())).toEqual(expect.arrayContaining(["KafkaEventSendTimer", "RollbackCount", "EventDrainSuccessCount"]));
    expect(channel.counter.values.ChannelSize).toBe(0);

    const { source: r, channel: out } = source({ "kafka.topics": topic, useFlumeEventFormat: "true", "header.traceCopy": "x-trace", "kafka.consumer.group.id": `g-${topic}` });
    await r.start();
    const got = await pollChannel(r, out, 50);
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
    const got = await pollChannel(r, channel, 3);
    expect(got.map(bodyText)).toEqual(["line one", "line two", "line three"]);
    expect(got.map((e) => e.headers.key)).toEqual(["a", "b", "c"]);
    expect(got.map((e) => e.headers.offset)).toEqual(["0", "1", "2"]);
  },
  240_000,
);

needsJvm.test(
  "KafkaEmptyCount counts, as Flume 1.11's source, every batch whose time ran out on a poll that found nothing, a partly filled one included",
  async () => {
    const topic = await kafka.newTopic();
    await produce(topic, [createEvent("a"), createEvent("b"), createEvent("c")]);
    const { source: r, channel } = source({ "kafka.topics": topic, "kafka.consumer.group.id": `g-${topic}`, batchSize: "10" });
    await r.start();
    const got: Event[] = [];
    let calls = 0;
    await waitUntil(
      async () => {
        calls++;
        await r.process();
        await takeEvents(channel, got);
        return got.length >= 3;
      },
      "the three records read",
      60_000,
      0,
    );
    // Never 10 records to fill a batch: each call ended on an empty poll, the ones that read records too.
    expect(r.counter.values.KafkaEmptyCount).toBe(calls);
    expect(await r.process()).toBe("BACKOFF");
    expect(r.counter.values.KafkaEmptyCount).toBe(calls + 1);
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
    await putEvents(sinkChannel, [createEvent("good one", { h: "v" }), createEvent("good two", { h: "w" })]);
    expect(await k.process()).toBe("READY");
    const logger = new MemoryLogger();
    const { source: r, channel } = source({ "kafka.topics": topic, useFlumeEventFormat: "true", "kafka.deadLetterTopic": dlq, "kafka.consumer.group.id": `g-${topic}` }, undefined, logger);
    await r.start();
    const got = await pollChannel(r, channel, 2);
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
    await putEvents(sinkChannel, [createEvent("good one"), createEvent("good two")]);
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
    expect((await pollChannel(next, out, 2)).map(bodyText)).toEqual(["good one", "good two"]);
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
    await expect(r.start()).rejects.toThrow(/kafka source r1: the dead-letter topic no-such-dead-letters \(kafka\.deadLetterTopic\) cannot be written: topic no-such-dead-letters does not exist on /);
  },
  240_000,
);

needsJvm.test(
  "a start that fails after the dead-letter producer connected (the topic read does not exist) closes that producer: a source not started is never stopped",
  async () => {
    const dlq = await kafka.newTopic();
    const { source: r } = source({ "kafka.topics": "no-such-topic-read", useFlumeEventFormat: "true", "kafka.deadLetterTopic": dlq });
    await expect(r.start()).rejects.toThrow(/kafka source r1: topic no-such-topic-read does not exist/);
    const publisher = (r as unknown as { deadLetters: { publisher: KafkaPublisher } }).deadLetters.publisher;
    expect(publisher.connected).toBe(false);
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
    await putEvents(sinkChannel, [createEvent("good one"), createEvent("good two")]);
    expect(await k.process()).toBe("READY");
    // Room for two events, one taken already: the batch of two is refused until it is drained.
    const small = new MemoryChannel("small", { capacity: 2, transactionCapacity: 2, keepAlive: 0 });
    await putEvents(small, [createEvent("already there")]);
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
    const got = await pollChannel(second.source, second.channel, 3);
    expect(got.map(bodyText)).toEqual(["one", "two", "three"]);
    await second.source.stop();
    // And once committed, a third member reads nothing of them again.
    await consoleProduce(kafka, topic, ["four"]);
    const third = source({ "kafka.topics": topic, "kafka.consumer.group.id": group }, undefined, undefined, "r3");
    await third.source.start();
    expect((await pollChannel(third.source, third.channel, 1)).map(bodyText)).toEqual(["four"]);
  },
  240_000,
);

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
    await waitUntil(() => logger.lines.some((l) => l.level === "warn" && l.message.endsWith("committing the offsets of 30 events failed (connection lost); the consumer started again from the group's committed offsets: they are read again")), "the failed commit logged", 10_000, 10);

    // The next member of the group reads those four batches again, nothing of the first, and the rest.
    const b = source(props, undefined, undefined, "r2");
    await b.source.start();
    const got = await pollChannel(b.source, b.channel, 50);
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
    const got = await pollChannel(b.source, b.channel, 20);
    expect(got.map(bodyText)).toEqual(all.slice(10));
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
    await pollChannel(a.source, a.channel, 500, got);
    // B joins: the group rebalances while A keeps polling.
    const b = source(props, undefined, undefined, "rb");
    const joining = b.source.start();
    const gotB: Event[] = [];
    await pollChannel(a.source, a.channel, 1000, got, 20_000);
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
    expect((await pollChannel(r, channel, 1)).map(bodyText)).toEqual(["before"]);
    // Its offset commit goes while the source reads on: landed before the broker dies.
    await waitUntil(async () => (await committedOffset(kafka.bootstrap, group, topic)) === 1, "the offset after before committed", 60_000, 50);
    const node = kafka.nodes[0];
    await node.peer.kill("SIGKILL");
    // Polled while the broker is down: nothing, and no crash.
    for (let i = 0; i < 5; i++) expect(await r.process()).toBe("BACKOFF");
    await node.restart();
    await consoleProduce(kafka, topic, ["after"]);
    const got = await pollChannel(r, channel, 1, [], 60_000);
    // "before" was committed: only what came after the restart.
    expect(got.map(bodyText)).toEqual(["after"]);
    expect(logger.lines.map((l) => l.message)).toContainEqual(expect.stringContaining("connected again"));
  },
  240_000,
);
