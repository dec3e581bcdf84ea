/**
 * Publishes a batch of events to a stream, one message per event or batch messages
 * (batch-frame.ts), and returns once the stream acknowledged every message. Each message
 * carries a message id (Nats-Msg-Id), so a publish retried after a timeout, a reconnect or a
 * leader election is dropped by the stream's duplicate window instead of being stored twice.
 * Only the messages not yet acknowledged are sent again.
 *
 * The messages go out as plain publishes whose replies (the stream's PubAcks) arrive on one
 * subscription per connection, so a batch costs one timer, not a request per event.
 */
import type { Msg, MsgHdrs, NatsConnection, Subscription } from "@nats-io/nats-core";
import type { Clock, TimerHandle } from "../core/clock.ts";
import { readHeaders, type Event } from "../core/event.ts";
import type { NatsLink } from "./connection.ts";
import { BATCH_HEADER, BATCH_VERSION, encodeBatch, type FrameScratch, splitBatch } from "./batch-frame.ts";
import { classifyPublishError, EventTooLargeError, messageOf, NatsUnavailableError, PublishRejectedError, StreamFullError } from "./errors.ts";
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
  /** Messages the events went in. */
  messages: number;
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

/** One message of a publish: its body, its headers (with its message id) and the events it carries. */
export interface OutMessage {
  body: Uint8Array;
  headers: MsgHdrs;
  events: number;
}

/** Makes the messages of a publish, once connected (headers need the client; sizes the server's max_payload). */
export type MessageBuilder = (link: NatsLink, nc: NatsConnection) => OutMessage[];

/** Bytes a message's header block may take besides the Flume headers of its event (version line, ids, stream). */
const HEADER_ALLOWANCE = 256;

function maxPayload(nc: NatsConnection): number {
  return nc.info?.max_payload ?? 1024 * 1024;
}

function tooLarge(what: string, size: number, limit: number): EventTooLargeError {
  return new EventTooLargeError(`${what} of ${size} bytes does not fit in one NATS message: the server's max_payload is ${limit} bytes (raise max_payload in the nats-server configuration, or send smaller events)`);
}

/** One message per event (any NATS client reads it): its headers are NATS headers. */
export function perEventMessages(target: PublishTarget, events: readonly Event[], ids: readonly string[]): MessageBuilder {
  return (link, nc) => {
    const limit = maxPayload(nc);
    const out = new Array<OutMessage>(events.length);
    for (let i = 0; i < events.length; i++) {
      const h = toNatsHeaders(() => link.headers(), readHeaders(events[i])) ?? link.headers();
      h.set("Nats-Msg-Id", ids[i]);
      h.set("Nats-Expected-Stream", target.stream);
      // Only a body near the limit is measured with its header block (which encode() allocates).
      const size = events[i].body.length > limit - 64 * 1024 ? events[i].body.length + (h as MsgHdrs & { encode(): Uint8Array }).encode().length : 0;
      if (size > limit) throw tooLarge(`event ${i} of the batch (body and headers)`, size, limit);
      out[i] = { body: events[i].body, headers: h, events: 1 };
    }
    return out;
  };
}

/**
 * The events in as few batch messages as fit in the server's max_payload (batch-frame.ts);
 * message k gets the id idOf(k, from, to) for its events [from, to).
 */
export function batchMessages(target: PublishTarget, events: readonly Event[], idOf: (k: number, from: number, to: number) => string, scratch?: FrameScratch): MessageBuilder {
  return (link, nc) => {
    const limit = maxPayload(nc) - HEADER_ALLOWANCE - target.stream.length;
    const { ends, totals } = splitBatch(events, limit, (i, size) => tooLarge(`event ${i} of the batch (framed with its headers)`, size, limit));
    const out = new Array<OutMessage>(ends.length);
    let sum = 0;
    for (let k = 0; k < totals.length; k++) sum += totals[k];
    const into = scratch?.lend(sum) ?? null;
    let at = 0;
    let from = 0;
    for (let k = 0; k < ends.length; k++) {
      const to = ends[k];
      const h = link.headers();
      h.set(BATCH_HEADER, BATCH_VERSION);
      h.set("Nats-Msg-Id", idOf(k, from, to));
      h.set("Nats-Expected-Stream", target.stream);
      out[k] = { body: encodeBatch(events, from, to, totals[k], into ? into.subarray(at) : undefined), headers: h, events: to - from };
      at += totals[k];
      from = to;
    }
    return out;
  };
}

