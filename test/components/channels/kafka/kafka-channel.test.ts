/**
 * The Kafka channel (src/components/channels/kafka/kafka-channel.ts). How much its consumer holds
 * ahead of the takes: fetches of at most 128 kB, lower when the consumer settings say so, and
 * one transaction's worth of records. Then against a live Apache Kafka broker that creates no
 * topic on use: puts visible once committed, rollbacks and crashes, partitions and keys, records
 * over max.request.size, records that are not FlumeEvents and the dead-letter topic. Its put and
 * take semantics are also the conformance suite's (test/components/channels/conformance.test.ts)
 * and the Flume wire tests' (test/e2e/kafka-flume.test.ts).
 */
import { expect, test } from "bun:test";
import { CHANNEL_FETCH_BYTES, channelFetches, readAhead } from "../../../../src/components/channels/kafka/kafka-channel.ts";
import { componentContext } from "../../../../src/components/component.ts";
import { NullSink } from "../../../../src/components/sinks/null.ts";
import type { KafkaChannel } from "../../../../src/components/channels/kafka/index.ts";
import { bodyText, createEvent, type Event, readHeaders } from "../../../../src/core/event.ts";
import { MemoryLogger } from "../../../../src/core/logger.ts";
import { encodeFlumeEvent } from "../../../../src/kafka/flume-event.ts";
import type { KafkaPoller } from "../../../../src/kafka/consumer.ts";
import { KafkaPublisher } from "../../../../src/kafka/producer.ts";
import { consumerSettings, producerSettings } from "../../../../src/kafka/settings.ts";
import { waitUntil } from "../../../support/helpers.ts";
import { needsJvm } from "../../../support/jvm.ts";
import { consoleConsume, consoleProduce } from "../../../support/kafka.ts";
import { cleanupsAfterEach, committedOffset, kafkaChannel, kafkaForFile, largeBodies, putEvents as put, takeOpenAll } from "../../../support/kafka-tests.ts";
import { takeOpen } from "../../../support/core.ts";

