/**
 * The Kafka sink, source and channel over a broker's SASL_SSL listener (TLS with a self-signed
 * certificate trusted as a PEM truststore; SASL PLAIN and SCRAM-SHA-512 users) and its SSL
 * listener (TLS only); and a peer offering only TLS 1.1 refused.
 */
import { afterAll, expect } from "bun:test";
import { readFileSync } from "node:fs";
import tls from "node:tls";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import { tempDir, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { SASL_USERS } from "../support/kafka.ts";
import { cleanupsAfterEach, kafkaChannel, kafkaForFile, kafkaSink, kafkaSource, putEvents, takeEvents } from "../support/kafka-tests.ts";
import { needsOpenssl } from "../support/requires.ts";
import { pkcs12, selfSignedCert } from "../support/tls.ts";

const needs = needsJvm.and(needsOpenssl);
let certFile = "";
const dirs = tempDir("flume-kafka-tls-");
const kafka = kafkaForFile({
  autoCreateTopics: false,
  needs,
  before() {
    const pair = selfSignedCert(dirs.dir, "broker");
    certFile = pair.cert;
    const keystore = { keystore: pkcs12(dirs.dir, pair, "broker", "changeit"), password: "changeit" };
    return { saslSsl: keystore, ssl: keystore };
  },
});
const cleanups = cleanupsAfterEach();
afterAll(() => dirs.cleanup());

type Prefix = "kafka.producer." | "kafka.consumer.";

function security(prefix: Prefix, mechanism: string, user: { username: string; password: string }, module: string): Record<string, string> {
  return {
    ...tlsOnly(prefix),
    [`${prefix}security.protocol`]: "SASL_SSL",
    [`${prefix}sasl.mechanism`]: mechanism,
    [`${prefix}sasl.jaas.config`]: `org.apache.kafka.common.security.${module} required username="${user.username}" password="${user.password}";`,
  };
}

/** security.protocol SSL: TLS, the broker's certificate trusted, no SASL. */
function tlsOnly(prefix: Prefix): Record<string, string> {
  return { [`${prefix}security.protocol`]: "SSL", [`${prefix}ssl.truststore.type`]: "PEM", [`${prefix}ssl.truststore.location`]: certFile };
}

const PLAIN = ["PLAIN", SASL_USERS.plain, "plain.PlainLoginModule"] as const;
const SCRAM = ["SCRAM-SHA-512", SASL_USERS.scram, "scram.ScramLoginModule"] as const;
const WRONG_SCRAM = ["SCRAM-SHA-512", { username: SASL_USERS.scram.username, password: "wrong" }, "scram.ScramLoginModule"] as const;

/** Takes from the channel until `want` events came; `step` runs before each take (a source's process). */
async function takeAll(channel: Parameters<typeof takeEvents>[0], want: number, step?: () => Promise<unknown>): Promise<Event[]> {
  const got: Event[] = [];
  await waitUntil(
    async () => {
      await step?.();
      await takeEvents(channel, got);
      return got.length >= want;
    },
    `${want} events taken`,
    120_000,
    100,
  );
  return got;
}

needs.test(
  "over SASL_SSL: the sink authenticates with PLAIN, the source with SCRAM-SHA-512; a wrong password fails the start",
  async () => {
    const topic = "secure";
    const secure = `127.0.0.1:${kafka.nodes[0].securePort}`;
    await kafka.createTopic(topic);
    const { sink: k, channel } = kafkaSink({ "kafka.bootstrap.servers": secure, "kafka.topic": topic, ...security("kafka.producer.", ...PLAIN) }, { cleanups });
    await k.start();
    await putEvents(channel, [createEvent("over tls")]);
    expect(await k.process()).toBe("READY");

    const { source: r, channel: out } = kafkaSource(
      {
        "kafka.bootstrap.servers": secure,
        "kafka.topics": topic,
        "kafka.consumer.auto.offset.reset": "earliest",
        batchDurationMillis: "100",
        ...security("kafka.consumer.", ...SCRAM),
      },
      { cleanups },
    );
    await r.start();
    const got = await takeAll(out, 1, () => r.process());
    expect(got.map(bodyText)).toEqual(["over tls"]);

    const { sink: refused } = kafkaSink({ "kafka.bootstrap.servers": secure, "kafka.topic": topic, ...security("kafka.producer.", ...WRONG_SCRAM), "kafka.producer.retries": "0" }, { cleanups, name: "k2" });
    const err = await refused.start().then(() => null, (e: Error) => e);
    expect(err?.message).toContain(`Kafka at ${secure}`);
    expect(err?.message).toContain("SASL authentication failed");
  },
  240_000,
);

needs.test(
  "the Kafka channel over SASL_SSL: puts with PLAIN, takes with SCRAM-SHA-512, headers and bodies kept; a wrong password fails its start",
  async () => {
    const topic = "secure-channel";
    const secure = `127.0.0.1:${kafka.nodes[0].securePort}`;
    await kafka.createTopic(topic);
    const channel = kafkaChannel({ "kafka.bootstrap.servers": secure, "kafka.topic": topic, "kafka.consumer.group.id": "secure-channel", ...security("kafka.producer.", ...PLAIN), ...security("kafka.consumer.", ...SCRAM) }, { cleanups, name: "c1" });
    await channel.start();
    await putEvents(channel, [createEvent("first over tls", { n: "1" }), createEvent("second over tls", { n: "2" })]);
    const got = await takeAll(channel, 2);
    expect(got.map((e) => [bodyText(e), e.headers.n])).toEqual([
      ["first over tls", "1"],
      ["second over tls", "2"],
    ]);

    const refused = kafkaChannel({ "kafka.bootstrap.servers": secure, "kafka.topic": topic, ...security("kafka.producer.", ...PLAIN), ...security("kafka.consumer.", ...WRONG_SCRAM), "kafka.consumer.retries": "0" }, { cleanups, name: "c2" });
    const err = await refused.start().then(() => null, (e: Error) => e);
    expect(err?.message).toContain("SASL authentication failed");
  },
  240_000,
);

needs.test(
  "over an SSL listener (TLS without SASL): the sink writes, the source reads, the channel puts and takes",
  async () => {
    const topic = "tls-only";
    const ssl = `127.0.0.1:${kafka.nodes[0].sslPort}`;
    await kafka.createTopic(topic);
    const { sink: k, channel: into } = kafkaSink({ "kafka.bootstrap.servers": ssl, "kafka.topic": topic, ...tlsOnly("kafka.producer.") }, { cleanups });
    await k.start();
    await putEvents(into, [createEvent("ssl one"), createEvent("ssl two")]);
    expect(await k.process()).toBe("READY");
    const { source: r, channel: out } = kafkaSource({ "kafka.bootstrap.servers": ssl, "kafka.topics": topic, "kafka.consumer.group.id": "tls-source", "kafka.consumer.auto.offset.reset": "earliest", batchDurationMillis: "100", ...tlsOnly("kafka.consumer.") }, { cleanups });
    await r.start();
    const read = await takeAll(out, 2, () => r.process());
    expect(read.map(bodyText)).toEqual(["ssl one", "ssl two"]);

    const channel = kafkaChannel({ "kafka.bootstrap.servers": ssl, "kafka.topic": "tls-only-channel", "kafka.consumer.group.id": "tls-channel", ...tlsOnly("kafka.producer."), ...tlsOnly("kafka.consumer.") }, { cleanups, name: "c3" });
    await kafka.createTopic("tls-only-channel");
    await channel.start();
    await putEvents(channel, [createEvent("through the channel", { over: "ssl" })]);
    const taken = await takeAll(channel, 1);
    expect(taken.map((e) => [bodyText(e), e.headers.over])).toEqual([["through the channel", "ssl"]]);
  },
  240_000,
);

needs.test(
  "a security.protocol that does not match the listener fails the start with what to set: a client without TLS at the SSL listener, a TLS client at the PLAINTEXT listener, the sink's and the source's alike; the failed start counts no connection and logs no stop",
  async () => {
    const node = kafka.nodes[0];
    const [ssl, plain] = [`127.0.0.1:${node.sslPort}`, `127.0.0.1:${node.port}`];
    const speaksTls = (key: string) => `: Broker requires TLS; the listener speaks TLS (${key} is PLAINTEXT): set ${key} = SSL, or SASL_SSL for a SASL listener`;
    const sinkAt = async (name: string, bootstrap: string, extra: Record<string, string>) => {
      const built = kafkaSink({ "kafka.bootstrap.servers": bootstrap, "kafka.topic": "any", "kafka.producer.retries": "0", ...extra }, { cleanups, name });
      const err = await built.sink.start().then(() => null, (e: Error) => e);
      // What its runner does after a failed start, before the retry.
      await built.sink.stop();
      return { err, ...built };
    };

    const k1 = await sinkAt("k1", ssl, {});
    expect(k1.err?.message).toStartWith(`kafka sink k1: Kafka at ${ssl}: `);
    expect(k1.err?.message).toEndWith(speaksTls("kafka.producer.security.protocol"));
    expect(k1.sink.counter.values.ConnectionClosedCount).toBe(0);
    expect(k1.logger.lines.map((l) => l.message).filter((m) => m.includes("stopped"))).toEqual([]);

    const { source: r1 } = kafkaSource({ "kafka.bootstrap.servers": ssl, "kafka.topics": "any", "kafka.consumer.retries": "0" }, { cleanups });
    const r1Err = await r1.start().then(() => null, (e: Error) => e);
    expect(r1Err?.message).toEndWith(speaksTls("kafka.consumer.security.protocol"));

    const k2 = await sinkAt("k2", plain, tlsOnly("kafka.producer."));
    expect(k2.err?.message).toStartWith(`kafka sink k2: Kafka at ${plain}: `);
    expect(k2.err?.message).toEndWith("; the TLS handshake was broken off, as a listener without TLS does (kafka.producer.security.protocol is SSL): if this is a PLAINTEXT or SASL_PLAINTEXT listener, set kafka.producer.security.protocol to match");
  },
  240_000,
);

needsOpenssl.test(
  "a peer that offers only TLS 1.1 is refused: the sink's start fails and the peer sees the handshake refused for its protocol version",
  async () => {
    const pair = selfSignedCert(dirs.dir, "old-tls");
    const server = tls.createServer({ key: readFileSync(pair.key), cert: readFileSync(pair.cert), minVersion: "TLSv1", maxVersion: "TLSv1.1" }, (s) => {
      secured.push(s.getProtocol());
      s.end();
    });
    const secured: (string | null)[] = [];
    const refusals: string[] = [];
    server.on("tlsClientError", (e: NodeJS.ErrnoException) => refusals.push(String(e.code)));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;

    // The peer does speak TLS 1.1 to a client that allows it.
    await new Promise<void>((resolve, reject) => {
      const c = tls.connect({ port, host: "127.0.0.1", ca: readFileSync(pair.cert), minVersion: "TLSv1.1", maxVersion: "TLSv1.1" }, () => {
        c.end();
        resolve();
      });
      c.on("error", reject);
    });
    await waitUntil(() => secured.length === 1, "the TLS 1.1 handshake seen by the peer", 10_000);
    expect(secured).toEqual(["TLSv1.1"]);

    const { sink: k } = kafkaSink({ "kafka.bootstrap.servers": `127.0.0.1:${port}`, "kafka.topic": "any", ...tlsOnly("kafka.producer."), "kafka.producer.ssl.truststore.location": pair.cert, "kafka.producer.retries": "0" }, { cleanups });
    const err = await k.start().then(() => null, (e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err?.message).toContain(`127.0.0.1:${port}`);
    expect(secured).toEqual(["TLSv1.1"]);
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals).toEqual(refusals.map(() => "ERR_SSL_UNSUPPORTED_PROTOCOL"));
  },
  120_000,
);

needsOpenssl.test(
  "ssl.disableTLSHostnameVerification = true (Flume's switch) reaches a broker whose trusted certificate names another host; without it the start fails on the name",
  async () => {
    const pair = selfSignedCert(dirs.dir, "other-name", "subjectAltName=DNS:broker.elsewhere.invalid");
    // A TLS peer standing in for the broker: it counts the requests that came over a finished handshake.
    let requests = 0;
    const server = tls.createServer({ key: readFileSync(pair.key), cert: readFileSync(pair.cert), minVersion: "TLSv1.2" }, (s) => {
      s.on("data", () => {
        requests++;
        s.destroy();
      });
      s.on("error", () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const start = async (name: string, extra: Record<string, string>) => {
      const props = { "kafka.bootstrap.servers": `127.0.0.1:${port}`, "kafka.topic": "any", ...tlsOnly("kafka.producer."), "kafka.producer.ssl.truststore.location": pair.cert, "kafka.producer.retries": "0", ...extra };
      const { sink } = kafkaSink(props, { cleanups, name });
      return sink.start().then(() => null, (e: Error) => e);
    };

    const checked = await start("k1", {});
    expect(checked?.message).toContain(`127.0.0.1:${port}`);
    expect(checked?.message).toMatch(/altnames|does not match|host ?name/i);
    expect(requests).toBe(0);

    const unchecked = await start("k2", { "kafka.producer.ssl.disableTLSHostnameVerification": "true" });
    // The handshake passed and the client sent its first request; the stand-in answers none, so the start still fails.
    expect(unchecked).toBeInstanceOf(Error);
    expect(unchecked?.message).not.toMatch(/altnames|does not match/i);
    await waitUntil(() => requests > 0, "a Kafka request over the TLS connection", 10_000);
  },
  120_000,
);
