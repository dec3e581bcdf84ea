/**
 * What listens at a bootstrap address that failed a connect without an answer the client could
 * read: one Kafka ApiVersions request on a fresh socket, and a look at the first bytes that come
 * back. The client library only sees "Connection closed" or nothing, which reads the same for a
 * TLS listener, an HTTP server on the wrong port and a peer that never answers; the operator
 * needs to know which. Runs only after a connect failed, never on a data path.
 */
import { type Clock, systemClock } from "../core/clock.ts";
import { connectWithin } from "../net/connect.ts";
import type { NetSocket } from "../net/network.ts";
import { messageOf, someError, withProtocolHint } from "./errors.ts";
import type { ConnectionSettings } from "./settings.ts";

export type ListenerKind =
  /** It answered the request as a Kafka broker does. */
  | { kind: "kafka" }
  /** It sent a TLS record (an alert or a handshake): a TLS listener. */
  | { kind: "tls" }
  /** It closed the connection without sending a byte. */
  | { kind: "closed" }
  /** It kept the connection open and sent nothing within the wait. */
  | { kind: "silent" }
  /** It sent bytes of another protocol; `sample` shows their start. */
  | { kind: "other"; sample: string; http: boolean }
  /** No connection (refused, unreachable, timed out). */
  | { kind: "unreachable"; error: string };

/** How long a listener is given to answer the probe. */
const PROBE_WAIT_MS = 2000;
const API_VERSIONS = 18;
const CORRELATION_ID = 0x4b50;

/** An ApiVersions v0 request (request header v1), size-prefixed. */
function apiVersionsRequest(clientId: string): Buffer {
  const id = Buffer.from(clientId, "utf8");
  const b = Buffer.alloc(4 + 2 + 2 + 4 + 2 + id.length);
  b.writeInt32BE(b.length - 4, 0);
  b.writeInt16BE(API_VERSIONS, 4);
  b.writeInt16BE(0, 6);
  b.writeInt32BE(CORRELATION_ID, 8);
  b.writeInt16BE(id.length, 12);
  id.copy(b, 14);
  return b;
}

/** Names the first bytes a peer sent. */
export function classifyAnswer(bytes: Buffer): ListenerKind {
  if (bytes.length >= 8 && bytes.readInt32BE(4) === CORRELATION_ID) {
    const size = bytes.readInt32BE(0);
    if (size >= 4 && size < 1 << 20) return { kind: "kafka" };
  }
  // A TLS record: content type alert (21) or handshake (22), protocol major version 3.
  if (bytes.length >= 2 && (bytes[0] === 21 || bytes[0] === 22) && bytes[1] === 3) return { kind: "tls" };
  const text = bytes.subarray(0, 60).toString("latin1");
  const printable = /^[\x20-\x7e\r\n\t]+/.exec(text)?.[0] ?? "";
  const sample = printable.length >= 3 ? printable.split(/\r?\n/)[0].trim() : `bytes ${bytes.subarray(0, 8).toString("hex")}`;
  return { kind: "other", sample, http: text.startsWith("HTTP/") || /^<(!doctype|html)/i.test(text) };
}

/** Connects to host:port, sends one ApiVersions request and waits up to waitMs in all for the first bytes back. */
export async function probeListener(host: string, port: number, waitMs: number, clock: Clock = systemClock): Promise<ListenerKind> {
  const started = clock.now();
  let socket: NetSocket;
  try {
    socket = await connectWithin({ host, port, timeout: waitMs, clock, timedOut: () => new Error(`no connection within ${waitMs} ms`), failed: (err) => err }, (s) => s);
  } catch (err) {
    return { kind: "unreachable", error: (err as NodeJS.ErrnoException).code ?? (err as Error).message };
  }
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (silent: ListenerKind) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(timer);
      socket.destroy();
      resolve(received.length > 0 ? classifyAnswer(received) : silent);
    };
    const timer = clock.setTimeout(() => finish({ kind: "silent" }), Math.max(0, waitMs - (clock.now() - started)));
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 8) finish({ kind: "silent" });
    });
    socket.on("end", () => finish({ kind: "closed" }));
    socket.on("close", () => finish({ kind: "closed" }));
    socket.on("error", () => finish({ kind: "closed" }));
    // A client id ending a line, so that a line-based server (HTTP, SMTP...) answers what it read.
    socket.write(apiVersionsRequest("flume-probe\r\n\r\n"));
  });
}

/**
 * What to tell the operator about a listener that is not a Kafka listener without TLS, or "" when
 * the probe found nothing to add (a Kafka broker answered, or no connection at all).
 */
export function describeListener(address: string, found: ListenerKind, s: { securityProtocol: string; securityProtocolKey: string }): string {
  const is = `${s.securityProtocolKey} is ${s.securityProtocol}`;
  switch (found.kind) {
    case "tls":
      return `${address} answered with TLS (${is}): set ${s.securityProtocolKey} = SSL, or SASL_SSL for a SASL listener`;
    case "closed":
      return `${address} closed the connection without answering, as a TLS listener may do to a client without TLS (${is}): if this is an SSL or SASL_SSL listener, set ${s.securityProtocolKey} to match`;
    case "silent":
      return `${address} accepts connections but did not answer a Kafka request: check that kafka.bootstrap.servers names a Kafka listener`;
    case "other":
      return `${address} is not a Kafka listener: it answered in another protocol (${found.http ? "an HTTP server: " : ""}"${found.sample}"); check kafka.bootstrap.servers`;
    default:
      return "";
  }
}

/**
 * withProtocolHint, for a connect that failed without an answer the client could read (the
 * connection closed, or no answer within the bound) over a connection without TLS: the first
 * bootstrap listeners are probed once each, and the message says what answers there.
 */
export async function withListenerHint(err: unknown, s: ConnectionSettings): Promise<string> {
  const why = messageOf(err);
  const unread = someError(err, (e) => e.message === "Connection closed" || e.message.startsWith("no answer from the brokers"));
  // The client knew a TLS listener when it saw one: its hint says so already.
  if (s.securityProtocol.endsWith("SSL") || !unread || someError(err, (e) => e.message === "Broker requires TLS.")) return withProtocolHint(err, s);
  const waitMs = Math.min(PROBE_WAIT_MS, s.requestTimeout);
  const brokers = s.bootstrapBrokers.slice(0, 3);
  const found = await Promise.all(brokers.map((b) => probeListener(b.host, b.port, waitMs)));
  const hints = found.map((f, i) => describeListener(`${brokers[i].host}:${brokers[i].port}`, f, s)).filter((h) => h !== "");
  return hints.length > 0 ? `${why.replace(/\.$/, "")}; ${hints.join("; ")}` : why;
}
