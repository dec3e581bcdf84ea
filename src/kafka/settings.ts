/**
 * Flume's Kafka settings (the Java client's property names under kafka.producer.* and
 * kafka.consumer.*, with kafka.bootstrap.servers and the security settings) mapped to the
 * options of the client this agent uses. What has no counterpart is reported once at start:
 * known Java settings that make no difference here at info level, unknown ones as warnings.
 */
import { readFileSync } from "node:fs";
import type { Logger } from "../core/logger.ts";
import { ConfigurationError } from "../core/errors.ts";

export interface Broker {
  host: string;
  port: number;
}

export interface SaslSettings {
  mechanism: "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512";
  username: string;
  password: string;
}

/** Connection options shared by producers and consumers. */
export interface ConnectionSettings {
  bootstrapBrokers: Broker[];
  clientId: string;
  /** security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) and its key as written, for errors. */
  securityProtocol: string;
  securityProtocolKey: string;
  tls?: { ca?: string; cert?: string; key?: string; rejectUnauthorized: boolean; checkServerIdentity?: () => undefined };
  sasl?: SaslSettings;
  connectTimeout: number;
  requestTimeout: number;
  retries: number;
  retryDelay: number;
}

export interface ProducerSettings extends ConnectionSettings {
  /** -1 (all), 0 or 1. */
  acks: number;
  idempotent: boolean;
  compression: "none" | "gzip" | "snappy" | "lz4" | "zstd";
  /** Largest record (value + key + headers) the producer sends: max.request.size. */
  maxRequestSize: number;
  /** max.in.flight.requests.per.connection when set: the Kafka sink's batches in flight. */
  maxInFlight?: number;
  /** delivery.timeout.ms: a send not acknowledged within it fails (deliveryTimeoutOf). */
  deliveryTimeout: number;
  /** Whether delivery.timeout.ms was set (else it is derived from request.timeout.ms), for messages. */
  deliveryTimeoutSet: boolean;
  /** retries not set: as the Java producer, a broker out of reach is tried again until deliveryTimeout. */
  retriesUntilDeadline: boolean;
}

/** The Java producer's delivery.timeout.ms default. */
const DELIVERY_TIMEOUT_DEFAULT = 120_000;

/**
 * As the Java producer: a send fails once delivery.timeout.ms passed without an
 * acknowledgement, retries included. Set, it must be at least linger.ms + request.timeout.ms
 * (the Java producer refuses less); not set, it is 120000 or linger.ms + request.timeout.ms
 * when that is more.
 */
function deliveryTimeoutOf(props: Readonly<Record<string, string>>, prefix: string, requestTimeout: number): number {
  const floor = intOf(props, "linger.ms", prefix, 0) + requestTimeout;
  if (props["delivery.timeout.ms"] === undefined) return Math.max(DELIVERY_TIMEOUT_DEFAULT, floor);
  const n = intOf(props, "delivery.timeout.ms", prefix, DELIVERY_TIMEOUT_DEFAULT);
  if (n < floor) throw new ConfigurationError(`${prefix}delivery.timeout.ms`, `is ${n}, below ${prefix}linger.ms + ${prefix}request.timeout.ms (${floor}); the Java producer refuses that too`);
  return n;
}

export interface ConsumerSettings extends ConnectionSettings {
  groupId: string;
  autoOffsetReset: "earliest" | "latest" | "none";
  sessionTimeout: number;
  heartbeatInterval: number;
  rebalanceTimeout: number;
  maxWaitTime: number;
  minBytes: number;
  maxBytes: number;
  maxBytesPerPartition: number;
  isolationLevel: number;
  /** metadata.max.age.ms: how often kafka.topics.regex is matched again against the topics. */
  metadataMaxAge: number;
  /** allow.auto.create.topics (the Java consumer's default true): a topic named in kafka.topics is created when the brokers create topics on use. */
  allowAutoCreateTopics: boolean;
}

