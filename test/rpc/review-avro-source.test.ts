import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { constants, inflateSync } from "node:zlib";
import net from "node:net";
import { AvroWriter } from "../../src/rpc/binary.ts";
import { FrameDecoder } from "../../src/rpc/frame.ts";
import { writeEventArray, writeHandshakeRequest } from "../../src/rpc/messages.ts";
import { PROTOCOL_HASH } from "../../src/rpc/protocol.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { AvroRpcServer } from "../../src/rpc/server.ts";
import { serverTlsOptions } from "../../src/rpc/tls.ts";
import { asyncCleanupsAfterEach, slowCommits, tempDir, FIXTURES } from "../support/helpers.ts";
import { drain, rawExchange, selfSignedCert, startSource, texts, until } from "../support/rpc.ts";

const AVRO_RPC = path.join(FIXTURES, "avro-rpc");
const fixture = (name: string) => readFileSync(path.join(AVRO_RPC, name));

const cleanups = asyncCleanupsAfterEach();

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
  test("the connection is closed when the handshake times out, with a log line naming the peer", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const logger = new MemoryLogger();
    const handler = { appendBatch: async () => "OK" as const, append: async () => "OK" as const };
    // Node's default handshake timeout is 120 s; shortened so the test is quick.
    const server = new AvroRpcServer(handler, { bind: "127.0.0.1", port: 0, tls: { ...serverTlsOptions({ keystore: cert, keystoreKey: key, keystoreType: "PEM", excludeProtocols: [], includeProtocols: [], excludeCipherSuites: [], includeCipherSuites: [] }), handshakeTimeout: 200 }, logger });
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
    const call = (serial: number, handshake: boolean) => {
      const w = new AvroWriter(256);
      w.int32(serial);
      w.int32(1);
      const at = w.int32(0);
      if (handshake) writeHandshakeRequest(w, { clientHash: PROTOCOL_HASH, clientProtocol: null, serverHash: PROTOCOL_HASH, meta: null });
      w.bytesMap(undefined);
      w.string("appendBatch");
      writeEventArray(w, []);
      w.patchInt32(at, w.pos - at - 4);
      return w.finish();
    };
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
    const server = (s.source as unknown as { server: { connections: Set<{ transport: { socket: net.Socket } }> } }).server;
    const [conn] = [...server.connections];
    expect(conn.transport.socket.writableLength).toBeLessThan(1024 * 1024);
    expect(last).toBeLessThan(calls + 1);
    // Once the client reads, every call is answered.
    const decoder = new FrameDecoder();
    let answered = 0;
    client.on("data", (d: Buffer) => (answered += decoder.push(d).length));
    client.resume();
    await until(() => answered === calls + 1, 10000);
    client.destroy();
  }, 20000);
});

describe("avro source, a client that keeps sending bad requests", () => {
  test("every bad request is answered with an error, but the log names the peer only a few times per connection", async () => {
    const s = await startSource();
    cleanups.push(() => s.source.stop());
    // A handshake carrying a corrupt appendBatch, then many more corrupt calls on the same connection.
    const bad = (serial: number, handshake: boolean) => {
      const w = new AvroWriter(256);
      w.int32(serial);
      w.int32(1);
      const at = w.int32(0);
      if (handshake) writeHandshakeRequest(w, { clientHash: PROTOCOL_HASH, clientProtocol: null, serverHash: PROTOCOL_HASH, meta: null });
      w.bytesMap(undefined);
      w.string("appendBatch");
      w.long(1000); // an array that claims 1000 events, and nothing follows
      w.patchInt32(at, w.pos - at - 4);
      return w.finish();
    };
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