const kafka = kafkaForFile({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();

const base = { bootstrap: "b1:9092", bootstrapKey: "kafka.bootstrap.servers", clientId: "flume", label: "kafka channel c1", groupId: "flume", defaultOffsetReset: "earliest" as const };

test("the channel's fetches ask for 128 kB at most: Kafka's defaults (50 MB, 1 MB a partition) are lowered, smaller settings kept", () => {
  expect(CHANNEL_FETCH_BYTES).toBe(128 * 1024);
  const defaults = channelFetches(consumerSettings({ ...base, logger: new MemoryLogger(), props: {} }));
  expect([defaults.maxBytes, defaults.maxBytesPerPartition]).toEqual([131072, 131072]);
  const small = channelFetches(consumerSettings({ ...base, logger: new MemoryLogger(), props: { "fetch.max.bytes": "100000", "max.partition.fetch.bytes": "65536" } }));
  expect([small.maxBytes, small.maxBytesPerPartition]).toEqual([100000, 65536]);
  // Everything else is the consumer's as configured.
  const s = consumerSettings({ ...base, logger: new MemoryLogger(), props: { "fetch.max.wait.ms": "20", "session.timeout.ms": "10000" } });
  expect({ ...channelFetches(s), maxBytes: s.maxBytes, maxBytesPerPartition: s.maxBytesPerPartition }).toEqual(s);
});

test("the channel fetches one transaction's worth of records ahead, at least 1000", () => {
  expect(readAhead(100)).toBe(1000);
  expect(readAhead(1000)).toBe(1000);
  expect(readAhead(5000)).toBe(5000);
});

function channel(props: Record<string, string>, name = "kc", logger?: MemoryLogger): KafkaChannel {
  return kafkaChannel({ "kafka.bootstrap.servers": kafka.bootstrap, ...props }, { cleanups, name, logger });
}

async function takeUntil(c: KafkaChannel, want: number, commit = true, ms = 60_000): Promise<Event[]> {
  const deadline = Date.now() + ms;
  await waitUntil(() => c.connected, "channel connected", ms);
  for (;;) {
    const { tx, events: out } = takeOpen(c, want);
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

/**
 * For the rebalance tests: a topic of two partitions, its group's props (sessions short enough
 * for quick rebalances; partitionIdHeader "p" puts into each partition), and a started member
 * kc1 that put p0-0, p0-1, p1-0 and p1-1.
 */
async function twoPartitionsPut() {
  const topic = await kafka.newTopic({ partitions: 2 });
  const group = `g-${topic}`;
  const props = { "kafka.topic": topic, "kafka.consumer.group.id": group, partitionIdHeader: "p", "kafka.consumer.session.timeout.ms": "6000", "kafka.consumer.heartbeat.interval.ms": "500" };
  const c1 = channel(props, "kc1");
  await c1.start();
  await put(c1, [createEvent("p0-0", { p: "0" }), createEvent("p0-1", { p: "0" }), createEvent("p1-0", { p: "1" }), createEvent("p1-1", { p: "1" })]);
  return { topic, group, props, c1 };
}

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
  "records that are no FlumeEvent do not count against transactionCapacity: a sink whose batch is the capacity takes every event after them, and the group's offset passes them",
  async () => {
    const topic = await kafka.newTopic();
    const group = `g-${topic}`;
    await consoleProduce(kafka, topic, ["garbage 0", "garbage 1", "garbage 2"]);
    const logger = new MemoryLogger();
    const c = channel({ "kafka.topic": topic, "kafka.consumer.group.id": group, transactionCapacity: "5" }, "kc", logger);
    await c.start();
    await put(c, Array.from({ length: 5 }, (_, i) => createEvent(`good ${i}`)));
    await waitUntil(() => c.counter.values.ChannelSize >= 8, "the 8 records fetched", 60_000);
    const sink = new NullSink(componentContext("k1", { logger }), 5);
    sink.setChannel(c);
    expect(await sink.process()).toBe("READY");
    expect(sink.eventCount).toBe(5);
    expect(c.counter.values.EventTakeSuccessCount).toBe(5);
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(8);
    // Logged and counted as before: once each.
    expect(c.counter.values.EventReadFail).toBe(3);
    const skipped = logger.lines.filter((l) => l.message.includes("skipped a record that is not an Avro FlumeEvent")).map((l) => l.message.replace(/.* offset (\d+) .*/, "$1"));
    expect(skipped).toEqual(["0", "1", "2"]);
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
  "the channel with a kafka.producer.compression.type (lz4) still writes FlumeEvents: a take gets each event's body and headers",
  async () => {
    const topic = await kafka.newTopic();
    const c = channel({ "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}`, "kafka.producer.compression.type": "lz4" });
    await c.start();
    const events = Array.from({ length: 20 }, (_, i) => createEvent(`lz4 ${i}`, { host: `web-${i % 3}`, seq: String(i) }));
    await put(c, events);
    const taken = await takeUntil(c, events.length);
    expect(taken.map(bodyText)).toEqual(events.map(bodyText));
    expect(taken.map((e) => [e.headers.host, e.headers.seq])).toEqual(events.map((e) => [e.headers.host, e.headers.seq]));
    expect(c.counter.values.EventReadFail).toBe(0);
  },
  240_000,
);

needsJvm.test(
  "takes rolled back before a rebalance do not stop the group's offset: a partition that moved to another member, which committed it, and came back commits every take again",
  async () => {
    const { topic, group, props, c1 } = await twoPartitionsPut();
    // Taken and rolled back: held by c1, waiting in its consumer's buffer.
    expect((await takeUntil(c1, 4, false)).map(bodyText).sort()).toEqual(["p0-0", "p0-1", "p1-0", "p1-1"]);
    // A second member joins: each gets one partition; c2 takes and commits what its partition holds.
    const c2 = channel(props, "kc2");
    await c2.start();
    const moved = await takeUntil(c2, 2);
    const p = moved[0].headers.p;
    expect(moved.map(bodyText)).toEqual([`p${p}-0`, `p${p}-1`]);
    expect(await committedOffset(kafka.bootstrap, group, topic, Number(p))).toBe(2);
    // c2 leaves: the partition comes back to c1, from the offset c2 committed.
    await c2.stop();
    await put(c1, [createEvent(`p${p}-2`, { p }), createEvent(`p${p}-3`, { p })]);
    const other = p === "0" ? "1" : "0";
    const taken = await takeUntil(c1, 4);
    expect(taken.map(bodyText).sort()).toEqual([`p${other}-0`, `p${other}-1`, `p${p}-2`, `p${p}-3`].sort());
    // Both partitions' offsets moved past every take, and nothing is left for a restart to deliver again.
    expect(await committedOffset(kafka.bootstrap, group, topic, Number(p))).toBe(4);
    expect(await committedOffset(kafka.bootstrap, group, topic, Number(other))).toBe(2);
    expect(c1.repeatable()).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "a take open while the group rebalances and rolled back after it is not given back: each record is delivered by the partition's owner, once, from the committed offsets",
  async () => {
    const { topic, group, props, c1 } = await twoPartitionsPut();
    // A take of all four, left open across the rebalance.
    await waitUntil(() => c1.connected, "channel connected", 60_000);
    const open = c1.getTransaction();
    open.begin();
    const held: Event[] = [];
    await waitUntil(() => {
      for (let e = open.take(); e; e = open.take()) held.push(e);
      return held.length === 4;
    }, "the four records taken", 60_000, 50);
    // A second member joins: each gets one partition and reads it from the committed offset (0).
    const c2 = channel(props, "kc2");
    await c2.start();
    const moved = await takeUntil(c2, 2);
    const p = moved[0].headers.p;
    const other = p === "0" ? "1" : "0";
    expect(moved.map(bodyText)).toEqual([`p${p}-0`, `p${p}-1`]);
    // c1 fetches its own partition again and takes it in another transaction.
    expect((await takeUntil(c1, 2)).map(bodyText)).toEqual([`p${other}-0`, `p${other}-1`]);
    // The open take rolls back now: its records were fetched again by their owners, so none comes back to c1.
    await open.rollback();
    open.close();
    expect(await takeUntil(c1, 1, true, 3000)).toEqual([]);
    expect(await committedOffset(kafka.bootstrap, group, topic, Number(p))).toBe(2);
    expect(await committedOffset(kafka.bootstrap, group, topic, Number(other))).toBe(2);
    expect(c1.repeatable()).toEqual([]);
  },
  240_000,
);

/** Takes `n` events in one transaction, waiting for them, and commits it: their bodies. */
async function takeAndCommit(c: KafkaChannel, n: number): Promise<string[]> {
  const { tx, events } = await takeOpenAll(c, n);
  await tx.commit();
  tx.close();
  return events.map(bodyText);
}

/** Rolls an open take back. */
async function rollBack(open: { tx: { rollback(): Promise<void>; close(): void } }): Promise<void> {
  await open.tx.rollback();
  open.tx.close();
}

/**
 * For the tests of takes across a rebalance that kc1 keeps its partition through: kc1 on a topic
 * of one partition, 200 events of 400 bytes put (one fetch response, which the channel frees
 * itself once no take needs it), taken in two transactions: the first left open, the second
 * committed above it (the group's offset stays at none: the open take holds it).
 */
async function twoTakesAcrossARebalance() {
  const topic = await kafka.newTopic();
  const group = `g-${topic}`;
  const props = { "kafka.topic": topic, "kafka.consumer.group.id": group, "kafka.consumer.session.timeout.ms": "6000", "kafka.consumer.heartbeat.interval.ms": "500" };
  const c1 = channel(props, "kc1");
  await c1.start();
  await waitUntil(() => c1.connected, "channel connected", 60_000);
  await put(c1, largeBodies(200, 0).map((b) => createEvent(b)));
  const open = await takeOpenAll(c1, 100);
  expect(open.events.map(bodyText)).toEqual(largeBodies(100, 0));
  expect(await takeAndCommit(c1, 100)).toEqual(largeBodies(100, 100));
  expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(-1);
  expect(c1.counter.values.ChannelSize).toBe(0);
  // A member of the group for another topic joins: the group rebalances, kc1 keeps its partition
  // and fetches it again from the committed offset (ChannelSize counts the 200 records come again).
  const c2 = channel({ ...props, "kafka.topic": await kafka.newTopic() }, "kc2");
  await c2.start();
  await waitUntil(() => c1.counter.values.ChannelSize === 200, "kc1 fetched its partition again after the rebalance", 60_000);
  return { topic, group, props, c1, open };
}

needsJvm.test(
  "after a rebalance, a take moves the group's offset only past what it took: takes committed above an open one before it come again, and a restart delivers every record not committed since",
  async () => {
    const { topic, group, props, c1, open } = await twoTakesAcrossARebalance();
    await rollBack(open);
    expect(await takeAndCommit(c1, 50)).toEqual(largeBodies(50, 0));
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(50);
    // The records past the offset are the group's still: a member reading after kc1 stopped gets them all.
    await c1.stop();
    const c3 = channel(props, "kc3");
    await c3.start();
    expect((await takeUntil(c3, 150)).map(bodyText)).toEqual(largeBodies(150, 50));
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(200);
  },
  240_000,
);

needsJvm.test(
  "after a rebalance, records taken again while a take from before it is open are held by the new take alone: the old take's rollback lets no commit pass them, and their response stays readable until they are taken",
  async () => {
    const { topic, group, c1, open } = await twoTakesAcrossARebalance();
    // The same records, fetched again, taken while the take from before the rebalance is open.
    const again = await takeOpenAll(c1, 100);
    expect(again.events.map(bodyText)).toEqual(largeBodies(100, 0));
    await rollBack(open);
    expect(await takeAndCommit(c1, 100)).toEqual(largeBodies(100, 100));
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(-1);
    // A later response taken from and committed: the one the open take's records are in is not freed under them.
    await put(c1, largeBodies(100, 200).map((b) => createEvent(b)));
    expect(await takeAndCommit(c1, 100)).toEqual(largeBodies(100, 200));
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(-1);
    await rollBack(again);
    expect(await takeAndCommit(c1, 100)).toEqual(largeBodies(100, 0));
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(300);
    expect(c1.repeatable()).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "a record that is no FlumeEvent is logged once however often its take rolls back, and once more by the member reading it after a rebalance (what was seen before is forgotten with the dropped records)",
  async () => {
    const topic = await kafka.newTopic();
    const group = `g-${topic}`;
    await consoleProduce(kafka, topic, ["garbage"]);
    const props = { "kafka.topic": topic, "kafka.consumer.group.id": group, "kafka.consumer.session.timeout.ms": "6000", "kafka.consumer.heartbeat.interval.ms": "500" };
    const logger = new MemoryLogger();
    const c1 = channel(props, "kc1", logger);
    await c1.start();
    await put(c1, [createEvent("good")]);
    const skips = () => logger.lines.filter((l) => l.message.includes(`kafka channel kc1: skipped a record that is not an Avro FlumeEvent at topic ${topic} partition 0 offset 0 `)).length;
    for (let i = 0; i < 3; i++) expect((await takeUntil(c1, 1, false)).map(bodyText)).toEqual(["good"]);
    expect(skips()).toBe(1);
    // A second member joins and leaves without taking: c1's consumer drops its buffer at each rebalance and fetches again.
    const generation = () => (c1 as unknown as { poller: KafkaPoller }).poller.generation;
    const before = generation();
    const c2 = channel(props, "kc2");
    await c2.start();
    await waitUntil(() => logger.lines.some((l) => l.message.startsWith(`kafka channel kc1: consumer group ${group} rebalanced`)), "c1 rebalanced", 60_000);
    await c2.stop();
    // Taken before c1 heard of the second rebalance, the take's offset commit would be refused (a take of the generation that ended).
    await waitUntil(() => generation() >= before + 2, "c1 rebalanced again", 60_000);
    expect((await takeUntil(c1, 1)).map(bodyText)).toEqual(["good"]);
    expect(skips()).toBe(2);
    // Counted once, when its offset was committed with the take.
    expect(c1.counter.values.EventReadFail).toBe(1);
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(2);
  },
  240_000,
);

needsJvm.test(
  "a taken event has its record's key as the key header, as Flume's channel: over a FlumeEvent's own, on a plain body alone; a record without a key gives none",
  async () => {
    const flumeTopic = await kafka.newTopic();
    const plainTopic = await kafka.newTopic();
    const logger = new MemoryLogger();
    const publisher = new KafkaPublisher("keys", producerSettings({ bootstrap: kafka.bootstrap, bootstrapKey: "kafka.bootstrap.servers", clientId: "keys", label: "keys", logger, props: {}, defaultAcks: "all" }), logger);
    try {
      await publisher.send([
        { topic: flumeTopic, key: Buffer.from("k1"), value: encodeFlumeEvent(createEvent("keyed", { n: "1" })) },
        { topic: flumeTopic, key: Buffer.from("k2"), value: encodeFlumeEvent(createEvent("own key", { key: "own", n: "2" })) },
        { topic: flumeTopic, value: encodeFlumeEvent(createEvent("no key", { n: "3" })) },
        { topic: plainTopic, key: Buffer.from("k4"), value: Buffer.from("plain keyed") },
        { topic: plainTopic, key: Buffer.alloc(0), value: Buffer.from("plain empty key") },
        { topic: plainTopic, value: Buffer.from("plain no key") },
      ]);
    } finally {
      await publisher.close();
    }
    const flume = channel({ "kafka.topic": flumeTopic, "kafka.consumer.group.id": `g-${flumeTopic}` }, "kc1");
    await flume.start();
    const events = await takeUntil(flume, 3);
    expect(events.map((e) => [bodyText(e), { ...readHeaders(e) }])).toEqual([
      ["keyed", { n: "1", key: "k1" }],
      ["own key", { n: "2", key: "k2" }],
      ["no key", { n: "3" }],
    ]);
    const plain = channel({ "kafka.topic": plainTopic, "kafka.consumer.group.id": `g-${plainTopic}`, parseAsFlumeEvent: "false" }, "kc2");
    await plain.start();
    const bodies = await takeUntil(plain, 3);
    expect(bodies.map((e) => [bodyText(e), { ...readHeaders(e) }])).toEqual([
      ["plain keyed", { key: "k4" }],
      ["plain empty key", { key: "" }],
      ["plain no key", {}],
    ]);
  },
  240_000,
);

needsJvm.test(
  "the channel's counters as Flume's: RollbackCount adds the events of each rolled-back take and nothing for a put's; KafkaEventGetTimer adds how long each fetch that brought records took",
  async () => {
    const topic = await kafka.newTopic();
    // Fetches never reach fetch.min.bytes: the broker answers each at kafka.pollTimeout (its fetch.max.wait.ms).
    const c = channel({ "kafka.topic": topic, "kafka.consumer.group.id": `g-${topic}`, "kafka.pollTimeout": "300", "kafka.consumer.fetch.min.bytes": "1000000" });
    await c.start();
    const putBack = c.getTransaction();
    putBack.begin();
    putBack.put(createEvent("never sent"));
    await putBack.rollback();
    putBack.close();
    expect(c.counter.values.RollbackCount).toBe(0);
    // No record fetched yet: nothing timed.
    expect(c.counter.values.KafkaEventGetTimer).toBe(0);
    await put(c, [createEvent("e0"), createEvent("e1"), createEvent("e2")]);
    await waitUntil(() => c.counter.values.ChannelSize >= 3, "the 3 records fetched", 60_000);
    expect(c.counter.values.KafkaEventGetTimer).toBeGreaterThanOrEqual(300);
    const tx = c.getTransaction();
    tx.begin();
    expect([tx.take(), tx.take()].map((e) => e && bodyText(e))).toEqual(["e0", "e1"]);
    await tx.rollback();
    tx.close();
    expect(c.counter.values.RollbackCount).toBe(2);
    expect((await takeUntil(c, 3)).map(bodyText)).toEqual(["e0", "e1", "e2"]);
    expect(c.counter.values.RollbackCount).toBe(2);
    expect(c.counter.values.EventTakeSuccessCount).toBe(3);
  },
  240_000,
);
