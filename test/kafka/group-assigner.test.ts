/**
 * The group leader's partition assignment (src/kafka/group-assigner.ts): Kafka's RangeAssignor,
 * each partition to exactly one member subscribed to its topic. First on member and topic mixes,
 * then against a live broker: Kafka sources and channels on different topics in one group (Flume's
 * default group "flume") each get their own topic's records, two sources on one topic share it,
 * and Flume's own (Java) Kafka source shares a group with ours, either leading it.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { KafkaChannel } from "../../src/components/channels/kafka/index.ts";
import type { KafkaSource } from "../../src/components/sources/kafka.ts";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import type { MemoryChannel } from "../../src/core/memory-channel.ts";
import { type PartitionCounts, rangeAssigner, rangeAssignment, type Subscriptions } from "../../src/kafka/group-assigner.ts";
import { tempDirFor, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { uniqueName } from "../support/kafka.ts";
import { cleanupsAfterEach, committedOffset, kafkaChannel, kafkaForFile, kafkaSink, kafkaSource, putEvents, startFlumeWithKafka, takeEvents } from "../support/kafka-tests.ts";

function members(spec: Record<string, string[] | undefined>): Subscriptions {
  return new Map(Object.entries(spec).map(([id, topics]) => [id, { topics }]));
}

function counts(spec: Record<string, number>): PartitionCounts {
  return new Map(Object.entries(spec).map(([topic, n]) => [topic, { partitionsCount: n }]));
}

/** Member -> "topic:partition" list, for readable expectations. */
function flat(assignment: Map<string, Map<string, number[]>>): Record<string, string[]> {
  return Object.fromEntries([...assignment].map(([m, byTopic]) => [m, [...byTopic].flatMap(([t, ps]) => ps.map((p) => `${t}:${p}`)).sort()]));
}

/** Every partition of every known topic somebody subscribed to is assigned exactly once, to a subscriber. */
function expectExactlyOnceToSubscribers(subs: Subscriptions, topics: PartitionCounts, assignment: Map<string, Map<string, number[]>>): void {
  expect([...assignment.keys()].sort()).toEqual([...subs.keys()].sort());
  const owner = new Map<string, string>();
  for (const [member, byTopic] of assignment) {
    for (const [topic, partitions] of byTopic) {
      expect(subs.get(member)?.topics ?? []).toContain(topic);
      for (const p of partitions) {
        const key = `${topic}:${p}`;
        expect(owner.get(key)).toBeUndefined();
        owner.set(key, member);
      }
    }
  }
  const wanted = new Set<string>();
  for (const s of subs.values()) for (const t of s.topics ?? []) for (let p = 0; p < (topics.get(t)?.partitionsCount ?? 0); p++) wanted.add(`${t}:${p}`);
  expect([...owner.keys()].sort()).toEqual([...wanted].sort());
}

