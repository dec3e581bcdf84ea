/**
 * Our RecordBatch v2 / Produce request encoder (src/kafka/record-batch.ts) against the Kafka
 * client library's own: the same bytes as the library's Produce request of each version for the
 * same records and producer state, and batches the library's reader decodes back to the records
 * (keys, values, headers, timestamps, sequences, a CRC32C that checks).
 */
import { describe, expect, test } from "bun:test";
import * as kafka from "@platformatic/kafka";
import { createEvent } from "../../src/core/event.ts";
import { encodeFlumeEvent, flumeEventSize } from "../../src/kafka/flume-event.ts";
import { encodeProduceRequest, encodeRecordBatch, type ProduceMessage } from "../../src/kafka/record-batch.ts";

const b = (s: string) => Buffer.from(s, "utf8");

function messages(): ProduceMessage[] {
  const out: ProduceMessage[] = [];
  for (let i = 0; i < 300; i++) {
    out.push({
      topic: i % 3 === 0 ? "other" : "events",
      partition: (i >> 1) % 2,
      // Empty keys, not absent ones: the library's 1.x writes an absent key as an empty one (Kafka: length -1), see below.
      key: i % 5 === 0 ? Buffer.alloc(0) : b(`key-${i}`),
      value: i === 7 ? Buffer.alloc(0) : b(`value ${i} `.repeat(1 + (i % 40))),
      headers: i % 4 === 0 ? new Map([[b("h1"), b(`v${i}`)], [b("ünïcode"), b("☃")]]) : new Map(),
      // some out of order: deltas below the first timestamp are negative varlongs
      timestamp: 1_700_000_000_000n + BigInt(i % 11 === 0 ? -5000 * i : 1000 * i),
    });
  }
  return out;
}

/** The first offset where the two differ (-1 when equal), so a failure names where. */
function firstDifference(a: Buffer, c: Buffer): number {
  const n = Math.min(a.length, c.length);
  for (let i = 0; i < n; i++) if (a[i] !== c[i]) return i;
  return a.length === c.length ? -1 : n;
}

function sequences(): { getWithDefault(key: string, fallback: number): number } {
  const m = new Map([["events:0", 17], ["events:1", 2_000_000_000], ["other:0", 0]]);
  return { getWithDefault: (k, d) => m.get(k) ?? d };
}

describe("Produce request", () => {
  const apis = kafka as unknown as Record<string, { createRequest: (...a: unknown[]) => { buffer: Buffer } } | undefined>;
  // Every version the library has (its 1.x from 7, its 2.x from 3) that we write.
  const versions = [3, 4, 5, 6, 7, 8, 9, 10, 11].filter((v) => apis[`produceV${v}`]);
  test("the library has Produce versions we write", () => {
    expect(versions).toContain(9);
  });
  for (const version of versions) {
    test(`version ${version}: the library's bytes for the same records`, () => {
      const mod = apis[`produceV${version}`]!;
      const producer = { producerId: 4242n, producerEpoch: 3, sequences: sequences() };
      const ours = Buffer.concat(encodeProduceRequest(version, -1, 30_000, messages(), producer));
      const theirs = mod.createRequest(-1, 30_000, messages(), { ...producer, partitionLeaderEpoch: -1 }).buffer;
      expect(firstDifference(ours, theirs)).toBe(-1);
    });
  }
});

