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
import { decodeFlumeEvent, encodeFlumeEvent } from "../../src/kafka/flume-event.ts";
import { CopiedValues, freeIfWhole, noteResponseBody, ResponseRelease, TakenResponses, ValueCopies } from "../../src/kafka/response-release.ts";

/** A Fetch response as a socket read brings it: a 9-byte frame header, then the body (here: one partition's record batch). */
function response(values: (string | Buffer)[], base = 0): { body: Buffer; records: FetchedRecord[] } {
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
    const copies = batch.map((_, i) => copied.value(i));
    expect(copies.map((v) => v.toString())).toEqual(batch.map((m) => m.value.toString()));
    expect(copies.some((v) => v.buffer === a.body.buffer || v.buffer === b.body.buffer)).toBe(false);
    // One copy a run of records from one response.
    expect(copied.sources).toEqual([a.body.buffer, b.body.buffer]);
  });

  test("a committed batch frees the responses before the one its last record came from; the events' copies stay whole", () => {
    const a = response(values(20, "a"));
    const b = response(values(20, "b"), 20);
    const release = new ResponseRelease();
    const first = new CopiedValues([...a.records, ...b.records.slice(0, 10)]);
    const firstValues = [...a.records, ...b.records.slice(0, 10)].map((_, i) => first.value(i));
    const expected = firstValues.map((v) => v.toString());
    release.committed(first.sources);
    expect(a.body.length).toBe(0);
    // b still has records to take.
    expect(b.body.length).toBeGreaterThan(20_000);
    expect(b.records[15].value.toString()).toBe(values(20, "b")[15]);
    expect(firstValues.map((v) => v.toString())).toEqual(expected);
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

/** A FlumeEvent of about 1 kB a record, as the Kafka channel writes them (parseAsFlumeEvent). */
const flumeValues = (n: number, tag: string) => Array.from({ length: n }, (_, i) => encodeFlumeEvent({ headers: { n: `${tag}${i}` }, body: Buffer.from(`${tag}${i}:`.padEnd(1000, "x")) }));

/** A take as the Kafka channel makes it: the event decoded from a copy of the value, the response counted the first time. */
function take(responses: TakenResponses, copies: ValueCopies, m: FetchedRecord, first = true): { n: string; body: string; buffer: ArrayBufferLike } {
  if (first) responses.taken(m.bytes);
  const e = decodeFlumeEvent(copies.copy(m));
  return { n: (e.headers as Record<string, string>).n, body: e.body.toString(), buffer: e.body.buffer };
}

describe("fetch responses released once no open take and no buffered record needs them (the Kafka channel)", () => {
  test("a take's event body is a copy, whole after its response was released", () => {
    const a = response(flumeValues(20, "a"));
    const b = response(flumeValues(20, "b"), 20);
    const responses = new TakenResponses();
    const copies = new ValueCopies();
    const events = a.records.map((m) => take(responses, copies, m));
    const next = take(responses, copies, b.records[0]);
    expect(events.some((e) => e.buffer === a.body.buffer)).toBe(false);
    responses.committed([...a.records, b.records[0]]);
    expect(a.body.length).toBe(0);
    expect(events.map((e) => e.body)).toEqual(flumeValues(20, "a").map((v) => decodeFlumeEvent(v).body.toString()));
    expect(events[19].n).toBe("a19");
    // b has records not taken yet: kept.
    expect(b.body.length).toBeGreaterThan(20_000);
    expect(next.n).toBe("b0");
    expect(decodeFlumeEvent(b.records[19].value).body.toString().startsWith("b19:")).toBe(true);
  });

  test("concurrent takes: a response is kept while another open take holds its records, and a rolled-back take's records wait in it", () => {
    const a = response(flumeValues(20, "a"));
    const b = response(flumeValues(20, "b"), 20);
    const c = response(flumeValues(20, "c"), 40);
    const responses = new TakenResponses();
    const copies = new ValueCopies();
    // Runner 1 takes a0..a9, runner 2 takes a10..b4; runner 2 commits first.
    const one = a.records.slice(0, 10);
    const two = [...a.records.slice(10), ...b.records.slice(0, 5)];
    one.forEach((m) => take(responses, copies, m));
    two.forEach((m) => take(responses, copies, m));
    responses.committed(two);
    expect(a.body.length).toBeGreaterThan(20_000);
    // Runner 1 rolls back; its records are taken again (not counted again) by runner 3, with the rest of b and c0.
    const three = [...one, ...b.records.slice(5), c.records[0]];
    const again = three.map((m, i) => take(responses, copies, m, i >= one.length));
    expect(again.slice(0, 10).map((e) => e.n)).toEqual(one.map((_, i) => `a${i}`));
    // Another commit while runner 3 is open frees nothing it holds.
    responses.committed([]);
    expect(a.body.length).toBeGreaterThan(20_000);
    expect(b.body.length).toBeGreaterThan(20_000);
    responses.committed(three);
    expect(a.body.length).toBe(0);
    expect(b.body.length).toBe(0);
    expect(c.body.length).toBeGreaterThan(20_000);
    expect(again.map((e) => e.n)).toEqual([...one.map((_, i) => `a${i}`), ...Array.from({ length: 15 }, (_, i) => `b${i + 5}`), "c0"]);
    expect(again[25].body.startsWith("c0:")).toBe(true);
  });

  test("a rolled-back take's records dropped by the consumer (a rebalance) no longer keep their response", () => {
    const a = response(flumeValues(20, "a"));
    const b = response(flumeValues(20, "b"), 20);
    const responses = new TakenResponses();
    const copies = new ValueCopies();
    // A take of a0..a9 rolled back: its records wait in the consumer's buffer, a10..a19 after them; a later take from b commits.
    a.records.slice(0, 10).forEach((m) => take(responses, copies, m));
    take(responses, copies, b.records[0]);
    responses.committed([b.records[0]]);
    expect(a.body.length).toBeGreaterThan(20_000);
    // The rebalance drops the buffer; only the taken ones were counted.
    responses.dropped(a.records.slice(0, 10));
    expect(a.body.length).toBe(0);
    expect(b.body.length).toBeGreaterThan(20_000);
  });

  test("copies of values over a quarter of a slab get buffers of their own, the rest share slabs", () => {
    const big = response(["y".repeat(20_000), "z".repeat(100), "w".repeat(100)]);
    const copies = new ValueCopies();
    const [y, z, w] = big.records.map((m) => copies.copy(m));
    expect(y.toString()).toBe("y".repeat(20_000));
    expect(y.buffer).not.toBe(z.buffer);
    expect(z.buffer).toBe(w.buffer);
    expect(z.buffer).not.toBe(big.body.buffer);
    expect(w.toString()).toBe("w".repeat(100));
  });
});

describe("values of a run of records copied at once (the Kafka channel's takes)", () => {
  test("the values that follow in the response are found in the copy made for the first; another response or a value before it gets a new copy", () => {
    const a = response(flumeValues(20, "a"));
    const b = response(flumeValues(20, "b"), 20);
    const copies = new ValueCopies();
    const placed = (m: FetchedRecord) => {
      copies.place(m);
      return { window: copies.window, value: copies.window.subarray(copies.at, copies.at + m.valueLength) };
    };
    const first = placed(a.records[0]);
    const run = a.records.slice(1).map(placed);
    expect(run.every((p) => p.window === first.window)).toBe(true);
    expect([first, ...run].map((p) => p.value.toString("hex"))).toEqual(a.records.map((m) => m.value.toString("hex")));
    const other = placed(b.records[3]);
    expect(other.window).not.toBe(first.window);
    expect(other.value.toString("hex")).toBe(b.records[3].value.toString("hex"));
    // Taken again after a rollback: before the copy's start, so copied anew.
    const again = placed(b.records[1]);
    expect(again.window).not.toBe(other.window);
    expect(again.value.toString("hex")).toBe(b.records[1].value.toString("hex"));
    // The copies outlive their responses.
    const responses = new TakenResponses();
    for (const m of [...a.records, b.records[0]]) responses.taken(m.bytes);
    responses.committed([...a.records, b.records[0]]);
    expect(a.body.length).toBe(0);
    expect(decodeFlumeEvent(run[18].value).body.toString().startsWith("a19:")).toBe(true);
  });

  test("a copy goes no further than its response's bytes, and no further than a slab", () => {
    const small = response(flumeValues(3, "s"));
    const copies = new ValueCopies();
    copies.place(small.records[0]);
    expect(copies.window.length).toBe(small.body.length - small.records[0].valueAt);
    const large = response(values(200, "l"));
    copies.place(large.records[0]);
    expect(copies.window.length).toBe(64 * 1024);
    const past = large.records.find((m) => m.valueAt + m.valueLength > large.records[0].valueAt + 64 * 1024)!;
    copies.place(past);
    expect(copies.at).toBe(0);
    expect(copies.window.subarray(0, past.valueLength).toString()).toBe(past.value.toString());
  });
});

describe("a sent record batch freed once its request was answered", () => {
  test("only a buffer that is all of its memory and not small is freed", () => {
    const whole = Buffer.allocUnsafe(100_000);
    const part = Buffer.alloc(100_000).subarray(0, 50_000);
    const small = Buffer.alloc(1_000);
    freeIfWhole(whole);
    freeIfWhole(part);
    freeIfWhole(small);
    expect(whole.length).toBe(0);
    expect(part.length).toBe(50_000);
    expect(small.length).toBe(1_000);
  });
});
