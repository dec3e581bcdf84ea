/**
 * Publishes a batch of events to a stream and returns once the stream acknowledged every one.
 * Each event carries a message id (Nats-Msg-Id), so a publish retried after a timeout, a
 * reconnect or a leader election is dropped by the stream's duplicate window instead of being
 * stored twice. Only the events not yet acknowledged are sent again.
 */
import type { MsgHdrs } from "@nats-io/nats-core";
import type { PubAck } from "@nats-io/jetstream";
import type { Clock } from "../core/clock.ts";
import type { Event } from "../core/event.ts";
import type { NatsLink } from "./connection.ts";
import { classifyPublishError, messageOf, NatsUnavailableError, PublishRejectedError, StreamFullError } from "./errors.ts";
import { toNatsHeaders } from "./headers.ts";

export interface PublishTarget {
  subject: string;
  stream: string;
  /** Milliseconds to keep retrying failures other than a full stream. */
  timeout: number;
  /** Milliseconds to keep retrying while the stream is full (discard new). */
  fullWait: number;
}

/** Publishes in flight at once; more would only queue in the client. */
const WINDOW = 1024;
const RETRY_PAUSE_MIN = 50;
const RETRY_PAUSE_MAX = 1000;

export interface PublishResult {
  /** Events the stream had already stored (a retried id). */
  duplicates: number;
  /** Rounds beyond the first. */
  retries: number;
}

export async function publishBatch(link: NatsLink, target: PublishTarget, events: readonly Event[], ids: readonly string[], clock: Clock): Promise<PublishResult> {
  const started = clock.now();
  const headers: (MsgHdrs | undefined)[] = new Array(events.length);
  let pending: number[] = new Array(events.length);
  for (let i = 0; i < events.length; i++) pending[i] = i;
  let duplicates = 0;
  let rounds = 0;
  let fullSince = 0;
  let pause = RETRY_PAUSE_MIN;
  for (;;) {
    rounds++;
    let failed: number[] = [];
    let lastError: unknown = null;
    let full = false;
    if (!link.ready) {
      lastError = new NatsUnavailableError(`not connected${link.lastError ? `: ${link.lastError}` : ""}`);
      failed = pending;
    } else {
      const { js } = link.requireReady();
      for (let from = 0; from < pending.length; from += WINDOW) {
        const slice = pending.slice(from, from + WINDOW);
        const sends: Promise<PubAck>[] = new Array(slice.length);
        for (let k = 0; k < slice.length; k++) {
          const i = slice[k];
          const h = headers[i] ?? (headers[i] = toNatsHeaders(() => link.headers(), events[i].headers));
          sends[k] = js.publish(target.subject, events[i].body, { msgID: ids[i], headers: h, expect: { streamName: target.stream } });
        }
        const results = await Promise.allSettled(sends);
        for (let k = 0; k < results.length; k++) {
          const r = results[k];
          if (r.status === "fulfilled") {
            if (r.value.duplicate) duplicates++;
            continue;
          }
          const kind = classifyPublishError(r.reason);
          if (kind === "rejected") throw new PublishRejectedError(`the server refused an event of ${events[slice[k]].body.length} bytes: ${messageOf(r.reason)}`, { cause: r.reason });
          if (kind === "full") full = true;
          lastError = r.reason;
          failed.push(slice[k]);
        }
      }
    }
    if (failed.length === 0) return { duplicates, retries: rounds - 1 };
    pending = failed;
    const now = clock.now();
    if (full) {
      fullSince ||= now;
      if (now - fullSince >= target.fullWait) {
        throw new StreamFullError(`stream ${target.stream} is full (${messageOf(lastError)}): ${pending.length} of ${events.length} events not stored; sinks are likely not keeping up, or max-msgs/max-bytes is too tight`, { cause: lastError });
      }
    } else {
      fullSince = 0;
      if (now - started >= target.timeout) {
        throw new NatsUnavailableError(`${pending.length} of ${events.length} events not acknowledged by stream ${target.stream} within ${target.timeout} ms: ${describe(lastError, target.subject)}`, { cause: lastError });
      }
    }
    await clock.sleep(pause);
    pause = Math.min(pause * 2, RETRY_PAUSE_MAX);
  }
}

function describe(err: unknown, subject: string): string {
  const e = err as { name?: string };
  if (e?.name === "JetStreamNotEnabled") return `no stream answered on subject ${subject} (is JetStream on, and does the stream exist and capture the subject?)`;
  return messageOf(err);
}
