import { FlumeError } from "../core/errors.ts";

/** No NATS server answered, or the connection broke and did not come back within the timeout. */
export class NatsUnavailableError extends FlumeError {}

/** Acknowledgements that were never sent (no connection): the server delivers their messages again after ack-wait. */
export class AcksNotSentError extends FlumeError {}

/** The stream refused a publish because it reached max-msgs or max-bytes (discard new). */
export class StreamFullError extends FlumeError {}

/** The stream or consumer cannot be used as configured (missing, wrong subjects, bad settings). */
export class JetStreamSetupError extends FlumeError {}

/** A publish the server will never accept (an event larger than the server's max_payload). */
export class PublishRejectedError extends FlumeError {}

/** An event that cannot fit in one NATS message (the server's max_payload). */
export class EventTooLargeError extends PublishRejectedError {}

export type PublishFailure = "full" | "rejected" | "transient";

/** The JetStream API error code for "maximum messages/bytes exceeded". */
const STREAM_LIMIT_CODES = new Set([10077]);

/** How a failed publish is handled: wait for room, give up, or retry with the same message id. */
export function classifyPublishError(err: unknown): PublishFailure {
  const e = err as { name?: string; code?: number | string; message?: string };
  const message = String(e?.message ?? "");
  if ((typeof e?.code === "number" && STREAM_LIMIT_CODES.has(e.code)) || /maximum (messages|bytes)( per subject)? exceeded/i.test(message)) return "full";
  if (/payload|exceeds maximum|message size/i.test(message) || /MaxPayload/i.test(String(e?.name ?? ""))) return "rejected";
  return "transient";
}

export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
