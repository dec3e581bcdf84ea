/**
 * The properties the JetStream channel, sink and source share (connection, credentials, TLS,
 * the stream they create, the durable consumer they pull from), as record-form property sets
 * the component files spread into their declarations, and their parsed form. Loads no NATS
 * package: `flume validate` and `flume describe` read these schemas.
 */
import type { ConnectionOptions } from "node:tls";
import type { OptionsOf, PropError, Props } from "../config/schema.ts";
import { CLIENT_TLS_PROPS, clientTls, tlsProblems } from "../net/tls.ts";

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
  /** Options for tls.connect (from src/net/tls.ts), or null when ssl is off. */
  tls: ConnectionOptions | null;
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

/** NATS servers, credentials and timeouts; TLS with the shared client properties (a NATS connection is a TLS client). */
export const CONNECTION_PROPS = {
  servers: { type: "string", default: "nats://127.0.0.1:4222", doc: "Comma-separated NATS server URLs (host:port or nats://host:port); the client fails over between them" },
  user: { type: "string", doc: "User name for user/password authentication" },
  password: { type: "string", secret: true, doc: "Password for user/password authentication" },
  token: { type: "string", secret: true, doc: "Authentication token" },
  "creds-file": { type: "path", doc: "NATS credentials file (user JWT and NKey seed), as made by nsc" },
  "connect-timeout": { type: "int", default: 5000, min: 100, doc: "Milliseconds to open one connection to a server" },
  "request-timeout": { type: "int", default: 5000, min: 100, doc: "Milliseconds a publish or JetStream API call waits for its answer before it is retried" },
  "reconnect-wait": { type: "int", default: 1000, min: 10, doc: "Milliseconds between connection attempts while no server answers" },
  ...CLIENT_TLS_PROPS,
} as const satisfies Props;

/** Streams are bounded unless configured otherwise (as the file channel's capacity). */
export const DEFAULT_MAX_MSGS = 1_000_000;

/** The stream a component creates when it is missing (its size limit is declared apart: the channel calls it capacity). */
export const STREAM_PROPS = {
  stream: { type: "string", required: true, doc: "JetStream stream name (letters, digits, - and _)" },
  subject: { type: "string", doc: "Subject the events are published on (default flume.<stream>)" },
  "create-stream": { type: "boolean", default: true, doc: "Create the stream when it does not exist (an existing stream is used as it is)" },
  replicas: { type: "int", default: 1, min: 1, max: 5, doc: "Copies of the stream kept by a cluster when it is created (1 on a single server)" },
  storage: { type: "enum", values: ["file", "memory"], default: "file", doc: "Stream storage when it is created: file survives a server restart" },
  retention: {
    type: "enum",
    values: ["workqueue", "limits", "interest"],
    default: "workqueue",
    doc: "workqueue: an event leaves the stream when its take commits (so the size limit bounds the backlog); limits: events stay until the limits remove them",
  },
  "max-bytes": { type: "int", default: -1, min: -1, doc: "Stream max-bytes when it is created: most bytes the stream holds (-1: no limit)" },
  "max-age": { type: "int", default: 0, min: 0, doc: "Seconds the stream keeps an event before removing it (0: forever); removed events are lost" },
  discard: {
    type: "enum",
    values: ["new", "old"],
    default: "new",
    doc: "When the stream is full: new refuses the publish (ChannelFullException, the sender retries); old drops the oldest events (lost)",
  },
  "duplicate-window": { type: "int", default: 120000, min: 100, doc: "Milliseconds the stream remembers message ids to drop a retried publish" },
} as const satisfies Props;

/** The stream's size limit as the sink and the source name it. */
export const MAX_MSGS_PROP = {
  "max-msgs": { type: "int", default: DEFAULT_MAX_MSGS, min: -1, doc: "Stream max-msgs when it is created: most events the stream holds (-1: no limit)" },
} as const satisfies Props;