describe("range assignment", () => {
  test("members on disjoint topics get only their own topic's partitions, all of them", () => {
    const subs = members({ source: ["logs"], channel: ["channel-topic"] });
    const topics = counts({ logs: 3, "channel-topic": 2, unrelated: 5 });
    const got = rangeAssignment(subs, topics);
    expect(flat(got)).toEqual({ source: ["logs:0", "logs:1", "logs:2"], channel: ["channel-topic:0", "channel-topic:1"] });
    expectExactlyOnceToSubscribers(subs, topics, got);
  });

  test("as Kafka's RangeAssignor: two members on two 3-partition topics, the first member takes the extra partition of each", () => {
    const subs = members({ c1: ["t1", "t0"], c0: ["t0", "t1"] });
    const topics = counts({ t0: 3, t1: 3 });
    expect(flat(rangeAssignment(subs, topics))).toEqual({ c0: ["t0:0", "t0:1", "t1:0", "t1:1"], c1: ["t0:2", "t1:2"] });
  });

  test("overlapping subscriptions: each topic's partitions in ranges over its own subscribers only", () => {
    const subs = members({ m1: ["a", "b"], m2: ["b", "c"], m3: ["a"] });
    const topics = counts({ a: 5, b: 4, c: 1 });
    const got = rangeAssignment(subs, topics);
    expect(flat(got)).toEqual({ m1: ["a:0", "a:1", "a:2", "b:0", "b:1"], m2: ["b:2", "b:3", "c:0"], m3: ["a:3", "a:4"] });
    expectExactlyOnceToSubscribers(subs, topics, got);
  });

  test("more members than partitions: the first members by id get one each, the others none", () => {
    const subs = members({ e: ["t"], b: ["t"], d: ["t"], a: ["t"], c: ["t"] });
    const topics = counts({ t: 2 });
    const got = rangeAssignment(subs, topics);
    expect(flat(got)).toEqual({ a: ["t:0"], b: ["t:1"], c: [], d: [], e: [] });
    expectExactlyOnceToSubscribers(subs, topics, got);
  });

  test("a member subscribed to nothing the metadata knows (or to nothing) gets nothing, the others are unaffected", () => {
    const subs = members({ ghost: ["no-such-topic"], none: [], missing: undefined, real: ["t", "no-such-topic"] });
    const topics = counts({ t: 2 });
    const got = rangeAssignment(subs, topics);
    expect(flat(got)).toEqual({ ghost: [], none: [], missing: [], real: ["t:0", "t:1"] });
    expectExactlyOnceToSubscribers(subs, topics, got);
  });

  test("the same members in another order give the same assignment", () => {
    const a = rangeAssignment(members({ x: ["p", "q"], y: ["q"], z: ["p", "q"] }), counts({ p: 7, q: 3 }));
    const b = rangeAssignment(members({ z: ["q", "p"], x: ["q", "p"], y: ["q"] }), counts({ p: 7, q: 3 }));
    expect(flat(b)).toEqual(flat(a));
  });

  test("random mixes of members, topics and partition counts: every partition once, to a subscriber, loads within one per topic", () => {
    let seed = 12345;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 300; round++) {
      const topicNames = Array.from({ length: 1 + next(5) }, (_, i) => `t${i}`);
      const known = counts(Object.fromEntries(topicNames.filter(() => next(6) > 0).map((t) => [t, next(9)])));
      const subs = members(Object.fromEntries(Array.from({ length: 1 + next(7) }, (_, i) => [`member-${next(1000)}-${i}`, topicNames.filter(() => next(2) === 0)])));
      const got = rangeAssignment(subs, known);
      expectExactlyOnceToSubscribers(subs, known, got);
      for (const t of topicNames) {
        const loads = [...subs].filter(([, s]) => s.topics?.includes(t)).map(([m]) => got.get(m)!.get(t)?.length ?? 0);
        if (loads.length > 0) expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(1);
      }
    }
  });

  test("the client's form: one entry per member with {topic, partitions}, the leader's own topics ignored", () => {
    const subs = new Map([
      ["leader", { memberId: "leader", version: 1, topics: ["a"] }],
      ["other", { memberId: "other", version: 1, topics: ["b"] }],
    ]);
    const topic = (n: number) => ({ id: "", partitions: [], partitionsCount: n, lastUpdate: 0 });
    const metadata = { id: "c", brokers: new Map(), controllerId: 1, lastUpdate: 0, topics: new Map([["a", topic(2)], ["b", topic(1)]]) };
    const out = rangeAssigner("leader", subs, new Set(["a"]), metadata);
    expect(out.map((m) => [m.memberId, [...m.assignments.values()]])).toEqual([
      ["leader", [{ topic: "a", partitions: [0, 1] }]],
      ["other", [{ topic: "b", partitions: [0] }]],
    ]);
  });
});

// Against a live broker: the components as an agent builds them.
const kafka = kafkaForFile({ autoCreateTopics: false, withFlumeKafka: true });
const cleanups = cleanupsAfterEach();
/** Writes events through our Kafka sink, each to its topic (the topic header) and partition (partitionIdHeader) when given. */
async function produce(events: { body: string; topic: string; partition?: number }[]): Promise<void> {
  const { sink, channel } = kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topic": events[0].topic, partitionIdHeader: "p", "kafka.producer.acks": "all" }, { cleanups, name: uniqueName("k") });
  await sink.start();
  await putEvents(channel, events.map((e) => createEvent(e.body, { topic: e.topic, ...(e.partition === undefined ? {} : { p: String(e.partition) }) })));
  // A batch of flumeBatchSize (100) at a time.
  for (let sent = 0; sent < events.length; sent += 100) expect(await sink.process()).toBe("READY");
  await waitUntil(() => sink.counter.values.EventDrainSuccessCount === events.length, "the sink's batches acknowledged", 60_000);
}

