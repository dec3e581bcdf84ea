import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { bodyEvent, createEvent, type Event } from "../../../src/core/event.ts";
import { RpcFrameTooLargeError, RpcProtocolError } from "../../../src/rpc/errors.ts";
import { ThriftProtocolError } from "../../../src/rpc/thrift/errors.ts";
import { ThriftFrameDecoder } from "../../../src/rpc/thrift/frame.ts";
import {
  createReader,
  createWriter,
  encodeAppend,
  encodeAppendBatch,
  encodeApplicationException,
  encodeStatusReply,
  readAppendArgs,
  readAppendBatchArgs,
  readStatusReply,
} from "../../../src/rpc/thrift/messages.ts";
import { ThriftApplicationError } from "../../../src/rpc/thrift/errors.ts";
import { AppErrorType, MessageType, TType, type ThriftProtocolName } from "../../../src/rpc/thrift/types.ts";
import { ROOT } from "../../support/helpers.ts";
import { needsThrift } from "../../support/requires.ts";
import { generatedPython, PYTHON } from "../../support/thrift/harness.ts";

const PROTOCOLS: ThriftProtocolName[] = ["binary", "compact"];

/** Decodes one of our framed calls: the message header, then its arguments. */
function decodeCall(protocol: ThriftProtocolName, frame: Buffer) {
  expect(frame.readInt32BE(0)).toBe(frame.length - 4);
  const r = createReader(protocol, frame, 4);
  const header = r.readMessageBegin();
  const events = header.name === "appendBatch" ? readAppendBatchArgs(r) : [readAppendArgs(r)];
  expect(r.remaining()).toBe(0);
  return { header, events };
}

const plain = (events: Event[]) => events.map((e) => ({ headers: e.headers, body: Buffer.from(e.body).toString("hex") }));