export const CONSUMER_PROPS = {
  consumer: { type: "string", default: "flume", doc: "Durable consumer name; every agent naming the same one shares its events (competing consumers)" },
  "ack-wait": { type: "int", default: 30000, min: 1000, doc: "Milliseconds before an event taken and not committed is delivered again (to any agent)" },
  "max-deliver": { type: "int", default: -1, min: -1, doc: "Deliveries of one event before the server stops redelivering it (-1: never give up)" },
  "max-ack-pending": { type: "int", default: 10000, min: 1, doc: "Events delivered and not yet committed, over all agents sharing the consumer" },
  "deliver-policy": { type: "enum", values: ["all", "new"], default: "all", doc: "Where a new consumer starts: all events in the stream, or only new ones" },
} as const satisfies Props;

type ConnectionOptionsOf = OptionsOf<typeof CONNECTION_PROPS>;
type StreamOptionsOf = OptionsOf<typeof STREAM_PROPS>;
type ConsumerOptionsOf = OptionsOf<typeof CONSUMER_PROPS>;

function servers(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** An empty value counts as not set (a config line `x =` with nothing after it). */
function given(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** The connection settings; reads the TLS files (a ConfigurationError names the key when one is bad). */
export function connectionSettings(o: ConnectionOptionsOf): ConnectionSettings {
  return {
    servers: servers(o.servers),
    user: given(o.user),
    password: given(o.password),
    token: given(o.token),
    credsFile: given(o["creds-file"]),
    connectTimeout: o["connect-timeout"],
    requestTimeout: o["request-timeout"],
    reconnectWait: o["reconnect-wait"],
    tls: clientTls(o),
  };
}

export function streamSettings(o: StreamOptionsOf, maxMsgs: number): StreamSettings {
  return {
    stream: o.stream,
    subject: given(o.subject) ?? `flume.${o.stream}`,
    createStream: o["create-stream"],
    replicas: o.replicas,
    storage: o.storage,
    retention: o.retention,
    maxMsgs,
    maxBytes: o["max-bytes"],
    maxAge: o["max-age"],
    discard: o.discard,
    duplicateWindow: o["duplicate-window"],
  };
}

export function consumerSettings(o: ConsumerOptionsOf): ConsumerSettings {
  return {
    consumer: o.consumer,
    ackWait: o["ack-wait"],
    maxDeliver: o["max-deliver"],
    maxAckPending: o["max-ack-pending"],
    deliverPolicy: o["deliver-policy"],
  };
}

const NAME = /^[A-Za-z0-9_-]+$/;
const LITERAL_SUBJECT = /^[^\s*>]+$/;

/**
 * Checks the schema cannot express, shared by the three components (messages name the key):
 * names NATS accepts, one kind of credentials, and TLS files that can be read.
 */
export function natsProblems(o: ConnectionOptionsOf & StreamOptionsOf & Partial<ConsumerOptionsOf>, uses: { publishes: boolean }): PropError[] {
  const errors: PropError[] = [];
  if (servers(o.servers).length === 0) errors.push({ key: "servers", message: "needs at least one server URL, e.g. nats://127.0.0.1:4222" });
  if (!NAME.test(o.stream)) errors.push({ key: "stream", message: `"${o.stream}" is not a valid stream name: use letters, digits, - and _` });
  const subject = given(o.subject);
  if (subject !== undefined) {
    if (/\s/.test(subject) || subject.startsWith(".") || subject.endsWith(".") || subject.includes("..")) {
      errors.push({ key: "subject", message: `"${subject}" is not a valid NATS subject (dot-separated tokens, no spaces)` });
    } else if (uses.publishes && !LITERAL_SUBJECT.test(subject)) {
      errors.push({ key: "subject", message: `"${subject}" has a wildcard; events are published on it, so it must be a plain subject` });
    }
  }
  if (o.consumer !== undefined && !NAME.test(o.consumer)) errors.push({ key: "consumer", message: `"${o.consumer}" is not a valid consumer name: use letters, digits, - and _` });
  if (given(o.user) !== undefined && given(o.password) === undefined) errors.push({ key: "password", message: "is required when user is set" });
  const credentials = (["user", "token", "creds-file"] as const).filter((k) => given(o[k]) !== undefined);
  if (credentials.length > 1) errors.push({ key: credentials[1], message: `give one of user/password, token or creds-file, not ${credentials.join(" and ")}` });
  errors.push(...tlsProblems(() => clientTls(o)));
  return errors;
}