function source(name: string, props: Record<string, string>): { source: KafkaSource; channel: MemoryChannel } {
  return kafkaSource({ "kafka.bootstrap.servers": kafka.bootstrap, batchDurationMillis: "100", "kafka.consumer.auto.offset.reset": "earliest", ...props }, { cleanups, name });
}

/** Runs the sources' process() in turn until every one holds `want[i]` events (or the bound passes). */
async function pollAll(sources: { source: KafkaSource; channel: MemoryChannel }[], want: number[], ms = 60_000): Promise<Event[][]> {
  const got: Event[][] = sources.map(() => []);
  const deadline = Date.now() + ms;
  while (sources.some((_, i) => got[i].length < want[i]) && Date.now() < deadline) {
    let busy = false;
    for (let i = 0; i < sources.length; i++) {
      if ((await sources[i].source.process()) === "READY") busy = true;
      got[i].push(...(await takeEvents(sources[i].channel)));
    }
    if (!busy) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return got;
}

async function takeFrom(c: KafkaChannel, want: number, ms = 60_000): Promise<Event[]> {
  const deadline = Date.now() + ms;
  const out: Event[] = [];
  while (out.length < want && Date.now() < deadline) {
    const tx = c.getTransaction();
    tx.begin();
    const before = out.length;
    for (let e = tx.take(); e && out.length < want; e = tx.take()) out.push(e);
    await tx.commit();
    tx.close();
    if (out.length === before) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return out;
}

needsJvm.test(
  "a Kafka source on one topic and a Kafka channel on another, both in the default group flume, each get their records",
  async () => {
    const sourceTopic = await kafka.newTopic();
    const channelTopic = await kafka.newTopic();
    await produce([{ body: "for the source", topic: sourceTopic }]);
    // Neither sets kafka.consumer.group.id: both are in Flume's default group.
    const r = source("r1", { "kafka.topics": sourceTopic });
    await r.source.start();
    const c = kafkaChannel({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topic": channelTopic, parseAsFlumeEvent: "false" }, { cleanups, name: "c1" });
    await c.start();
    await waitUntil(() => c.connected, "the channel joined the group", 60_000);
    await produce([{ body: "for the channel", topic: channelTopic }]);

    const [got] = await pollAll([r], [1]);
    expect(got.map(bodyText)).toEqual(["for the source"]);
    expect(got[0].headers.topic).toBe(sourceTopic);
    expect((await takeFrom(c, 1)).map(bodyText)).toEqual(["for the channel"]);
    // The source's offset is committed in the group named flume.
    await waitUntil(async () => (await committedOffset(kafka.bootstrap, "flume", sourceTopic)) === 1, "the source's offset committed in group flume", 30_000, 100);
  },
  240_000,
);

needsJvm.test(
  "two sources on different topics in one group each get their own topic's records, and only those",
  async () => {
    const a = await kafka.newTopic({ partitions: 2 });
    const b = await kafka.newTopic({ partitions: 3 });
    const group = `g-${a}`;
    const ra = source("ra", { "kafka.topics": a, "kafka.consumer.group.id": group });
    await ra.source.start();
    const rb = source("rb", { "kafka.topics": b, "kafka.consumer.group.id": group });
    await rb.source.start();
    await produce([
      ...Array.from({ length: 20 }, (_, i) => ({ body: `a${i}`, topic: a, partition: i % 2 })),
      ...Array.from({ length: 30 }, (_, i) => ({ body: `b${i}`, topic: b, partition: i % 3 })),
    ]);
    const [gotA, gotB] = await pollAll([ra, rb], [20, 30]);
    expect(gotA.map(bodyText).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`).sort());
    expect(gotB.map(bodyText).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `b${i}`).sort());
    expect(new Set(gotA.map((e) => e.headers.partition))).toEqual(new Set(["0", "1"]));
    expect(new Set(gotB.map((e) => e.headers.partition))).toEqual(new Set(["0", "1", "2"]));
  },
  240_000,
);

needsJvm.test(
  "two sources on one 4-partition topic in one group share it, two partitions each, nothing lost or read twice",
  async () => {
    const topic = await kafka.newTopic({ partitions: 4 });
    const group = `g-${topic}`;
    const r1 = source("r1", { "kafka.topics": topic, "kafka.consumer.group.id": group });
    await r1.source.start();
    const r2 = source("r2", { "kafka.topics": topic, "kafka.consumer.group.id": group });
    await r2.source.start();
    const total = 400;
    await produce(Array.from({ length: total }, (_, i) => ({ body: `m${i}`, topic, partition: i % 4 })));
    const got = await pollAll([r1, r2], [total / 2, total / 2]);
    const all = [...got[0], ...got[1]].map(bodyText);
    expect(new Set(all).size).toBe(total);
    expect(all.length).toBe(total);
    const partitions = got.map((events) => [...new Set(events.map((e) => e.headers.partition))].sort());
    expect(partitions[0]).toHaveLength(2);
    expect(partitions[1]).toHaveLength(2);
    expect([...partitions[0], ...partitions[1]].sort()).toEqual(["0", "1", "2", "3"]);
  },
  240_000,
);

needsJvm.test(
  "Flume's own Kafka source and ours in one group on different topics: each gets its records, ours leading the group and then Flume's",
  async () => {
    const flumeTopic = await kafka.newTopic();
    const ourTopic = await kafka.newTopic();
    const laterTopic = await kafka.newTopic();
    const group = `mixed-${flumeTopic}`;
    await produce([{ body: "for flume 1", topic: flumeTopic }]);
    await produce([{ body: "for ours 1", topic: ourTopic }]);
    // Ours first: it leads the group and assigns Flume's member its topic.
    const first = source("r1", { "kafka.topics": ourTopic, "kafka.consumer.group.id": group });
    await first.source.start();
    const out = tempDirFor(cleanups, "flume-group-out-");
    const flume = await startFlumeWithKafka(cleanups, `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = org.apache.flume.source.kafka.KafkaSource
a1.sources.r1.channels = c1
a1.sources.r1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sources.r1.kafka.topics = ${flumeTopic}
a1.sources.r1.kafka.consumer.group.id = ${group}
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
a1.sources.r1.batchDurationMillis = 200
a1.sources.r1.batchSize = 100
a1.channels.c1.type = memory
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${out}
a1.sinks.k1.sink.rollInterval = 0
`);
    const rolled = () => (existsSync(out) ? readdirSync(out) : []).flatMap((f) => readFileSync(path.join(out, f), "utf8").split("\n")).filter((l) => l !== "");
    const flumeGot = async (lines: string[], what: string) => {
      await waitUntil(() => rolled().length >= lines.length, what, 60_000, 200).catch((err) => {
        throw new Error(`${(err as Error).message}; Flume's log:\n${flume.tail(40)}`);
      });
      expect(rolled()).toEqual(lines);
    };
    await flumeGot(["for flume 1"], "Flume's source to get its record");
    const [got] = await pollAll([first], [1]);
    expect(got.map(bodyText)).toEqual(["for ours 1"]);

    // Ours leaves: Flume's member leads now, and assigns our next member its topic.
    await first.source.stop();
    const next = source("r2", { "kafka.topics": laterTopic, "kafka.consumer.group.id": group });
    await next.source.start();
    await produce([{ body: "for ours 2", topic: laterTopic }]);
    await produce([{ body: "for flume 2", topic: flumeTopic }]);
    const [later] = await pollAll([next], [1]);
    expect(later.map(bodyText)).toEqual(["for ours 2"]);
    await flumeGot(["for flume 1", "for flume 2"], "Flume's source to get its second record");
  },
  300_000,
);
