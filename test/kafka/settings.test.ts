import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createEvent } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { ConfigurationError } from "../../src/core/errors.ts";
import { decodeFlumeEvent, encodeFlumeEvent, flumeEventSize } from "../../src/kafka/flume-event.ts";
import { AvroWriter } from "../../src/rpc/binary.ts";
import { writeEvent } from "../../src/rpc/messages.ts";
import { consumerSettings, producerSettings } from "../../src/kafka/settings.ts";
import { ROOT, runCli } from "../support/helpers.ts";

const base = { bootstrap: "b1:9092,b2:9093", bootstrapKey: "kafka.bootstrap.servers", clientId: "flume", label: "kafka sink k1" };

test("Java producer settings map to the client's; the rest are reported, known ones at info, unknown ones as warnings", () => {
  const logger = new MemoryLogger();
  const s = producerSettings({ ...base, logger, defaultAcks: "1", props: { acks: "all", "compression.type": "zstd", "linger.ms": "5", "no.such.setting": "x", "max.request.size": "2000000" } });
  expect(s.bootstrapBrokers).toEqual([{ host: "b1", port: 9092 }, { host: "b2", port: 9093 }]);
  expect({ acks: s.acks, idempotent: s.idempotent, compression: s.compression, max: s.maxRequestSize }).toEqual({ acks: -1, idempotent: true, compression: "zstd", max: 2_000_000 });
  expect(logger.lines).toEqual([
    { level: "info", message: "kafka sink k1: kafka.producer.linger.ms has no effect with this agent's Kafka client; ignored" },
    { level: "warn", message: "kafka sink k1: kafka.producer.no.such.setting is not a Kafka client setting this agent knows; ignored" },
  ]);
  // Flume's sink default (acks 1) is not idempotent.
  expect(producerSettings({ ...base, logger, defaultAcks: "1", props: {} })).toMatchObject({ acks: 1, idempotent: false });
});

test("max.in.flight.requests.per.connection sets the batches in flight of a producer that keeps several (the sink), is reported as having no effect elsewhere (the channel), and stays within 5 when idempotent", () => {
  const key = "max.in.flight.requests.per.connection";
  const sinkLog = new MemoryLogger();
  expect(producerSettings({ ...base, logger: sinkLog, defaultAcks: "all", batchesInFlight: true, props: { [key]: "3" } }).maxInFlight).toBe(3);
  expect(sinkLog.lines).toEqual([]);
  const channelLog = new MemoryLogger();
  expect(producerSettings({ ...base, label: "kafka channel c1", logger: channelLog, defaultAcks: "all", props: { [key]: "3" } }).maxInFlight).toBeUndefined();
  expect(channelLog.lines).toEqual([{ level: "info", message: `kafka channel c1: kafka.producer.${key} has no effect with this agent's Kafka client; ignored` }]);
  expect(() => producerSettings({ ...base, logger: sinkLog, defaultAcks: "all", batchesInFlight: true, props: { [key]: "6" } })).toThrow(new ConfigurationError(`kafka.producer.${key}`, "is 6: an idempotent producer (acks = all) keeps at most 5 requests in flight; set 1 to 5, or enable.idempotence = false"));
  expect(producerSettings({ ...base, logger: sinkLog, defaultAcks: "1", batchesInFlight: true, props: { [key]: "6" } }).maxInFlight).toBe(6);
});

test("delivery.timeout.ms bounds a send as the Java producer's: 120000 by default, at least linger.ms + request.timeout.ms, refused below that when set", () => {
  const logger = new MemoryLogger();
  const settings = (props: Record<string, string>) => producerSettings({ ...base, logger, defaultAcks: "all", batchesInFlight: true, props });
  expect(settings({})).toMatchObject({ deliveryTimeout: 120_000, deliveryTimeoutSet: false, retriesUntilDeadline: true });
  expect(settings({ "delivery.timeout.ms": "6000", "request.timeout.ms": "3000", retries: "2" })).toMatchObject({ deliveryTimeout: 6000, deliveryTimeoutSet: true, retriesUntilDeadline: false });
  // Not set: raised to cover one request and the linger, as the Java producer does.
  expect(settings({ "request.timeout.ms": "150000", "linger.ms": "100" }).deliveryTimeout).toBe(150_100);
  expect(() => settings({ "delivery.timeout.ms": "5000", "request.timeout.ms": "4000", "linger.ms": "2000" })).toThrow(new ConfigurationError("kafka.producer.delivery.timeout.ms", "is 5000, below kafka.producer.linger.ms + kafka.producer.request.timeout.ms (6000); the Java producer refuses that too"));
  // It has an effect now: never reported as ignored.
  expect(logger.lines.filter((l) => l.message.includes("delivery.timeout.ms"))).toEqual([]);
});