/** Publishes the messages at `pending` once; resolves when each has an answer or timeout ms passed. */
async function publishRound(link: NatsLink, nc: NatsConnection, target: PublishTarget, msgs: readonly OutMessage[], pending: number[], timeout: number, clock: Clock): Promise<Round> {
  const inbox = ackInbox(link, nc);
  let timer: TimerHandle | null = null;
  let finish = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const { id, round } = inbox.open(pending.length, () => finish());
  try {
    const base = `${inbox.prefix}.${id}.`;
    for (let k = 0; k < pending.length; k++) {
      const m = msgs[pending[k]];
      nc.publish(target.subject, m.body, { reply: base + k, headers: m.headers });
    }
    timer = clock.setTimeout(() => finish(), timeout);
    await finished;
  } catch (err) {
    // The client refuses synchronously what can never be sent (larger than max_payload).
    if (classifyPublishError(err) === "rejected") throw new PublishRejectedError(`the server refused a message: ${messageOf(err)}`, { cause: err });
    round.lastError = err;
  } finally {
    if (timer) clock.clearTimeout(timer);
    inbox.close(id);
  }
  return round;
}

/**
 * Publishes the messages `build` makes and returns once the stream acknowledged every one
 * (retrying the others with the same ids); counts are in events.
 */
export async function publishBatch(link: NatsLink, target: PublishTarget, build: MessageBuilder, clock: Clock): Promise<PublishResult> {
  const started = clock.now();
  let msgs: OutMessage[] | null = null;
  let pending: number[] = [];
  let total = 0;
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
      if (msgs) failed.push(...pending);
    } else {
      if (!msgs) {
        msgs = build(link, nc);
        pending = new Array(msgs.length);
        for (let i = 0; i < msgs.length; i++) {
          pending[i] = i;
          total += msgs[i].events;
        }
      }
      const round = await publishRound(link, nc, target, msgs, pending, link.settings.requestTimeout, clock);
      lastError = round.lastError ?? (round.left > 0 ? new Error(`no acknowledgement within ${link.settings.requestTimeout} ms`) : null);
      for (let k = 0; k < pending.length; k++) {
        const outcome = round.outcomes[k];
        if (outcome === Outcome.Stored) continue;
        if (outcome === Outcome.Duplicate) {
          duplicates += msgs[pending[k]].events;
          continue;
        }
        if (outcome === Outcome.Rejected) throw new PublishRejectedError(`the server refused a message of ${msgs[pending[k]].body.length} bytes: ${messageOf(round.lastError)}`, { cause: round.lastError });
        if (outcome === Outcome.Full) full = true;
        failed.push(pending[k]);
      }
    }
    if (msgs && failed.length === 0) return { duplicates, retries: rounds - 1, messages: msgs.length };
    if (msgs) pending = failed;
    const left = msgs ? failed.reduce((n, i) => n + (msgs as OutMessage[])[i].events, 0) : "all";
    const of = msgs ? total : "the";
    const now = clock.now();
    if (full) {
      fullSince ||= now;
      if (now - fullSince >= target.fullWait) {
        throw new StreamFullError(`stream ${target.stream} is full (${messageOf(lastError)}): ${left} of ${of} events not stored; sinks are likely not keeping up, or max-msgs/max-bytes is too tight`, { cause: lastError });
      }
    } else {
      fullSince = 0;
      if (now - started >= target.timeout) {
        throw new NatsUnavailableError(`${left} of ${of} events not acknowledged by stream ${target.stream} within ${target.timeout} ms: ${describe(lastError, target.subject)}`, { cause: lastError });
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
