/**
 * What a failed Kafka connect says about the listener at the bootstrap address
 * (src/kafka/listener-probe.ts): real sockets on 127.0.0.1 that are not Kafka's (an HTTP server,
 * a server that sends a banner, one that closes at once, one that never answers) and a real
 * broker, which the probe must recognise as Kafka.
 */
import { afterEach, expect, test } from "bun:test";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import net from "node:net";
import { MemoryLogger, silentLogger } from "../../src/core/logger.ts";
import { KafkaPoller } from "../../src/kafka/consumer.ts";
import { classifyAnswer, probeListener } from "../../src/kafka/listener-probe.ts";
import { KafkaPublisher } from "../../src/kafka/producer.ts";
import { consumerSettings, producerSettings } from "../../src/kafka/settings.ts";
import { needsJvm } from "../support/jvm.ts";
import { kafkaForFile } from "../support/kafka-tests.ts";
import { silentPeer } from "../support/silent-peer.ts";

const kafka = kafkaForFile();
const closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

async function listen(server: net.Server | HttpServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => server.close());
  return (server.address() as net.AddressInfo).port;
}

/** A server that greets each connection with a line, as SSH and SMTP servers do, and keeps it open. */
async function bannerServer(banner: string): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on("error", () => {});
    s.write(banner);
  });
  closers.push(() => sockets.forEach((s) => s.destroy()));
  return listen(server);
}

function publisher(port: number) {
  const settings = producerSettings({ bootstrap: `127.0.0.1:${port}`, bootstrapKey: "kafka.bootstrap.servers", props: { "request.timeout.ms": "3000" }, clientId: "probe", label: "kafka sink k1", logger: silentLogger, defaultAcks: "all" });
  return new KafkaPublisher("kafka sink k1", settings, silentLogger);
}

test("an HTTP server on the bootstrap port: the producer's connect error says it is no Kafka listener and shows what it answered", async () => {
  const http = createHttpServer((_req, res) => res.end("hello"));
  const port = await listen(http);
  closers.push(() => http.closeAllConnections());
  const err = (await publisher(port).connect("t").catch((e: unknown) => e)) as Error;
  expect(err.message).toStartWith(`kafka sink k1: Kafka at 127.0.0.1:${port}: `);
  expect(err.message).toEndWith(`; 127.0.0.1:${port} is not a Kafka listener: it answered in another protocol (an HTTP server: "HTTP/1.1 400 Bad Request"); check kafka.bootstrap.servers`);
  expect(err.message).not.toContain("TLS");
});

test("a server that greets with a banner (as SSH does): the consumer's connect error shows the banner", async () => {
  const port = await bannerServer("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
  const logger = new MemoryLogger();
  const settings = consumerSettings({ bootstrap: `127.0.0.1:${port}`, bootstrapKey: "kafka.bootstrap.servers", props: { "request.timeout.ms": "1000", "session.timeout.ms": "1000", "heartbeat.interval.ms": "300" }, groupId: "g", defaultOffsetReset: "earliest", clientId: "probe", label: "kafka source r1", logger: silentLogger });
  const poller = new KafkaPoller("kafka source r1", settings, { topics: ["t"] }, logger, 1000);
  try {
    const err = (await poller.connect().catch((e: unknown) => e)) as Error;
    expect(err.message).toEndWith(`; 127.0.0.1:${port} is not a Kafka listener: it answered in another protocol ("SSH-2.0-OpenSSH_9.2p1 Debian-2"); check kafka.bootstrap.servers`);
  } finally {
    await poller.close();
  }
});

test("the probe: a server that closes at once, one that never answers, a port nobody listens on, and bytes it cannot name", async () => {
  const closing = net.createServer((s) => s.destroy());
  expect(await probeListener("127.0.0.1", await listen(closing), 2000)).toEqual({ kind: "closed" });
  const peer = await silentPeer();
  closers.push(() => peer.close());
  expect(await probeListener("127.0.0.1", peer.port, 300)).toEqual({ kind: "silent" });
  const free = net.createServer();
  const gone = await listen(free);
  free.close();
  expect((await probeListener("127.0.0.1", gone, 2000)).kind).toBe("unreachable");
  // A TLS alert record (content type 21, version 3.x), as a TLS listener may send on plain bytes.
  expect(classifyAnswer(Buffer.from([21, 3, 3, 0, 2, 2, 70, 0]))).toEqual({ kind: "tls" });
  expect(classifyAnswer(Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8]))).toEqual({ kind: "other", sample: "bytes 0001020304050607", http: false });
});

needsJvm.test(
  "a real Kafka broker answers the probe as Kafka",
  async () => {
    const [host, port] = kafka.bootstrap.split(",")[0].split(":");
    expect(await probeListener(host, Number(port), 10_000)).toEqual({ kind: "kafka" });
  },
  60_000,
);
