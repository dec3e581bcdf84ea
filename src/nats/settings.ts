/**
 * The properties the JetStream channel, sink and source share (connection, credentials, TLS,
 * the stream they create, the durable consumer they pull from), their schema entries and
 * their parsed form. Loads no NATS package: `flume validate` reads these schemas.
 */
import type { ComponentConfig, PropSpec } from "../config/schema.ts";
import type { TlsSettings } from "../rpc/tls.ts";
import { TLS_FILTER_PROPS } from "../components/sources/avro.ts";

export interface ConnectionSettings {
  servers: string[];
  user?: string;
  password?: string;
  token?: string;
  credsFile?: string;
  /** Milliseconds to open one connection. */
  connectTimeout: number;
  /** Milliseconds a JetStream API call or publish waits for its answer. */
  requestTimeout: number;
  /** Milliseconds between connection attempts while no server answers. */
  reconnectWait: number;
  ssl: boolean;
  tls: TlsSettings;
}

export type Retention = "workqueue" | "limits" | "interest";

export interface StreamSettings {
  stream: string;
  subject: string;
  createStream: boolean;
  replicas: number;
  storage: "file" | "memory";
  retention: Retention;
  maxMsgs: number;
  maxBytes: number;
  /** Seconds; 0: no limit. */
  maxAge: number;
  discard: "new" | "old";
  /** Milliseconds the stream remembers message ids to drop duplicates. */
  duplicateWindow: number;
}

export interface ConsumerSettings {
  consumer: string;
  /** Milliseconds before an unacknowledged message is delivered again. */
  ackWait: number;
  /** Deliveries before the server gives up on a message (-1: never). */
  maxDeliver: number;
  maxAckPending: number;
  deliverPolicy: "all" | "new";
}

export const CONNECTION_PROPS: readonly PropSpec[] = [
  { key: "servers", type: "string", default: "nats://127.0.0.1:4222", doc: "Comma-separated NATS server URLs (host:port or nats://host:port); the client fails over between them" },
  { key: "user", type: "string", doc: "User name for user/password authentication" },
  { key: "password", type: "string", secret: true, doc: "Password for user/password authentication" },
  { key: "token", type: "string", secret: true, doc: "Authentication token" },
  { key: "creds-file", type: "path", doc: "NATS credentials file (user JWT and NKey seed), as made by nsc" },
  { key: "connect-timeout", type: "int", default: 5000, min: 100, doc: "Milliseconds to open one connection to a server" },
  { key: "request-timeout", type: "int", default: 5000, min: 100, doc: "Milliseconds a publish or JetStream API call waits for its answer before it is retried" },
  { key: "reconnect-wait", type: "int", default: 1000, min: 10, doc: "Milliseconds between connection attempts while no server answers" },
  { key: "ssl", type: "boolean", default: false, doc: "Connect with TLS" },
  { key: "trust-all-certs", type: "boolean", default: false, doc: "Accept any server certificate (no verification)" },
  { key: "truststore", type: "path", doc: "PEM file of trusted CA certificates (default: the system's)" },
  { key: "truststore-type", type: "string", default: "PEM", doc: "PEM; Java key stores must be exported to PEM" },
  { key: "truststore-password", type: "string", secret: true, doc: "Accepted for compatibility; PEM truststores have no password" },
  { key: "keystore", type: "path", doc: "PEM client certificate, for servers that verify clients (it may also hold the key)" },
  { key: "keystore-key", type: "path", doc: "PEM private key of the client certificate, when it is not in keystore" },
  { key: "keystore-password", type: "string", secret: true, doc: "Passphrase of an encrypted client key" },
  { key: "keystore-type", type: "string", default: "PEM", doc: "PEM; Java key stores must be converted to PEM" },
  ...TLS_FILTER_PROPS,
];

/** Streams are bounded unless configured otherwise (as the file channel's capacity). */
export const DEFAULT_MAX_MSGS = 1_000_000;

/** Stream properties; `capacityKey` is "capacity" for the channel (Flume's name) and "max-msgs" elsewhere. */
export function streamProps(capacityKey: "capacity" | "max-msgs"): PropSpec[] {
  return [
    { key: "stream", type: "string", required: true, doc: "JetStream stream name (letters, digits, - and _)" },
    { key: "subject", type: "string", default: "", doc: "Subject the events are published on (default flume.<stream>)" },
    { key: "create-stream", type: "boolean", default: true, doc: "Create the stream when it does not exist (an existing stream is used as it is)" },
    { key: "replicas", type: "int", default: 1, min: 1, max: 5, doc: "Copies of the stream kept by a cluster when it is created (1 on a single server)" },
    { key: "storage", type: "enum", values: ["file", "memory"], default: "file", doc: "Stream storage when it is created: file survives a server restart" },
    {
      key: "retention",
      type: "enum",
      values: ["workqueue", "limits", "interest"],
      default: "workqueue",
      doc: "workqueue: an event leaves the stream when its take commits (so max-msgs bounds the backlog); limits: events stay until the limits remove them",
    },
    {
      key: capacityKey,
      type: "int",
      default: DEFAULT_MAX_MSGS,
      ...(capacityKey === "capacity" ? { aliases: ["max-msgs"], min: 1 } : { min: -1 }),
      doc: `Stream max-msgs when it is created: most events the stream holds${capacityKey === "capacity" ? "" : " (-1: no limit)"}`,
    },
    { key: "max-bytes", type: "int", default: -1, min: -1, doc: "Stream max-bytes when it is created: most bytes the stream holds (-1: no limit)" },
    { key: "max-age", type: "int", default: 0, min: 0, doc: "Seconds the stream keeps an event before removing it (0: forever); removed events are lost" },
    {
      key: "discard",
      type: "enum",
      values: ["new", "old"],
      default: "new",
      doc: "When the stream is full: new refuses the publish (ChannelFullException, the sender retries); old drops the oldest events (lost)",
    },
    { key: "duplicate-window", type: "int", default: 120000, min: 100, doc: "Milliseconds the stream remembers message ids to drop a retried publish" },
  ];
}

