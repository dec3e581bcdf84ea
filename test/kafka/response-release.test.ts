/**
 * The Kafka source's events hold copies of the record values (CopiedValues), and a fetch
 * response is freed (detached) once the batches it fed are committed (ResponseRelease): the
 * events keep their bodies, a response with records not taken yet is kept, and only buffers a
 * response had alone are ever freed.
 */
import { describe, expect, test } from "bun:test";
import { crc32c } from "../../src/io/crc32c.ts";
import { encodeRecordBatch } from "../../src/kafka/record-batch.ts";
import { type FetchedRecord, readRecordBatches } from "../../src/kafka/record-batch-reader.ts";
import { CopiedValues, noteResponseBody, ResponseRelease } from "../../src/kafka/response-release.ts";

/** A Fetch response as a socket read brings it: a 9-byte frame header, then the body (here: one partition's record batch). */
function response(values: string[], base = 0): { body: Buffer; records: FetchedRecord[] } {
  const batch = encodeRecordBatch(values.map((v, i) => ({ topic: "t", value: Buffer.from(v), timestamp: 1_700_000_000_000 + i })));
  batch.writeBigInt64BE(BigInt(base), 0);
  const read = Buffer.alloc(9 + batch.length);
  batch.copy(read, 9);
  const body = read.subarray(9);
  noteResponseBody(body);
  const records: FetchedRecord[] = [];
  readRecordBatches(body, 0, body.length, { topic: "t", partition: 0, fetchOffset: base, aborted: null, readCommitted: false }, records, crc32c, () => {
    throw new Error("no compressed batch here");
  });
  return { body, records };
}

/** Values of about 20 kB in all: a response large enough to be released. */
const values = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}:`.padEnd(1000, "x"));

describe("fetch responses released once their batches are committed", () => {
  test("the copies read as the values, in order, and share no memory with the response", () => {
    const a = response(values(20, "a"));
    const b = response(values(20, "b"), 20);
    const batch = [...a.records.slice(5), ...b.records.slice(0, 5)];
    const copied = new CopiedValues(batch);
    expect(copied.values.map((v) => v.toString())).toEqual(batch.map((m) => m.value.toString()));
    expect(copied.values.some((v) => v.buffer === a.body.buffer || v.buffer === b.body.buffer)).toBe(false);
    // One copy a run of records from one response.
    expect(copied.sources).toEqual([a.body.buffer, b.body.buffer]);
  });

  test("a committed batch frees the responses before the one its last record came from; the events' copies stay whole", () => {
    const a = response(values(20, "a"));
    const b = response(values(20, "b"), 20);
    const release = new ResponseRelease();
    const first = new CopiedValues([...a.records, ...b.records.slice(0, 10)]);
    const expected = first.values.map((v) => v.toString());
    release.committed(first.sources);
    expect(a.body.length).toBe(0);
    // b still has records to take.
    expect(b.body.length).toBeGreaterThan(20_000);
    expect(b.records[15].value.toString()).toBe(values(20, "b")[15]);
    expect(first.values.map((v) => v.toString())).toEqual(expected);
    const c = response(values(20, "c"), 40);
    release.committed(new CopiedValues([...b.records.slice(10), ...c.records.slice(0, 1)]).sources);
    expect(b.body.length).toBe(0);
    expect(c.body.length).toBeGreaterThan(20_000);
  });

  test("a buffer that holds more than the response (a socket read with the next one's start), or a small one, is never freed", () => {
    const shared = Buffer.alloc(40_000);
    const body = shared.subarray(9, 30_000);
    noteResponseBody(body);
    const small = Buffer.alloc(2_000);
    noteResponseBody(small.subarray(9));
    const release = new ResponseRelease();
    release.committed([shared.buffer, small.buffer, response(values(20, "z")).body.buffer]);
    release.committed([Buffer.alloc(30_000).buffer]);
    expect(shared.length).toBe(40_000);
    expect(small.length).toBe(2_000);
  });
});