test("SASL and TLS settings: PLAIN/SCRAM credentials from sasl.jaas.config, PEM stores; a JKS store is refused naming the setting", () => {
  const logger = new MemoryLogger();
  const jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";';
  const s = consumerSettings({ ...base, logger, groupId: "g", defaultOffsetReset: "latest", props: { "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas, "ssl.truststore.certificates": "PEM" } });
  expect(s.sasl).toEqual({ mechanism: "SCRAM-SHA-512", username: "alice", password: "s3cret" });
  expect(s.tls?.ca).toBe("PEM");
  expect(() => consumerSettings({ ...base, logger, groupId: "g", defaultOffsetReset: "latest", props: { "security.protocol": "SSL", "ssl.truststore.location": "/x.jks" } })).toThrow(
    new ConfigurationError("kafka.consumer.ssl.truststore.location", "the truststore is of type JKS, which is not supported: convert it to PEM and set kafka.consumer.ssl.truststore.type = PEM"),
  );
  expect(() => producerSettings({ ...base, logger, defaultAcks: "1", props: { "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI" } })).toThrow(
    new ConfigurationError("kafka.producer.sasl.mechanism", "GSSAPI is not supported: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
  );
  // Each problem is at the setting written, for `flume validate` to give its line: the store's type when written, else its location.
  expect(() => consumerSettings({ ...base, logger, groupId: "g", defaultOffsetReset: "latest", props: { "security.protocol": "SSL", "ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/x.p12" } })).toThrow(
    new ConfigurationError("kafka.consumer.ssl.keystore.type", "the keystore is of type PKCS12, which is not supported: convert it to PEM and set kafka.consumer.ssl.keystore.type = PEM"),
  );
  expect(() => producerSettings({ ...base, logger, defaultAcks: "1", props: { "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN" } })).toThrow(
    new ConfigurationError("kafka.producer.sasl.mechanism", 'PLAIN needs kafka.producer.sasl.jaas.config with username="..." and password="..." (as for the Java client\'s PlainLoginModule or ScramLoginModule)'),
  );
});

test("Flume's ssl.disableTLSHostnameVerification = true turns the broker's host name check off (the Java client's empty ssl.endpoint.identification.algorithm), and is no unknown setting", () => {
  const logger = new MemoryLogger();
  const tls = { "security.protocol": "SSL", "ssl.truststore.certificates": "PEM" };
  const check = (props: Record<string, string>) => consumerSettings({ ...base, logger, groupId: "g", defaultOffsetReset: "latest", props: { ...tls, ...props } }).tls?.checkServerIdentity;
  expect(check({})).toBeUndefined();
  expect(check({ "ssl.disableTLSHostnameVerification": "false" })).toBeUndefined();
  expect(check({ "ssl.disableTLSHostnameVerification": "TRUE" })).toBeFunction();
  expect(check({ "ssl.endpoint.identification.algorithm": "" })).toBeFunction();
  expect(producerSettings({ ...base, logger, defaultAcks: "1", props: { ...tls, "ssl.disableTLSHostnameVerification": "true" } }).tls?.checkServerIdentity).toBeFunction();
  expect(logger.lines).toEqual([]);
});

test("client defaults are those of Kafka 2.7.2, the Java client Flume 1.11 ships: session.timeout.ms 10000, retry.backoff.ms 100", () => {
  const logger = new MemoryLogger();
  const c = consumerSettings({ ...base, logger, groupId: "g", defaultOffsetReset: "latest", props: {} });
  expect({ session: c.sessionTimeout, heartbeat: c.heartbeatInterval, retry: c.retryDelay }).toEqual({ session: 10_000, heartbeat: 3000, retry: 100 });
  expect(producerSettings({ ...base, logger, defaultAcks: "1", props: {} }).retryDelay).toBe(100);
});

test("an Avro FlumeEvent round-trips, and bytes that are not one are refused", () => {
  const e = createEvent("body ü", { a: "1", key: "k" });
  const bytes = encodeFlumeEvent(e);
  // map block of 2 entries (zig-zag 4), then "a" (len 1 -> 2)...
  expect([...bytes.subarray(0, 3)]).toEqual([4, 2, "a".charCodeAt(0)]);
  const back = decodeFlumeEvent(bytes);
  expect(back.headers).toEqual({ a: "1", key: "k" });
  expect(Buffer.from(back.body).toString()).toBe("body ü");
  expect(() => decodeFlumeEvent(Buffer.from("this is plain text, not an event"))).toThrow();
});

test("a FlumeEvent is sized exactly and written as the Avro RPC writes an event, non-ASCII headers included", () => {
  const events = [createEvent("a", { h: "1" }), createEvent(""), createEvent("body ü", { "ünï": "cödé ☃".repeat(40), key: "k" }), createEvent("z".repeat(300))];
  const avro = (e: (typeof events)[number]) => {
    const w = new AvroWriter(16);
    writeEvent(w, e);
    return w.buf.subarray(0, w.pos).toString("hex");
  };
  expect(events.map((e) => encodeFlumeEvent(e).toString("hex"))).toEqual(events.map(avro));
  expect(events.map(flumeEventSize)).toEqual(events.map((e) => encodeFlumeEvent(e).length));
  expect(events.map((e) => Buffer.from(decodeFlumeEvent(encodeFlumeEvent(e)).body).toString())).toEqual(["a", "", "body ü", "z".repeat(300)]);
});

test("`flume describe kafka` lists the sink, source and channel with Flume's properties", () => {
  const r = runCli(["describe", "kafka"]);
  expect(r.code).toBe(0);
  for (const head of ["sink org.apache.flume.sink.kafka.KafkaSink", "source org.apache.flume.source.kafka.KafkaSource", "channel org.apache.flume.channel.kafka.KafkaChannel"]) expect(r.stdout).toContain(head);
  for (const key of ["kafka.bootstrap.servers", "flumeBatchSize", "useFlumeEventFormat", "kafka.topics.regex", "parseAsFlumeEvent", "kafka.producer.*", "kafka.consumer.*", "header.*"]) expect(r.stdout).toContain(key);
});

test("Flume's deprecated names are read, with a warning naming the new one", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "flume-kafka-validate-"));
  const file = path.join(dir, "a.conf");
  writeFileSync(
    file,
    ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = seq", "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", "a1.sinks.k1.type = kafka", "a1.sinks.k1.channel = c1", "a1.sinks.k1.brokerList = b:9092", "a1.sinks.k1.requiredAcks = -1", ""].join("\n"),
  );
  const r = runCli(["validate", "-f", file, "-n", "a1"]);
  rmSync(dir, { recursive: true, force: true });
  const out = r.stdout + r.stderr;
  expect(out).toContain("brokerList");
  expect(out).toMatch(/brokerList.*deprecated; Flume reads it as kafka.bootstrap.servers/);
  expect(out).toMatch(/requiredAcks.*deprecated; Flume reads it as kafka.producer.acks/);
  expect(out).not.toMatch(/error/i);
});

test("a configuration with Kafka components loads the Kafka client only when a component starts", () => {
  const script = `
    import { lookupComponent } from ${JSON.stringify(path.join(ROOT, "src/components/registry.ts"))};
    for (const kind of ["sink", "source", "channel"]) lookupComponent(kind, "kafka");
    console.log(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes("@platformatic"))));
  `;
  const dir = mkdtempSync(path.join(tmpdir(), "flume-kafka-lazy-"));
  const file = path.join(dir, "probe.ts");
  writeFileSync(file, script);
  const r = spawnSync(process.execPath, [file], { cwd: ROOT, encoding: "utf8" });
  rmSync(dir, { recursive: true, force: true });
  expect(r.stderr).toBe("");
  expect(JSON.parse(r.stdout.trim())).toEqual([]);
});

test("consumer settings: heartbeat.interval.ms must be lower than session.timeout.ms; metadata.max.age.ms sets how often a pattern is matched again", () => {
  const logger = new MemoryLogger();
  const consumer = (props: Record<string, string>) => consumerSettings({ ...base, logger, groupId: "g", defaultOffsetReset: "latest", props });
  expect(() => consumer({ "session.timeout.ms": "6000", "heartbeat.interval.ms": "6000" })).toThrow(
    new ConfigurationError("kafka.consumer.heartbeat.interval.ms", "is 6000, not below kafka.consumer.session.timeout.ms (6000)"),
  );
  expect(() => consumer({ "session.timeout.ms": "3000" })).toThrow(new ConfigurationError("kafka.consumer.session.timeout.ms", "is 3000, not above kafka.consumer.heartbeat.interval.ms (3000 by default)"));
  expect(consumer({}).metadataMaxAge).toBe(300_000);
  expect(consumer({ "metadata.max.age.ms": "1000" }).metadataMaxAge).toBe(1000);
  expect(logger.lines).toEqual([]);
});

test("the Kafka client loads without compiling JSON schemas (ajv) and takes only the LRU cache of mnemonist", () => {
  // A fresh process in the project, as an agent whose configuration has a Kafka component.
  const script = `
    const { Producer, Consumer, Admin } = await import("@platformatic/kafka");
    for (const C of [Producer, Consumer, Admin]) if (typeof C !== "function") throw new Error("missing client class");
    const modules = Object.keys(require.cache).map((k) => k.slice(k.lastIndexOf("node_modules/") + 13));
    console.log(JSON.stringify(modules.filter((m) => /^(ajv|ajv-draft-04|mnemonist)\\/[^/]*\\.js$/.test(m))));
  `;
  const r = spawnSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8" });
  expect(r.stderr).toBe("");
  expect(JSON.parse(r.stdout.trim())).toEqual(["mnemonist/lru-cache.js"]);
});
