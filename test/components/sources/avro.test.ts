import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { createHash, randomBytes } from "node:crypto";
import { constants, inflateSync, deflateSync } from "node:zlib";
import tls from "node:tls";
import { createEvent } from "../../../src/core/event.ts";
import type { Event } from "../../../src/core/event.ts";
import { definition as avroSource } from "../../../src/components/sources/avro.ts";
import { AvroReader, AvroWriter } from "../../../src/rpc/binary.ts";
import { AvroRpcClient } from "../../../src/rpc/client.ts";
import { FrameDecoder } from "../../../src/rpc/frame.ts";
import { readCallResult, readHandshakeResponse, writeEventArray, writeHandshakeRequest, type HandshakeMatch } from "../../../src/rpc/messages.ts";
import { PROTOCOL_HASH, PROTOCOL_TEXT } from "../../../src/rpc/protocol.ts";
import { RpcConnectionError, RpcStatusError } from "../../../src/rpc/errors.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { AvroRpcServer } from "../../../src/rpc/server.ts";
import { type ServerTls, serverTlsFromProperties } from "../../../src/net/tls.ts";
import type { CompressionType } from "../../../src/rpc/transport.ts";
import { asyncCleanupsAfterEach, tempDir, FIXTURES, slowCommits, waitWhileProgressing } from "../../support/helpers.ts";
import { drain, memoryChannel, rawExchange, startSource, texts, until } from "../../support/rpc.ts";
import { selfSignedCert } from "../../support/tls.ts";
import { needsOpenssl } from "../../support/requires.ts";

const AVRO_RPC = path.join(FIXTURES, "avro-rpc");
const fixture = (name: string) => readFileSync(path.join(AVRO_RPC, name));

const cleanups = asyncCleanupsAfterEach();

async function source(props: Record<string, string> = {}, channel = memoryChannel()) {
  const s = await startSource(props, channel);
  cleanups.push(() => s.source.stop());
  return s;
}

async function client(port: number, opts: Partial<Parameters<typeof AvroRpcClient.connect>[0]> = {}) {
  const c = await AvroRpcClient.connect({ host: "127.0.0.1", port, ...opts });
  cleanups.push(() => c.close());
  return c;
}

const batch = (n: number, prefix = "e") => Array.from({ length: n }, (_, i) => createEvent(`${prefix}${i}`, { seq: String(i) }));

/** One appendBatch request frame as a raw client writes it: the handshake on the first call, then the parameters `params` writes. */
function appendBatchFrame(serial: number, handshake: boolean, params: (w: AvroWriter) => void, size = 256): Buffer {
  const w = new AvroWriter(size);
  w.int32(serial);
  w.int32(1);
  const at = w.int32(0);
  if (handshake) writeHandshakeRequest(w, { clientHash: PROTOCOL_HASH, clientProtocol: null, serverHash: PROTOCOL_HASH, meta: null });
  w.bytesMap(undefined);
  w.string("appendBatch");
  params(w);
  w.patchInt32(at, w.pos - at - 4);
  return w.finish();
}

