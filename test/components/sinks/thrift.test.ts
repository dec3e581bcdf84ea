import { describe, expect, test } from "bun:test";
import net from "node:net";
import { EventDeliveryException } from "../../../src/core/errors.ts";
import { createEvent } from "../../../src/core/event.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";
import { type Network, tcpNetwork } from "../../../src/net/network.ts";
import { asyncCleanupsAfterEach, freePort, listenLocal, tempDir, waitBound } from "../../support/helpers.ts";
import { needsOpenssl, needsThrift } from "../../support/requires.ts";
import { drain, memoryChannel, texts } from "../../support/rpc.ts";
import { generatedPython, makeThriftSink, pythonServer, startThriftSource, warnings } from "../../support/thrift/harness.ts";
import { certificateAuthority, selfSignedCert, signedCert } from "../../support/tls.ts";

const cleanups = asyncCleanupsAfterEach();
const python = generatedPython();

async function fill(channel: ReturnType<typeof memoryChannel>, n: number, prefix = "e") {
  const tx = channel.getTransaction();
  tx.begin();
  for (let i = 0; i < n; i++) tx.put(createEvent(`${prefix}${i}`, { i: String(i), "ключ": "значение ✓" }));
  await tx.commit();
  tx.close();
}

async function server(protocol: string, answers: string[] = [], tls?: { cert: string; key: string }) {
  const s = await pythonServer(python.dir, protocol, answers, tls);
  cleanups.push(() => s.kill());
  return s;
}

async function sink(props: Record<string, string>, channel = memoryChannel("upstream"), clock?: VirtualClock) {
  const s = makeThriftSink(props, channel, clock);
  cleanups.push(() => s.sink.stop());
  await s.sink.start();
  return { ...s, channel };
}

const bodies = (calls: { events: { body: string }[] }[]) => calls.flatMap((c) => c.events.map((e) => Buffer.from(e.body, "hex").toString("utf8")));

describe("thrift sink to a python3-thrift server", () => {
  for (const protocol of ["compact", "binary"]) {
    needsThrift.test(`${protocol} protocol: batch-size events per appendBatch, headers and bodies intact, committed on OK`, async () => {
      const py = await server(protocol);
      const { sink: k, channel } = await sink({ port: String(py.port), protocol, "batch-size": "5" });
      await fill(channel, 7);
      const tx = channel.getTransaction();
      tx.begin();
      tx.put(createEvent(new Uint8Array(0), {}));
      await tx.commit();
      tx.close();
      expect(await k.process()).toBe("READY");
      expect(await k.process()).toBe("READY");
      expect(await k.process()).toBe("BACKOFF");
      const calls = await py.waitForCalls(2);
      expect(calls.map((c) => [c.method, c.events.length])).toEqual([
        ["appendBatch", 5],
        ["appendBatch", 3],
      ]);
      expect(bodies(calls)).toEqual(["e0", "e1", "e2", "e3", "e4", "e5", "e6", ""]);
      expect(calls[0].events[2].headers).toEqual({ i: "2", "ключ": "значение ✓" });
      expect(calls[1].events[2].headers).toEqual({});
      expect(await drain(channel)).toHaveLength(0);
      expect(k.counter.values).toMatchObject({
        ConnectionCreatedCount: 1,
        BatchCompleteCount: 1,
        BatchUnderflowCount: 1,
        BatchEmptyCount: 1,
        EventDrainAttemptCount: 8,
        EventDrainSuccessCount: 8,
        EventWriteFail: 0,
      });
    });
  }

  for (const answer of ["FAILED", "ERROR", "EXCEPTION", "DROP"]) {
    needsThrift.test(`an answer of ${answer} rolls the batch back (nothing lost) and the next process() resends it`, async () => {
      const py = await server("compact", [answer]);
      const { sink: k, channel, logger } = await sink({ port: String(py.port), "batch-size": "3" });
      await fill(channel, 3);
      const err = await k.process().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EventDeliveryException);
      const expected = { FAILED: /Status FAILED/, ERROR: /Status ERROR/, EXCEPTION: /TApplicationException \(INTERNAL_ERROR\): Internal error/, DROP: /closed before the answer/ }[answer];
      expect((err as Error).message).toMatch(expected as RegExp);
      expect(k.counter.values).toMatchObject({ EventWriteFail: 1, EventDrainSuccessCount: 0, ConnectionClosedCount: 1 });
      expect(await k.process()).toBe("READY");
      const calls = await py.waitForCalls(2);
      expect(calls.map((c) => c.answer)).toEqual([answer, "OK"]);
      expect(bodies(calls)).toEqual(["e0", "e1", "e2", "e0", "e1", "e2"]);
      expect(await drain(channel)).toHaveLength(0);
      expect(k.counter.values).toMatchObject({ EventDrainSuccessCount: 3, ConnectionCreatedCount: 2 });
      expect(warnings(logger)).toEqual([]);
    });
  }

  needsThrift.and(needsOpenssl).test(`over TLS, the certificate verified against a PEM truststore`, async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const py = await server("binary", [], { cert, key });
    const { sink: k, channel } = await sink({ port: String(py.port), protocol: "binary", ssl: "true", truststore: cert });
    await fill(channel, 4);
    await k.process();
    expect(bodies(await py.waitForCalls(1))).toEqual(["e0", "e1", "e2", "e3"]);
    // Without the truststore the server's self-signed certificate is refused and nothing is taken for good.
    const other = await sink({ port: String(py.port), protocol: "binary", ssl: "true" }, memoryChannel("second"));
    await fill(other.channel, 2);
    expect((await other.sink.process().catch((e: unknown) => e)) as Error).toBeInstanceOf(EventDeliveryException);
    expect(other.sink.counter.values.ConnectionFailedCount).toBeGreaterThanOrEqual(1);
    expect(await drain(other.channel)).toHaveLength(2);
  });
});

