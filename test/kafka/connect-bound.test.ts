/**
 * How long a Kafka client waits to connect (src/kafka/connect-bound.ts): one request's worth for
 * a broker that accepts connections and never answers, and not at all once its component stops
 * or closes it. The peer is a real socket that never answers.
 */
import { afterEach, expect, test } from "bun:test";
import { MemoryLogger, silentLogger } from "../../src/core/logger.ts";
import { ConnectBound } from "../../src/kafka/connect-bound.ts";
import { KafkaPoller } from "../../src/kafka/consumer.ts";
import { KafkaConnectAbortedError } from "../../src/kafka/errors.ts";
import { KafkaPublisher } from "../../src/kafka/producer.ts";
import { consumerSettings, producerSettings } from "../../src/kafka/settings.ts";
import { waitUntil } from "../support/helpers.ts";
import { type SilentPeer, silentPeer } from "../support/silent-peer.ts";

let peer: SilentPeer | null = null;
afterEach(() => {
  peer?.close();
  peer = null;
});

const never = () => new Promise<never>(() => {});
const late = () => new Error("late");

test("ConnectBound: the work's result; its bound's error once the bound passed; abort() fails the connect under way, or else only the next one; cancel() fails the one under way and forgets an earlier abort", async () => {
  const bound = new ConnectBound();
  expect(await bound.run(async () => 7, 1000, late)).toBe(7);
  expect(await bound.run(never, 10, late).catch((e: Error) => e.message)).toBe("late");
  const aborted = bound.run(never, 60_000, late).catch((e: unknown) => e);
  bound.abort("k1: stopping");
  const err = await aborted;
  expect(err).toBeInstanceOf(KafkaConnectAbortedError);
  expect((err as Error).message).toBe("k1: stopping");
  // Aborted between two connects of one start: the next fails at once, and only it.
  bound.abort("k1: stopping");
  let ran = false;
  expect(await bound.run(async () => (ran = true), 60_000, late).catch((e: Error) => e.message)).toBe("k1: stopping");
  expect(ran).toBe(false);
  expect(await bound.run(async () => 8, 1000, late)).toBe(8);
  bound.abort("k1: stopping");
  const cancelled = bound.run(never, 60_000, late).catch((e: Error) => e.message);
  bound.cancel("k1: closed");
  expect(await cancelled).toBe("k1: stopping");
  bound.abort("k1: stopping");
  bound.cancel("k1: closed");
  expect(await bound.run(async () => 9, 1000, late)).toBe(9);
});

function publisher(port: number, props: Record<string, string>) {
  const settings = producerSettings({ bootstrap: `127.0.0.1:${port}`, bootstrapKey: "kafka.bootstrap.servers", props, clientId: "silent", label: "kafka sink k1", logger: silentLogger, defaultAcks: "all" });
  return new KafkaPublisher("kafka sink k1", settings, silentLogger);
}

test("a producer's connect to a broker that never answers fails after socket.connection.setup.timeout.ms + request.timeout.ms, naming the bound, instead of 16 requests of the client's nested retries", async () => {
  peer = await silentPeer();
  const p = publisher(peer.port, { "socket.connection.setup.timeout.ms": "500", "request.timeout.ms": "1000" });
  const err = (await p.connect("t").catch((e: unknown) => e)) as Error;
  expect(err.message).toBe(
    `kafka sink k1: Kafka at 127.0.0.1:${peer.port}: no answer from the brokers within 1500 ms (socket.connection.setup.timeout.ms + request.timeout.ms); 127.0.0.1:${peer.port} accepts connections but did not answer a Kafka request: check that kafka.bootstrap.servers names a Kafka listener`,
  );
  // A request and at most one retry fit in the bound, not the 16 of the nested retries; then the listener's probe.
  expect(peer.accepted()).toBeLessThanOrEqual(3);
  expect(p.connected).toBe(false);
});

test("abortConnect() ends a producer's connect under way at once, with KafkaConnectAbortedError naming the component", async () => {
  peer = await silentPeer();
  const p = publisher(peer.port, { "request.timeout.ms": "300000" });
  const connecting = p.connect("t").catch((e: unknown) => e);
  await waitUntil(() => peer!.accepted() >= 1, "the producer connected to the peer", 30_000, 10);
  p.abortConnect("stopping");
  const err = await connecting;
  expect(err).toBeInstanceOf(KafkaConnectAbortedError);
  expect((err as Error).message).toBe("kafka sink k1: stopping");
  expect(p.connected).toBe(false);
});

test("a consumer connecting again in the background is ended by close(), logged at info (nothing went wrong), and its connect errors are named once", async () => {
  peer = await silentPeer();
  const logger = new MemoryLogger();
  const settings = consumerSettings({ bootstrap: `127.0.0.1:${peer.port}`, bootstrapKey: "kafka.bootstrap.servers", props: { "request.timeout.ms": "300000" }, groupId: "g", defaultOffsetReset: "earliest", clientId: "silent", label: "kafka source r1", logger: silentLogger });
  const poller = new KafkaPoller("kafka source r1", settings, { topics: ["t"] }, logger, 1000);
  expect(poller.ensureConnected()).toBe(false);
  await waitUntil(() => peer!.accepted() >= 1, "the consumer connected to the peer", 30_000, 10);
  await poller.close();
  await waitUntil(() => logger.lines.length > 0, "the reconnect's end logged", 30_000, 10);
  expect(logger.lines).toEqual([{ level: "info", message: "kafka source r1: closed while it connected" }]);
  // A broker that never answers, with a short bound: warned, named once.
  const short = consumerSettings({ ...settings, bootstrap: `127.0.0.1:${peer.port}`, bootstrapKey: "kafka.bootstrap.servers", props: { "request.timeout.ms": "500", "session.timeout.ms": "1000", "heartbeat.interval.ms": "300" }, groupId: "g", defaultOffsetReset: "earliest", clientId: "silent", label: "kafka source r1", logger: silentLogger });
  const again = new KafkaPoller("kafka source r1", short, { topics: ["t"] }, logger, 1000);
  logger.lines.length = 0;
  again.ensureConnected();
  await waitUntil(() => logger.lines.length > 0, "the failed reconnect logged", 30_000, 10);
  expect(logger.lines).toEqual([
    {
      level: "warn",
      message: `kafka source r1: Kafka at 127.0.0.1:${peer.port}: no answer from the brokers within 1500 ms (request.timeout.ms + session.timeout.ms); 127.0.0.1:${peer.port} accepts connections but did not answer a Kafka request: check that kafka.bootstrap.servers names a Kafka listener`,
    },
  ]);
  await again.close();
});
