import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import avro from "avsc";
import { bodyEvent, createEvent, type Event } from "../../src/core/event.ts";
import { AvroReader, AvroWriter } from "../../src/rpc/binary.ts";
import { RpcFrameTooLargeError, RpcProtocolError } from "../../src/rpc/errors.ts";
import { encodeFrame, FrameDecoder } from "../../src/rpc/frame.ts";
import { eventArraySize, readEventArray, writeEventArray } from "../../src/rpc/messages.ts";
import { PROTOCOL_HASH_HEX, PROTOCOL_TEXT } from "../../src/rpc/protocol.ts";
import { parseRemoteProtocol } from "../../src/rpc/remote-protocol.ts";
import { FIXTURES } from "../support/helpers.ts";

const AVRO_RPC = path.join(FIXTURES, "avro-rpc");
const eventsType = avro.Type.forSchema({
  type: "array",
  items: { type: "record", name: "AvroFlumeEvent", fields: [{ name: "headers", type: { type: "map", values: "string" } }, { name: "body", type: "bytes" }] },
});

const plain = (events: Event[]) => events.map((e) => ({ headers: { ...e.headers }, body: Buffer.from(e.body).toString("hex") }));

describe("Avro codec", () => {
  test("the protocol text is Flume's, byte for byte, and its MD5 is the handshake hash", () => {
    expect(PROTOCOL_TEXT).toBe(readFileSync(path.join(AVRO_RPC, "AvroSourceProtocol.server.json"), "utf8"));
    expect(createHash("md5").update(PROTOCOL_TEXT).digest("hex")).toBe(PROTOCOL_HASH_HEX);
  });

  test("event arrays we write are what avsc writes, and we read what avsc writes (non-ASCII, empty, long)", () => {
    const events = [
      createEvent("plain"),
      createEvent("", { "clé": "välue ☃", empty: "" }),
      createEvent(new Uint8Array(70_000).fill(7), { long: "x".repeat(300), emoji: "😀".repeat(40) }),
      createEvent("a", { host: "h" }),
      createEvent("b", { host: "h2" }),
    ];
    const w = new AvroWriter(eventArraySize(events));
    writeEventArray(w, events);
    const ours = w.finish();
    const theirs = eventsType.toBuffer(events.map((e) => ({ headers: e.headers, body: Buffer.from(e.body) })));
    expect(ours.toString("hex")).toBe(theirs.toString("hex"));
    expect(plain(readEventArray(new AvroReader(theirs)))).toEqual(plain(events));
  });

  test("events without headers (as line sources make them) are written as avsc writes them and read back with empty headers that can be written", () => {
    const events = [bodyEvent(Buffer.from("a line")), createEvent("x", { a: "1" })];
    const w = new AvroWriter(eventArraySize(events));
    writeEventArray(w, events);
    const ours = w.finish();
    const theirs = eventsType.toBuffer([{ headers: {}, body: Buffer.from("a line") }, { headers: { a: "1" }, body: Buffer.from("x") }]);
    expect(ours.toString("hex")).toBe(theirs.toString("hex"));
    const [line, tagged] = readEventArray(new AvroReader(ours));
    expect(Buffer.from(line.body).toString()).toBe("a line");
    expect(line.headers).toEqual({});
    line.headers.host = "h1";
    expect(line.headers).toEqual({ host: "h1" });
    expect(tagged.headers).toEqual({ a: "1" });
  });

  test("decoded bodies are views of the received buffer, not copies", () => {
    const buf = eventsType.toBuffer([{ headers: {}, body: Buffer.from("abc") }]);
    const [e] = readEventArray(new AvroReader(buf));
    expect(e.body.buffer).toBe(buf.buffer);
  });

  test("blocks with negative counts (and byte sizes) are read, as Avro allows", () => {
    // One block of -2 items with its byte size, then the end marker.
    const item = eventsType.toBuffer([{ headers: {}, body: Buffer.from("x") }]).subarray(1, -1);
    const w = new AvroWriter();
    w.long(-2);
    w.long(item.length * 2);
    w.raw(item);
    w.raw(item);
    w.long(0);
    expect(readEventArray(new AvroReader(w.finish())).map((e) => Buffer.from(e.body).toString())).toEqual(["x", "x"]);
  });

  test("longs round-trip up to ±2^52", () => {
    for (const n of [0, 1, -1, 63, -64, 64, 2 ** 28, -(2 ** 31), 2 ** 40, 2 ** 52, -(2 ** 52), 2 ** 52 - 1]) {
      const w = new AvroWriter(2);
      w.long(n);
      expect(new AvroReader(w.finish()).long()).toBe(n);
      const t = avro.Type.forSchema("long");
      expect(t.fromBuffer(w.finish())).toBe(n);
    }
  });

  test("truncated or lying payloads raise RpcProtocolError, never a crash", () => {
    const buf = eventsType.toBuffer([{ headers: { a: "b" }, body: Buffer.from("hello") }]);
    for (let cut = 0; cut < buf.length - 1; cut++) {
      expect(() => readEventArray(new AvroReader(buf.subarray(0, cut)))).toThrow(RpcProtocolError);
    }
    const lying = Buffer.from([0xfe, 0xff, 0xff, 0xff, 0x0f, 0x00]);
    expect(() => readEventArray(new AvroReader(lying))).toThrow(/declares/);
  });

  test("a negative or overlong length in a header name, header value or body is refused with what and where", () => {
    // One event: block count 1 (zig-zag 2), then its headers map and body.
    const read = (bytes: number[]) => () => readEventArray(new AvroReader(Buffer.from(bytes)));
    expect(read([0x02, 0x02, 0x01])).toThrow("negative Avro string length -1 at byte 3");
    expect(read([0x02, 0x02, 0x02, 0x61, 0x01])).toThrow("negative Avro string length -1 at byte 5");
    expect(read([0x02, 0x00, 0x01])).toThrow("negative Avro bytes length -1 at byte 3");
    expect(read([0x02, 0x02, 0x12, 0x61, 0x62])).toThrow("truncated Avro payload: a 9-byte string runs past the end of the message (at byte 3 of 5)");
    expect(read([0x02, 0x02, 0x02, 0x61, 0x12, 0x62])).toThrow("a 9-byte string runs past");
    expect(read([0x02, 0x00, 0xc8, 0x01, 0x62])).toThrow("a 100-byte value runs past");
  });

  test("frames split at any byte boundary come out whole; limits are enforced", () => {
    const frame = encodeFrame(7, [Buffer.from("head"), Buffer.alloc(0), Buffer.from("payload")]);
    for (let cut = 0; cut <= frame.length; cut++) {
      const d = new FrameDecoder();
      const got = [...d.push(frame.subarray(0, cut)), ...d.push(frame.subarray(cut))];
      expect(got).toHaveLength(1);
      expect(got[0].serial).toBe(7);
      expect(got[0].buffers.map((b) => b.toString())).toEqual(["head", "", "payload"]);
    }
    expect(() => new FrameDecoder({ maxFrameBytes: 100, maxBuffers: 4 }).push(encodeFrame(1, [Buffer.alloc(101)]))).toThrow(RpcFrameTooLargeError);
    expect(() => new FrameDecoder({ maxFrameBytes: 100, maxBuffers: 1 }).push(encodeFrame(1, [Buffer.alloc(1), Buffer.alloc(1)]))).toThrow(/declares 2 buffers/);
  });

  test("a client protocol text that differs from Flume's only in layout reads through the fast path", async () => {
    const relaid = JSON.stringify(JSON.parse(PROTOCOL_TEXT), null, 2);
    const remote = await parseRemoteProtocol(relaid);
    expect(remote.hashHex).not.toBe(PROTOCOL_HASH_HEX);
    expect(remote.sameAsLocal).toBe(true);
    expect(remote.has("appendBatch")).toBe(true);
  });

  test("a client protocol with an extra optional header field is read through an avsc resolver", async () => {
    const p = JSON.parse(PROTOCOL_TEXT);
    p.types[1].fields.push({ name: "extra", type: ["null", "string"], default: null });
    const remote = await parseRemoteProtocol(JSON.stringify(p));
    expect(remote.sameAsLocal).toBe(false);
    const theirType = avro.Type.forSchema({ type: "array", items: { ...p.types[1], namespace: "org.apache.flume.source.avro" } });
    const buf = theirType.toBuffer([{ headers: { k: "v" }, body: Buffer.from("z"), extra: "e" }]);
    const events = remote.readAppendBatch(new AvroReader(buf));
    expect(events.map((e) => [e.headers, Buffer.from(e.body).toString()])).toEqual([[{ k: "v" }, "z"]]);
  });
});
