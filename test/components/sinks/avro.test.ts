import { componentContext } from "../../../src/components/component.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import net from "node:net";
import { EventDeliveryException } from "../../../src/core/errors.ts";
import { createEvent } from "../../../src/core/event.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";
import { LoadBalancingSinkProcessor } from "../../../src/core/sink-processors.ts";
import { definition as avroSink, AvroSink, type AvroSinkOptions } from "../../../src/components/sinks/avro.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import type { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { AvroRpcServer } from "../../../src/rpc/server.ts";
import type { RpcStatus } from "../../../src/rpc/protocol.ts";
import { asyncCleanupsAfterEach, freePort, listenLocal, tempDir, waitBound } from "../../support/helpers.ts";
import { drain, makeSink, memoryChannel, startSource, texts } from "../../support/rpc.ts";
import { makePki, pkcs12Keystore, selfSignedCert } from "../../support/tls.ts";
import { needsOpenssl } from "../../support/requires.ts";

const cleanups = asyncCleanupsAfterEach();
const pkiDir = tempDir();
afterAll(pkiDir.cleanup);
let madePki: ReturnType<typeof makePki> | undefined;
/** One CA and its certificates for the file, made on first use. */
const sharedPki = () => (madePki ??= makePki(pkiDir.dir));
// Made before the tests where openssl is there: four RSA keys take a second or more.
beforeAll(() => void (needsOpenssl.holds && sharedPki()), 30000);

async function fill(channel: ReturnType<typeof memoryChannel>, n: number, prefix = "e") {
  const tx = channel.getTransaction();
  tx.begin();
  for (let i = 0; i < n; i++) tx.put(createEvent(`${prefix}${i}`, { i: String(i) }));
  await tx.commit();
  tx.close();
}

async function sink(props: Record<string, string>, channel = memoryChannel("upstream")) {
  const s = makeSink(props, channel);
  cleanups.push(() => s.sink.stop());
  await s.sink.start();
  return { ...s, channel };
}

async function source(props: Record<string, string> = {}, channel = memoryChannel("downstream")) {
  const s = await startSource(props, channel);
  cleanups.push(() => s.source.stop());
  return s;
}