describe("avro source", () => {
  test("events sent by our client land in the memory channel with their headers, and counters add up", async () => {
    const { source: src, channel, port } = await source();
    const c = await client(port);
    await c.appendBatch(batch(3, "a"));
    await c.append(createEvent("single", { k: "v" }));
    const got = await drain(channel);
    expect(texts(got)).toEqual(["a0", "a1", "a2", "single"]);
    expect(got[1].headers).toEqual({ seq: "1" });
    expect(got[3].headers).toEqual({ k: "v" });
    const v = src.counter.values;
    expect(v.AppendBatchReceivedCount).toBe(1);
    expect(v.AppendBatchAcceptedCount).toBe(1);
    expect(v.AppendReceivedCount).toBe(1);
    expect(v.AppendAcceptedCount).toBe(1);
    expect(v.EventReceivedCount).toBe(4);
    expect(v.EventAcceptedCount).toBe(4);
    expect(v.OpenConnectionCount).toBe(1);
    c.close();
    await until(() => src.counter.values.OpenConnectionCount === 0);
  });

  test("large events (1 MiB bodies, a 3 MiB frame spanning many socket reads) arrive intact", async () => {
    const { channel, port } = await source();
    const c = await client(port);
    const bodies = [0, 1, 2].map((k) => new Uint8Array(1 << 20).map((_, i) => (i * 31 + k) & 0xff));
    await c.appendBatch(bodies.map((b) => createEvent(b)));
    const got = await drain(channel);
    expect(got.map((e) => Buffer.from(e.body).equals(Buffer.from(bodies[got.indexOf(e)])))).toEqual([true, true, true]);
  });

  test("many clients at once: every batch from every connection is stored", async () => {
    const { source: src, channel, port } = await source();
    const clients = await Promise.all(Array.from({ length: 12 }, () => client(port)));
    await until(() => src.counter.values.OpenConnectionCount === 12);
    await Promise.all(clients.map(async (c, n) => {
      for (let b = 0; b < 10; b++) await c.appendBatch(batch(50, `c${n}b${b}-`));
    }));
    const got = texts(await drain(channel));
    expect(got).toHaveLength(12 * 10 * 50);
    expect(new Set(got).size).toBe(got.length);
    expect(src.counter.values.AppendBatchAcceptedCount).toBe(120);
  });

  test("a client announcing a differently laid-out protocol text is answered BOTH or CLIENT, and its calls are served", async () => {
    const { channel, port } = await source();
    const text = JSON.stringify(JSON.parse(PROTOCOL_TEXT), null, 1);
    const hash = createHash("md5").update(text).digest();
    const request = (serverHash: Buffer) => {
      const w = new AvroWriter();
      w.int32(1);
      w.int32(1);
      const at = w.int32(0);
      writeHandshakeRequest(w, { clientHash: hash, clientProtocol: text, serverHash, meta: null });
      w.bytesMap(undefined);
      w.string("appendBatch");
      writeEventArray(w, [createEvent("hello", { via: "other-client" })]);
      w.patchInt32(at, w.pos - at - 4);
      return w.finish();
    };
    const answer = async (serverHash: Buffer) => {
      const s = net.connect(port, "127.0.0.1");
      cleanups.push(() => s.destroy());
      const chunks: Buffer[] = [];
      const decoder = new FrameDecoder();
      return await new Promise<ReturnType<typeof readHandshakeResponse>>((resolve) => {
        s.on("data", (d: Buffer) => {
          chunks.push(d);
          const frames = decoder.push(d);
          if (frames.length > 0) {
            const r = new AvroReader(Buffer.concat(frames[0].buffers));
            const hs = readHandshakeResponse(r);
            expect(readCallResult(r)).toEqual({ ok: true, status: "OK" });
            resolve(hs);
          }
        });
        s.write(request(serverHash));
      });
    };
    const both = await answer(PROTOCOL_HASH);
    expect(both.match).toBe("BOTH");
    const client = await answer(Buffer.alloc(16, 1));
    expect(client.match).toBe("CLIENT");
    expect(client.serverProtocol).toBe(PROTOCOL_TEXT);
    expect(client.serverHash?.toString("hex")).toBe(PROTOCOL_HASH.toString("hex"));
    const got = await drain(channel);
    expect(texts(got)).toEqual(["hello", "hello"]);
    expect(got[0].headers).toEqual({ via: "other-client" });
  });

  test("recorded flume-ng avro-client stream against a channel of capacity 3: Flume's exact FAILED answer, nothing stored", async () => {
    const { source: src, channel, port } = await source({}, memoryChannel("c1", { capacity: 3, transactionCapacity: 3 }));
    const { data } = await rawExchange(port, fixture("channel-full.c2s.bin"), { endAfterWrite: true });
    expect(data.toString("hex")).toBe(fixture("channel-full.s2c.bin").toString("hex"));
    expect(await drain(channel)).toHaveLength(0);
    expect(src.counter.values.ChannelWriteFail).toBe(1);
    expect(src.counter.values.AppendBatchAcceptedCount).toBe(0);
  });

  test("a full channel makes appendBatch fail with FAILED, and the same client succeeds once there is room", async () => {
    const { channel, port } = await source({}, memoryChannel("c1", { capacity: 5, transactionCapacity: 5, keepAlive: 0 }));
    const c = await client(port);
    await c.appendBatch(batch(5));
    const err = await c.appendBatch(batch(2, "x")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcStatusError);
    expect((err as RpcStatusError).status).toBe("FAILED");
    expect(texts(await drain(channel, 5))).toEqual(["e0", "e1", "e2", "e3", "e4"]);
    await c.appendBatch(batch(2, "x"));
    expect(texts(await drain(channel, 5))).toEqual(["x0", "x1"]);
  });

  test("deflate end to end: compressed source and client", async () => {
    const { channel, port } = await source({ "compression-type": "deflate" });
    const c = await client(port, { compression: "deflate" });
    for (let i = 0; i < 3; i++) await c.appendBatch(batch(100, `b${i}-`));
    // Checked after every batch arrived: bodies are views of inflated chunks, which must not be reused.
    const expected = [0, 1, 2].flatMap((i) => texts(batch(100, `b${i}-`)));
    expect(texts(await drain(channel))).toEqual(expected);
  });

  needsOpenssl.test("TLS end to end with a PEM certificate; a client that does not trust it is refused", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const { channel, port } = await source({ ssl: "true", keystore: cert, "keystore-key": key });
    const trusted = await client(port, { tls: { ca: readFileSync(cert, "utf8"), checkServerIdentity: () => undefined } });
    await trusted.appendBatch(batch(4, "tls"));
    await trusted.appendBatch(batch(300, "more"));
    expect(texts(await drain(channel))).toEqual([...texts(batch(4, "tls")), ...texts(batch(300, "more"))]);
    const untrusted = await AvroRpcClient.connect({ host: "127.0.0.1", port, tls: {} }).catch((e: unknown) => e);
    expect(untrusted).toBeInstanceOf(RpcConnectionError);
    expect((untrusted as Error).message).toMatch(/self.signed|certificate/i);
  });

  needsOpenssl.test("TLS and deflate together", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const { channel, port } = await source({ ssl: "true", keystore: cert, "keystore-key": key, "compression-type": "deflate" });
    const c = await client(port, { compression: "deflate", tls: { rejectUnauthorized: false } });
    for (let i = 0; i < 3; i++) await c.appendBatch(batch(200, `t${i}-`));
    expect(texts(await drain(channel))).toEqual([0, 1, 2].flatMap((i) => texts(batch(200, `t${i}-`))));
  });

  test("garbage bytes close only that connection, with a log line naming the peer; another client keeps working", async () => {
    const { channel, port, logger } = await source();
    const good = await client(port);
    await good.appendBatch(batch(2, "before"));
    const { closedByServer } = await rawExchange(port, Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    expect(closedByServer).toBe(true);
    const line = logger.lines.find((l) => l.message.includes("closing connection from 127.0.0.1:"));
    expect(line?.message).toMatch(/Avro source r1: closing connection from 127\.0\.0\.1:\d+: invalid frame/);
    await good.appendBatch(batch(2, "after"));
    expect(texts(await drain(channel))).toEqual(["before0", "before1", "after0", "after1"]);
  });

  test("a frame declaring more bytes than max-frame-size is refused before it is buffered", async () => {
    const { port, logger } = await source({ "max-frame-size": "1024" });
    const header = Buffer.alloc(12);
    header.writeInt32BE(1, 0);
    header.writeInt32BE(1, 4);
    header.writeInt32BE(10_000_000, 8);
    const { closedByServer } = await rawExchange(port, header);
    expect(closedByServer).toBe(true);
    expect(logger.lines.some((l) => /exceeds the limit of 1024 bytes/.test(l.message))).toBe(true);
  });

  test("a truncated frame is dropped with a log line; nothing reaches the channel", async () => {
    const { source: src, channel, port, logger } = await source();
    const whole = fixture("avro-client-plain.c2s.bin");
    await rawExchange(port, whole.subarray(0, 120), { endAfterWrite: true });
    await until(() => logger.lines.some((l) => l.message.includes("closed in the middle of a frame")));
    expect(logger.lines.find((l) => l.message.includes("middle of a frame"))?.message).toMatch(/127\.0\.0\.1:\d+/);
    expect(await drain(channel)).toHaveLength(0);
    expect(src.counter.values.EventReceivedCount).toBe(0);
  });

  test("a well-framed request with a corrupt payload gets an Avro error answer, as Flume's Responder gives", async () => {
    const { port } = await source();
    // Handshake of the recorded client, then an appendBatch whose array claims 1000 events.
    const plain = fixture("avro-client-plain.c2s.bin");
    const head = plain.subarray(12, 12 + 48);
    const params = Buffer.from([0xd0, 0x0f, 0x00]);
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 48]), head, Buffer.from([0, 0, 0, params.length]), params]);
    const c = net.connect(port, "127.0.0.1");
    cleanups.push(() => c.destroy());
    const answer = await new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      c.on("data", (d: Buffer) => {
        chunks.push(d);
        const all = Buffer.concat(chunks);
        if (all.length > 30) resolve(all);
      });
      c.write(frame);
    });
    expect(answer.toString("latin1")).toContain("event array declares 1000 events");
  });

  test("ipFilterRules: first matching rule wins; a denied peer is disconnected and logged", async () => {
    const denied = await source({ ipFilter: "true", ipFilterRules: "deny:ip:127.0.0.*,allow:ip:*" });
    const err = await (await client(denied.port)).appendBatch(batch(1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcConnectionError);
    expect(denied.logger.lines.some((l) => /refused by ipFilterRules/.test(l.message))).toBe(true);
    const allowed = await source({ ipFilter: "true", ipFilterRules: "allow:name:localhost,deny:ip:*" });
    await (await client(allowed.port)).appendBatch(batch(1));
    expect(await drain(allowed.channel)).toHaveLength(1);
  });

  test("configuration: threads is accepted; bad ipFilterRules and JKS keystores are explained", async () => {
    const parse = (raw: Record<string, string>) => {
      const { options: config, errors } = avroSource.parse({ bind: "0.0.0.0", port: "4141", ...raw });
      return [...errors, ...(avroSource.validate?.(config) ?? [])];
    };
    expect(parse({ threads: "8" })).toEqual([]);
    expect(parse({ ipFilter: "true", ipFilterRules: "permit:ip:*" })[0].message).toMatch(/<allow\|deny>:<ip\|name>:<pattern>/);
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const file = path.join(tmp.dir, "ks.jks");
    await Bun.write(file, new Uint8Array([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]));
    const jks = parse({ ssl: "true", keystore: file, "keystore-type": "JKS" });
    expect(jks[0].key).toBe("keystore");
    expect(jks[0].message).toMatch(/keytool -importkeystore/);
    expect(parse({ ssl: "true", keystore: path.join(tmp.dir, "missing.p12") })[0].message).toMatch(/cannot read .*missing\.p12: ENOENT/);
  });

  test("a JKS file given as keystore fails at start with conversion instructions", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const jks = path.join(tmp.dir, "keystore.jks");
    await Bun.write(jks, new Uint8Array([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]));
    const err = await startSource({ ssl: "true", keystore: jks }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/is a Java key store/);
    expect((err as Error).message).toMatch(/keytool -importkeystore -srckeystore .*keystore\.jks/);
  });
});

