/**
 * Our Fetch response reader (src/kafka/fetch-response.ts, fetch-api.ts) against the Kafka client
 * library's, for every Fetch version the library has: the same fields for the same bytes, the
 * same records once our batch reader reads a partition's record bytes, a response spanning
 * several socket reads, and the library's ResponseError (with the response) for partition errors,
 * which its consumer's retries and our OFFSET_OUT_OF_RANGE handling read.
 */
import { describe, expect, test } from "bun:test";
import * as kafka from "@platformatic/kafka";
import { fetchConnectionPool, fetchResponseParser, libraryCrc32c, libraryInflate } from "../../src/kafka/fetch-api.ts";
import { parseFetchResponse } from "../../src/kafka/fetch-response.ts";
import { encodeRecordBatch } from "../../src/kafka/record-batch.ts";
import { type FetchedRecord, readRecordBatches } from "../../src/kafka/record-batch-reader.ts";

interface PartitionSpec {
  index: number;
  errorCode?: number;
  aborted: { producerId: number; firstOffset: number }[] | null;
  records: Buffer | null;
  currentLeader?: { leaderId: number; leaderEpoch: number };
}
interface TopicSpec {
  name: string;
  id: string;
  partitions: PartitionSpec[];
}

/** Writes a Fetch response body of `version` (what a broker sends after the response header). */
function encodeFetchResponse(version: number, topics: TopicSpec[]): Buffer {
  const flexible = version >= 12;
  const parts: Buffer[] = [];
  const int = (n: number, size: 1 | 2 | 4) => {
    const b = Buffer.alloc(size);
    if (size === 1) b.writeInt8(n);
    else if (size === 2) b.writeInt16BE(n);
    else b.writeInt32BE(n);
    parts.push(b);
  };
  const long = (n: bigint | number) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(n));
    parts.push(b);
  };
  const uvarint = (n: number) => {
    const out: number[] = [];
    while (n >= 0x80) {
      out.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    out.push(n);
    parts.push(Buffer.from(out));
  };
  const count = (n: number) => (flexible ? uvarint(n + 1) : int(n, 4));
  const tags = () => flexible && uvarint(0);
  int(7, 4); // throttle_time_ms
  if (version >= 7) {
    int(0, 2);
    int(1234, 4); // session_id
  }
  count(topics.length);
  for (const t of topics) {
    if (version >= 13) parts.push(Buffer.from(t.id.replaceAll("-", ""), "hex"));
    else if (flexible) {
      uvarint(Buffer.byteLength(t.name) + 1);
      parts.push(Buffer.from(t.name));
    } else {
      int(Buffer.byteLength(t.name), 2);
      parts.push(Buffer.from(t.name));
    }
    count(t.partitions.length);
    for (const p of t.partitions) {
      int(p.index, 4);
      int(p.errorCode ?? 0, 2);
      long(100 + p.index); // high_watermark
      long(90 + p.index); // last_stable_offset
      if (version >= 5) long(3); // log_start_offset
      if (p.aborted === null) count(-1);
      else {
        count(p.aborted.length);
        for (const a of p.aborted) {
          long(a.producerId);
          long(a.firstOffset);
          tags();
        }
      }
      if (version >= 11) int(-1, 4); // preferred_read_replica
      if (p.records === null) count(-1);
      else {
        count(p.records.length);
        parts.push(p.records);
      }
      if (flexible) {
        if (p.currentLeader) {
          uvarint(1);
          uvarint(1);
          uvarint(8);
          int(p.currentLeader.leaderId, 4);
          int(p.currentLeader.leaderEpoch, 4);
        } else uvarint(0);
      }
    }
    tags();
  }
  tags();
  return Buffer.concat(parts);
}

const batch = (values: string[], base: number) => {
  const b = encodeRecordBatch(
    values.map((v, i) => ({ topic: "x", value: Buffer.from(v), key: i === 0 ? Buffer.from("k") : null, timestamp: 1_700_000_000_000 + i })),
    {},
    -1,
  );
  b.writeBigInt64BE(BigInt(base), 0);
  return b;
};

const TOPICS: TopicSpec[] = [
  {
    name: "orders",
    id: "0123abcd-4567-89ef-0123-456789abcdef",
    partitions: [
      { index: 0, aborted: null, records: Buffer.concat([batch(["a", "b"], 10), batch(["c"], 12)]), currentLeader: { leaderId: 2, leaderEpoch: 9 } },
      { index: 1, aborted: [{ producerId: 5, firstOffset: 40 }], records: Buffer.alloc(0) },
      { index: 2, aborted: null, records: null },
    ],
  },
  { name: "ünïcode", id: "fedcba98-7654-3210-fedc-ba9876543210", partitions: [{ index: 7, aborted: [], records: batch(["z"], 0) }] },
];

const apis = kafka as unknown as Record<string, { parseResponse: (c: number, k: number, v: number, r: unknown) => LibraryResponse } | undefined>;
interface LibraryResponse {
  throttleTimeMs: number;
  sessionId: number;
  responses: { topicId: string; partitions: { partitionIndex: number; errorCode: number; highWatermark: bigint; lastStableOffset: bigint; logStartOffset: bigint; preferredReadReplica: number; abortedTransactions: { producerId: bigint; firstOffset: bigint }[] | null; records: { records: { value: Buffer }[] }[] | null }[] }[];
}

const readAll = (bytes: Buffer | null) => {
  const out: FetchedRecord[] = [];
  if (bytes) readRecordBatches(bytes, 0, bytes.length, { topic: "x", partition: 0, fetchOffset: 0, aborted: null, readCommitted: false }, out, libraryCrc32c(kafka), libraryInflate(kafka));
  return out.map((r) => r.value.toString());
};

