/**
 * Events out of the messages a Puller prefetched, in either framing: a plain message is one
 * event, a batch message (header Flume-Batch) many. Takes hand out events one at a time and
 * remember which messages they came from; a commit acknowledges a message only once every
 * event in it has been committed (by however many takes), and a rollback puts its events back
 * at the head in their order. A message that goes back to the stream before all its events
 * were committed (a crash, a stop) comes back whole: it repeats at most its own events.
 */
import type { JsMsg } from "@nats-io/jetstream";
import { Deque } from "../core/deque.ts";
import type { Event } from "../core/event.ts";
import type { Logger } from "../core/logger.ts";
import { BATCH_HEADER, decodeBatch } from "./batch-frame.ts";
import { messageOf } from "./errors.ts";
import { eventOfMessage } from "./headers.ts";
import type { Puller } from "./puller.ts";

/** A message being taken: its events, and how many of them are committed. */
interface Delivery {
  msg: JsMsg;
  events: Event[];
  committed: number;
  /** Which events are committed, once some but not all are. */
  done: Uint8Array | null;
}

/** Events [from, to) of a delivery. */
interface Segment {
  d: Delivery;
  from: number;
  to: number;
}

/** What one transaction took: runs of events, in take order. */
export class Takes {
  readonly segments: Segment[] = [];
  count = 0;

  add(d: Delivery, i: number): void {
    const last = this.segments.length > 0 ? this.segments[this.segments.length - 1] : undefined;
    if (last !== undefined && last.d === d && last.to === i) last.to++;
    else this.segments.push({ d, from: i, to: i + 1 });
    this.count++;
  }

  clear(): void {
    this.segments.length = 0;
    this.count = 0;
  }
}

/** Events a message carries, read from its framing without decoding it. */
export function eventsIn(m: JsMsg): number {
  if (!m.headers?.has(BATCH_HEADER)) return 1;
  const d = m.data;
  return d.length >= 4 ? ((d[0] << 24) | (d[1] << 16) | (d[2] << 8) | d[3]) >>> 0 : 0;
}

export class EventCursor {
  /** Events rolled back or not yet taken of messages already shifted from the puller, in order. */
  private readonly head = new Deque<Segment>(16);
  /** Deliveries with events not yet committed (for repeatsOnRestart). */
  private readonly open = new Set<Delivery>();
  /** Events taken by open transactions. */
  held = 0;

  constructor(
    private readonly puller: Puller,
    private readonly logger: Logger,
    private readonly label: string,
  ) {}

  /** The next event, recorded in `takes`, or undefined when none is here. */
  take(takes: Takes): Event | undefined {
    let s = this.head.peekFront();
    while (s === undefined) {
      const m = this.puller.shift();
      if (m === undefined) return undefined;
      const d = this.deliver(m);
      if (d === null) continue;
      s = { d, from: 0, to: d.events.length };
      this.head.pushBack(s);
    }
    const i = s.from++;
    if (s.from === s.to) this.head.popFront();
    takes.add(s.d, i);
    this.held++;
    return s.d.events[i];
  }

  /** Events here and not taken: at the head, and in the messages prefetched. */
  get available(): number {
    let n = 0;
    for (let k = 0; k < this.head.length; k++) {
      const s = this.head.at(k) as Segment;
      n += s.to - s.from;
    }
    for (let k = 0; k < this.puller.buffered; k++) n += eventsIn(this.puller.readyAt(k) as JsMsg);
    return n;
  }

  /** Marks taken events committed; returns the messages all of whose events now are (to acknowledge). */
  commit(takes: Takes): JsMsg[] {
    const done: JsMsg[] = [];
    for (const s of takes.segments) {
      const d = s.d;
      d.committed += s.to - s.from;
      if (d.committed === d.events.length) {
        done.push(d.msg);
        this.open.delete(d);
      } else {
        d.done ??= new Uint8Array(d.events.length);
        d.done.fill(1, s.from, s.to);
      }
    }
    this.held -= takes.count;
    takes.clear();
    return done;
  }

  /** Puts taken events back at the head, in their order. */
  rollback(takes: Takes): void {
    for (let i = takes.segments.length - 1; i >= 0; i--) {
      const s = takes.segments[i];
      this.head.pushFront({ d: s.d, from: s.from, to: s.to });
    }
    this.held -= takes.count;
    takes.clear();
    // Whole messages nothing of which is committed or taken go back to the prefetch (from the
    // back, so the order holds), where they are handed back to the stream if they wait too long.
    for (let last = this.head.at(this.head.length - 1); last !== undefined; last = this.head.at(this.head.length - 1)) {
      if (last.from !== 0 || last.to !== last.d.events.length || last.d.committed !== 0 || (this.head.length > 1 && this.head.at(this.head.length - 2)?.d === last.d)) break;
      this.head.popBack();
      this.open.delete(last.d);
      this.puller.requeue([last.d.msg]);
    }
  }

  /** Committed events of messages not yet acknowledged: a crash or stop now makes them come again. */
  repeatsOnRestart(): Event[] {
    const out: Event[] = [];
    for (const d of this.open) {
      if (d.done === null) continue;
      for (let i = 0; i < d.events.length; i++) if (d.done[i] === 1) out.push(d.events[i]);
    }
    return out;
  }

  /** Forgets everything (the puller has handed the messages back or dropped them). */
  clear(): void {
    this.head.clear();
    this.open.clear();
    this.held = 0;
  }

  private deliver(m: JsMsg): Delivery | null {
    let events: Event[];
    try {
      const version = m.headers?.get(BATCH_HEADER);
      events = version ? decodeBatch(m.data, version) : [eventOfMessage(m.data, m.headers)];
    } catch (err) {
      // Nothing here can make an event of it: it is terminated (not redelivered) and named.
      this.logger.error(`${this.label}: message ${m.seq} of stream ${m.info.stream} is not readable and is dropped: ${messageOf(err)}`);
      this.puller.terminate(m);
      return null;
    }
    const d: Delivery = { msg: m, events, committed: 0, done: null };
    if (events.length === 0) {
      void this.puller.ack([m], 5000).catch(() => {});
      return null;
    }
    this.open.add(d);
    return d;
  }
}