describe("avro source, clients that half-close", () => {
  test("a client that half-closes after its requests still gets every answer once the channel committed", async () => {
    const s = await startSource();
    cleanups.push(() => s.source.stop());
    // A channel that takes a moment to commit, as a file channel does.
    slowCommits(s.source);
    const { data } = await rawExchange(s.port, fixture("avro-client-plain.c2s.bin"), { endAfterWrite: true });
    const stored = texts(await drain(s.channel));
    expect(stored.length).toBeGreaterThan(0);
    expect(data.toString("hex")).toBe(fixture("avro-client-plain.s2c.bin").toString("hex"));
  });

  test("the same with deflate: the answers come back compressed before the server closes", async () => {
    const s = await startSource({ "compression-type": "deflate" });
    cleanups.push(() => s.source.stop());
    slowCommits(s.source);
    const { data } = await rawExchange(s.port, fixture("avro-client-deflate.c2s.bin"), { endAfterWrite: true });
    expect(texts(await drain(s.channel)).length).toBeGreaterThan(0);
    expect(inflateSync(data, { finishFlush: constants.Z_SYNC_FLUSH }).toString("hex")).toBe(inflateSync(fixture("avro-client-deflate.s2c.bin"), { finishFlush: constants.Z_SYNC_FLUSH }).toString("hex"));
    expect(s.logger.lines.filter((l) => l.level === "warn" || l.level === "error")).toEqual([]);
  });

  test("an idle client that half-closes is closed at once; the source keeps serving", async () => {
    const s = await startSource();
    cleanups.push(() => s.source.stop());
    const { data } = await rawExchange(s.port, Buffer.alloc(0), { endAfterWrite: true });
    expect(data.length).toBe(0);
    const { data: again } = await rawExchange(s.port, fixture("avro-client-plain.c2s.bin"), { endAfterWrite: true });
    expect(again.toString("hex")).toBe(fixture("avro-client-plain.s2c.bin").toString("hex"));
  });
});

