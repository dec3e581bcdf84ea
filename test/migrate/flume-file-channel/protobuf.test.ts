import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { crc32 } from "node:zlib";
import { decodeCheckpointMeta, decodeLogFileMeta, decodePut, decodeTake, decodeTransactionEventHeader } from "../../../src/migrate/flume-file-channel/messages.ts";
import { ProtoReader, ProtobufError, delimited } from "../../../src/migrate/flume-file-channel/protobuf.ts";
import { FIXTURE_NAMES, FLUME_FIXTURES } from "../../support/flume-file-channel.ts";

// A few wire-format writers, enough to build messages the decoders must accept or refuse.
const varint = (n: number): number[] => {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
};
const tag = (field: number, wire: number) => varint(field * 8 + wire);
const fixed32 = (field: number, v: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32LE(v);
  return [...tag(field, 5), ...b];
};
const fixed64 = (field: number, v: number) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt(v));
  return [...tag(field, 1), ...b];
};
const bytes = (field: number, content: number[] | Buffer) => [...tag(field, 2), ...varint(content.length), ...content];
const str = (field: number, s: string) => bytes(field, Buffer.from(s, "utf8"));
const delimit = (content: number[]) => Buffer.from([...varint(content.length), ...content]);

describe("Flume's metadata files decode as Flume 1.11 wrote them (every fixture)", () => {
  for (const name of FIXTURE_NAMES) {
    test(`${name}: checkpoint.meta matches the checkpoint file, every log-N.meta names its file`, () => {
      const dir = path.join(FLUME_FIXTURES, name);
      const ckpt = readFileSync(path.join(dir, "checkpoint", "checkpoint"));
      const meta = decodeCheckpointMeta(readFileSync(path.join(dir, "checkpoint", "checkpoint.meta")));
      expect(meta.version).toBe(3);
      expect(BigInt(meta.writeOrderID)).toBe(ckpt.readBigInt64BE(8));
      // README: queueSize 2000 / 700, queueHead 9998 / 1496
      expect([meta.queueSize, meta.queueHead]).toEqual(name === "pending-clean" ? [2000, 9998] : [700, 1496]);
      expect(meta.activeLogs.reduce((n, a) => n + a.count, 0)).toBe(meta.queueSize);
      const logs = readdirSync(path.join(dir, "data")).filter((n) => n.endsWith(".meta"));
      expect(logs.length).toBe(name === "pending-clean" ? 4 : 6);
      for (const m of logs) {
        const lm = decodeLogFileMeta(readFileSync(path.join(dir, "data", m)));
        expect(lm.version).toBe(3);
        expect(`log-${lm.logFileID}.meta`).toBe(m);
        expect(lm.encrypted).toBe(false);
        // A checkpoint marks the files in use then (the newest, those with queued events).
        expect(lm.checkpointWriteOrderID).toBeLessThanOrEqual(meta.writeOrderID);
        if (lm.logFileID === logs.length) expect(lm.checkpointWriteOrderID).toBe(meta.writeOrderID);
      }
    });
  }
});

describe("the hand-written protobuf decoder", () => {
  test("multi-byte varints, unknown fields of every wire type are skipped, as protobuf-java does", () => {
    const header = [...fixed32(1, 2), ...varint(99 * 8 + 0), ...varint(300), ...fixed64(2, 1796113582859), ...bytes(50, [1, 2, 3]), ...fixed32(51, 7), ...fixed64(3, 42), ...fixed64(52, 1)];
    const buf = delimit(header);
    const m = delimited(buf, 0, buf.length);
    expect(decodeTransactionEventHeader(buf, m.start, m.end)).toEqual({ type: 2, transactionID: 1796113582859, writeOrderID: 42 });
  });

  test("a Put with a 300-byte body, a header without value and its CRC32", () => {
    const body = Buffer.from("ü".repeat(150), "utf8");
    const event = [...bytes(1, [...str(1, "größe"), ...str(2, "XL")]), ...bytes(1, str(1, "empty")), ...bytes(2, body)];
    const put = Buffer.from([...bytes(1, event), ...fixed64(2, crc32(body))]);
    const e = decodePut(put, 0, put.length, true);
    expect(e?.headers).toEqual({ größe: "XL", empty: "" });
    expect(Buffer.from(e?.body ?? []).equals(body)).toBe(true);
    const wrong = Buffer.from([...bytes(1, event), ...fixed64(2, crc32(body) ^ 1)]);
    expect(() => decodePut(wrong, 0, wrong.length, false)).toThrow(/CRC32/);
  });

  test("a header named __proto__ is kept as a header", () => {
    const event = [...bytes(1, [...str(1, "__proto__"), ...str(2, "x")]), ...bytes(2, [])];
    const put = Buffer.from(bytes(1, event));
    const e = decodePut(put, 0, put.length, true);
    expect(Object.keys(e?.headers ?? {})).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(e?.headers)).toBe(Object.prototype);
  });

  test("missing required fields, wrong wire types, truncation and overlong varints are errors", () => {
    const take = Buffer.from(fixed32(1, 3));
    expect(() => decodeTake(take, 0, take.length)).toThrow(new ProtobufError("Take lacks its required field offset"));
    const wrongType = Buffer.from([...fixed64(1, 3), ...fixed32(2, 0)]);
    expect(() => decodeTake(wrongType, 0, wrongType.length)).toThrow(/field fileID has wire type 1, expected 5/);
    const cut = Buffer.from(fixed32(1, 3)).subarray(0, 3);
    expect(() => decodeTake(cut, 0, cut.length)).toThrow(/runs past the end/);
    const long = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    expect(() => new ProtoReader(long, 0, long.length).varint()).toThrow(ProtobufError);
    const group = Buffer.from(tag(9, 3));
    expect(() => decodeTake(group, 0, group.length)).toThrow(/unsupported wire type 3/);
    expect(() => delimited(Buffer.from([10, 1, 2]), 0, 3)).toThrow(/message of 10 bytes runs past the end/);
  });

  test("a log-N.meta with an encryption field says so", () => {
    const meta = delimit([...fixed32(1, 3), ...fixed32(2, 7), ...fixed64(3, 0), ...fixed64(4, 0), ...bytes(5, [...str(1, "AESCTRNOPADDING"), ...str(2, "key-0")])]);
    expect(decodeLogFileMeta(meta)).toMatchObject({ version: 3, logFileID: 7, encrypted: true, backupCheckpointPosition: 0 });
  });
});