describe("avro sink", () => {
  test("sends batch-size events per appendBatch, commits on OK, and counts as Flume's SinkCounter", async () => {
    const down = await source();
    const { sink: k, channel } = await sink({ port: String(down.port), "batch-size": "5" });
    await fill(channel, 7);
    expect(await k.process()).toBe("READY");
    expect(await k.process()).toBe("READY");
    expect(await k.process()).toBe("BACKOFF");
    const got = await drain(down.channel);
    expect(texts(got)).toEqual(["e0", "e1", "e2", "e3", "e4", "e5", "e6"]);
    expect(got[6].headers).toEqual({ i: "6" });
    expect(await drain(channel)).toHaveLength(0);
    const v = k.counter.values;
    expect(v).toMatchObject({
      ConnectionCreatedCount: 1,
      BatchCompleteCount: 1,
      BatchUnderflowCount: 1,
      BatchEmptyCount: 1,
      EventDrainAttemptCount: 7,
      EventDrainSuccessCount: 7,
      EventWriteFail: 0,
    });
    expect(down.source.counter.values.AppendBatchAcceptedCount).toBe(2);
  });

  test("FAILED from a full downstream channel rolls back and throws; the events are delivered on a later try", async () => {
    const downChannel = memoryChannel("downstream", { capacity: 4, transactionCapacity: 4, keepAlive: 0 });
    const down = await source({}, downChannel);
    const { sink: k, channel } = await sink({ port: String(down.port), "batch-size": "3" });
    await fill(channel, 6);
    await k.process(); // 3 stored downstream
    const err = await k.process().catch((e: unknown) => e); // 3 more do not fit in 4
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toMatch(/Status FAILED/);
    expect(k.counter.values.EventWriteFail).toBe(1);
    expect(texts(await drain(downChannel, 4))).toEqual(["e0", "e1", "e2"]);
    await k.process(); // reconnects and resends the rolled-back batch
    expect(texts(await drain(downChannel, 4))).toEqual(["e3", "e4", "e5"]);
    expect(k.counter.values.ConnectionCreatedCount).toBe(2);
    expect(k.counter.values.ConnectionClosedCount).toBe(1);
  });

  test("unreachable downstream: process() throws, nothing is lost, delivery resumes once the source is up", async () => {
    const port = await freePort();
    const { sink: k, channel, logger } = await sink({ port: String(port) });
    expect(logger.lines.some((l) => /unable to create Rpc client/.test(l.message))).toBe(true);
    await fill(channel, 3);
    const err = await k.process().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toContain(`127.0.0.1:${port}`);
    expect(k.counter.values.ConnectionFailedCount).toBe(2);
    const down = await source({ port: String(port) });
    await k.process();
    expect(texts(await drain(down.channel))).toEqual(["e0", "e1", "e2"]);
  });

  test("no answer to the first call (it carries the handshake) within connect-timeout: the batch is rolled back and stays in the channel", async () => {
    // A server that accepts and never answers. As in Flume, connect-timeout bounds the handshake;
    // request-timeout bounds later calls (see "avro sink timeouts" below).
    const silent = net.createServer(() => {});
    const port = await listenLocal(silent);
    cleanups.push(() => silent.close());
    const { sink: k, channel } = await sink({ port: String(port), "connect-timeout": "1000" });
    await fill(channel, 2);
    const err = await k.process().catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/within 1000 ms \(connect-timeout\)/);
    expect(texts(await drain(channel))).toEqual(["e0", "e1"]);
  });

  needsOpenssl.test("deflate and TLS (truststore as PEM) to an avro source", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const down = await source({ ssl: "true", keystore: cert, "keystore-key": key, "compression-type": "deflate" });
    const { sink: k, channel } = await sink({ port: String(down.port), ssl: "true", truststore: cert, "compression-type": "deflate", "compression-level": "9" });
    await fill(channel, 20);
    await k.process();
    expect(await drain(down.channel)).toHaveLength(20);
    expect(readFileSync(cert, "utf8")).toContain("BEGIN CERTIFICATE");
  });

  needsOpenssl.test("trust-all-certs accepts a certificate nobody vouches for; without it the sink refuses", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const down = await source({ ssl: "true", keystore: cert, "keystore-key": key });
    const strict = await sink({ port: String(down.port), ssl: "true" });
    await fill(strict.channel, 1);
    expect(await strict.sink.process().catch((e: unknown) => e)).toBeInstanceOf(EventDeliveryException);
    const lax = await sink({ port: String(down.port), ssl: "true", "trust-all-certs": "true" }, strict.channel);
    await lax.sink.process();
    expect(await drain(down.channel)).toHaveLength(1);
  });

  needsOpenssl.test("a client certificate (keystore) for a source with client-auth = required: delivered; without the keystore the batch fails and rolls back, nothing lost", async () => {
    const pki = sharedPki();
    const down = await source({ ssl: "true", keystore: pki.server.cert, "keystore-key": pki.server.key, "client-auth": "required", truststore: pki.ca.cert });
    // Without a keystore: refused during the handshake, so the batch goes back to the channel.
    const anonymous = await sink({ port: String(down.port), ssl: "true", truststore: pki.ca.cert, "batch-size": "10" });
    await fill(anonymous.channel, 5);
    const err = await anonymous.sink.process().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect(anonymous.sink.counter.values.EventDrainSuccessCount).toBe(0);
    expect(await drain(down.channel)).toHaveLength(0);
    expect(down.logger.lines.some((l) => l.level === "warn" && /TLS handshake with 127\.0\.0\.1:\d+ failed/.test(l.message))).toBe(true);
    await anonymous.sink.stop();
    // The same events, from the same channel, by a sink with the client's PKCS12 keystore.
    const p12 = pkcs12Keystore(pki.client, path.join(pkiDir.dir, "client.p12"), "changeit");
    const withCert = await sink({ port: String(down.port), ssl: "true", truststore: pki.ca.cert, keystore: p12, "keystore-password": "changeit", "keystore-type": "PKCS12", "batch-size": "10" }, anonymous.channel);
    await fill(anonymous.channel, 2, "more");
    expect(await withCert.sink.process()).toBe("READY");
    expect(texts(await drain(down.channel))).toEqual(["e0", "e1", "e2", "e3", "e4", "more0", "more1"]);
    expect(await drain(anonymous.channel)).toHaveLength(0);
    // PEM certificate and key work as the keystore too.
    const pem = await sink({ port: String(down.port), ssl: "true", truststore: pki.ca.cert, keystore: pki.client.cert, "keystore-key": pki.client.key }, anonymous.channel);
    await fill(anonymous.channel, 1, "pem");
    await pem.sink.process();
    expect(texts(await drain(down.channel))).toEqual(["pem0"]);
  });

  needsOpenssl.test("a sink whose client certificate the source's CA did not sign is refused: the batch rolls back", async () => {
    const pki = sharedPki();
    const down = await source({ ssl: "true", keystore: pki.server.cert, "keystore-key": pki.server.key, "client-auth": "required", truststore: pki.ca.cert });
    const rogue = await sink({ port: String(down.port), ssl: "true", truststore: pki.ca.cert, keystore: pki.rogue.cert, "keystore-key": pki.rogue.key });
    await fill(rogue.channel, 3);
    expect(await rogue.sink.process().catch((e: unknown) => e)).toBeInstanceOf(EventDeliveryException);
    expect(await drain(down.channel)).toHaveLength(0);
    expect(texts(await drain(rogue.channel))).toEqual(["e0", "e1", "e2"]);
  });

  test("reset-connection-interval replaces the connection after that many seconds", async () => {
    const down = await source();
    const clock = new VirtualClock(Date.now());
    const { sink: k } = makeSink({ port: String(down.port), "reset-connection-interval": "30" }, memoryChannel("upstream"), clock);
    cleanups.push(() => k.stop());
    await k.start();
    await fill(k.getChannel() as ReturnType<typeof memoryChannel>, 2);
    await k.process();
    expect(k.counter.values.ConnectionCreatedCount).toBe(1);
    await clock.advance(29_000);
    await k.process();
    expect(k.counter.values.ConnectionCreatedCount).toBe(1);
    await clock.advance(1_000);
    await fill(k.getChannel() as ReturnType<typeof memoryChannel>, 1, "late");
    await k.process();
    expect(k.counter.values).toMatchObject({ ConnectionCreatedCount: 2, ConnectionClosedCount: 1, EventDrainSuccessCount: 3 });
    expect(texts(await drain(down.channel))).toEqual(["e0", "e1", "late0"]);
  });

  test("in a load_balance group: batches alternate between two avro sources; a dead one is skipped without loss", async () => {
    const d1 = await source({}, memoryChannel("d1"));
    const d2 = await source({}, memoryChannel("d2"));
    const upstream = memoryChannel("upstream");
    const k1 = makeSink({ port: String(d1.port), "batch-size": "10" }, upstream).sink;
    const k2 = makeSink({ port: String(d2.port), "batch-size": "10" }, upstream).sink;
    const group = new LoadBalancingSinkProcessor([k1, k2]);
    cleanups.push(() => group.stop());
    await group.start();
    await fill(upstream, 40);
    for (let i = 0; i < 4; i++) await group.process();
    expect(texts(await drain(d1.channel))).toEqual(["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e20", "e21", "e22", "e23", "e24", "e25", "e26", "e27", "e28", "e29"]);
    expect(await drain(d2.channel)).toHaveLength(20);
    await d1.source.stop();
    await fill(upstream, 30, "x");
    for (let i = 0; i < 3; i++) await group.process();
    expect(texts(await drain(d2.channel)).sort()).toEqual(texts(Array.from({ length: 30 }, (_, i) => createEvent(`x${i}`))).sort());
    expect(k1.counter.values.EventWriteFail).toBeGreaterThan(0);
  });

  test("configuration: Flume's defaults and timeouts under a second meaning the default", () => {
    const { options: config } = avroSink.parse({ hostname: "h", port: "4141", "request-timeout": "500" });
    expect(config["batch-size"]).toBe(100);
    expect(config["connect-timeout"]).toBe(20000);
    expect(config["compression-level"]).toBe(6);
    expect(config["compression-type"]).toBe("none");
    const made = makeSink({ port: "4141", "request-timeout": "500" }, memoryChannel());
    expect(made.sink.options.requestTimeout).toBe(20000);
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const jks = path.join(tmp.dir, "trust.jks");
    writeFileSync(jks, new Uint8Array([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]));
    expect(avroSink.validate?.(avroSink.parse({ hostname: "h", port: "1", ssl: "true", truststore: jks }).options)[0].message).toMatch(/keytool -exportcert/);
  });
});