describe("avro source over TLS, a client that never starts the handshake", () => {
  needsOpenssl.test("the connection is closed when the handshake times out, with a log line naming the peer", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const logger = new MemoryLogger();
    const handler = { appendBatch: async () => "OK" as const, append: async () => "OK" as const };
    // Node's default handshake timeout is 120 s; shortened so the test is quick.
    const server = new AvroRpcServer(handler, { bind: "127.0.0.1", port: 0, tls: withHandshakeTimeout(pemTls(cert, key), 200), logger });
    const port = await server.listen();
    cleanups.push(() => server.close());
    await new Promise<void>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.on("error", () => {});
      s.on("close", () => resolve());
    });
    expect(logger.lines.some((l) => /TLS handshake with 127\.0\.0\.1:\d+ failed/.test(l.message))).toBe(true);
  });
});

describe("avro source, a client that pipelines requests and never reads the answers", () => {
  test("the source stops reading from it instead of buffering the answers without bound; all are answered once it reads", async () => {
    const s = await startSource();
    cleanups.push(() => s.source.stop());
    // One handshake call, then many empty appendBatch calls, all written at once.
    const calls = 600_000;
    const call = (serial: number, handshake: boolean) => appendBatchFrame(serial, handshake, (w) => writeEventArray(w, []));
    const one = call(2, false);
    const many = Buffer.alloc(one.length * calls);
    for (let i = 0; i < calls; i++) {
      one.copy(many, i * one.length);
      many.writeInt32BE(i + 2, i * one.length);
    }
    const client = net.connect(s.port, "127.0.0.1");
    client.on("error", () => {});
    await new Promise((res) => client.once("connect", res));
    client.pause();
    client.write(call(1, true));
    client.write(many);
    let last = -1;
    for (let still = 0; still < 3; ) {
      await new Promise((res) => setTimeout(res, 100));
      const now = s.source.counter.values.AppendBatchReceivedCount;
      still = now === last ? still + 1 : 0;
      last = now;
    }
    const server = (s.source as unknown as { server: { connections: Set<{ unsentBytes: number }> } }).server;
    const [conn] = [...server.connections];
    expect(conn.unsentBytes).toBeLessThan(1024 * 1024);
    expect(last).toBeLessThan(calls + 1);
    // Once the client reads, every call is answered.
    const decoder = new FrameDecoder();
    let answered = 0;
    client.on("data", (d: Buffer) => (answered += decoder.push(d).length));
    client.resume();
    // How long the backlog takes depends on the machine: wait while answers keep coming.
    await waitWhileProgressing(() => answered === calls + 1, () => answered, "answers to the client");
    client.destroy();
  }, 90_000);
});

