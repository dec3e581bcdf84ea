/**
 * The fetch loop (src/kafka/fetcher.ts) over a stand-in for the client's consumer that records
 * the fetches asked and answers them with Fetch responses as our reader gives them: positions
 * from the group's committed offsets else auto.offset.reset, one fetch in flight per leader, the
 * position moving past what was read, a corrupt batch holding its partition (logged once, with
 * where), OFFSET_OUT_OF_RANGE moving a position by auto.offset.reset, answers to fetches from
 * before a rebalance dropped, a rebalance while a fetch's metadata is looked up, no fetch
 * while the read-ahead is full, and a fetch failed for its leader (broker down) tried again at
 * the same positions from the leader the metadata names next.
 */
import { describe, expect, test } from "bun:test";
import * as kafka from "@platformatic/kafka";
import { MemoryLogger } from "../../src/core/logger.ts";
import type { FetchPartitionResponse, FetchResponse } from "../../src/kafka/fetch-response.ts";
import { Fetcher } from "../../src/kafka/fetcher.ts";
import { encodeRecordBatch } from "../../src/kafka/record-batch.ts";
import type { FetchedRecord } from "../../src/kafka/record-batch-reader.ts";
import { consumerSettings } from "../../src/kafka/settings.ts";
import { waitUntil } from "../support/helpers.ts";

interface Asked {
  options: { node: number; topics: { topicId: string; partitions: { partition: number; fetchOffset: bigint }[] }[] };
  answer: (err: Error | null, response?: FetchResponse) => void;
}

/** The part of the client's Consumer the fetcher uses. */
class StandInConsumer {
  assignments: { topic: string; partitions: number[] }[] = [{ topic: "t", partitions: [0, 1] }];
  committed = new Map([["t", [5n, -1n]]]);
  asked: Asked[] = [];
  resets: bigint[] = [];

  async listCommittedOffsets() {
    return this.committed;
  }
  async listOffsets(o: { timestamp: bigint }) {
    this.resets.push(o.timestamp);
    return new Map([["t", [2n, 3n]]]);
  }
  /** While set, metadata is answered only by answerMetadata() (a lookup that went to the network). */
  metadataWaits: (() => void)[] | null = null;
  /** The leader of both partitions the metadata names; whether a lookup asked the brokers again (forceUpdate). */
  leader = 1;
  forced: boolean[] = [];

  metadata(o: { forceUpdate?: boolean }, cb: (err: Error | null, md: unknown) => void) {
    this.forced.push(o.forceUpdate === true);
    const answer = () => cb(null, { topics: new Map([["t", { id: "id-t", partitions: [{ leader: this.leader }, { leader: this.leader }] }]]) });
    if (this.metadataWaits) this.metadataWaits.push(answer);
    else answer();
  }

  answerMetadata() {
    const waits = this.metadataWaits ?? [];
    this.metadataWaits = null;
    for (const answer of waits) answer();
  }
  fetch(options: Asked["options"], cb: Asked["answer"]) {
    this.asked.push({ options, answer: cb });
  }
}

function batch(values: string[], base: number): Buffer {
  const b = encodeRecordBatch(values.map((v) => ({ topic: "t", value: Buffer.from(v), timestamp: 1 })));
  b.writeBigInt64BE(BigInt(base), 0);
  return b;
}

function partition(index: number, recordBytes: Buffer | null, errorCode = 0): FetchPartitionResponse {
  return {
    partitionIndex: index,
    errorCode,
    highWatermark: 50n,
    lastStableOffset: 50n,
    logStartOffset: 20n,
    divergingEpoch: { epoch: -1, endOffset: -1n },
    currentLeader: { leaderId: -1, leaderEpoch: -1 },
    snapshotId: { endOffset: -1n, epoch: -1 },
    abortedTransactions: [],
    aborted: null,
    preferredReadReplica: -1,
    records: null,
    recordBytes,
  };
}

const response = (...partitions: FetchPartitionResponse[]): FetchResponse => ({ throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses: [{ topicId: "id-t", partitions }], nodeEndpoints: [] });