/** Accepts TCP connections and reads everything, but never answers: a hung Avro source. */
async function silentServer() {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on("data", () => {});
    s.on("error", () => {});
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as net.AddressInfo).port;
}

/**
 * The sink built with its options directly: the config path replaces timeouts under 1000 ms by
 * the default (as Flume does), and these tests want short ones.
 */
async function startSink(port: number, timeouts: Pick<AvroSinkOptions, "connectTimeout" | "requestTimeout">, ssl = false) {
  const channel = memoryChannel("upstream");
  const logger = new MemoryLogger();
  const sink = new AvroSink(
    componentContext("k1", { agentName: "a1", clock: systemClock, logger }),
    { hostname: "127.0.0.1", port, batchSize: 10, resetConnectionInterval: 0, compression: "none", compressionLevel: 6, tls: ssl ? { rejectUnauthorized: false, checkServerIdentity: () => undefined } : null, ...timeouts },
  );
  sink.setChannel(channel);
  cleanups.push(() => sink.stop());
  await sink.start();
  return { sink, channel, logger };
}

/** Puts n events e0, e1, ... without headers. */
async function fillBodiesOnly(channel: MemoryChannel, n: number) {
  const tx = channel.getTransaction();
  tx.begin();
  for (let i = 0; i < n; i++) tx.put(createEvent(`e${i}`));
  await tx.commit();
  tx.close();
}