describe("thrift sink to a thrift source that requires client certificates", () => {
  needsOpenssl.test("keystore (PEM certificate and keystore-key) is presented; without it the source refuses the sink and the events stay in its channel", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = selfSignedCert(tmp.dir);
    const ca = certificateAuthority(tmp.dir, "sinks-ca");
    const client = signedCert(tmp.dir, ca, "sink-k1");
    const downstream = await startThriftSource({ ssl: "true", keystore: server.cert, "keystore-key": server.key, truststore: ca.cert, "client-auth": "required" });
    cleanups.push(() => downstream.source.stop());
    const port = String(downstream.port);

    const anonymous = await sink({ port, ssl: "true", truststore: server.cert }, memoryChannel("anonymous"));
    await fill(anonymous.channel, 2, "x");
    expect(await anonymous.sink.process().catch((e: unknown) => e)).toBeInstanceOf(EventDeliveryException);
    expect(await drain(anonymous.channel)).toHaveLength(2);

    const { sink: k, channel } = await sink({ port, ssl: "true", truststore: server.cert, keystore: client.cert, "keystore-key": client.key });
    await fill(channel, 3);
    expect(await k.process()).toBe("READY");
    expect(texts(await drain(downstream.channel))).toEqual(["e0", "e1", "e2"]);
    expect(k.counter.values).toMatchObject({ EventDrainSuccessCount: 3, EventWriteFail: 0 });
  });
});

describe("thrift sink and source on the network their context gives", () => {
  test("the source listens and the sink connects through it (TCP underneath here); every event arrives", async () => {
    const seen: string[] = [];
    const network: Network = {
      connect(o) {
        seen.push(`connect ${o.host}:${o.port}`);
        return tcpNetwork.connect(o);
      },
      listen(o, onConnection) {
        seen.push(`listen ${o.host}`);
        return tcpNetwork.listen(o, onConnection);
      },
    };
    const downstream = await startThriftSource({}, memoryChannel("downstream"), network);
    cleanups.push(() => downstream.source.stop());
    const upstream = memoryChannel("upstream");
    await fill(upstream, 3);
    const s = makeThriftSink({ port: String(downstream.port) }, upstream, undefined, network);
    cleanups.push(() => s.sink.stop());
    await s.sink.start();
    expect(await s.sink.process()).toBe("READY");
    expect(texts(await drain(downstream.channel))).toEqual(["e0", "e1", "e2"]);
    expect(seen).toEqual(["listen 127.0.0.1", `connect 127.0.0.1:${downstream.port}`]);
  });
});