export const CONSUMER_PROPS: readonly PropSpec[] = [
  { key: "consumer", type: "string", default: "flume", doc: "Durable consumer name; every agent naming the same one shares its events (competing consumers)" },
  { key: "ack-wait", type: "int", default: 30000, min: 1000, doc: "Milliseconds before an event taken and not committed is delivered again (to any agent)" },
  { key: "max-deliver", type: "int", default: -1, min: -1, doc: "Deliveries of one event before the server stops redelivering it (-1: never give up)" },
  { key: "max-ack-pending", type: "int", default: 10000, min: 1, doc: "Events delivered and not yet committed, over all agents sharing the consumer" },
  { key: "deliver-policy", type: "enum", values: ["all", "new"], default: "all", doc: "Where a new consumer starts: all events in the stream, or only new ones" },
];

function servers(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

export function connectionSettings(config: ComponentConfig): ConnectionSettings {
  return {
    servers: servers(config.string("servers")),
    user: config.optionalString("user"),
    password: config.optionalString("password"),
    token: config.optionalString("token"),
    credsFile: config.optionalString("creds-file"),
    connectTimeout: config.int("connect-timeout"),
    requestTimeout: config.int("request-timeout"),
    reconnectWait: config.int("reconnect-wait"),
    ssl: config.boolean("ssl"),
    tls: {
      truststore: config.optionalString("truststore"),
      truststoreType: config.string("truststore-type"),
      trustAllCerts: config.boolean("trust-all-certs"),
      keystore: config.optionalString("keystore"),
      keystoreKey: config.optionalString("keystore-key"),
      keystorePassword: config.optionalString("keystore-password"),
      keystoreType: config.string("keystore-type"),
      excludeProtocols: config.list("exclude-protocols"),
      includeProtocols: config.list("include-protocols"),
      excludeCipherSuites: config.list("exclude-cipher-suites"),
      includeCipherSuites: config.list("include-cipher-suites"),
    },
  };
}

export function streamSettings(config: ComponentConfig, capacityKey: "capacity" | "max-msgs"): StreamSettings {
  const stream = config.string("stream");
  return {
    stream,
    subject: config.optionalString("subject") ?? `flume.${stream}`,
    createStream: config.boolean("create-stream"),
    replicas: config.int("replicas"),
    storage: config.string("storage") === "memory" ? "memory" : "file",
    retention: config.string("retention") as Retention,
    maxMsgs: config.int(capacityKey),
    maxBytes: config.int("max-bytes"),
    maxAge: config.int("max-age"),
    discard: config.string("discard") === "old" ? "old" : "new",
    duplicateWindow: config.int("duplicate-window"),
  };
}

export function consumerSettings(config: ComponentConfig): ConsumerSettings {
  return {
    consumer: config.string("consumer"),
    ackWait: config.int("ack-wait"),
    maxDeliver: config.int("max-deliver"),
    maxAckPending: config.int("max-ack-pending"),
    deliverPolicy: config.string("deliver-policy") === "new" ? "new" : "all",
  };
}

const NAME = /^[A-Za-z0-9_-]+$/;
const LITERAL_SUBJECT = /^[^\s*>]+$/;

/** Checks the schema cannot express, shared by the three components; messages name the key. */
export function validateCommon(config: ComponentConfig, opts: { publishes: boolean; consumes: boolean }): { key: string; message: string }[] {
  const errors: { key: string; message: string }[] = [];
  if (servers(config.string("servers")).length === 0) errors.push({ key: "servers", message: "needs at least one server URL, e.g. nats://127.0.0.1:4222" });
  if (!NAME.test(config.string("stream"))) errors.push({ key: "stream", message: `"${config.string("stream")}" is not a valid stream name: use letters, digits, - and _` });
  const subject = config.optionalString("subject");
  if (subject !== undefined) {
    if (/\s/.test(subject) || subject.startsWith(".") || subject.endsWith(".") || subject.includes("..")) {
      errors.push({ key: "subject", message: `"${subject}" is not a valid NATS subject (dot-separated tokens, no spaces)` });
    } else if (opts.publishes && !LITERAL_SUBJECT.test(subject)) {
      errors.push({ key: "subject", message: `"${subject}" has a wildcard; events are published on it, so it must be a plain subject` });
    }
  }
  if (opts.consumes && !NAME.test(config.string("consumer"))) errors.push({ key: "consumer", message: `"${config.string("consumer")}" is not a valid consumer name: use letters, digits, - and _` });
  if (config.optionalString("user") !== undefined && config.optionalString("password") === undefined) errors.push({ key: "password", message: "is required when user is set" });
  const credentials = ["user", "token", "creds-file"].filter((k) => config.optionalString(k) !== undefined);
  if (credentials.length > 1) errors.push({ key: credentials[1], message: `give one of user/password, token or creds-file, not ${credentials.join(" and ")}` });
  const type = config.string("truststore-type").toUpperCase();
  if (config.boolean("ssl") && ["JKS", "PKCS12", "JCEKS"].includes(type)) {
    errors.push({ key: "truststore-type", message: `${type} trust stores are not read by Flume TS; export the CA certificates to PEM and set truststore = ca.pem, truststore-type = PEM` });
  }
  return errors;
}