describe("RecordBatch v2", () => {
  test("the library's reader decodes every record, and the CRC32C checks", () => {
    const list = messages().filter((m) => m.topic === "events" && m.partition === 1);
    const batch = encodeRecordBatch(list, { producerId: 9n, producerEpoch: 1 }, 12);
    const read = kafka.readRecordsBatch(kafka.Reader.from(batch));
    expect(read.magic).toBe(2);
    expect(read.length).toBe(batch.length - 12);
    expect(read.crc).toBe(kafka.crc32c(batch.subarray(21)));
    expect(read.producerId).toBe(9n);
    expect(read.producerEpoch).toBe(1);
    expect(read.firstSequence).toBe(12);
    expect(read.lastOffsetDelta).toBe(list.length - 1);
    expect(read.records.length).toBe(list.length);
    const first = list[0].timestamp as bigint;
    let max = first;
    for (const m of list) if ((m.timestamp as bigint) > max) max = m.timestamp as bigint;
    expect(read.firstTimestamp).toBe(first);
    expect(read.maxTimestamp).toBe(max);
    read.records.forEach((r, i) => {
      const m = list[i];
      expect(r.offsetDelta).toBe(i);
      expect(first + BigInt(r.timestampDelta)).toBe(m.timestamp as bigint);
      expect(r.key?.toString()).toBe(m.key!.toString());
      expect(r.value?.toString()).toBe(m.value!.toString());
      expect(r.headers.map(([k, v]) => [k?.toString(), v?.toString()])).toEqual([...(m.headers ?? [])].map(([k, v]) => [k.toString(), v.toString()]));
    });
  });

  test("without a producer: id, epoch and sequence -1 (not idempotent), now as the timestamp", () => {
    const before = Date.now();
    const read = kafka.readRecordsBatch(kafka.Reader.from(encodeRecordBatch([{ topic: "t", value: b("x") }])));
    expect(read.producerId).toBe(-1n);
    expect(read.producerEpoch).toBe(-1);
    expect(read.firstSequence).toBe(-1);
    expect(Number(read.firstTimestamp)).toBeGreaterThanOrEqual(before);
    expect(read.records[0].value?.toString()).toBe("x");
  });

  test("varints at and past 2^30 in magnitude (timestamp deltas of 12 days and more) read back", () => {
    const base = 1_700_000_000_000;
    const deltas = [0, 1, -1, 63, -64, 64, 8191, -8192, 2 ** 30 - 1, -(2 ** 30), 2 ** 30, -(2 ** 30) - 1, 2 ** 31, -(2 ** 31) - 7, 2 ** 40 + 3, -(2 ** 40)];
    const list = deltas.map((d, i) => ({ topic: "t", value: b(`v${i}`), timestamp: BigInt(base + d) }));
    const batch = encodeRecordBatch(list);
    const read = kafka.readRecordsBatch(kafka.Reader.from(batch));
    expect(read.crc).toBe(kafka.crc32c(batch.subarray(21)));
    expect(read.records.map((r) => Number(read.firstTimestamp + BigInt(r.timestampDelta)) - base)).toEqual(deltas);
    expect(read.records.map((r) => r.value?.toString())).toEqual(deltas.map((_, i) => `v${i}`));
  });

  test("an absent key is written as Kafka's null (length -1), an empty one as length 0", () => {
    const batch = encodeRecordBatch([{ topic: "t", value: b("v") }, { topic: "t", key: Buffer.alloc(0), value: b("v") }], {}, -1, 5);
    // After the 61-byte header, each record: length, attributes, timestamp delta, offset delta, then the key's zig-zag length.
    expect([...batch.subarray(61, 66)]).toEqual([14, 0, 0, 0, 1]);
    expect([...batch.subarray(69, 74)]).toEqual([14, 0, 0, 2, 0]);
  });

  test("events written as FlumeEvents straight into the batch: the same bytes as a batch of their encoded values", () => {
    const events = [createEvent("a", { h: "1", key: "k" }), createEvent(""), createEvent("body ü", { "ünï": "cödé ☃".repeat(40) }), createEvent("z".repeat(300))];
    const direct = encodeRecordBatch(events.map((e) => ({ topic: "t", value: e.body, flumeEvent: e, eventSize: flumeEventSize(e) })), {}, -1, 5);
    const copied = encodeRecordBatch(events.map((e) => ({ topic: "t", value: encodeFlumeEvent(e) })), {}, -1, 5);
    expect(direct.toString("hex")).toBe(copied.toString("hex"));
    const read = kafka.readRecordsBatch(kafka.Reader.from(direct));
    expect(read.records.map((r) => r.value?.toString("hex"))).toEqual(events.map((e) => encodeFlumeEvent(e).toString("hex")));
  });

  test("the library's CRC32C (native) and ours give the same checksum", () => {
    const list = messages();
    const a = encodeRecordBatch(list, {}, -1, 1);
    const c = encodeRecordBatch(list, {}, -1, 1, (x) => kafka.crc32c(x));
    expect(a.equals(c)).toBe(true);
  });
});