describe("thrift sink: timeouts, unreachable peers, connection reset", () => {
  test("no answer within request-timeout: the batch is rolled back and stays in the channel", async () => {
    const silent = net.createServer((s) => s.on("data", () => {}));
    const port = await listenLocal(silent);
    cleanups.push(() => new Promise<void>((r) => silent.close(() => r())));
    const { sink: k, channel } = await sink({ port: String(port), "request-timeout": "1000" });
    await fill(channel, 2);
    const t0 = Date.now();
    const err = await k.process().catch((e: unknown) => e);
    expect(Date.now() - t0).toBeLessThan(waitBound(5000));
    expect((err as Error).message).toMatch(/no answer to appendBatch .* within 1000 ms \(request-timeout\)/);
    expect(texts(await drain(channel))).toEqual(["e0", "e1"]);
  });

  test("unreachable downstream: ConnectionFailedCount counts the attempts, nothing is lost", async () => {
    const port = await freePort();
    const { sink: k, channel, logger } = await sink({ port: String(port) });
    expect(warnings(logger).some((m) => /unable to create Rpc client using hostname 127\.0\.0\.1, port \d+/.test(m))).toBe(true);
    await fill(channel, 3);
    const err = await k.process().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toContain(`127.0.0.1:${port}`);
    expect(k.counter.values.ConnectionFailedCount).toBe(2);
    expect(await drain(channel)).toHaveLength(3);
  });

  needsThrift.test(`reset-connection-interval (the User Guide's connection-reset-interval works too) replaces the connection`, async () => {
    const py = await server("compact");
    const clock = new VirtualClock(0);
    const { sink: k, channel } = await sink({ port: String(py.port), "connection-reset-interval": "30" }, memoryChannel("upstream"), clock);
    await fill(channel, 1, "a");
    await k.process();
    await clock.advance(30_000);
    await fill(channel, 1, "b");
    await k.process();
    expect(bodies(await py.waitForCalls(2))).toEqual(["a0", "b0"]);
    expect(k.counter.values).toMatchObject({ ConnectionCreatedCount: 2, ConnectionClosedCount: 1 });
  });
});

describe("thrift sink: how Flume 1.11 reads its properties", () => {
  test("protocol: lowercase binary selects binary; BINARY and unknown values speak compact with a warning, as in Flume; request-timeout under 1000 means 20000", () => {
    const channel = memoryChannel();
    expect(makeThriftSink({ port: "1", protocol: "binary" }, channel).sink.options.protocol).toBe("binary");
    const upper = makeThriftSink({ port: "1", protocol: "BINARY" }, channel);
    expect(upper.sink.options.protocol).toBe("compact");
    expect(warnings(upper.logger).join("\n")).toContain('protocol = BINARY selects the compact protocol, as in Flume 1.11 (only the lowercase "binary" selects binary)');
    const json = makeThriftSink({ port: "1", protocol: "json" }, channel);
    expect(json.sink.options.protocol).toBe("compact");
    expect(warnings(json.logger).join("\n")).toContain("protocol = json is not binary or compact; using compact, as Flume 1.11 does");
    const quiet = makeThriftSink({ port: "1", "request-timeout": "500" }, channel);
    expect(quiet.sink.options).toMatchObject({ protocol: "compact", requestTimeout: 20000, batchSize: 100, connectTimeout: 20000, resetConnectionInterval: 0 });
    expect(warnings(quiet.logger)).toEqual([]);
  });

});
