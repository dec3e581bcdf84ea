import { describe, expect, test } from "bun:test";
import net from "node:net";
import { systemClock } from "../../src/core/clock.ts";
import { EventDeliveryException } from "../../src/core/errors.ts";
import { createEvent } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import type { MemoryChannel } from "../../src/core/memory-channel.ts";
import { AvroSink, type AvroSinkOptions } from "../../src/components/sinks/avro.ts";
import { AvroRpcServer } from "../../src/rpc/server.ts";
import type { RpcStatus } from "../../src/rpc/protocol.ts";
import { drain, memoryChannel, texts } from "../support/rpc.ts";
import { asyncCleanupsAfterEach } from "../support/helpers.ts";

const cleanups = asyncCleanupsAfterEach();

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
    { name: "k1", agentName: "a1", clock: systemClock, logger },
    { hostname: "127.0.0.1", port, batchSize: 10, resetConnectionInterval: 0, compression: "none", compressionLevel: 6, ssl, tls: { trustAllCerts: true }, ...timeouts },
  );
  sink.setChannel(channel);
  cleanups.push(() => sink.stop());
  await sink.start();
  return { sink, channel, logger };
}

async function fill(channel: MemoryChannel, n: number) {
  const tx = channel.getTransaction();
  tx.begin();
  for (let i = 0; i < n; i++) tx.put(createEvent(`e${i}`));
  await tx.commit();
  tx.close();
}

describe("avro sink timeouts, as Flume's NettyAvroRpcClient", () => {
  test("a source that accepts TCP but never answers the handshake fails the batch after connect-timeout, not request-timeout", async () => {
    const port = await silentServer();
    const { sink, channel } = await startSink(port, { connectTimeout: 300, requestTimeout: 20000 });
    await fill(channel, 3);
    const started = performance.now();
    const err = await sink.process().catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toMatch(/handshake.*300 ms \(connect-timeout\)/);
    // Generous: the point is that it is not the 20 s request-timeout.
    expect(took).toBeLessThan(5000);
    const v = sink.counter.values;
    expect(v.ConnectionFailedCount).toBe(1);
    expect(v.EventDrainSuccessCount).toBe(0);
    // Rolled back: the batch is still in the channel for the next try.
    expect(texts(await drain(channel))).toEqual(["e0", "e1", "e2"]);
  });

  test("each new connection's handshake is bounded again: the retry fails the same way and nothing is lost", async () => {
    const port = await silentServer();
    const { sink, channel } = await startSink(port, { connectTimeout: 300, requestTimeout: 20000 });
    await fill(channel, 2);
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
    const { sink, channel } = await startSink(port, { connectTimeout: 20000, requestTimeout: 300 });
    await fill(channel, 1);
    expect(await sink.process()).toBe("READY");
    await fill(channel, 1);
    const started = performance.now();
    const err = await sink.process().catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toMatch(/300 ms \(request-timeout\)/);
    // The connection was made; only the call timed out.
    expect(sink.counter.values.ConnectionFailedCount).toBe(0);
    expect(sink.counter.values.EventWriteFail).toBe(1);
    expect(texts(await drain(channel))).toEqual(["e0"]);
  });

  test("with ssl, a source that never starts TLS fails the batch after connect-timeout too", async () => {
    const port = await silentServer();
    const { sink, channel, logger } = await startSink(port, { connectTimeout: 300, requestTimeout: 20000 }, true);
    expect(logger.lines.some((l) => /unable to create Rpc client.*connect-timeout/.test(l.message))).toBe(true);
    await fill(channel, 1);
    const started = performance.now();
    const err = await sink.process().catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toMatch(/300 ms \(connect-timeout\)/);
    // One failure at start, one in process().
    expect(sink.counter.values.ConnectionFailedCount).toBe(2);
    expect(texts(await drain(channel))).toEqual(["e0"]);
  });
});
