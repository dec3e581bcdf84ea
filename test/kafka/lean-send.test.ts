/**
 * LeanSender's retry decisions, against a stand-in for the client's internals that answers each
 * Produce request as the test says (a lost connection, the broker's OUT_OF_ORDER_SEQUENCE_NUMBER,
 * success) and records what each request carried: a retry goes under the same producer id and
 * sequences; the id is dropped only when the broker's sequences are unknown. The broker's side
 * (a duplicate answered without a second copy) is tested against a live broker in
 * test/components/sinks/kafka-lost-answer.test.ts.
 */
import { beforeAll, expect, test } from "bun:test";
import type { Producer } from "@platformatic/kafka";
import { type KafkaModule, loadKafka } from "../../src/kafka/client.ts";
import { isTooLarge, KafkaPartitionMissingError, KafkaRecordTooLargeError } from "../../src/kafka/errors.ts";
import { murmur2 } from "../../src/kafka/murmur2.ts";
import { JAVA_KEYS } from "../support/kafka-keys.ts";
import { javaPartitioner, KafkaProducerIdDroppedError, type LeanBatch, type LeanRecord, LeanSender } from "../../src/kafka/lean-send.ts";

let kafka: KafkaModule;
beforeAll(async () => {
  kafka = await loadKafka();
});

type Answer = "lost" | "out-of-order" | "ok";
interface Request {
  producerId: bigint;
  firstSequence: number;
  records: number;
}

type Callback = (error: Error | null, value?: unknown) => void;
type Options = { producerId?: bigint; sequences?: { getWithDefault(key: string, fallback: number): number } };

interface Topic {
  /** Partitions of topic t: 1 by default. */
  partitions?: number;
  /** Its partitions once the metadata is asked for anew (forceUpdate): a topic that grew since the cached metadata. */
  grownTo?: number;
}

function topicMetadata(partitions: number) {
  return { brokers: new Map([[1, {}]]), topics: new Map([["t", { partitionsCount: partitions, partitions: Array.from({ length: partitions }, () => ({ leader: 1 })) }]]) };
}

/** A sender over a stand-in client: each Produce request takes the next answer; what each carried is kept. */
function sender(answers: Answer[], topic: Topic = {}): { lean: LeanSender; requests: Request[]; refreshes: () => number } {
  const requests: Request[] = [];
  let ids = 0n;
  let metadata = topicMetadata(topic.partitions ?? 1);
  let refreshes = 0;
  const produce = (_c: unknown, _acks: number, _t: number, records: LeanRecord[], options: Options, cb: Callback) => {
    requests.push({ producerId: options.producerId!, firstSequence: options.sequences!.getWithDefault(`t:${records[0].partition}`, -1), records: records.length });
    const answer = answers.shift() ?? "ok";
    const error = answer === "lost" ? new kafka.NetworkError("Connection closed") : answer === "out-of-order" ? new kafka.ResponseError(0, 9, { "/topics/0/partitions/0": [45, null] }, {}) : null;
    setTimeout(() => cb(error, error ? undefined : {}), 1);
  };
  const fake = {
    [kafka.kMetadata]: (o: { forceUpdate?: boolean }, cb: Callback) => {
      if (o.forceUpdate) {
        refreshes++;
        if (topic.grownTo !== undefined) metadata = topicMetadata(topic.grownTo);
      }
      cb(null, metadata);
    },
    [kafka.kGetConnection]: (_b: unknown, cb: Callback) => cb(null, {}),
    [kafka.kGetApi]: (_n: string, cb: Callback) => cb(null, produce),
    // No quick retries of the client's own: each failure reaches the sender.
    [kafka.kPerformWithRetry]: (_id: string, op: (cb: Callback) => void, cb: Callback) => op(cb),
    [kafka.kOptions]: { timeout: 1000 },
    initIdempotentProducer: async () => ({ producerId: ++ids, producerEpoch: 0 }),
  };
  return { lean: new LeanSender(kafka, fake as unknown as Producer<Buffer, Uint8Array, Buffer, Buffer>, -1, true), requests, refreshes: () => refreshes };
}