describe("avro source, a client that keeps sending bad requests", () => {
  test("every bad request is answered with an error, but the log names the peer only a few times per connection", async () => {
    const s = await startSource();
    cleanups.push(() => s.source.stop());
    // A handshake carrying a corrupt appendBatch, then many more corrupt calls on the same connection.
    // An array that claims 1000 events, and nothing follows.
    const bad = (serial: number, handshake: boolean) => appendBatchFrame(serial, handshake, (w) => w.long(1000));
    const calls = 1000;
    const frames = [bad(1, true), ...Array.from({ length: calls - 1 }, (_, i) => bad(i + 2, false))];
    const client = net.connect(s.port, "127.0.0.1");
    client.on("error", () => {});
    cleanups.push(() => client.destroy());
    const decoder = new FrameDecoder();
    let answered = 0;
    client.on("data", (d: Buffer) => (answered += decoder.push(d).length));
    await new Promise((res) => client.once("connect", res));
    client.write(Buffer.concat(frames));
    await until(() => answered === calls, 10000);
    const warnings = s.logger.lines.filter((l) => l.level === "warn" && /127\.0\.0\.1:\d+/.test(l.message));
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.length).toBeLessThanOrEqual(5);
    expect(warnings[0].message).toContain("event array declares 1000 events");
  });
});

