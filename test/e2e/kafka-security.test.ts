/**
 * The Kafka sink and source over a broker's SASL_SSL listener (TLS with a self-signed
 * certificate trusted as a PEM truststore; SASL PLAIN and SCRAM-SHA-512 users).
 */
import { afterAll, expect } from "bun:test";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import { tempDir } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { SASL_USERS } from "../support/kafka.ts";
import { cleanupsAfterEach, kafkaForFile, kafkaSink, kafkaSource, putEvents, takeEvents } from "../support/kafka-tests.ts";
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
    return { saslSsl: { keystore: pkcs12(dirs.dir, pair, "broker", "changeit"), password: "changeit" } };
  },
});
const cleanups = cleanupsAfterEach();
afterAll(() => dirs.cleanup());

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
    const secure = `127.0.0.1:${kafka.nodes[0].securePort}`;
    await kafka.createTopic(topic);
    const { sink: k, channel } = kafkaSink({ "kafka.bootstrap.servers": secure, "kafka.topic": topic, ...security("kafka.producer.", "PLAIN", SASL_USERS.plain, "plain.PlainLoginModule") }, { cleanups });
    await k.start();
    await putEvents(channel, [createEvent("over tls")]);
    expect(await k.process()).toBe("READY");

    const { source: r, channel: out } = kafkaSource(
      {
        "kafka.bootstrap.servers": secure,
        "kafka.topics": topic,
        "kafka.consumer.auto.offset.reset": "earliest",
        batchDurationMillis: "100",
        ...security("kafka.consumer.", "SCRAM-SHA-512", SASL_USERS.scram, "scram.ScramLoginModule"),
      },
      { cleanups },
    );
    await r.start();
    const got: Event[] = [];
    for (let i = 0; i < 100 && got.length === 0; i++) {
      await r.process();
      await takeEvents(out, got);
    }
    expect(got.map(bodyText)).toEqual(["over tls"]);

    const { sink: refused } = kafkaSink({ "kafka.bootstrap.servers": secure, "kafka.topic": topic, ...security("kafka.producer.", "SCRAM-SHA-512", { username: "bob", password: "wrong" }, "scram.ScramLoginModule"), "kafka.producer.retries": "0" }, { cleanups, name: "k2" });
    const err = await refused.start().then(() => null, (e: Error) => e);
    expect(err?.message).toContain(`Kafka at ${secure}`);
    expect(err?.message).toContain("SASL authentication failed");
  },
  240_000,
);
