/**
 * The Kafka source's events (SourceRecordEvent): a range of the batch's copy of the values, with
 * Flume's headers made only when something reads them, and then exactly what Flume's source sets.
 */
import { describe, expect, test } from "bun:test";
import { bodyLength, bodyText, copyBody, readHeaders } from "../../src/core/event.ts";
import { encodeRecordBatch } from "../../src/kafka/record-batch.ts";
import { type FetchedRecord, readRecordBatches } from "../../src/kafka/record-batch-reader.ts";
import { keyText, setSourceHeaders, type SourceHeaderShape, SourceRecordEvent, type SourceRun } from "../../src/kafka/records.ts";
import { CopiedValues } from "../../src/kafka/response-release.ts";
import { crc32c } from "../../src/io/crc32c.ts";

const PLAIN: SourceHeaderShape = { topicHeader: "topic", timestampHeader: null, mapped: null };

/** Records of topic t partition 3 from offset 40, as read out of a fetch response. */
function records(messages: { value: string; key?: string; headers?: Record<string, string>; timestamp?: number }[]): FetchedRecord[] {
  const batch = encodeRecordBatch(
    messages.map((m, i) => ({
      topic: "t",
      value: Buffer.from(m.value),
      key: m.key === undefined ? undefined : Buffer.from(m.key),
      headers: m.headers ? new Map(Object.entries(m.headers).map(([k, v]) => [Buffer.from(k), Buffer.from(v)])) : undefined,
      timestamp: m.timestamp ?? 1_700_000_000_000 + i,
    })),
  );
  batch.writeBigInt64BE(40n, 0);
  const out: FetchedRecord[] = [];
  readRecordBatches(batch, 0, batch.length, { topic: "t", partition: 3, fetchOffset: 40, aborted: null, readCommitted: false }, out, crc32c, () => {
    throw new Error("no compressed batch here");
  });
  return out;
}

/** The events the source makes of `msgs` (plain records), as KafkaSource.eventsOf does. */
function events(msgs: FetchedRecord[], shape = PLAIN): SourceRecordEvent[] {
  const copied = new CopiedValues(msgs);
  const run: SourceRun = { shape, topic: "t", partition: 3 };
  return msgs.map((m, i) => {
    const at = copied.starts[i];
    const e = new SourceRecordEvent(copied.buffers[i], at, at + m.valueLength, run, m.offset, keyText(m), m.timestamp);
    if (SourceRecordEvent.needsRecord(shape, m)) e.headers = setSourceHeaders({}, run, m.offset, keyText(m), m.timestamp, m.headers);
    return e;
  });
}

describe("the Kafka source's events", () => {
  test("the body is the record's value, a copy out of the response; bodyLength and copyBody read it without a view", () => {
    const msgs = records([{ value: "first" }, { value: "second value" }]);
    const [a, b] = events(msgs);
    expect(bodyLength(b)).toBe(12);
    const out = Buffer.alloc(14, 0x2e);
    copyBody(b, out, 1);
    expect(out.toString()).toBe(".second value.");
    expect(bodyText(a)).toBe("first");
    expect(bodyText(b)).toBe("second value");
    expect(b.body.buffer).not.toBe(msgs[1].bytes.buffer);
  });

  test("readHeaders gives Flume's headers (the record's Kafka timestamp, topic, partition, offset, key when the record has one)", () => {
    const [a, b] = events(records([{ value: "x", key: "k1" }, { value: "y" }]));
    expect(readHeaders(a)).toEqual({ timestamp: "1700000000000", topic: "t", partition: "3", offset: "40", key: "k1" });
    expect(b.headers).toEqual({ timestamp: "1700000000001", topic: "t", partition: "3", offset: "41" });
    expect(Object.keys(readHeaders(a))).toEqual(["timestamp", "topic", "partition", "offset", "key"]);
  });

  test("headers are made once: what is set on them stays, and replacing them replaces them", () => {
    const [a, b] = events(records([{ value: "x" }, { value: "y" }]));
    a.headers.extra = "1";
    expect(readHeaders(a)).toEqual({ timestamp: "1700000000000", topic: "t", partition: "3", offset: "40", extra: "1" });
    b.headers = { only: "this" };
    expect(readHeaders(b)).toEqual({ only: "this" });
    expect(JSON.parse(JSON.stringify(b))).toEqual({ headers: { only: "this" }, body: expect.anything() });
  });

  test("the key header is text taken while the response is there: it stays when the response is freed", () => {
    const msgs = records([{ value: "x", key: "clé" }]);
    const [e] = events(msgs);
    (msgs[0].bytes.buffer as ArrayBuffer & { transfer(n: number): ArrayBuffer }).transfer(0);
    expect(e.headers.key).toBe("clé");
  });

  test("an empty key is an empty key header and a record without a key has none, as Flume's source", () => {
    const [e, f] = events(records([{ value: "x", key: "" }, { value: "y" }]));
    expect(readHeaders(e).key).toBe("");
    expect("key" in readHeaders(f)).toBe(false);
  });

  test("topicHeader, setTopicHeader = false, timestampHeader and header.NAME mappings", () => {
    const msgs = records([{ value: "x", headers: { trace: "t-1", other: "o" }, timestamp: 1_600_000_000_123 }, { value: "y" }]);
    // header.NAME = KAFKA_HEADER: the event header NAME gets the record header KAFKA_HEADER.
    const [a, b] = events(msgs, { topicHeader: "kafkaTopic", timestampHeader: "kts", mapped: { traceId: "trace" } });
    expect(readHeaders(a)).toEqual({ timestamp: "1600000000123", kts: "1600000000123", kafkaTopic: "t", partition: "3", offset: "40", traceId: "t-1" });
    expect(readHeaders(b)).toEqual({ timestamp: "1700000000001", kts: "1700000000001", kafkaTopic: "t", partition: "3", offset: "41" });
    const [c] = events(msgs, { topicHeader: null, timestampHeader: null, mapped: { o2: "other" } });
    expect(readHeaders(c)).toEqual({ timestamp: "1600000000123", partition: "3", offset: "40", o2: "o" });
  });

  test("setSourceHeaders keeps the headers a FlumeEvent already has (timestamp, topic, partition, offset), as Flume's source", () => {
    const run: SourceRun = { shape: PLAIN, topic: "t", partition: 3 };
    const h = setSourceHeaders({ timestamp: "1", topic: "mine", offset: "9", a: "b" }, run, 40, null, 5);
    expect(h).toEqual({ timestamp: "1", topic: "mine", offset: "9", a: "b", partition: "3" });
  });
});