const records = (n: number): LeanRecord[] => Array.from({ length: n }, (_, i) => ({ topic: "t", value: Buffer.from(`e${i}`) }));

async function failure(p: Promise<void>): Promise<unknown> {
  return p.then(
    () => null,
    (e: unknown) => e,
  );
}

test("a batch whose answer was lost is sent again under the same producer id and sequences; the next batch's sequences follow it", async () => {
  const { lean, requests } = sender(["lost"]);
  const a = lean.batch(records(3));
  const err = await failure(lean.send(a));
  expect(lean.canRetry(a, err)).toBe(true);
  await lean.send(a);
  lean.end(a, true);
  const b = lean.batch(records(2));
  await lean.send(b);
  lean.end(b, true);
  expect(requests).toEqual([
    { producerId: 1n, firstSequence: 0, records: 3 },
    { producerId: 1n, firstSequence: 0, records: 3 },
    { producerId: 1n, firstSequence: 3, records: 2 },
  ]);
});

test("a batch refused OUT_OF_ORDER while an earlier one is being retried is retried behind it, under the same id", async () => {
  const { lean, requests } = sender(["lost", "out-of-order"]);
  const a = lean.batch(records(3));
  const b = lean.batch(records(2));
  const [errA, errB] = await Promise.all([failure(lean.send(a)), failure(lean.send(b))]);
  expect(lean.canRetry(a, errA)).toBe(true);
  // b reached the broker before a's retry: its sequences are the next once a is in.
  expect(lean.canRetry(b, errB)).toBe(true);
  await lean.send(a);
  lean.end(a, true);
  await lean.send(b);
  lean.end(b, true);
  expect(requests.map((r) => [r.producerId, r.firstSequence])).toEqual([
    [1n, 0],
    [1n, 3],
    [1n, 0],
    [1n, 3],
  ]);
});

test("OUT_OF_ORDER with no earlier batch unresolved (a gap: the broker's sequences are unknown) drops the id: the next batch goes under a new one from 0", async () => {
  const { lean, requests } = sender(["out-of-order"]);
  const a = lean.batch(records(3));
  const err = await failure(lean.send(a));
  expect(lean.canRetry(a, err)).toBe(false);
  lean.end(a, false);
  const b = lean.batch(records(2));
  await lean.send(b);
  expect(requests.map((r) => [r.producerId, r.firstSequence])).toEqual([
    [1n, 0],
    [2n, 0],
  ]);
});

test("a batch not sent again because another one too large dropped the id is not itself taken for too large", async () => {
  const { lean } = sender(["lost", "lost"]);
  const a = lean.batch(records(3));
  const b = lean.batch(records(2));
  await Promise.all([failure(lean.send(a)), failure(lean.send(b))]);
  lean.end(a, false, new KafkaRecordTooLargeError("the broker refused a batch as too large"));
  const dropped = lean.droppedUnder(b);
  expect(dropped?.message).toContain("(the broker refused a batch as too large)");
  // The sink sends a batch too large record by record: not this one.
  expect(isTooLarge(dropped)).toBe(false);
});

test("a batch given up drops the id; another batch in flight under it is then not retried, nor sent again under the new id, and its error names the first one's", async () => {
  const { lean, requests } = sender(["lost", "lost"]);
  const a = lean.batch(records(3));
  const b = lean.batch(records(2));
  const [, errB] = await Promise.all([failure(lean.send(a)), failure(lean.send(b))]);
  expect(lean.droppedUnder(b)).toBeNull();
  // a given up (its delivery timeout passed): whether the broker wrote it is unknown.
  const timedOut = new Error("3 records not acknowledged within kafka.producer.delivery.timeout.ms = 6000 ms");
  lean.end(a, false, timedOut);
  expect(lean.canRetry(b, errB)).toBe(false);
  const dropped = (await failure(lean.send(b))) as KafkaProducerIdDroppedError;
  expect(dropped).toBeInstanceOf(KafkaProducerIdDroppedError);
  expect(dropped.message).toContain("2 record(s) sent unacknowledged are not sent again");
  expect(dropped.message).toContain("(3 records not acknowledged within kafka.producer.delivery.timeout.ms = 6000 ms)");
  // Named, not its cause: what sent the other batch back (too large, say) is not this one's kind.
  expect(dropped.cause).toBeUndefined();
  lean.end(b, false);
  const c: LeanBatch = lean.batch(records(1));
  await lean.send(c);
  expect(requests.map((r) => [r.producerId, r.firstSequence])).toEqual([
    [1n, 0],
    [1n, 3],
    [2n, 0],
  ]);
});

