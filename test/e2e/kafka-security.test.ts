/**
 * The Kafka sink and source over a broker's SASL_SSL listener (TLS with a self-signed
 * certificate trusted as a PEM truststore; SASL PLAIN and SCRAM-SHA-512 users).
 */
import { afterAll, afterEach, beforeAll, expect } from "bun:test";
import { componentContext } from "../../src/components/component.ts";
import { definition as sinkDefinition } from "../../src/components/sinks/kafka.ts";
import { definition as sourceDefinition } from "../../src/components/sources/kafka.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { tempDir } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { type KafkaCluster, SASL_USERS, startKafka } from "../support/kafka.ts";
import { needsOpenssl } from "../support/requires.ts";
import { pkcs12, selfSignedCert } from "../support/tls.ts";

const needs = needsJvm.and(needsOpenssl);
let kafka: KafkaCluster;
let certFile = "";
let secure = "";
const cleanups: (() => unknown)[] = [];
const dirs = tempDir("flume-kafka-tls-");

beforeAll(async () => {
  if (!needs.holds) return;
  const pair = selfSignedCert(dirs.dir, "broker");
  certFile = pair.cert;
  kafka = await startKafka({ autoCreateTopics: false, saslSsl: { keystore: pkcs12(dirs.dir, pair, "broker", "changeit"), password: "changeit" } });
  secure = `127.0.0.1:${kafka.nodes[0].securePort}`;
}, 300_000);
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
}, 60_000);
afterAll(async () => {
  await kafka?.stop();
  dirs.cleanup();
}, 60_000);

function security(prefix: "kafka.producer." | "kafka.consumer.", mechanism: string, user: { username: string; password: string }, module: string): Record<string, string> {
  return {
    [`${prefix}security.protocol`]: "SASL_SSL",
    [`${prefix}sasl.mechanism`]: mechanism,
    [`${prefix}sasl.jaas.config`]: `org.apache.kafka.common.security.${module} required username="${user.username}" password="${user.password}";`,
    [`${prefix}ssl.truststore.type`]: "PEM",
    [`${prefix}ssl.truststore.location`]: certFile,
  };
}

needs.test(
  "over SASL_SSL: the sink authenticates with PLAIN, the source with SCRAM-SHA-512; a wrong password fails the start",
  async () => {
    const topic = "secure";
    await kafka.createTopic(topic);
    const { options } = sinkDefinition.parse({ "kafka.bootstrap.servers": secure, "kafka.topic": topic, ...security("kafka.producer.", "PLAIN", SASL_USERS.plain, "plain.PlainLoginModule") });
    const k = sinkDefinition.create(options, componentContext("k1"));
    const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 100 });
    channel.start();
    k.setChannel(channel);
    cleanups.push(() => k.stop());
    await k.start();
    const tx = channel.getTransaction();
    tx.begin();
    tx.put(createEvent("over tls"));
    await tx.commit();
    tx.close();
    expect(await k.process()).toBe("READY");

    const src = sourceDefinition.parse({
      "kafka.bootstrap.servers": secure,
      "kafka.topics": topic,
      "kafka.consumer.auto.offset.reset": "earliest",
      batchDurationMillis: "100",
      ...security("kafka.consumer.", "SCRAM-SHA-512", SASL_USERS.scram, "scram.ScramLoginModule"),
    });
    const r = sourceDefinition.create(src.options, componentContext("r1"));
    const out = new MemoryChannel("c2", { capacity: 100, transactionCapacity: 100 });
    out.start();
    const processor = new ChannelProcessor(new ReplicatingChannelSelector([out]));
    processor.initialize();
    r.setChannelProcessor(processor);
    cleanups.push(() => r.stop());
    await r.start();
    const got: Event[] = [];
    for (let i = 0; i < 100 && got.length === 0; i++) {
      await r.process();
      const t = out.getTransaction();
      t.begin();
      for (let e = t.take(); e; e = t.take()) got.push(e);
      await t.commit();
      t.close();
    }
    expect(got.map(bodyText)).toEqual(["over tls"]);

    const bad = sinkDefinition.parse({ "kafka.bootstrap.servers": secure, "kafka.topic": topic, ...security("kafka.producer.", "SCRAM-SHA-512", { username: "bob", password: "wrong" }, "scram.ScramLoginModule"), "kafka.producer.retries": "0" });
    const refused = sinkDefinition.create(bad.options, componentContext("k2"));
    const err = await refused.start().then(() => null, (e: Error) => e);
    expect(err?.message).toContain(`Kafka at ${secure}`);
    expect(err?.message).toContain("SASL authentication failed");
  },
  240_000,
);
