import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { parseConfig } from "../../src/config/schema.ts";
import { createEvent } from "../../src/core/event.ts";
import { definition as avroSource } from "../../src/components/sources/avro.ts";
import { createHash } from "node:crypto";
import { AvroReader, AvroWriter } from "../../src/rpc/binary.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { FrameDecoder } from "../../src/rpc/frame.ts";
import { readCallResult, readHandshakeResponse, writeEventArray, writeHandshakeRequest } from "../../src/rpc/messages.ts";
import { PROTOCOL_HASH, PROTOCOL_TEXT } from "../../src/rpc/protocol.ts";
import { RpcConnectionError, RpcStatusError } from "../../src/rpc/errors.ts";
import { asyncCleanupsAfterEach, tempDir, FIXTURES } from "../support/helpers.ts";
import { drain, memoryChannel, rawExchange, selfSignedCert, startSource, texts, until } from "../support/rpc.ts";

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

  test("TLS end to end with a PEM certificate; a client that does not trust it is refused", async () => {
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

  test("TLS and deflate together", async () => {
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

  test("configuration: threads is accepted; bad ipFilterRules and JKS keystores are explained", () => {
    const parse = (raw: Record<string, string>) => {
      const { config, errors } = parseConfig(avroSource.schema, { bind: "0.0.0.0", port: "4141", ...raw });
      return [...errors, ...(avroSource.validate?.(config) ?? [])];
    };
    expect(parse({ threads: "8" })).toEqual([]);
    expect(parse({ ipFilter: "true", ipFilterRules: "permit:ip:*" })[0].message).toMatch(/<allow\|deny>:<ip\|name>:<pattern>/);
    const jks = parse({ ssl: "true", keystore: "/etc/flume/ks.jks", "keystore-type": "JKS" });
    expect(jks[0].key).toBe("keystore-type");
    expect(jks[0].message).toMatch(/keytool -importkeystore/);
    expect(jks[0].message).toMatch(/openssl pkcs12/);
  });

  test("a JKS file given as keystore fails at start with conversion instructions", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const jks = path.join(tmp.dir, "keystore.jks");
    await Bun.write(jks, new Uint8Array([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]));
    const err = await startSource({ ssl: "true", keystore: jks }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/not a PEM file/);
    expect((err as Error).message).toMatch(/keytool -importkeystore -srckeystore .*keystore\.jks/);
  });
});