const MAX_FRAME = 256 * 1024;
const BODY = 200 * 1024;
const CALLS = 100;
/** The default limit, plus one socket read (Bun reads up to 512 KiB at a time) that may land before the pause. */
const BOUND = MAX_FRAME + 1024 * 1024 + 512 * 1024 + 64 * 1024;

/** appendBatch calls of one 200 KB event each (all zeros: 20 MB that deflate to about 20 KB). */
function calls(): Buffer {
  const frames: Buffer[] = [];
  for (let serial = 1; serial <= CALLS; serial++) frames.push(appendBatchFrame(serial, serial === 1, (w) => writeEventArray(w, [{ headers: {}, body: new Uint8Array(BODY) }]), BODY + 256));
  return Buffer.concat(frames);
}

async function floodWhileChannelIsStuck(compression: CompressionType) {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const received: Event[] = [];
  const handler = {
    appendBatch: async (events: Event[]) => {
      await gate;
      received.push(...events);
      return "OK" as const;
    },
    append: async () => "OK" as const,
  };
  const server = new AvroRpcServer(handler, { bind: "127.0.0.1", port: 0, compression, limits: { maxFrameBytes: MAX_FRAME, maxBuffers: 16 } });
  const port = await server.listen();
  cleanups.push(() => server.close());
  const raw = calls();
  const bytes = compression === "deflate" ? deflateSync(raw, { flush: constants.Z_SYNC_FLUSH }) : raw;
  const client = net.connect(port, "127.0.0.1");
  client.on("error", () => {});
  cleanups.push(() => client.destroy());
  await new Promise((res) => client.once("connect", res));
  client.write(bytes);
  // Wait until the server has stopped taking bytes from this client.
  let last = -1;
  for (let still = 0; still < 5; ) {
    await new Promise((res) => setTimeout(res, 50));
    const now = server.bufferedBytes;
    still = now === last ? still + 1 : 0;
    last = now;
  }
  const peak = server.peakBufferedBytes;
  open();
  await until(() => received.length === CALLS, 10000);
  return { peak, received, sent: bytes.length };
}

describe("avro source, bytes buffered per connection", () => {
  test("a deflate bomb (20 KB that inflate to 20 MB) is not inflated beyond max-frame-size + 1 MiB while the channel is stuck; every call is served once it moves", async () => {
    const { peak, received, sent } = await floodWhileChannelIsStuck("deflate");
    expect(sent).toBeLessThan(100 * 1024);
    expect(peak).toBeGreaterThanOrEqual(MAX_FRAME / 2);
    expect(peak).toBeLessThanOrEqual(BOUND);
    expect(received.every((e) => e.body.length === BODY)).toBe(true);
  }, 90_000);

  test("the same bound holds without compression (the frame-count limit alone allowed 16 frames of max-frame-size)", async () => {
    const { peak, received } = await floodWhileChannelIsStuck("none");
    expect(peak).toBeLessThanOrEqual(BOUND);
    expect(received.length).toBe(CALLS);
  }, 90_000);

  test("max-buffered-bytes is configurable, and smaller than max-frame-size is a configuration error", () => {
    const ok = avroSource.parse({ bind: "127.0.0.1", port: "0", "max-frame-size": "1048576", "max-buffered-bytes": "2097152" });
    expect(ok.errors).toEqual([]);
    expect(avroSource.validate?.(ok.options) ?? []).toEqual([]);
    const bad = avroSource.parse({ bind: "127.0.0.1", port: "0", "max-frame-size": "1048576", "max-buffered-bytes": "65536" });
    const errors = [...bad.errors, ...(avroSource.validate?.(bad.options) ?? [])];
    expect(errors.map((e) => e.key)).toEqual(["max-buffered-bytes"]);
  });
});

