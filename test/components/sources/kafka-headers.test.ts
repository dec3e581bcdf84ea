/**
 * The Kafka source's header options against a live broker: the headers Flume 1.11's source sets
 * on each event (timestamp, topic, partition, offset, key), setTopicHeader, topicHeader,
 * timestampHeader, header.NAME, and which headers win when a FlumeEvent already has them. The
 * records are written by our Kafka sink; the source is built from its definition only. Each
 * event's headers are read the ways the pipeline reads them (readHeaders, JSON, a file channel
 * written to disk and opened again), not only through `headers`.
 */
import { expect } from "bun:test";
import { componentContext } from "../../../src/components/component.ts";
import { definition as sourceDefinition, type KafkaSource } from "../../../src/components/sources/kafka.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { bodyText, createEvent, type Event, readHeaders } from "../../../src/core/event.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { openChannel, takeSome } from "../../support/file-channel.ts";
import { tempDir, waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { cleanupsAfterEach, kafkaForFile, kafkaSink, kafkaSource, putEvents, takeEvents } from "../../support/kafka-tests.ts";

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