function setUp(reset = "earliest") {
  const logger = new MemoryLogger();
  const consumer = new StandInConsumer();
  const got: FetchedRecord[] = [];
  const failures: unknown[] = [];
  const waits: { problem: string | null; ms: number }[] = [];
  let full = false;
  const settings = consumerSettings({ bootstrap: "127.0.0.1:1", bootstrapKey: "kafka.bootstrap.servers", props: { "auto.offset.reset": reset }, groupId: "g", defaultOffsetReset: "latest", clientId: "c", label: "test", logger });
  const fetcher = new Fetcher(kafka, consumer as never, settings, "kafka source r1", logger, { arrived: (records) => got.push(...records), full: () => full, failed: (err) => failures.push(err), waiting: (problem, ms) => waits.push({ problem, ms }) }, 256 * 1024, () => ["t"]);
  // By partition: the order they are asked in turns (see below).
  const offsets = (a: Asked) => a.options.topics.flatMap((t) => t.partitions.map((p) => [p.partition, Number(p.fetchOffset)])).sort((x, y) => x[0] - y[0]);
  return { logger, consumer, got, failures, waits, fetcher, offsets, setFull: (f: boolean) => (full = f) };
}

describe("the fetch loop", () => {
  test("starts at the committed offsets, else auto.offset.reset; one fetch in flight per leader; moves past what it read", async () => {
    const { consumer, got, fetcher, offsets } = setUp("earliest");
    await fetcher.restart();
    expect(consumer.resets).toEqual([kafka.ListOffsetTimestamps.EARLIEST]);
    expect(consumer.asked.length).toBe(1);
    expect(offsets(consumer.asked[0])).toEqual([
      [0, 5],
      [1, 3],
    ]);
    fetcher.pump();
    expect(consumer.asked.length).toBe(1);
    consumer.asked[0].answer(null, response(partition(0, batch(["a", "b", "c"], 4)), partition(1, Buffer.alloc(0))));
    // Offset 4 was below the fetch offset (a batch comes whole): not read again.
    expect(got.map((m) => [m.partition, m.offset, m.value.toString()])).toEqual([
      [0, 5, "b"],
      [0, 6, "c"],
    ]);
    expect(consumer.asked.length).toBe(2);
    expect(offsets(consumer.asked[1])).toEqual([
      [0, 7],
      [1, 3],
    ]);
    // A broker gives a batch larger than the fetch only to the first partition with data: which one leads turns.
    const leads = (a: Asked) => a.options.topics[0].partitions[0].partition;
    expect(leads(consumer.asked[1])).not.toBe(leads(consumer.asked[0]));
    await fetcher.stop();
  });

  test("a corrupt batch is logged once with where it is and holds its partition; the other partitions go on", async () => {
    const { consumer, got, fetcher, offsets, logger } = setUp();
    await fetcher.restart();
    const bad = batch(["x"], 3);
    bad[bad.length - 1] ^= 1;
    consumer.asked[0].answer(null, response(partition(0, batch(["a"], 5)), partition(1, bad)));
    expect(got.map((m) => m.value.toString())).toEqual(["a"]);
    expect(offsets(consumer.asked[1])).toEqual([[0, 6]]);
    consumer.asked[1].answer(null, response(partition(0, Buffer.alloc(0))));
    const errors = logger.lines.filter((l) => l.level === "error").map((l) => l.message);
    expect(errors).toEqual([expect.stringMatching(/kafka source r1: a corrupt record batch at topic t partition 1 offset 3: CRC32C .*not read past it/)]);
    // A second later it is asked for again.
    const deadline = Date.now() + 5000;
    while (!consumer.asked.some((a, i) => i >= 2 && offsets(a).some(([p]) => p === 1)) && Date.now() < deadline) {
      consumer.asked.at(-1)?.answer(null, response());
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(consumer.asked.slice(2).some((a) => offsets(a).some(([p, o]) => p === 1 && o === 3))).toBe(true);
    await fetcher.stop();
  });

  test("OFFSET_OUT_OF_RANGE moves the position to the log's start with earliest, to its end with latest; other errors are the owner's", async () => {
    for (const [reset, to] of [
      ["earliest", 20],
      ["latest", 50],
    ] as const) {
      const { consumer, fetcher, offsets, failures, logger } = setUp(reset);
      await fetcher.restart();
      const r = response(partition(0, null, 1), partition(1, null));
      consumer.asked[0].answer(Object.assign(new Error("out of range"), { response: r }));
      expect(failures).toEqual([]);
      expect(offsets(consumer.asked[1])[0]).toEqual([0, to]);
      expect(logger.lines.map((l) => l.message)).toContainEqual(expect.stringContaining(`offset 5 of topic t partition 0 is out of the log's range; reading from the ${reset} offset ${to}`));
      consumer.asked[1].answer(new Error("brokers gone"));
      expect(failures.map(String)).toEqual(["Error: brokers gone"]);
      await fetcher.stop();
    }
  });

  test("a fetch whose leader is gone (connection refused) keeps the positions: a second later they are fetched from the leader the brokers name then, and the wait is told until they are", async () => {
    const { consumer, fetcher, offsets, failures, waits, got } = setUp("earliest");
    await fetcher.restart();
    expect(consumer.asked[0].options.node).toBe(1);
    const refused = Object.assign(new Error("Connection to 127.0.0.1:9093 failed."), { code: "PLT_KFK_NETWORK", cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9093"), { code: "ECONNREFUSED" }) });
    consumer.asked[0].answer(refused);
    // Not the owner's failure (which drops the consumer and rejoins the group, reading again from the committed offsets).
    expect(failures).toEqual([]);
    expect(waits).toEqual([{ problem: "fetching topic t partitions 0, 1 from broker 1 failed (Connection to 127.0.0.1:9093 failed. (connect ECONNREFUSED 127.0.0.1:9093)); asking the brokers for their leader again every 1 s", ms: 0 }]);
    // Nothing asked of the dead leader in the meantime.
    expect(consumer.asked.length).toBe(1);
    consumer.leader = 2;
    await waitUntil(() => consumer.asked.length === 2, "the partitions fetched again", 5000);
    expect(consumer.asked[1].options.node).toBe(2);
    expect(consumer.forced.at(-1)).toBe(true);
    expect(offsets(consumer.asked[1])).toEqual([
      [0, 5],
      [1, 3],
    ]);
    consumer.asked[1].answer(null, response(partition(0, batch(["a"], 5)), partition(1, null)));
    expect(got.map((r) => r.offset)).toEqual([5]);
    expect(waits.length).toBe(2);
    expect(waits[1].problem).toBeNull();
    expect(waits[1].ms).toBeGreaterThanOrEqual(900);
    await fetcher.stop();
  });

  test("an answer to a fetch from before a rebalance is dropped; the fetching starts again from the committed offsets", async () => {
    const { consumer, got, fetcher, offsets } = setUp();
    await fetcher.restart();
    const before = consumer.asked[0];
    consumer.committed = new Map([["t", [9n, 3n]]]);
    const restarting = fetcher.restart();
    before.answer(null, response(partition(0, batch(["stale"], 5))));
    await restarting;
    expect(got).toEqual([]);
    expect(offsets(consumer.asked.at(-1)!)).toEqual([
      [0, 9],
      [1, 3],
    ]);
    await fetcher.stop();
  });

  test("a rebalance while a fetch's metadata is being looked up: the fetching goes on from the new committed offsets once it answers", async () => {
    const { consumer, got, fetcher, offsets } = setUp();
    await fetcher.restart();
    consumer.metadataWaits = [];
    consumer.asked[0].answer(null, response(partition(0, batch(["a"], 5))));
    // The next fetch waits for its metadata; a rebalance restarts the fetching meanwhile.
    expect([consumer.asked.length, consumer.metadataWaits.length]).toEqual([1, 1]);
    consumer.committed = new Map([["t", [9n, 3n]]]);
    await fetcher.restart();
    expect(consumer.asked.length).toBe(1);
    consumer.answerMetadata();
    expect(consumer.asked.length).toBe(2);
    expect(offsets(consumer.asked[1])).toEqual([
      [0, 9],
      [1, 3],
    ]);
    expect(got.map((m) => m.offset)).toEqual([5]);
    await fetcher.stop();
  });

  test("no fetch while the read-ahead is full; resume() fetches again", async () => {
    const { consumer, fetcher, setFull } = setUp();
    await fetcher.restart();
    setFull(true);
    consumer.asked[0].answer(null, response(partition(0, batch(["a"], 5))));
    expect(consumer.asked.length).toBe(1);
    fetcher.resume();
    expect(consumer.asked.length).toBe(1);
    setFull(false);
    fetcher.resume();
    expect(consumer.asked.length).toBe(2);
    await fetcher.stop();
  });
});