describe("thrift codec", () => {
  for (const protocol of PROTOCOLS) {
    test(`${protocol}: appendBatch round trip with long lists, long and non-ASCII strings, empty bodies, negative sequence ids`, () => {
      const events = Array.from({ length: 40 }, (_, i) =>
        createEvent(i % 7 === 0 ? new Uint8Array(0) : `body ${i} ${"é".repeat(i * 5)}`, i % 3 === 0 ? {} : { k: "v".repeat(i * 10), ["héader" + i]: "✓".repeat(i) }),
      );
      const { header, events: back } = decodeCall(protocol, encodeAppendBatch(protocol, -7, events));
      expect(header).toEqual({ name: "appendBatch", type: MessageType.CALL, seqid: -7 });
      expect(plain(back)).toEqual(plain(events));
      const one = decodeCall(protocol, encodeAppend(protocol, 2 ** 31 - 1, events[5]));
      expect(one.header.seqid).toBe(2 ** 31 - 1);
      expect(plain(one.events)).toEqual(plain([events[5]]));
    });

    test(`${protocol}: events without headers (as line sources make them) read back with empty headers that can be written`, () => {
      const frame = encodeAppendBatch(protocol, 1, [bodyEvent(Buffer.from("a line")), createEvent("x", { a: "1" })]);
      const { events } = decodeCall(protocol, frame);
      expect(plain(events)).toEqual(plain([createEvent("a line"), createEvent("x", { a: "1" })]));
      events[0].headers.host = "h1";
      expect(events[0].headers).toEqual({ host: "h1" });
    });

    test(`${protocol}: decoded bodies are views of the received frame, not copies`, () => {
      const frame = encodeAppendBatch(protocol, 1, [createEvent("abc"), createEvent("defg")]);
      const { events } = decodeCall(protocol, frame);
      expect(events.every((e) => e.body.buffer === frame.buffer)).toBe(true);
    });

    test(`${protocol}: replies and TApplicationExceptions`, () => {
      const ok = encodeStatusReply(protocol, "appendBatch", 4, 1);
      expect(readStatusReply(createReader(protocol, ok, 4), "appendBatch", 4, "here")).toBe(1);
      expect(() => readStatusReply(createReader(protocol, ok, 4), "appendBatch", 5, "here")).toThrow("out of sequence response: expected 5 but got 4");
      const x = encodeApplicationException(protocol, "append", 3, AppErrorType.UNKNOWN_METHOD, "Invalid method name: 'x'");
      const err = (() => {
        try {
          readStatusReply(createReader(protocol, x, 4), "append", 3, "h:1");
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(ThriftApplicationError);
      expect((err as ThriftApplicationError).typeName).toBe("UNKNOWN_METHOD");
      expect((err as Error).message).toBe("thrift source at h:1 answered append with a TApplicationException (UNKNOWN_METHOD): Invalid method name: 'x'");
    });

    test(`${protocol}: sizes that cannot fit the frame, deep nesting and unknown types are refused without allocating`, () => {
      // A map declaring 2^31-1 entries in a few bytes.
      const w = createWriter(protocol);
      w.writeMapBegin(TType.STRING, TType.STRING, 0x7fffffff);
      const hugeMap = w.frame();
      expect(() => createReader(protocol, hugeMap, 4).readMapBegin()).toThrow(ThriftProtocolError);
      // 70 nested lists.
      const n = createWriter(protocol);
      for (let i = 0; i < 70; i++) n.writeListBegin(TType.LIST, 1);
      n.writeListBegin(TType.I32, 0);
      expect(() => createReader(protocol, n.frame(), 4).skip(TType.LIST)).toThrow("nested more than 64 deep");
      expect(() => createReader(protocol, Buffer.from([1, 2, 3]), 0).skip(99)).toThrow("unknown field type 99");
    });

    test(`${protocol}: an event without its required headers is a protocol error with the Java wording`, () => {
      const w = createWriter(protocol);
      w.writeMessageBegin("append", MessageType.CALL, 1);
      w.writeStructBegin();
      w.writeFieldBegin(TType.STRUCT, 1);
      w.writeStructBegin();
      w.writeFieldBegin(TType.STRING, 2);
      w.writeBinary(Buffer.from("body"));
      w.writeFieldStop();
      w.writeStructEnd();
      w.writeFieldStop();
      w.writeStructEnd();
      const r = createReader(protocol, w.frame(), 4);
      r.readMessageBegin();
      expect(() => readAppendArgs(r)).toThrow("Required field 'headers' was not present! Struct: ThriftFlumeEvent");
    });
  }

  test("binary: the old non-strict message header (name length first) is still read, as libthrift's strictRead=false allows", () => {
    const b = Buffer.alloc(4 + 6 + 1 + 4);
    b.writeInt32BE(6, 0);
    b.write("append", 4, "latin1");
    b[10] = MessageType.CALL;
    b.writeInt32BE(42, 11);
    expect(createReader("binary", b).readMessageBegin()).toEqual({ name: "append", type: MessageType.CALL, seqid: 42 });
  });
});

describe("thrift frame decoder", () => {
  const frame = (payload: string) => Buffer.concat([Buffer.from([0, 0, 0, payload.length]), Buffer.from(payload)]);

  test("frames come out whole whatever the chunking; a frame inside one chunk is a view of it", () => {
    const bytes = Buffer.concat([frame("hello"), frame("x"), frame("world!")]);
    for (const step of [1, 2, 3, 5, 7, bytes.length]) {
      const d = new ThriftFrameDecoder(1024);
      const out: string[] = [];
      for (let i = 0; i < bytes.length; i += step) for (const f of d.push(bytes.subarray(i, i + step))) out.push(f.toString());
      expect(out).toEqual(["hello", "x", "world!"]);
      expect(d.midFrame).toBe(false);
    }
    const chunk = Buffer.concat([frame("abc"), frame("de")]);
    const frames = new ThriftFrameDecoder(1024).push(chunk);
    expect(frames.every((f) => f.buffer === chunk.buffer)).toBe(true);
  });

  test("a size over the limit, zero, negative, or what HTTP, TLS and unframed messages look like: clear errors", () => {
    const size = (n: number) => {
      const b = Buffer.alloc(4);
      b.writeInt32BE(n);
      return b;
    };
    expect(() => new ThriftFrameDecoder(1000).push(size(1001))).toThrow(RpcFrameTooLargeError);
    expect(() => new ThriftFrameDecoder(1000).push(size(1001))).toThrow("frame of 1001 bytes exceeds max-frame-size (1000 bytes)");
    expect(() => new ThriftFrameDecoder(1000).push(size(0))).toThrow("invalid frame size 0");
    expect(() => new ThriftFrameDecoder(1000).push(size(-1))).toThrow(RpcProtocolError);
    expect(() => new ThriftFrameDecoder(1000).push(Buffer.from("POST /x HTTP/1.1"))).toThrow("an HTTP request");
    expect(() => new ThriftFrameDecoder(1000).push(Buffer.from([0x16, 0x03, 0x01, 0x02]))).toThrow("a TLS handshake");
    expect(() => new ThriftFrameDecoder(1000).push(Buffer.from([0x80, 0x01, 0x00, 0x01]))).toThrow("an unframed TBinaryProtocol message");
    expect(() => new ThriftFrameDecoder(1000).push(Buffer.from([0x82, 0x21, 0x00, 0x06]))).toThrow("an unframed TCompactProtocol message");
  });
});

describe("thrift codec against python3-thrift", () => {
  const python = generatedPython();

  for (const protocol of PROTOCOLS) {
    needsThrift.test(`${protocol}: our appendBatch call is byte for byte what python3-thrift's generated client writes`, () => {
      const events: { headers: Record<string, string>; body: string }[] = [
        { headers: { a: "b", "é": "✓".repeat(50) }, body: "x" },
        { headers: {}, body: "" },
        ...Array.from({ length: 20 }, (_, i) => ({ headers: { n: String(i) }, body: "y".repeat(i * 13) })),
      ];
      const r = spawnSync(PYTHON, [path.join(ROOT, "test/support/thrift/encode.py"), python.dir, protocol], { input: JSON.stringify(events), encoding: "utf8" });
      expect(r.stderr).toBe("");
      const ours = encodeAppendBatch(protocol, 0, events.map((e) => createEvent(e.body, e.headers)));
      expect(ours.toString("hex")).toBe(r.stdout.trim());
    });
  }
});
