/**
 * The consumer wrapper (src/kafka/consumer.ts) against a live Apache Kafka broker: a pattern
 * subscription (kafka.topics.regex) follows topics created after the start, as the Java
 * consumer's pattern subscription does; what it fetches ahead stays within READ_AHEAD_BYTES;
 * read_committed skips aborted transactions (our batch reader, with the broker's aborted list).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { componentContext } from "../../src/components/component.ts";
import { definition as sourceDefinition } from "../../src/components/sources/kafka.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { bodyText, type Event } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { highestOfEachPartition, KafkaPoller, READ_AHEAD_BYTES } from "../../src/kafka/consumer.ts";
import { KafkaCommitFencedError } from "../../src/kafka/errors.ts";
import { BatchOrigin, FetchedRecord } from "../../src/kafka/record-batch-reader.ts";
import { KafkaPublisher } from "../../src/kafka/producer.ts";
import { consumerSettings, producerSettings } from "../../src/kafka/settings.ts";
import { waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { consoleProduce, type KafkaCluster, startKafka } from "../support/kafka.ts";

let kafka: KafkaCluster;

beforeAll(async () => {
  if (needsJvm.holds) kafka = await startKafka({ autoCreateTopics: false });
}, 300_000);
afterAll(async () => {
  await kafka?.stop();
}, 60_000);

describe("highestOfEachPartition (what the source keeps of a batch put until its offsets are committed)", () => {
  const origin = (topic: string, partition: number, epoch = 0) => new BatchOrigin(topic, partition, epoch, Buffer.alloc(0), 0);
  const record = (o: BatchOrigin, offset: number) => new FetchedRecord(o, offset, 0, null, 0, 0, null);

  test("each partition's record with the highest offset, across runs and batches, with its leader epoch; none for no records", () => {
    const a0 = origin("a", 0);
    const a1 = origin("a", 1);
    const b0 = origin("b", 0, 7);
    const first = [record(a0, 10), record(a0, 11), record(a1, 3), record(b0, 5), record(a0, 12), record(a1, 2)];
    const second = [record(a1, 9), record(b0, 4)];
    const points = highestOfEachPartition([first, second]);
    expect(points.map((m) => `${m.topic}-${m.partition}@${m.offset}`).sort()).toEqual(["a-0@12", "a-1@9", "b-0@5"]);
    expect(points.find((m) => m.topic === "b")!.leaderEpoch).toBe(7);
    // What is kept of each batch commits what the batches would.
    const kept = [highestOfEachPartition([first]), highestOfEachPartition([second])];
    expect(highestOfEachPartition(kept)).toEqual(points);
    expect(highestOfEachPartition([[], []])).toEqual([]);
  });
});

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

needsJvm.test(
  "the consumer holds at most READ_AHEAD_BYTES of fetched records, however many records it may buffer, answers a wait for more once that is full, and reads every record in order",
  async () => {
    const topic = `ra${Date.now()}`;
    await kafka.createTopic(topic);
    const logger = new MemoryLogger();
    const common = { bootstrap: kafka.bootstrap, bootstrapKey: "kafka.bootstrap.servers", clientId: "read-ahead", label: "read-ahead", logger };
    const publisher = new KafkaPublisher("read-ahead producer", producerSettings({ ...common, props: {}, defaultAcks: "all" }), logger);
    // 4,000 records of 1,000 bytes: 4 MB, eight times the bound.
    const total = 4000;
    try {
      // Batches of 200 kB, below a fetch: a batch larger than a fetch comes whole and may pass the bound.
      for (let i = 0; i < total; i += 200) {
        await publisher.send(Array.from({ length: 200 }, (_, j) => ({ topic, value: Buffer.from(String(i + j).padStart(1000, "x")) })));
      }
    } finally {
      await publisher.close();
    }
    const settings = consumerSettings({ ...common, props: { "auto.offset.reset": "earliest" }, groupId: `g-${topic}`, defaultOffsetReset: "earliest" });
    // A record bound far above the topic: only the byte bound can stop the fetching.
    const poller = new KafkaPoller("read-ahead consumer", settings, { topics: [topic] }, logger, 1_000_000);
    let most = 0;
    poller.onRecords = () => (most = Math.max(most, poller.bufferedBytes));
    try {
      await poller.connect();
      // Nothing taken: fetching pauses once the bound is reached, with the topic not read to its end.
      await waitUntil(() => poller.bufferedBytes >= READ_AHEAD_BYTES / 2, "half the read-ahead fetched", 60_000);
      // A full read-ahead answers a wait for more records at once: nothing more comes until some are taken.
      const waiting = Date.now();
      await poller.waitFor(total, 120_000);
      expect(Date.now() - waiting).toBeLessThan(60_000);
      expect(poller.buffered).toBeLessThan(total);
      expect(poller.bufferedBytes).toBeGreaterThanOrEqual(READ_AHEAD_BYTES / 2);
      const values: string[] = [];
      const deadline = Date.now() + 120_000;
      while (values.length < total && Date.now() < deadline) {
        await poller.waitFor(1, 1000);
        for (const m of poller.take(100)) values.push(m.value.toString().replace(/^x+/, ""));
      }
      expect(values).toEqual(Array.from({ length: total }, (_, i) => String(i)));
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(READ_AHEAD_BYTES);
      expect(poller.bufferedBytes).toBe(0);
    } finally {
      await poller.close();
    }
  },
  300_000,
);

needsJvm.test(
  "isolation.level = read_committed reads the records of committed transactions and skips aborted ones; read_uncommitted reads them all, never the transaction markers",
  async () => {
    const topic = `tx${Date.now()}`;
    await kafka.createTopic(topic);
    const { Producer } = await import("@platformatic/kafka");
    const producer = new Producer({ clientId: "tx-test", bootstrapBrokers: [kafka.bootstrap], idempotent: true, transactionalId: `tx-${topic}`, autocreateTopics: false });
    const send = async (values: string[], outcome: "commit" | "abort") => {
      const tx = await producer.beginTransaction();
      await tx.send({ messages: values.map((v) => ({ topic, value: Buffer.from(v) })) });
      await (outcome === "commit" ? tx.commit() : tx.abort());
    };
    try {
      await send(["c1", "c2"], "commit");
      await send(["a1", "a2", "a3"], "abort");
      await send(["c3"], "commit");
      await send(["a4"], "abort");
      await send(["c4"], "commit");
    } finally {
      await producer.close();
    }
    const logger = new MemoryLogger();
    const read = async (isolation: string) => {
      const settings = consumerSettings({ bootstrap: kafka.bootstrap, bootstrapKey: "kafka.bootstrap.servers", clientId: "tx-reader", label: "tx", logger, props: { "auto.offset.reset": "earliest", "isolation.level": isolation }, groupId: `g-${topic}-${isolation}`, defaultOffsetReset: "earliest" });
      const poller = new KafkaPoller(`tx ${isolation}`, settings, { topics: [topic] }, logger, 1000);
      const values: string[] = [];
      try {
        await poller.connect();
        const want = isolation === "read_committed" ? 4 : 8;
        const deadline = Date.now() + 60_000;
        while (values.length < want && Date.now() < deadline) {
          await poller.waitFor(want, 500);
          for (const m of poller.take(100)) values.push(m.value.toString());
        }
        // Nothing more comes (a marker read as a record would).
        await poller.waitFor(want + 1, 1500);
        for (const m of poller.take(100)) values.push(m.value.toString());
      } finally {
        await poller.close();
      }
      return values;
    };
    expect(await read("read_committed")).toEqual(["c1", "c2", "c3", "c4"]);
    expect(await read("read_uncommitted")).toEqual(["c1", "c2", "a1", "a2", "a3", "c3", "a4", "c4"]);
  },
  300_000,
);

needsJvm.test(
  "offset commits after the first go straight to the coordinator's connection; when that fails (connection closed) the commit goes the library's way and lands, and the next goes straight again",
  async () => {
    const topic = `dc${Date.now()}`;
    await kafka.createTopic(topic);
    await consoleProduce(kafka, topic, Array.from({ length: 30 }, (_, i) => `d${i}`));
    const logger = new MemoryLogger();
    const common = { bootstrap: kafka.bootstrap, bootstrapKey: "kafka.bootstrap.servers", clientId: "direct-commits", label: "direct-commits", logger };
    const settings = consumerSettings({ ...common, props: { "auto.offset.reset": "earliest" }, groupId: `g-${topic}`, defaultOffsetReset: "earliest" });
    const poller = new KafkaPoller("direct commits", settings, { topics: [topic] }, logger, 1000);
    const inner = poller as unknown as { consumer: { commit(o: unknown): Promise<void>; listCommittedOffsets(o: unknown): Promise<Map<string, bigint[]>> }; commits: { connection: { close(cb: () => void): void } | null } };
    const committed = async () => (await inner.consumer.listCommittedOffsets({ topics: [{ topic, partitions: [0] }] })).get(topic)?.[0];
    try {
      await poller.connect();
      let libraryCommits = 0;
      const commit = inner.consumer.commit.bind(inner.consumer);
      inner.consumer.commit = (o) => {
        libraryCommits++;
        return commit(o);
      };
      const batch = async () => {
        await waitUntil(() => poller.buffered >= 10, "ten records fetched", 60_000, 10);
        return poller.take(10);
      };
      await poller.commit(await batch());
      expect(libraryCommits).toBe(1);
      await poller.commit(await batch());
      expect(libraryCommits).toBe(1);
      expect(await committed()).toBe(20n);
      // The kept connection is lost: this commit goes the library's way (a new connection) and lands.
      await new Promise<void>((resolve) => inner.commits.connection!.close(() => resolve()));
      const last = await batch();
      await poller.commit(last);
      expect(libraryCommits).toBe(2);
      expect(await committed()).toBe(30n);
      expect(last.map((m) => m.value.toString())).toEqual(Array.from({ length: 10 }, (_, i) => `d${20 + i}`));
      // And the one after goes straight again.
      await poller.commit(last);
      expect(libraryCommits).toBe(2);
    } finally {
      await poller.close();
    }
  },
  300_000,
);

needsJvm.test(
  "an offset commit for records fetched before a rebalance the member has not yet heard of is refused, sent straight or the library's way, and the group's offset stays where it was",
  async () => {
    const topic = `fc${Date.now()}`;
    await kafka.createTopic(topic);
    const values = Array.from({ length: 30 }, (_, i) => `c${i}`);
    await consoleProduce(kafka, topic, values);
    const logger = new MemoryLogger();
    const settings = (name: string) => consumerSettings({ bootstrap: kafka.bootstrap, bootstrapKey: "kafka.bootstrap.servers", clientId: name, label: name, logger, props: { "heartbeat.interval.ms": "500" }, groupId: `g-${topic}`, defaultOffsetReset: "earliest" });
    const a = new KafkaPoller("a", settings("a"), { topics: [topic] }, logger, 1000);
    const b = new KafkaPoller("b", settings("b"), { topics: [topic] }, logger, 1000);
    type Inner = { consumer: { generationId: number; emit(name: string, ...args: unknown[]): boolean; listCommittedOffsets(o: unknown): Promise<Map<string, bigint[]>> }; commits: { connection: { close(cb: () => void): void } | null } };
    const inner = a as unknown as Inner;
    const committed = async () => (await inner.consumer.listCommittedOffsets({ topics: [{ topic, partitions: [0] }] })).get(topic)?.[0];
    const take = async (p: KafkaPoller, n: number) => {
      await waitUntil(() => p.buffered >= n, `${n} records fetched`, 60_000, 10);
      return p.take(n);
    };
    try {
      await a.connect();
      await a.commit(await take(a, 10));
      expect(await committed()).toBe(10n);
      const before = await take(a, 10);
      // The member's client rejoins, but the member hears of it late: its join event is held.
      const held: (() => void)[] = [];
      const emit = inner.consumer.emit.bind(inner.consumer);
      inner.consumer.emit = (name, ...args) => {
        if (name !== "consumer:group:join") return emit(name, ...args);
        held.push(() => emit(name, ...args));
        return true;
      };
      const generation = inner.consumer.generationId;
      await b.connect();
      await waitUntil(() => inner.consumer.generationId !== generation && held.length > 0, "the first member's client in the new generation", 60_000);
      // Sent straight on the kept connection (refused by the coordinator, then not sent again the library's way).
      expect(inner.commits.connection).not.toBeNull();
      const straight = await a.commit(before).then(() => null, (err: unknown) => err);
      expect(straight).toBeInstanceOf(KafkaCommitFencedError);
      expect((straight as Error).message).toContain(`consumer group g-${topic} moved to generation ${inner.consumer.generationId} (a rebalance) after the records were fetched in generation ${generation}`);
      expect(await committed()).toBe(10n);
      // The library's way from the start (no kept connection).
      await new Promise<void>((resolve) => inner.commits.connection!.close(() => resolve()));
      const library = await a.commit(before).then(() => null, (err: unknown) => err);
      expect(library).toBeInstanceOf(KafkaCommitFencedError);
      expect(await committed()).toBe(10n);
      // Heard of: the partition's owner reads again from the group's offset, and commits there.
      for (const release of held.splice(0)) release();
      inner.consumer.emit = emit;
      await waitUntil(() => a.buffered + b.buffered >= 20, "the records after the committed offset fetched again", 60_000, 10);
      const owner = a.buffered >= 20 ? a : b;
      const again = owner.take(20);
      expect(again.map((m) => m.value.toString())).toEqual(values.slice(10));
      await owner.commit(again);
      expect(await committed()).toBe(30n);
    } finally {
      await b.close();
      await a.close();
    }
  },
  300_000,
);

needsJvm.test(
  "fetches after the first go straight on the leader's fetch connection; when that connection is lost the fetch goes the library's way on a new one and every record still comes once, in order",
  async () => {
    const topic = `df${Date.now()}`;
    await kafka.createTopic(topic);
    await consoleProduce(kafka, topic, Array.from({ length: 20 }, (_, i) => `f${i}`));
    const logger = new MemoryLogger();
    const common = { bootstrap: kafka.bootstrap, bootstrapKey: "kafka.bootstrap.servers", clientId: "direct-fetches", label: "direct-fetches", logger };
    const settings = consumerSettings({ ...common, props: { "auto.offset.reset": "earliest", "fetch.max.wait.ms": "200" }, groupId: `g-${topic}`, defaultOffsetReset: "earliest" });
    const poller = new KafkaPoller("direct fetches", settings, { topics: [topic] }, logger, 1000);
    const values: string[] = [];
    const readUntil = async (n: number) => {
      const deadline = Date.now() + 60_000;
      while (values.length < n && Date.now() < deadline) {
        await poller.waitFor(n - values.length, 200);
        for (const m of poller.take(100)) values.push(m.value.toString());
      }
    };
    try {
      await poller.connect();
      const inner = poller as unknown as { consumer: { fetch(o: unknown, cb: unknown): void }; fetcher: { pool: { getEstablishedConnection(b: unknown): { close(cb: () => void): void } | undefined } } };
      let libraryFetches = 0;
      const fetch = inner.consumer.fetch.bind(inner.consumer);
      inner.consumer.fetch = (o, cb) => {
        libraryFetches++;
        fetch(o, cb);
      };
      await readUntil(20);
      // Fetches kept going (long polls of 200 ms) without the library's way.
      const before = libraryFetches;
      await new Promise((r) => setTimeout(r, 1500));
      expect(libraryFetches).toBe(before);
      // The fetch connection is lost under a fetch in flight: it goes again the library's way.
      const broker = { host: "127.0.0.1", port: Number(kafka.bootstrap.split(":").at(-1)) };
      const connection = inner.fetcher.pool.getEstablishedConnection(broker);
      expect(connection).toBeDefined();
      await new Promise<void>((resolve) => connection!.close(() => resolve()));
      await consoleProduce(kafka, topic, Array.from({ length: 20 }, (_, i) => `f${20 + i}`));
      await readUntil(40);
      expect(values).toEqual(Array.from({ length: 40 }, (_, i) => `f${i}`));
      expect(libraryFetches).toBeGreaterThan(before);
    } finally {
      await poller.close();
    }
  },
  300_000,
);

needsJvm.test(
  "the records a consumer drops unread, when another member joins its group or when it is dropped (its brokers lost), go to onDropped in their order",
  async () => {
    const topic = `dr${Date.now()}`;
    await kafka.createTopic(topic);
    const values = Array.from({ length: 10 }, (_, i) => `d${i}`);
    await consoleProduce(kafka, topic, values);
    const logger = new MemoryLogger();
    const settings = (group: string) => consumerSettings({ bootstrap: kafka.bootstrap, bootstrapKey: "kafka.bootstrap.servers", clientId: "dropped", label: "dropped", logger, props: { "heartbeat.interval.ms": "500" }, groupId: group, defaultOffsetReset: "earliest" });
    const poller = (name: string, group: string) => {
      const p = new KafkaPoller(name, settings(group), { topics: [topic] }, logger, 1000);
      const dropped: string[][] = [];
      p.onDropped = (records) => dropped.push(records.map((m) => m.value.toString()));
      return { p, dropped };
    };
    // Dropped as lost() drops it when the brokers are gone: crash().
    const lost = poller("lost", `g-${topic}-lost`);
    try {
      await lost.p.connect();
      await waitUntil(() => lost.p.buffered === 10, "ten records fetched", 60_000);
      expect(lost.p.take(2).map((m) => m.value.toString())).toEqual(values.slice(0, 2));
    } finally {
      await lost.p.crash();
    }
    expect(lost.dropped).toEqual([values.slice(2)]);
    // A rebalance: the first member drops what it had not taken.
    const a = poller("a", `g-${topic}`);
    const b = poller("b", `g-${topic}`);
    try {
      await a.p.connect();
      await waitUntil(() => a.p.buffered === 10, "ten records fetched", 60_000);
      expect(a.p.take(3).map((m) => m.value.toString())).toEqual(values.slice(0, 3));
      await b.p.connect();
      await waitUntil(() => a.dropped.length > 0, "the first member's buffer dropped", 60_000);
      expect(a.dropped).toEqual([values.slice(3)]);
      const rebalanced = new RegExp(`^a: consumer group g-${topic} rebalanced \\(generation \\d+\\): this member reads (topic ${topic} partition 0|no partition); 7 fetched records left to be fetched again from the committed offsets$`);
      expect(logger.lines.some((l) => rebalanced.test(l.message))).toBe(true);
    } finally {
      await b.p.close();
      await a.p.close();
    }
  },
  300_000,
);