/** One handshake-only call on a fresh connection; resolves with the server's match. */
function handshake(port: number, clientHash: Buffer, clientProtocol: string | null): Promise<HandshakeMatch> {
  const w = new AvroWriter(PROTOCOL_TEXT.length + 128);
  w.int32(1);
  w.int32(1);
  const at = w.int32(0);
  writeHandshakeRequest(w, { clientHash, clientProtocol, serverHash: PROTOCOL_HASH, meta: null });
  w.bytesMap(undefined);
  w.string("");
  w.patchInt32(at, w.pos - at - 4);
  const request = w.finish();
  return new Promise((resolve, reject) => {
    const decoder = new FrameDecoder();
    const socket = net.connect(port, "127.0.0.1", () => socket.write(request));
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      const [frame] = decoder.push(chunk);
      if (!frame) return;
      socket.destroy();
      resolve(readHandshakeResponse(new AvroReader(Buffer.concat(frame.buffers))).match);
    });
  });
}

describe("avro source, protocols announced by clients", () => {
  test("the cache of client protocols keeps at most 64 entries (least recently used dropped); recent and local protocols still match", async () => {
    const handler = { appendBatch: async () => "OK" as const, append: async () => "OK" as const };
    const server = new AvroRpcServer(handler, { bind: "127.0.0.1", port: 0 });
    const port = await server.listen();
    cleanups.push(() => server.close());
    const hashes: Buffer[] = [];
    for (let i = 0; i < 100; i++) {
      const hash = randomBytes(16);
      hashes.push(hash);
      expect(await handshake(port, hash, PROTOCOL_TEXT)).toBe("BOTH");
    }
    expect(server.protocols.size).toBeLessThanOrEqual(65);
    // The most recent client is remembered: a hash-only handshake matches.
    expect(await handshake(port, hashes[99], null)).toBe("BOTH");
    // The oldest was dropped: the client is asked for its protocol (NONE), as Avro does for an unknown hash.
    expect(await handshake(port, hashes[0], null)).toBe("NONE");
    // Flume's own protocol is always known.
    expect(await handshake(port, PROTOCOL_HASH, null)).toBe("BOTH");
  });
});

/**
 * A TCP relay on 127.0.0.1 in front of the source that counts the bytes the source sends back.
 * A TLS server that starts its handshake answers the ClientHello with a ServerHello, so zero
 * bytes back means no TLS work was done for that client.
 */
async function countingRelay(target: number) {
  const stats = { bytesFromServer: 0 };
  const relay = net.createServer((client) => {
    const upstream = net.connect(target, "127.0.0.1");
    upstream.on("data", (d: Buffer) => {
      stats.bytesFromServer += d.length;
      client.write(d);
    });
    client.on("data", (d: Buffer) => upstream.write(d));
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", closeBoth);
    upstream.on("close", closeBoth);
    client.on("error", () => {});
    upstream.on("error", () => {});
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => relay.close(() => resolve())));
  return { port: (relay.address() as net.AddressInfo).port, stats };
}

async function tlsSource(rules: string) {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const { cert, key } = selfSignedCert(tmp.dir);
  const s = await startSource({ ssl: "true", keystore: cert, "keystore-key": key, "keystore-type": "PEM", ipFilter: "true", ipFilterRules: rules });
  cleanups.push(() => s.source.stop());
  return s;
}