/** Java client settings that have no effect on this client (its own batching and memory model). */
const NO_EFFECT = new Set([
  "key.serializer",
  "value.serializer",
  "key.deserializer",
  "value.deserializer",
  "linger.ms",
  "batch.size",
  "buffer.memory",
  "max.block.ms",
  "metadata.max.age.ms",
  "max.in.flight.requests.per.connection",
  "send.buffer.bytes",
  "receive.buffer.bytes",
  "reconnect.backoff.ms",
  "reconnect.backoff.max.ms",
  "partitioner.class",
  "interceptor.classes",
  "metric.reporters",
  "partition.assignment.strategy",
  "auto.commit.interval.ms",
  "max.poll.interval.ms",
  "max.poll.records",
  "connections.max.idle.ms",
  "ssl.protocol",
  "ssl.enabled.protocols",
  "ssl.cipher.suites",
  "sasl.kerberos.service.name",
]);

/** Flume's switch for the Java client's empty ssl.endpoint.identification.algorithm, which a Flume properties file cannot hold (KafkaSSLUtil). */
const FLUME_NO_HOST_CHECK = "ssl.disableTLSHostnameVerification";

const SECURITY_KEYS = new Set([
  "security.protocol",
  "sasl.mechanism",
  "sasl.jaas.config",
  "ssl.truststore.location",
  "ssl.truststore.type",
  "ssl.truststore.password",
  "ssl.truststore.certificates",
  "ssl.keystore.location",
  "ssl.keystore.type",
  "ssl.keystore.password",
  "ssl.keystore.certificate.chain",
  "ssl.keystore.key",
  "ssl.key.password",
  "ssl.endpoint.identification.algorithm",
  FLUME_NO_HOST_CHECK,
]);

const COMMON_KEYS = new Set(["client.id", "request.timeout.ms", "retries", "retry.backoff.ms", "socket.connection.setup.timeout.ms", ...SECURITY_KEYS]);
const PRODUCER_KEYS = new Set([...COMMON_KEYS, "acks", "enable.idempotence", "compression.type", "max.request.size", "delivery.timeout.ms"]);
const IN_FLIGHT_KEY = "max.in.flight.requests.per.connection";
/** A producer that keeps several batches in flight (the Kafka sink) also reads max.in.flight.requests.per.connection. */
const PRODUCER_KEYS_IN_FLIGHT = new Set([...PRODUCER_KEYS, IN_FLIGHT_KEY]);
const CONSUMER_KEYS = new Set([
  ...COMMON_KEYS,
  "group.id",
  "auto.offset.reset",
  "enable.auto.commit",
  "session.timeout.ms",
  "heartbeat.interval.ms",
  "fetch.min.bytes",
  "fetch.max.bytes",
  "fetch.max.wait.ms",
  "max.partition.fetch.bytes",
  "isolation.level",
  "metadata.max.age.ms",
  "allow.auto.create.topics",
]);

/** The settings of `props` that say how to reach the brokers (security, client id, timeouts, retries), for a second client on the same connection. */
export function connectionProps(props: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(props).filter(([k]) => COMMON_KEYS.has(k)));
}