test("our murmur2 gives Kafka's own test vectors (Utils.murmur2), as the client's does, for keys of every length modulo 4", () => {
  for (const [key, hash] of JAVA_KEYS) expect([key, murmur2(Buffer.from(key))]).toEqual([key, hash]);
  const keys = Array.from({ length: 40 }, (_, n) => Buffer.from("k".repeat(n) + "\u00ff\u0080"));
  expect(keys.map((k) => murmur2(k))).toEqual(keys.map((k) => kafka.murmur2(k)));
});

test("a keyed record goes to the partition the Java producer gives it: toPositive(murmur2(key)) % partitions, also for a negative hash and a partition count that is no power of two", async () => {
  const { lean } = sender([], { partitions: 6 });
  const batch = lean.batch(JAVA_KEYS.map(([key]) => ({ topic: "t", key: Buffer.from(key), value: Buffer.from(key) })));
  await lean.send(batch);
  lean.end(batch, true);
  expect(batch.records.map((r) => [r.key!.toString(), r.partition])).toEqual(JAVA_KEYS.map(([key, , partition]) => [key, partition]));
});

test("the partitioner given to the client's Producer (its compressed sends) puts a keyed record where the Java producer does, the records without key of one send to the send's sticky partition", () => {
  const partitioner = javaPartitioner(4);
  expect(JAVA_KEYS.map(([key]) => [key, partitioner(undefined, Buffer.from(key)) % 6])).toEqual(JAVA_KEYS.map(([key, , partition]) => [key, partition]));
  const unkeyed = Array.from({ length: 6 }, () => partitioner(undefined, undefined));
  expect(unkeyed).toEqual([4, 4, 4, 4, 4, 4]);
});

test("an explicit partition the topic does not have fails the send naming partition, topic, partition count and what chose it, after one fresh look at the metadata; nothing is sent", async () => {
  const { lean, requests, refreshes } = sender([], { partitions: 6 });
  const batch = lean.batch([
    { topic: "t", partition: 1, value: Buffer.from("fine") },
    { topic: "t", partition: 7, partitionFrom: "header p (partitionIdHeader)", value: Buffer.from("beyond") },
  ]);
  const err = await failure(lean.send(batch));
  expect(err).toBeInstanceOf(KafkaPartitionMissingError);
  expect(err).toMatchObject({ topic: "t", partition: 7, partitionsCount: 6, chosenBy: "header p (partitionIdHeader)" });
  expect((err as Error).message).toContain("partition 7 of topic t does not exist: the topic has 6 partitions (0 to 5); header p (partitionIdHeader) chose it");
  expect(lean.canRetry(batch, err)).toBe(false);
  lean.end(batch, false);
  expect(requests).toEqual([]);
  expect(refreshes()).toBe(1);
});

test("an explicit partition beyond the cached partition count of a topic that grew since is sent there once the metadata was asked for anew", async () => {
  const { lean, requests, refreshes } = sender([], { partitions: 2, grownTo: 4 });
  const batch = lean.batch([
    { topic: "t", partition: 3, value: Buffer.from("new partition") },
    { topic: "t", key: Buffer.from("foobar"), value: Buffer.from("keyed") },
  ]);
  await lean.send(batch);
  lean.end(batch, true);
  expect(refreshes()).toBe(1);
  // The key hashed over the topic's partitions as it has them now (toPositive(-790332482) % 4).
  expect(batch.records.map((r) => r.partition)).toEqual([3, 2]);
  expect(requests.reduce((n, r) => n + r.records, 0)).toBe(2);
});
