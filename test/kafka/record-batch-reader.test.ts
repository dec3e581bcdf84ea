/**
 * Our RecordBatch v2 reader (src/kafka/record-batch-reader.ts) on batches our encoder
 * (record-batch.ts) and the Kafka client library's encoder wrote: every record with its offset,
 * timestamp, key, value and headers; compressed batches; records before the fetch offset, control
 * batches and aborted transactions skipped as the Java consumer skips them; a batch cut at the end
 * of a response left for the next fetch; a corrupt batch named by topic, partition and offset.
 */
import { describe, expect, test } from "bun:test";
import * as kafka from "@platformatic/kafka";
import { crc32c } from "../../src/io/crc32c.ts";
import { KafkaCorruptRecordError } from "../../src/kafka/errors.ts";
import { libraryCrc32c, libraryInflate } from "../../src/kafka/fetch-api.ts";
import { encodeRecordBatch, type ProduceMessage } from "../../src/kafka/record-batch.ts";
import { type FetchedRecord, type PartitionFetch, readRecordBatches } from "../../src/kafka/record-batch-reader.ts";

const b = (s: string) => Buffer.from(s, "utf8");
const crc = libraryCrc32c(kafka);
const inflate = libraryInflate(kafka);

/** A batch as the broker stores it: our encoder's bytes with the base offset the log gave it (the CRC does not cover it). */
function atOffset(batch: Buffer, base: number): Buffer {
  batch.writeBigInt64BE(BigInt(base), 0);
  return batch;
}

/** Sets a batch's attributes (transactional, control, timestamp type) and its CRC again. */
function withAttributes(batch: Buffer, attributes: number): Buffer {
  batch.writeInt16BE(attributes, 21);
  batch.writeUInt32BE(crc32c(batch, 21, batch.length), 17);
  return batch;
}

function read(bytes: Buffer, p: Partial<PartitionFetch> = {}) {
  const out: FetchedRecord[] = [];
  const r = readRecordBatches(bytes, 0, bytes.length, { topic: "t", partition: 3, fetchOffset: 0, aborted: null, readCommitted: false, ...p }, out, crc, inflate);
  return { ...r, out, values: out.map((m) => m.value.toString()) };
}

function records(n: number, from = 0): ProduceMessage[] {
  return Array.from({ length: n }, (_, i) => ({ topic: "t", value: b(`v${from + i}`), timestamp: 1_700_000_000_000 + i * 10 }));
}