/** The brokers of a bootstrap list as written, for comparing lists (lowercase, no scheme); never throws. */
export function brokerList(list: string): string[] {
  return list
    .split(",")
    .map((s) => s.trim().toLowerCase().replace(/^[a-z_]+:\/\//, ""))
    .filter(Boolean);
}

export function parseBrokers(list: string, key: string): Broker[] {
  const brokers: Broker[] = [];
  for (const item of list.split(",").map((s) => s.trim()).filter(Boolean)) {
    const m = item.match(/^(?:[A-Za-z_]+:\/\/)?(\[[^\]]+\]|[^:]+):(\d+)$/);
    if (!m) throw new ConfigurationError(key, `"${item}" is not host:port`);
    brokers.push({ host: m[1].replace(/^\[|\]$/g, ""), port: Number(m[2]) });
  }
  if (brokers.length === 0) throw new ConfigurationError(key, "is empty: give the brokers as host1:9092,host2:9092");
  return brokers;
}

function intOf(props: Readonly<Record<string, string>>, key: string, prefix: string, fallback: number): number {
  const raw = props[key];
  if (raw === undefined) return fallback;
  const n = Number(raw.trim());
  if (!Number.isInteger(n) || n < 0) throw new ConfigurationError(prefix + key, `expected a whole number, got "${raw}"`);
  return n;
}

function booleanOf(props: Readonly<Record<string, string>>, key: string, prefix: string, fallback: boolean): boolean {
  const raw = props[key];
  if (raw === undefined) return fallback;
  const v = raw.trim().toLowerCase();
  if (v !== "true" && v !== "false") throw new ConfigurationError(prefix + key, `expected true or false, got "${raw}"`);
  return v === "true";
}

function jaasOption(jaas: string, name: string): string | undefined {
  return jaas.match(new RegExp(`\\b${name}\\s*=\\s*"([^"]*)"`))?.[1];
}

function pemFile(props: Readonly<Record<string, string>>, prefix: string, which: "truststore" | "keystore"): string | undefined {
  const location = props[`ssl.${which}.location`];
  if (location === undefined) return undefined;
  const typeKey = `ssl.${which}.type`;
  const type = (props[typeKey] ?? "JKS").toUpperCase();
  if (type !== "PEM") {
    // At the type when it is written, else at the location (the type is JKS by default).
    const at = props[typeKey] === undefined ? `ssl.${which}.location` : typeKey;
    throw new ConfigurationError(prefix + at, `the ${which} is of type ${type}, which is not supported: convert it to PEM and set ${prefix}${typeKey} = PEM`);
  }
  try {
    return readFileSync(location, "utf8");
  } catch (err) {
    throw new ConfigurationError(`${prefix}ssl.${which}.location`, `cannot be read: ${(err as Error).message}`);
  }
}

function connectionSettings(i: ClientInput, prefix: string): ConnectionSettings {
  const props = i.props;
  const protocol = (props["security.protocol"] ?? "PLAINTEXT").toUpperCase();
  if (!["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"].includes(protocol)) {
    throw new ConfigurationError(`${prefix}security.protocol`, `expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, got "${props["security.protocol"]}"`);
  }
  const settings: ConnectionSettings = {
    bootstrapBrokers: parseBrokers(i.bootstrap, i.bootstrapKey),
    clientId: props["client.id"] ?? i.clientId,
    securityProtocol: protocol,
    securityProtocolKey: `${prefix}security.protocol`,
    connectTimeout: intOf(props, "socket.connection.setup.timeout.ms", prefix, 10_000),
    requestTimeout: intOf(props, "request.timeout.ms", prefix, 30_000),
    retries: intOf(props, "retries", prefix, 3),
    // The Java client's default (Kafka 2.7.2, the client Flume 1.11 ships).
    retryDelay: intOf(props, "retry.backoff.ms", prefix, 100),
  };
  if (protocol === "SSL" || protocol === "SASL_SSL") {
    const keystore = pemFile(props, prefix, "keystore");
    const noHostCheck = (props[FLUME_NO_HOST_CHECK] ?? "").trim().toLowerCase() === "true";
    const verifyHost = !noHostCheck && (props["ssl.endpoint.identification.algorithm"] ?? "https").trim() !== "";
    settings.tls = {
      ca: pemFile(props, prefix, "truststore") ?? props["ssl.truststore.certificates"],
      cert: keystore ?? props["ssl.keystore.certificate.chain"],
      key: keystore ?? props["ssl.keystore.key"],
      rejectUnauthorized: true,
      ...(verifyHost ? {} : { checkServerIdentity: () => undefined }),
    };
  }
  if (protocol.startsWith("SASL_")) {
    const mechanism = (props["sasl.mechanism"] ?? "GSSAPI").toUpperCase();
    if (mechanism !== "PLAIN" && mechanism !== "SCRAM-SHA-256" && mechanism !== "SCRAM-SHA-512") {
      // GSSAPI is the default: without sasl.mechanism written, the protocol is what asked for it.
      if (props["sasl.mechanism"] === undefined) throw new ConfigurationError(`${prefix}security.protocol`, `${protocol} needs ${prefix}sasl.mechanism = PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (its default, GSSAPI, is not supported)`);
      throw new ConfigurationError(`${prefix}sasl.mechanism`, `${mechanism} is not supported: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`);
    }
    const jaas = props["sasl.jaas.config"] ?? "";
    const username = jaasOption(jaas, "username");
    const password = jaasOption(jaas, "password");
    if (username === undefined || password === undefined) {
      const needs = 'username="..." and password="..." (as for the Java client\'s PlainLoginModule or ScramLoginModule)';
      if (props["sasl.jaas.config"] === undefined) throw new ConfigurationError(`${prefix}sasl.mechanism`, `${mechanism} needs ${prefix}sasl.jaas.config with ${needs}`);
      throw new ConfigurationError(`${prefix}sasl.jaas.config`, `must give ${needs}`);
    }
    settings.sasl = { mechanism, username, password };
  }
  return settings;
}

/** Reports the settings under `prefix` that this client does not use. */
function reportUnused(props: Readonly<Record<string, string>>, known: Set<string>, prefix: string, label: string, logger: Logger): void {
  for (const key of Object.keys(props)) {
    if (known.has(key)) continue;
    if (NO_EFFECT.has(key)) logger.info(`${label}: ${prefix}${key} has no effect with this agent's Kafka client; ignored`);
    else logger.warn(`${label}: ${prefix}${key} is not a Kafka client setting this agent knows; ignored`);
  }
}

function acksOf(raw: string, key: string): number {
  const v = raw.trim().toLowerCase();
  if (v === "all" || v === "-1") return -1;
  if (v === "0" || v === "1") return Number(v);
  throw new ConfigurationError(key, `expected all, -1, 0 or 1, got "${raw}"`);
}

/** What a producer's and a consumer's settings are read from. */
interface ClientInput {
  bootstrap: string;
  /** The property that named bootstrap (for errors). */
  bootstrapKey: string;
  /** kafka.producer.* or kafka.consumer.* without the prefix. */
  props: Readonly<Record<string, string>>;
  clientId: string;
  /** Names the component in log lines. */
  label: string;
  logger: Logger;
}

export interface ProducerInput extends ClientInput {
  /** The acks to use when kafka.producer.acks is not set. */
  defaultAcks: string;
  /** Whether the component keeps several batches in flight (max.in.flight.requests.per.connection has an effect); otherwise that setting is reported as having none. */
  batchesInFlight?: boolean;
}

export function producerSettings(i: ProducerInput): ProducerSettings {
  const prefix = "kafka.producer.";
  reportUnused(i.props, i.batchesInFlight ? PRODUCER_KEYS_IN_FLIGHT : PRODUCER_KEYS, prefix, i.label, i.logger);
  const acks = acksOf(i.props.acks ?? i.defaultAcks, `${prefix}acks`);
  const compression = (i.props["compression.type"] ?? "none").trim().toLowerCase();
  if (!["none", "gzip", "snappy", "lz4", "zstd"].includes(compression)) throw new ConfigurationError(`${prefix}compression.type`, `expected none, gzip, snappy, lz4 or zstd, got "${i.props["compression.type"]}"`);
  const idempotence = (i.props["enable.idempotence"] ?? (acks === -1 ? "true" : "false")).trim().toLowerCase() === "true";
  if (idempotence && acks !== -1) throw new ConfigurationError(`${prefix}enable.idempotence`, `true needs ${prefix}acks = all`);
  const inFlightKey = IN_FLIGHT_KEY;
  const maxInFlight = !i.batchesInFlight || i.props[inFlightKey] === undefined ? undefined : intOf(i.props, inFlightKey, prefix, 1);
  if (maxInFlight === 0) throw new ConfigurationError(prefix + inFlightKey, "expected 1 or more, got 0");
  // As the Java producer: the broker keeps the sequences of the last 5 batches per partition.
  if (idempotence && maxInFlight !== undefined && maxInFlight > 5) throw new ConfigurationError(prefix + inFlightKey, `is ${maxInFlight}: an idempotent producer (acks = all) keeps at most 5 requests in flight; set 1 to 5, or enable.idempotence = false`);
  const connection = connectionSettings(i, prefix);
  return {
    ...connection,
    deliveryTimeout: deliveryTimeoutOf(i.props, prefix, connection.requestTimeout),
    deliveryTimeoutSet: i.props["delivery.timeout.ms"] !== undefined,
    retriesUntilDeadline: i.props.retries === undefined,
    acks,
    idempotent: idempotence,
    ...(maxInFlight === undefined ? {} : { maxInFlight }),
    compression: compression as ProducerSettings["compression"],
    maxRequestSize: intOf(i.props, "max.request.size", prefix, 1_048_576),
  };
}

export interface ConsumerInput extends ClientInput {
  groupId: string;
  defaultOffsetReset: "earliest" | "latest";
}

export function consumerSettings(i: ConsumerInput): ConsumerSettings {
  const prefix = "kafka.consumer.";
  reportUnused(i.props, CONSUMER_KEYS, prefix, i.label, i.logger);
  if ((i.props["enable.auto.commit"] ?? "false").trim().toLowerCase() === "true") {
    i.logger.warn(`${i.label}: ${prefix}enable.auto.commit = true is ignored: offsets are committed only after the events are committed to the channel`);
  }
  const reset = (i.props["auto.offset.reset"] ?? i.defaultOffsetReset).trim().toLowerCase();
  if (reset !== "earliest" && reset !== "latest" && reset !== "none") throw new ConfigurationError(`${prefix}auto.offset.reset`, `expected earliest, latest or none, got "${i.props["auto.offset.reset"]}"`);
  const isolation = (i.props["isolation.level"] ?? "read_uncommitted").trim().toLowerCase();
  if (isolation !== "read_uncommitted" && isolation !== "read_committed") throw new ConfigurationError(`${prefix}isolation.level`, `expected read_uncommitted or read_committed, got "${i.props["isolation.level"]}"`);
  // Kafka 2.7.2's default (the client Flume 1.11 ships; 3.0 raised it to 45 s): a dead member's partitions move after 10 s.
  const sessionTimeout = intOf(i.props, "session.timeout.ms", prefix, 10_000);
  const heartbeatInterval = intOf(i.props, "heartbeat.interval.ms", prefix, 3000);
  // As the Java client (and the broker would end a session that beats less often than it lasts).
  if (heartbeatInterval >= sessionTimeout) {
    // At the one written (the other has its default).
    if (i.props["heartbeat.interval.ms"] === undefined) throw new ConfigurationError(`${prefix}session.timeout.ms`, `is ${sessionTimeout}, not above ${prefix}heartbeat.interval.ms (${heartbeatInterval} by default)`);
    throw new ConfigurationError(`${prefix}heartbeat.interval.ms`, `is ${heartbeatInterval}, not below ${prefix}session.timeout.ms (${sessionTimeout})`);
  }
  return {
    ...connectionSettings(i, prefix),
    groupId: i.groupId,
    autoOffsetReset: reset,
    sessionTimeout,
    heartbeatInterval,
    rebalanceTimeout: sessionTimeout,
    maxWaitTime: intOf(i.props, "fetch.max.wait.ms", prefix, 500),
    minBytes: intOf(i.props, "fetch.min.bytes", prefix, 1),
    maxBytes: intOf(i.props, "fetch.max.bytes", prefix, 52_428_800),
    maxBytesPerPartition: intOf(i.props, "max.partition.fetch.bytes", prefix, 1_048_576),
    isolationLevel: isolation === "read_committed" ? 1 : 0,
    // The Java client's default: a topic created later that matches kafka.topics.regex is read within 5 minutes.
    metadataMaxAge: Math.max(100, intOf(i.props, "metadata.max.age.ms", prefix, 300_000)),
    allowAutoCreateTopics: booleanOf(i.props, "allow.auto.create.topics", prefix, true),
  };
}

/** The client options shared by producers and consumers, in the client's terms. */
export function clientOptions(s: ConnectionSettings) {
  return {
    clientId: s.clientId,
    bootstrapBrokers: s.bootstrapBrokers,
    connectTimeout: s.connectTimeout,
    timeout: s.requestTimeout,
    requestTimeout: s.requestTimeout,
    retries: s.retries,
    retryDelay: s.retryDelay,
    ...(s.tls ? { tls: s.tls } : {}),
    ...(s.sasl ? { sasl: { mechanism: s.sasl.mechanism, username: s.sasl.username, password: s.sasl.password } } : {}),
  };
}

/** The brokers as host:port for messages. */
export function describeBrokers(s: ConnectionSettings): string {
  return s.bootstrapBrokers.map((b) => `${b.host}:${b.port}`).join(",");
}
