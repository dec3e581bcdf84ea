/**
 * Whether a failed send may succeed if tried again (the Java producer's RetriableException),
 * decided on what the errors are, never on their text: the Kafka client's own errors say it
 * (`canRetry`; for a broker's error code, Kafka's protocol table "Retriable" column, which the
 * client's ProtocolError carries), and a socket's error says it by its Node code. The client
 * wraps (a NetworkError over the socket's error or a failed SASL handshake, MultipleErrors
 * over one error per broker or per attempt, a ResponseError over one ProtocolError per
 * partition): every error in the tree counts, and one that cannot be retried decides.
 *
 * The client is loaded lazily (client.ts), so its errors are recognised by their shape
 * (a `PLT_KFK_` code), not by instanceof.
 */
import { FlumeError } from "../core/errors.ts";

type Verdict = "retry" | "fail" | "unknown";

/** A socket's errors that say the broker is down, restarting or out of reach for now: tried again, as the Java producer reconnects. */
const TRANSIENT_SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENETRESET",
  // A name lookup that fails for now, or a broker's advertised name gone while it restarts (a pod).
  "EAI_AGAIN",
  "ENOTFOUND",
  // A request written to a connection that had just gone.
  "ERR_SOCKET_CLOSED",
  "ERR_STREAM_DESTROYED",
  "ERR_STREAM_WRITE_AFTER_END",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

const CLIENT_CODE_PREFIX = "PLT_KFK_";

interface ErrorLike {
  code?: unknown;
  canRetry?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/**
 * Whether a send that failed with `err` is worth trying again: a broker down, restarting or
 * out of reach, a leader moving, too few in-sync replicas for now. Not: a record or request too
 * large, an authorization or SASL failure, a TLS certificate refused, an invalid record, an
 * unknown topic, our own typed errors, or anything not recognised.
 */
export function isRetriable(err: unknown): boolean {
  return verdict(err, new Set()) === "retry";
}

function verdict(err: unknown, seen: Set<unknown>): Verdict {
  if (typeof err !== "object" || err === null || seen.has(err)) return "unknown";
  seen.add(err);
  // Ours already say what happened (too large, topic missing, timed out, aborted): final.
  if (err instanceof FlumeError) return "fail";
  const e = err as ErrorLike;
  let own = ownVerdict(e);
  if (own === "fail") return "fail";
  // A wrapper is as retriable as what it wraps: one error that cannot be retried decides.
  for (const inner of wrapped(e)) {
    const v = verdict(inner, seen);
    if (v === "fail") return "fail";
    if (v === "retry") own = "retry";
  }
  return own;
}

/** What the error itself says, apart from what it wraps. */
function ownVerdict(e: ErrorLike): Verdict {
  const code = e.code;
  if (typeof code === "string" && code.startsWith(CLIENT_CODE_PREFIX)) {
    // MultipleErrors / ResponseError carry no canRetry: their errors decide.
    if (typeof e.canRetry === "boolean") return e.canRetry ? "retry" : "fail";
    return "unknown";
  }
  // A socket's error (Node and Bun set its code): out of reach for now, or not (a TLS certificate refused, ...).
  if (typeof code === "string") return TRANSIENT_SOCKET_CODES.has(code) ? "retry" : "fail";
  return "unknown";
}

function wrapped(e: ErrorLike): unknown[] {
  const inner = Array.isArray(e.errors) ? [...(e.errors as unknown[])] : [];
  if (e.cause !== undefined) inner.push(e.cause);
  return inner;
}