describe("avro sink timeouts, as Flume's NettyAvroRpcClient", () => {
  test("a source that accepts TCP but never answers the handshake fails the batch after connect-timeout, not request-timeout", async () => {
    const port = await silentServer();
    const { sink, channel } = await startSink(port, { connectTimeout: 300, requestTimeout: 60000 });
    await fillBodiesOnly(channel, 3);
    const started = performance.now();
    const err = await sink.process().catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toMatch(/handshake.*300 ms \(connect-timeout\)/);
    // Generous: the point is that it is not the 60 s request-timeout.
    expect(took).toBeLessThan(waitBound(5000));
    const v = sink.counter.values;
    expect(v.ConnectionFailedCount).toBe(1);
    expect(v.EventDrainSuccessCount).toBe(0);
    // Rolled back: the batch is still in the channel for the next try.
    expect(texts(await drain(channel))).toEqual(["e0", "e1", "e2"]);
  });

  test("each new connection's handshake is bounded again: the retry fails the same way and nothing is lost", async () => {
    const port = await silentServer();
    const { sink, channel } = await startSink(port, { connectTimeout: 300, requestTimeout: 60000 });
    await fillBodiesOnly(channel, 2);
    const first = await sink.process().catch((e: unknown) => e);
    const second = await sink.process().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(EventDeliveryException);
    expect(second).toBeInstanceOf(EventDeliveryException);
    expect(sink.counter.values.ConnectionFailedCount).toBe(2);
    expect(texts(await drain(channel))).toEqual(["e0", "e1"]);
  });

  test("once the handshake is done, request-timeout bounds each call", async () => {
    // Answers the first batch (which carries the handshake), then never answers again.
    let calls = 0;
    const handler = {
      appendBatch: (): Promise<RpcStatus> => (++calls === 1 ? Promise.resolve("OK") : new Promise<RpcStatus>(() => {})),
      append: async (): Promise<RpcStatus> => "OK",
    };
    const server = new AvroRpcServer(handler, { bind: "127.0.0.1", port: 0 });
    const port = await server.listen();
    cleanups.push(() => server.close());
    const { sink, channel } = await startSink(port, { connectTimeout: 60000, requestTimeout: 300 });
    await fillBodiesOnly(channel, 1);
    expect(await sink.process()).toBe("READY");
    await fillBodiesOnly(channel, 1);
    const started = performance.now();
    const err = await sink.process().catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(waitBound(5000));
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toMatch(/300 ms \(request-timeout\)/);
    // The connection was made; only the call timed out.
    expect(sink.counter.values.ConnectionFailedCount).toBe(0);
    expect(sink.counter.values.EventWriteFail).toBe(1);
    expect(texts(await drain(channel))).toEqual(["e0"]);
  });

  test("with ssl, a source that never starts TLS fails the batch after connect-timeout too", async () => {
    const port = await silentServer();
    const { sink, channel, logger } = await startSink(port, { connectTimeout: 300, requestTimeout: 60000 }, true);
    expect(logger.lines.some((l) => /unable to create Rpc client.*connect-timeout/.test(l.message))).toBe(true);
    await fillBodiesOnly(channel, 1);
    const started = performance.now();
    const err = await sink.process().catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(waitBound(5000));
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toMatch(/300 ms \(connect-timeout\)/);
    // One failure at start, one in process().
    expect(sink.counter.values.ConnectionFailedCount).toBe(2);
    expect(texts(await drain(channel))).toEqual(["e0"]);
  });
});
