/**
 * Publishes a batch of events to a stream and returns once the stream acknowledged every one.
 * Each event carries a message id (Nats-Msg-Id), so a publish retried after a timeout, a
 * reconnect or a leader election is dropped by the stream's duplicate window instead of being
 * stored twice. Only the events not yet acknowledged are sent again.
 *
 * The events go out as plain publishes whose replies (the stream's PubAcks) arrive on one
 * subscription per connection, so a batch costs one timer, not a request per event.
 */
import type { Msg, MsgHdrs, NatsConnection, Subscription } from "@nats-io/nats-core";
import type { Clock, TimerHandle } from "../core/clock.ts";
import { readHeaders, type Event } from "../core/event.ts";
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

export interface PublishResult {
  /** Events the stream had already stored (a retried id). */
  duplicates: number;
  /** Rounds beyond the first. */
  retries: number;
}

const RETRY_PAUSE_MIN = 50;
const RETRY_PAUSE_MAX = 1000;

/** Outcome of one publish in a round. */
const enum Outcome {
  Pending = 0,
  Stored = 1,
  Duplicate = 2,
  Full = 3,
  Rejected = 4,
  Failed = 5,
}

interface Round {
  outcomes: Uint8Array;
  left: number;
  lastError: unknown;
  done: () => void;
}

/** The reply subscription of one connection: PubAcks are matched to rounds by reply subject. */
class AckInbox {
  readonly prefix: string;
  private readonly sub: Subscription;
  private readonly rounds = new Map<number, Round>();
  private nextRound = 1;

  constructor(nc: NatsConnection, inbox: string) {
    this.prefix = inbox;
    this.sub = nc.subscribe(`${inbox}.>`, { callback: (err, msg) => (err ? undefined : this.onReply(msg)) });
  }

  open(size: number, done: () => void): { id: number; round: Round } {
    const id = this.nextRound++;
    const round: Round = { outcomes: new Uint8Array(size), left: size, lastError: null, done };
    this.rounds.set(id, round);
    return { id, round };
  }

  close(id: number): void {
    this.rounds.delete(id);
  }

  private onReply(msg: Msg): void {
    const subject = msg.subject;
    const dot = subject.lastIndexOf(".");
    const prev = subject.lastIndexOf(".", dot - 1);
    const round = this.rounds.get(Number(subject.slice(prev + 1, dot)));
    if (!round) return;
    const k = Number(subject.slice(dot + 1));
    if (!(k >= 0 && k < round.outcomes.length) || round.outcomes[k] !== Outcome.Pending) return;
    let outcome: Outcome;
    const status = msg.headers?.code ?? 0;
    if (status >= 300) {
      // 503: no stream answered (none captures the subject, or a leader election is under way).
      round.lastError = Object.assign(new Error(status === 503 ? "no responders" : `status ${status} ${msg.headers?.description ?? ""}`.trim()), { name: status === 503 ? "NoResponders" : "StatusError" });
      outcome = Outcome.Failed;
    } else {
      try {
        const ack = JSON.parse(new TextDecoder().decode(msg.data)) as { error?: { err_code?: number; description?: string }; duplicate?: boolean; stream?: string };
        if (ack.error) {
          const err = { code: ack.error.err_code, message: ack.error.description ?? "publish refused", name: "JetStreamApiError" };
          round.lastError = err;
          const kind = classifyPublishError(err);
          outcome = kind === "full" ? Outcome.Full : kind === "rejected" ? Outcome.Rejected : Outcome.Failed;
        } else {
          outcome = ack.duplicate ? Outcome.Duplicate : Outcome.Stored;
        }
      } catch (err) {
        round.lastError = err;
        outcome = Outcome.Failed;
      }
    }
    round.outcomes[k] = outcome;
    if (--round.left === 0) round.done();
  }

  unsubscribe(): void {
    this.sub.unsubscribe();
  }
}

const inboxes = new WeakMap<NatsConnection, AckInbox>();

function ackInbox(link: NatsLink, nc: NatsConnection): AckInbox {
  let inbox = inboxes.get(nc);
  if (!inbox) {
    inbox = new AckInbox(nc, link.mods!.transport.createInbox());
    inboxes.set(nc, inbox);
  }
  return inbox;
}

/** Publishes the events at `pending` once; resolves when each has an answer or timeout ms passed. */
async function publishRound(link: NatsLink, nc: NatsConnection, target: PublishTarget, events: readonly Event[], headers: MsgHdrs[], pending: number[], timeout: number, clock: Clock): Promise<Round> {
  const inbox = ackInbox(link, nc);
  let timer: TimerHandle | null = null;
  let finish = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const { id, round } = inbox.open(pending.length, () => finish());
  try {
    const base = `${inbox.prefix}.${id}.`;
    for (let k = 0; k < pending.length; k++) {
      const i = pending[k];
      nc.publish(target.subject, events[i].body, { reply: base + k, headers: headers[i] });
    }
    timer = clock.setTimeout(() => finish(), timeout);
    await finished;
  } catch (err) {
    // The client refuses synchronously what can never be sent (larger than max_payload).
    if (classifyPublishError(err) === "rejected") throw new PublishRejectedError(`the server refused an event: ${messageOf(err)}`, { cause: err });
    round.lastError = err;
  } finally {
    if (timer) clock.clearTimeout(timer);
    inbox.close(id);
  }
  return round;
}

export async function publishBatch(link: NatsLink, target: PublishTarget, events: readonly Event[], ids: readonly string[], clock: Clock): Promise<PublishResult> {
  const started = clock.now();
  let headers: MsgHdrs[] | null = null;
  let pending: number[] = new Array(events.length);
  for (let i = 0; i < events.length; i++) pending[i] = i;
  let duplicates = 0;
  let rounds = 0;
  let fullSince = 0;
  let pause = RETRY_PAUSE_MIN;
  for (;;) {
    rounds++;
    const failed: number[] = [];
    let lastError: unknown = null;
    let full = false;
    const nc = link.ready ? link.nc : null;
    if (!nc) {
      lastError = new NatsUnavailableError(`not connected${link.lastError ? `: ${link.lastError}` : ""}`);
      failed.push(...pending);
    } else {
      if (!headers) {
        headers = new Array(events.length);
        for (let i = 0; i < events.length; i++) {
          const h = toNatsHeaders(() => link.headers(), readHeaders(events[i])) ?? link.headers();
          h.set("Nats-Msg-Id", ids[i]);
          h.set("Nats-Expected-Stream", target.stream);
          headers[i] = h;
        }
      }
      const round = await publishRound(link, nc, target, events, headers, pending, link.settings.requestTimeout, clock);
      lastError = round.lastError ?? (round.left > 0 ? new Error(`no acknowledgement within ${link.settings.requestTimeout} ms`) : null);
      for (let k = 0; k < pending.length; k++) {
        const outcome = round.outcomes[k];
        if (outcome === Outcome.Stored) continue;
        if (outcome === Outcome.Duplicate) {
          duplicates++;
          continue;
        }
        if (outcome === Outcome.Rejected) throw new PublishRejectedError(`the server refused an event of ${events[pending[k]].body.length} bytes: ${messageOf(round.lastError)}`, { cause: round.lastError });
        if (outcome === Outcome.Full) full = true;
        failed.push(pending[k]);
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
  if (e?.name === "NoResponders") return `no stream answered on subject ${subject} (is JetStream on, and does the stream exist and capture the subject?)`;
  return messageOf(err);
}