describe("Fetch response", () => {
  const versions = Array.from({ length: 14 }, (_, i) => i + 4).filter((v) => apis[`fetchV${v}`]);
  test("the library has the Fetch versions we read", () => {
    expect(versions).toContain(4);
    expect(versions).toContain(17);
  });

  for (const version of versions) {
    test(`version ${version}: the library's fields and records for the same bytes`, () => {
      const body = encodeFetchResponse(version, TOPICS);
      const theirs = apis[`fetchV${version}`]!.parseResponse(1, 1, version, kafka.Reader.from(body));
      const { response: ours, errors } = parseFetchResponse(version, body);
      expect(errors).toEqual([]);
      expect([ours.throttleTimeMs, ours.sessionId]).toEqual([theirs.throttleTimeMs, theirs.sessionId]);
      expect(ours.responses.map((t) => t.topicId)).toEqual(theirs.responses.map((t) => t.topicId));
      expect(ours.responses.map((t) => t.topicId)).toEqual(version >= 13 ? TOPICS.map((t) => t.id) : TOPICS.map((t) => t.name));
      ours.responses.forEach((t, i) => {
        t.partitions.forEach((p, j) => {
          const q = theirs.responses[i].partitions[j];
          expect([p.partitionIndex, p.errorCode, p.highWatermark, p.lastStableOffset, p.logStartOffset, p.preferredReadReplica]).toEqual([q.partitionIndex, q.errorCode, q.highWatermark, q.lastStableOffset, q.logStartOffset, q.preferredReadReplica]);
          expect(p.aborted).toEqual(q.abortedTransactions?.map((a) => ({ producerId: Number(a.producerId), firstOffset: Number(a.firstOffset) })) ?? null);
          expect(readAll(p.recordBytes)).toEqual((q.records ?? []).flatMap((b) => b.records.map((r) => r.value.toString())));
          // What the library's consumer reads of a partition: its own read_committed filter passes over ours.
          expect([p.records, p.abortedTransactions]).toEqual([null, []]);
        });
      });
      if (version >= 12) expect(ours.responses[0].partitions[0].currentLeader).toEqual({ leaderId: 2, leaderEpoch: 9 });
      expect(readAll(ours.responses[0].partitions[0].recordBytes)).toEqual(["a", "b", "c"]);
    });
  }

  test("a response spanning several socket reads reads the same", () => {
    const body = encodeFetchResponse(17, TOPICS);
    const chunks = [body.subarray(0, 50), body.subarray(50, 51), body.subarray(51, 140), body.subarray(140)];
    const parse = fetchResponseParser(kafka, 17);
    const whole = parse(1, 1, 17, kafka.Reader.from(body)) as ReturnType<typeof parseFetchResponse>["response"];
    // The client's reader over its buffer of socket reads (its DynamicBuffer class, taken from a reader).
    const DynamicBuffer = (kafka.Reader.from(Buffer.alloc(0)).buffer as object).constructor as new (buffers: Buffer[]) => never;
    const split = parse(1, 1, 17, new kafka.Reader(new DynamicBuffer(chunks))) as typeof whole;
    expect(readAll(split.responses[0].partitions[0].recordBytes)).toEqual(["a", "b", "c"]);
    expect(JSON.stringify(split, (_, v) => (typeof v === "bigint" ? String(v) : v))).toEqual(JSON.stringify(whole, (_, v) => (typeof v === "bigint" ? String(v) : v)));
  });

  test("partition errors raise the library's ResponseError with the response, by path (OFFSET_OUT_OF_RANGE here)", () => {
    const topics = [{ ...TOPICS[0], partitions: [{ index: 4, errorCode: 1, aborted: null, records: null }, ...TOPICS[0].partitions] }];
    const body = encodeFetchResponse(16, topics);
    let err: unknown;
    try {
      fetchResponseParser(kafka, 16)(1, 1, 16, kafka.Reader.from(body));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(kafka.ResponseError);
    const e = err as { errors: { apiId: string; path: string }[]; response: ReturnType<typeof parseFetchResponse>["response"] };
    expect(e.errors.map((x) => [x.apiId, x.path])).toEqual([["OFFSET_OUT_OF_RANGE", "/responses/0/partitions/0"]]);
    expect(e.response.responses[0].partitions[0]).toMatchObject({ partitionIndex: 4, errorCode: 1, logStartOffset: 3n, highWatermark: 104n });
  });

  test("a response cut inside a partition's records is an error, not records read past the end", () => {
    const body = encodeFetchResponse(11, TOPICS);
    const recordsAt = body.indexOf(TOPICS[0].partitions[0].records!);
    expect(recordsAt).toBeGreaterThan(0);
    expect(() => parseFetchResponse(11, body.subarray(0, recordsAt + 5))).toThrow(/ends inside a partition's records/);
  });
});

describe("the hooks into the client's consumer", () => {
  test("fetches get a connection pool of their own, not the one of the group's requests (a long fetch would hold up heartbeats and commits)", async () => {
    const consumer = new kafka.Consumer({ clientId: "hooks", bootstrapBrokers: ["127.0.0.1:1"], groupId: "g" });
    try {
      const pool = fetchConnectionPool(consumer);
      expect(pool).not.toBeNull();
      expect(pool).toBeInstanceOf(kafka.ConnectionPool);
      // The client's own pool (its group's requests): one, and not the fetches' one.
      const clients = Object.getOwnPropertySymbols(consumer)
        .map((s) => (consumer as unknown as Record<symbol, unknown>)[s])
        .filter((v) => v instanceof kafka.ConnectionPool);
      expect(clients.length).toBe(1);
      expect(clients[0]).not.toBe(pool);
      await new Promise<void>((resolve) => pool!.close(() => resolve()));
    } finally {
      await consumer.close(true);
    }
  });
});