describe("RecordBatch v2 reader", () => {
  test("every record of our encoder's batches: offsets, timestamps, keys (null and empty), values (null and empty), headers only when present", () => {
    const list: ProduceMessage[] = [
      { topic: "t", key: b("k1"), value: b("first"), timestamp: 1_700_000_000_000, headers: new Map([[b("h1"), b("x")], [b("ünï"), b("☃")]]) },
      { topic: "t", value: b("no key"), timestamp: 1_700_000_000_500 },
      { topic: "t", key: Buffer.alloc(0), value: null, timestamp: 1_699_999_999_000 },
      { topic: "t", key: b("k4"), value: Buffer.alloc(0), timestamp: 1_700_000_001_000, headers: new Map([[b("empty"), Buffer.alloc(0)]]) },
    ];
    const bytes = Buffer.concat([atOffset(encodeRecordBatch(list, {}, -1), 40), atOffset(encodeRecordBatch(records(2, 4)), 44)]);
    const r = read(bytes, { fetchOffset: 40 });
    expect(r.next).toBe(46);
    expect(r.out.map((m) => [m.topic, m.partition, m.offset, m.timestamp])).toEqual([
      ["t", 3, 40, 1_700_000_000_000],
      ["t", 3, 41, 1_700_000_000_500],
      ["t", 3, 42, 1_699_999_999_000],
      ["t", 3, 43, 1_700_000_001_000],
      ["t", 3, 44, 1_700_000_000_000],
      ["t", 3, 45, 1_700_000_000_010],
    ]);
    expect(r.out.map((m) => m.key?.toString() ?? null)).toEqual(["k1", null, "", "k4", null, null]);
    expect(r.values).toEqual(["first", "no key", "", "", "v4", "v5"]);
    expect(r.out.map((m) => m.headers?.map(([k, v]) => [k.toString(), v.toString()]) ?? null)).toEqual([
      [
        ["h1", "x"],
        ["ünï", "☃"],
      ],
      null,
      null,
      [["empty", ""]],
      null,
      null,
    ]);
    expect(r.bytes).toBe(["k1first", "no key", "", "k4", "v4", "v5"].join("").length);
  });

  test("varints of every width: timestamp deltas across each byte boundary, negative ones too, and values of 1 to 3 length bytes", () => {
    const base = 1_700_000_000_000;
    const deltas = [0, 63, 64, -64, -65, 8191, 8192, -8193, 2 ** 20 - 1, 2 ** 20, 2 ** 27 - 1, 2 ** 27, -(2 ** 27) - 1, 2 ** 34 + 5, -(2 ** 40)];
    const sizes = [0, 63, 64, 8191, 8192, 70_000];
    const msgs = deltas.map((d, i) => ({ topic: "t", value: Buffer.alloc(sizes[i % sizes.length], 97 + (i % 26)), timestamp: base + d }));
    const r = read(atOffset(encodeRecordBatch(msgs), 1000), { fetchOffset: 1000 });
    expect(r.out.map((m) => m.timestamp - base)).toEqual(deltas);
    expect(r.out.map((m) => m.valueLength)).toEqual(deltas.map((_, i) => sizes[i % sizes.length]));
    expect(r.out.map((m) => m.offset)).toEqual(deltas.map((_, i) => 1000 + i));
    expect(r.out.every((m, i) => m.value.equals(msgs[i].value))).toBe(true);
  });

  test("the library's batches, uncompressed and in each codec it writes", () => {
    for (const compression of ["none", "gzip", "snappy", "lz4", ...(kafka.compressionsAlgorithms.zstd.available ? ["zstd"] : [])]) {
      const messages = Array.from({ length: 50 }, (_, i) => ({ key: i % 2 ? b(`key${i}`) : undefined, value: b(`value ${i} `.repeat(20)), headers: new Map(i % 3 ? [] : [[b("n"), b(String(i))]]), timestamp: 1_700_000_000_000n + BigInt(i), topic: "t" }));
      const batch = atOffset((kafka.createRecordsBatch as (m: unknown[], o: unknown) => { buffer: Buffer })(messages, { compression }).buffer, 1000);
      const r = read(batch, { fetchOffset: 1000 });
      expect({ compression, next: r.next }).toEqual({ compression, next: 1050 });
      expect(r.values).toEqual(messages.map((m) => m.value.toString()));
      expect(r.out.map((m) => m.key?.toString() ?? null)).toEqual(messages.map((m) => m.key?.toString() ?? null));
      expect(r.out.map((m) => m.headers?.[0]?.[1].toString() ?? null)).toEqual(messages.map((_, i) => (i % 3 ? null : String(i))));
      expect(r.out.map((m) => m.timestamp)).toEqual(messages.map((m) => Number(m.timestamp)));
    }
  });

  test("records before the fetch offset (a batch comes whole) are skipped; the next fetch starts past the batch", () => {
    const r = read(atOffset(encodeRecordBatch(records(10)), 100), { fetchOffset: 107 });
    expect(r.values).toEqual(["v7", "v8", "v9"]);
    expect(r.out[0].offset).toBe(107);
    expect(r.next).toBe(110);
  });

  test("a batch cut at the end of the response is left for the next fetch", () => {
    const whole = atOffset(encodeRecordBatch(records(3)), 0);
    const second = atOffset(encodeRecordBatch(records(3, 3)), 3);
    for (const cut of [1, 11, 12, 60, second.length - 1]) {
      const r = read(Buffer.concat([whole, second.subarray(0, cut)]));
      expect({ cut, values: r.values, next: r.next }).toEqual({ cut, values: ["v0", "v1", "v2"], next: 3 });
    }
    expect(read(Buffer.concat([whole, second])).next).toBe(6);
  });

  test("a batch whose CRC does not check is an error naming the topic, partition and offset; the batches before it are read", () => {
    const good = atOffset(encodeRecordBatch(records(2)), 0);
    const bad = atOffset(encodeRecordBatch(records(2, 2)), 2);
    bad[bad.length - 2] ^= 0xff;
    const out: FetchedRecord[] = [];
    const bytes = Buffer.concat([good, bad]);
    expect(() => readRecordBatches(bytes, 0, bytes.length, { topic: "orders", partition: 7, fetchOffset: 0, aborted: null, readCommitted: false }, out, crc, inflate)).toThrow(KafkaCorruptRecordError);
    expect(() => readRecordBatches(bytes, 0, bytes.length, { topic: "orders", partition: 7, fetchOffset: 0, aborted: null, readCommitted: false }, [], crc, inflate)).toThrow(/corrupt record batch at topic orders partition 7 offset 2: CRC32C/);
    expect(out.map((m) => m.value.toString())).toEqual(["v0", "v1"]);
  });

  test("a batch of an older message format (magic 0 or 1) is an error saying so, with where", () => {
    const batch = atOffset(encodeRecordBatch(records(1)), 5);
    batch[16] = 1;
    expect(() => read(batch)).toThrow(/magic 1 at topic t partition 3 offset 5/);
  });

  test("LogAppendTime batches give every record the broker's time (maxTimestamp)", () => {
    const batch = withAttributes(atOffset(encodeRecordBatch(records(3)), 0), 0x08);
    expect(read(batch).out.map((m) => m.timestamp)).toEqual([1_700_000_000_020, 1_700_000_000_020, 1_700_000_000_020]);
  });
});

