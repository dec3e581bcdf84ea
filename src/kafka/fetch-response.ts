/**
 * Kafka's Fetch response (versions 4 to 17), read without its records: each partition's record
 * batches stay one view of the response (recordBytes), which record-batch-reader.ts reads for
 * the partition the consumer asked for. Field names are the client library's (its consumer
 * handles errors, fetch sessions and preferred replicas from them); `records` is always null
 * and `abortedTransactions` empty, so the library's own read_committed filter passes over it:
 * ours is in `aborted`, read by record-batch-reader.ts.
 *
 * v4: throttle_time_ms, then per topic (name) per partition: index, error_code, high_watermark,
 * last_stable_offset, aborted_transactions, records. v5 adds log_start_offset; v7 error_code and
 * session_id at the top; v11 preferred_read_replica; v12 the flexible encoding (compact arrays
 * and strings, tagged fields: diverging_epoch, current_leader, snapshot_id); v13 topic ids for
 * names; v16 node_endpoints (a tagged field at the top).
 */
import type { AbortedTransaction } from "./record-batch-reader.ts";

export interface FetchPartitionResponse {
  partitionIndex: number;
  errorCode: number;
  highWatermark: bigint;
  lastStableOffset: bigint;
  logStartOffset: bigint;
  divergingEpoch: { epoch: number; endOffset: bigint };
  currentLeader: { leaderId: number; leaderEpoch: number };
  snapshotId: { endOffset: bigint; epoch: number };
  /** Always empty: the aborted transactions are in `aborted`. */
  abortedTransactions: [];
  aborted: AbortedTransaction[] | null;
  preferredReadReplica: number;
  /** Always null: the batches are in recordBytes. */
  records: null;
  recordBytes: Buffer | null;
}

export interface FetchResponse {
  throttleTimeMs: number;
  errorCode: number;
  sessionId: number;
  /** topicId: the topic's id (v13 on) or its name (before; the library's consumer maps it to the id). */
  responses: { topicId: string; partitions: FetchPartitionResponse[] }[];
  nodeEndpoints: { nodeId: number; host: string; port: number; rack: string | null }[];
}

export const FIRST_FETCH_VERSION = 4;
export const LAST_FETCH_VERSION = 17;

class Cursor {
  pos = 0;
  constructor(
    readonly b: Buffer,
    readonly flexible: boolean,
  ) {}

  i8(): number {
    return this.b.readInt8(this.pos++);
  }
  i16(): number {
    const v = this.b.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  i32(): number {
    const v = this.b.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  i64(): bigint {
    const v = this.b.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }
  /** An int64 as a number (producer ids and offsets stay below 2^53). */
  n64(): number {
    const v = this.b.readInt32BE(this.pos) * 4294967296 + this.b.readUInt32BE(this.pos + 4);
    this.pos += 8;
    return v;
  }
  uvarint(): number {
    let v = 0;
    let scale = 1;
    for (;;) {
      const byte = this.b[this.pos++];
      if (byte === undefined) throw new RangeError("the Fetch response ends inside a varint");
      v += (byte & 0x7f) * scale;
      if (byte < 0x80) return v;
      scale *= 128;
    }
  }
  /** An array's length; -1 for null. */
  count(): number {
    return this.flexible ? this.uvarint() - 1 : this.i32();
  }
  string(): string | null {
    const n = this.flexible ? this.uvarint() - 1 : this.i16();
    if (n < 0) return null;
    const s = this.b.toString("utf8", this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  uuid(): string {
    const hex = this.b.toString("hex", this.pos, (this.pos += 16));
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
  bytes(): Buffer | null {
    const n = this.flexible ? this.uvarint() - 1 : this.i32();
    if (n < 0) return null;
    if (this.pos + n > this.b.length) throw new RangeError(`the Fetch response ends inside a partition's records (${n} bytes announced, ${this.b.length - this.pos} left)`);
    return this.b.subarray(this.pos, (this.pos += n));
  }
  /** Tagged fields: `read(tag)` reads the known ones, the others are skipped. */
  tags(read?: (tag: number) => boolean): void {
    if (!this.flexible) return;
    for (let n = this.uvarint(); n > 0; n--) {
      const tag = this.uvarint();
      const size = this.uvarint();
      const end = this.pos + size;
      if (!read?.(tag)) this.pos = end;
    }
  }
}

/**
 * Reads a Fetch response body of `version`. Returns it with the errors it carries, by the
 * path the library's ResponseError names them with.
 */
export function parseFetchResponse(version: number, body: Buffer): { response: FetchResponse; errors: [string, number][] } {
  const c = new Cursor(body, version >= 12);
  const errors: [string, number][] = [];
  const throttleTimeMs = c.i32();
  const errorCode = version >= 7 ? c.i16() : 0;
  if (errorCode !== 0) errors.push(["", errorCode]);
  const sessionId = version >= 7 ? c.i32() : 0;
  const responses: FetchResponse["responses"] = [];
  for (let i = 0, topics = c.count(); i < topics; i++) {
    const topicId = version >= 13 ? c.uuid() : (c.string() ?? "");
    const partitions: FetchPartitionResponse[] = [];
    for (let j = 0, n = c.count(); j < n; j++) {
      const p: FetchPartitionResponse = {
        partitionIndex: c.i32(),
        errorCode: c.i16(),
        highWatermark: c.i64(),
        lastStableOffset: c.i64(),
        logStartOffset: version >= 5 ? c.i64() : -1n,
        divergingEpoch: { epoch: -1, endOffset: -1n },
        currentLeader: { leaderId: -1, leaderEpoch: -1 },
        snapshotId: { endOffset: -1n, epoch: -1 },
        abortedTransactions: [],
        aborted: null,
        preferredReadReplica: -1,
        records: null,
        recordBytes: null,
      };
      const aborted = c.count();
      if (aborted >= 0) {
        p.aborted = [];
        for (let k = 0; k < aborted; k++) {
          p.aborted.push({ producerId: c.n64(), firstOffset: c.n64() });
          c.tags();
        }
      }
      if (version >= 11) p.preferredReadReplica = c.i32();
      p.recordBytes = c.bytes();
      c.tags((tag) => {
        if (tag === 0) p.divergingEpoch = { epoch: c.i32(), endOffset: c.i64() };
        else if (tag === 1) p.currentLeader = { leaderId: c.i32(), leaderEpoch: c.i32() };
        else if (tag === 2) p.snapshotId = { endOffset: c.i64(), epoch: c.i32() };
        else return false;
        return true;
      });
      if (p.errorCode !== 0) errors.push([`/responses/${i}/partitions/${j}`, p.errorCode]);
      partitions.push(p);
    }
    c.tags();
    responses.push({ topicId, partitions });
  }
  const response: FetchResponse = { throttleTimeMs, errorCode, sessionId, responses, nodeEndpoints: [] };
  c.tags((tag) => {
    if (tag !== 0) return false;
    for (let i = 0, n = c.count(); i < n; i++) {
      response.nodeEndpoints.push({ nodeId: c.i32(), host: c.string() ?? "", port: c.i32(), rack: c.string() });
      c.tags();
    }
    return true;
  });
  return { response, errors };
}