describe("avro source with ssl and ipFilter", () => {
  needsOpenssl.test("a denied client is closed on the TCP connection, before any TLS handshake, and the log names it", async () => {
    const s = await tlsSource("deny:ip:127.0.0.1");
    const relay = await countingRelay(s.port);
    let secured = false;
    const closed = await new Promise<string>((resolve) => {
      const socket = tls.connect({ host: "127.0.0.1", port: relay.port, rejectUnauthorized: false });
      socket.on("secureConnect", () => {
        secured = true;
      });
      socket.on("error", (err) => resolve(err.message));
      socket.on("close", () => resolve("closed"));
    });
    expect(closed).not.toBe("");
    expect(secured).toBe(false);
    // The source never answered the ClientHello.
    expect(relay.stats.bytesFromServer).toBe(0);
    await until(() => s.logger.lines.some((l) => /127\.0\.0\.1:\d+ refused by ipFilterRules/.test(l.message)));
    expect(s.logger.lines.some((l) => /TLS handshake/.test(l.message))).toBe(false);
    expect(s.source.counter.values.AppendBatchReceivedCount).toBe(0);
  });

  needsOpenssl.test("an allowed client gets its TLS handshake and delivers events through the same relay", async () => {
    const s = await tlsSource("allow:ip:127.0.0.1,deny:ip:*");
    const relay = await countingRelay(s.port);
    const client = await AvroRpcClient.connect({ host: "127.0.0.1", port: relay.port, tls: { rejectUnauthorized: false } });
    await client.appendBatch([createEvent("through-tls"), createEvent("and-filter")]);
    client.close();
    expect(texts(await drain(s.channel))).toEqual(["through-tls", "and-filter"]);
    expect(relay.stats.bytesFromServer).toBeGreaterThan(0);
  });

  needsOpenssl.test("with deflate too, an allowed client is served and a denied one gets no bytes", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const props = { ssl: "true", keystore: cert, "keystore-key": key, "keystore-type": "PEM", "compression-type": "deflate", ipFilter: "true" };
    const allowed = await startSource({ ...props, ipFilterRules: "allow:name:localhost" });
    cleanups.push(() => allowed.source.stop());
    const c = await AvroRpcClient.connect({ host: "127.0.0.1", port: allowed.port, compression: "deflate", tls: { rejectUnauthorized: false } });
    await c.appendBatch([createEvent("deflated")]);
    c.close();
    expect(texts(await drain(allowed.channel))).toEqual(["deflated"]);

    const denied = await startSource({ ...props, ipFilterRules: "deny:name:localhost" });
    cleanups.push(() => denied.source.stop());
    const relay = await countingRelay(denied.port);
    const err = await AvroRpcClient.connect({ host: "127.0.0.1", port: relay.port, compression: "deflate", tls: { rejectUnauthorized: false }, connectTimeout: 3000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(relay.stats.bytesFromServer).toBe(0);
  });

  needsOpenssl.test("an allowed TLS client that half-closes after its requests still gets every answer", async () => {
    const s = await tlsSource("allow:ip:127.*");
    const answer = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      // allowHalfOpen is honoured by tls.connect but missing from its option type.
      const options: tls.ConnectionOptions & { allowHalfOpen: boolean } = { host: "127.0.0.1", port: s.port, rejectUnauthorized: false, allowHalfOpen: true };
      const socket = tls.connect(options);
      socket.on("secureConnect", () => socket.end(fixture("avro-client-plain.c2s.bin")));
      socket.on("data", (d: Buffer) => chunks.push(d));
      socket.on("close", () => resolve(Buffer.concat(chunks)));
      socket.on("error", reject);
    });
    expect(answer.toString("hex")).toBe(fixture("avro-client-plain.s2c.bin").toString("hex"));
    expect((await drain(s.channel)).length).toBeGreaterThan(0);
  });

  needsOpenssl.test("stopping the source drops a client still in its TLS handshake instead of waiting for it", async () => {
    const s = await tlsSource("allow:ip:127.*");
    const raw = net.connect(s.port, "127.0.0.1");
    raw.on("error", () => {});
    const closed = new Promise<void>((resolve) => raw.on("close", () => resolve()));
    await new Promise<void>((resolve) => raw.on("connect", () => resolve()));
    await Bun.sleep(50); // let the filter admit it into the handshake
    await s.source.stop();
    await closed;
    expect(raw.destroyed).toBe(true);
  });
});

/** The shared TLS module's server setup for a PEM certificate and key, as a source's properties give it. */
function pemTls(cert: string, key: string) {
  const tls = serverTlsFromProperties({ ssl: "true", keystore: cert, "keystore-key": key });
  if (!tls) throw new Error("ssl is on");
  return tls;
}

function withHandshakeTimeout(tls: ServerTls, ms: number): ServerTls {
  return { ...tls, options: { ...tls.options, handshakeTimeout: ms } };
}