describe("transactions", () => {
  const producer = { producerId: 77n, producerEpoch: 0 };
  const other = { producerId: 78n, producerEpoch: 0 };
  /** A transaction's data batch: the transactional bit set. */
  const data = (list: ProduceMessage[], base: number, p = producer) => withAttributes(atOffset(encodeRecordBatch(list, p, 0), base), 0x10);
  /** A control batch with one marker: key (version 0, type 0 abort / 1 commit), value (version, coordinator epoch). */
  const marker = (type: 0 | 1, base: number, p = producer) => {
    const key = Buffer.alloc(4);
    key.writeInt16BE(type, 2);
    return withAttributes(atOffset(encodeRecordBatch([{ topic: "t", key, value: Buffer.alloc(6), timestamp: 1 }], p, -1), base), 0x30);
  };

  test("control batches are never records; the position moves past them", () => {
    const bytes = Buffer.concat([data(records(2), 0), marker(1, 2), atOffset(encodeRecordBatch(records(1, 3)), 3)]);
    const r = read(bytes);
    expect(r.values).toEqual(["v0", "v1", "v3"]);
    expect(r.next).toBe(4);
  });

  test("read_committed skips the batches of aborted transactions (up to their ABORT marker) and keeps committed ones and other producers'", () => {
    // 0-1 aborted (77), 2 its abort marker, 3 committed (78), 4 its marker, 5-6 a new transaction of 77 committed, 7 marker.
    const bytes = Buffer.concat([data(records(2, 0), 0), marker(0, 2), data(records(1, 3), 3, other), marker(1, 4, other), data(records(2, 5), 5), marker(1, 7)]);
    const aborted = [{ producerId: 77, firstOffset: 0 }];
    expect(read(bytes, { readCommitted: true, aborted }).values).toEqual(["v3", "v5", "v6"]);
    expect(read(bytes, { readCommitted: true, aborted }).next).toBe(8);
    // read_uncommitted: everything but the markers.
    expect(read(bytes, { readCommitted: false, aborted }).values).toEqual(["v0", "v1", "v3", "v5", "v6"]);
  });
});
