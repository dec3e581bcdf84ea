/**
 * Keeps up to `prefetch` messages of a durable pull consumer in memory so that takes are
 * synchronous. One pull request is outstanding at a time, for as many messages as there is
 * room; it is a long poll, so new messages arrive as soon as they are stored.
 *
 * A prefetched message is already delivered: the server counts ack-wait for it. Messages
 * taken by open transactions, and prefetched ones, are kept alive with in-progress acks on the
 * server's clock (real time, whatever clock the component runs on), so the server never
 * redelivers what this process still holds. When the oldest prefetched message has waited
 * half of ack-wait (the component's clock), the whole prefetch goes back to the stream in
 * order (nak), so an idle agent can take it and a single agent gets it back in the same order.
 */
import type { Consumer, JsMsg } from "@nats-io/jetstream";
import { type Clock, systemClock, type TimerHandle } from "../core/clock.ts";
import { Deque } from "../core/deque.ts";
import type { Logger } from "../core/logger.ts";
import type { NatsLink } from "./connection.ts";
import { AcksNotSentError, messageOf } from "./errors.ts";

export interface PullerOptions {
  stream: string;
  consumer: string;
  prefetch: number;
  /** Milliseconds; see ConsumerSettings.ackWait. */
  ackWait: number;
  /** Milliseconds one pull request waits on the server for messages. */
  expires: number;
  /** Most bytes of messages prefetched (a pull waits while half of it is buffered); default PREFETCH_BYTES. */
  prefetchBytes?: number;
}

/** Bytes of messages kept ahead of takes: batch messages carry many events each. */
export const PREFETCH_BYTES = 4 * 1024 * 1024;

export interface PullerEvents {
  /** A message arrived (the buffer was empty before when `first`); null: a copy of one already here. */
  arrived?(first: boolean, msg: JsMsg | null): void;
  /** Prefetched messages went back to the stream; the server delivers them again. */
  handedBack?(msgs: readonly JsMsg[]): void;
}


/** How @nats-io/jetstream words a fetch that ended because the server's heartbeats stopped. */
const HEARTBEATS_MISSED = /heartbeats missed/i;
/** Stream order of messages (their stream sequence). */
const byStreamSeq = (a: JsMsg, b: JsMsg) => a.seq - b.seq;

export class Puller {
  private readonly ready = new Deque<JsMsg>(64);
  /** When each ready message arrived (component clock), for the hand-back. */
  private readonly arrived = new Deque<number>(64);
  /** When each held or ready message was last kept alive (real time). */
  private readonly lastAlive = new Map<JsMsg, number>();
  /** Messages taken by open transactions. */
  private readonly held = new Set<JsMsg>();
  /** Stream sequences of the ready and held messages. */
  private readonly here = new Set<number>();
  /** Bytes of the ready messages. */
  private readyBytes = 0;
  /** Bytes and count of the messages received, for their mean size. */
  private seenBytes = 0;
  private seenMsgs = 0;
  private running = false;
  private loop: Promise<void> | null = null;
  private stopCurrent: (() => void) | null = null;
  private roomWaiter: (() => void) | null = null;
  /** Waits of the pull loop (for the connection, before a retry) that a stop ends at once. */
  private readonly haltWaiters = new Set<() => void>();
  private handBackTimer: TimerHandle | null = null;
  private aliveTimer: TimerHandle | null = null;
  private arrivalWaiters: (() => boolean)[] = [];
  /** The server's clock: ack-wait runs on real time even when the component's clock is virtual. */
  private readonly serverClock: Clock = systemClock;

  constructor(
    private readonly link: NatsLink,
    private readonly options: PullerOptions,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events: PullerEvents = {},
  ) {}

  get label(): string {
    return this.link.label;
  }

  /** Messages prefetched and not yet taken. */
  get buffered(): number {
    return this.ready.length;
  }

  /** The i-th prefetched message not yet taken. */
  readyAt(i: number): JsMsg | undefined {
    return this.ready.at(i);
  }

  /** Messages taken by open transactions and not yet settled. */
  get heldCount(): number {
    return this.held.size;
  }

  /** True while a pull is (or is about to be) outstanding: messages the server has for the consumer will arrive. */
  get pulling(): boolean {
    return this.running && this.link.ready && this.room() >= this.pullThreshold();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
    this.armTimers();
  }

  /** The next prefetched message, or undefined; it is held until ack, nak, requeue or release. */
  shift(): JsMsg | undefined {
    const m = this.ready.popFront();
    if (m === undefined) return undefined;
    this.arrived.popFront();
    this.readyBytes -= m.data.length;
    this.held.add(m);
    if (this.roomWaiter && this.room() >= this.options.prefetch / 2) {
      const w = this.roomWaiter;
      this.roomWaiter = null;
      w();
    }
    return m;
  }

  /**
   * Acknowledges messages a commit is done with; resolves when the server has processed them.
   * The last one is a double ack: a consumer processes its acks in order, so its answer means
   * every ack before it counts too, and a backlog read after this sees the takes gone (a flush
   * only says the server received them, and under load its consumer info could still count them).
   */
  async ack(msgs: readonly JsMsg[], timeout: number): Promise<void> {
    const last = msgs.length - 1;
    if (last < 0) return;
    if (!this.link.nc) {
      // Let go of, so the server's delivery of them again after ack-wait is taken (not dropped as a copy of one held here).
      this.release(msgs);
      throw new AcksNotSentError(`${this.label}: not connected to NATS; the acknowledgements will not reach the server`);
    }
    for (let i = 0; i < last; i++) {
      this.forget(msgs[i]);
      msgs[i].ack();
    }
    this.forget(msgs[last]);
    const confirmed = await msgs[last].ackAck({ timeout }).catch((err: unknown) => {
      throw new Error(`${this.label}: acknowledgements not confirmed by the NATS server within ${timeout} ms (${err instanceof Error ? err.message : String(err)})`);
    });
    if (!confirmed) throw new Error(`${this.label}: the NATS server did not confirm the acknowledgement of message ${msgs[last].seq}`);
  }

  /** Hands messages back to the stream for redelivery to any agent at once. */
  nak(msgs: readonly JsMsg[]): void {
    for (let i = 0; i < msgs.length; i++) {
      this.forget(msgs[i]);
      msgs[i].nak();
    }
  }

  /** Tells the server never to deliver a message again (one nothing can read). */
  terminate(m: JsMsg): void {
    this.forget(m);
    m.term();
  }

  /** Puts taken messages back at the head of the prefetch, in their order (a rolled-back take). */
  requeue(msgs: readonly JsMsg[]): void {
    const now = this.clock.now();
    for (let i = msgs.length - 1; i >= 0; i--) {
      this.held.delete(msgs[i]);
      this.ready.pushFront(msgs[i]);
      this.arrived.pushFront(now);
      this.readyBytes += msgs[i].data.length;
    }
  }

  /** Forgets messages without settling them (the server redelivers them after ack-wait). */
  release(msgs: readonly JsMsg[]): void {
    for (let i = 0; i < msgs.length; i++) this.forget(msgs[i]);
  }

  /** Resolves when at least n messages are buffered, or after ms. */
  waitFor(n: number, ms: number): Promise<void> {
    if (this.ready.length >= n || !this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.arrivalWaiters = this.arrivalWaiters.filter((w) => w !== check);
        resolve();
      }, ms);
      const check = () => {
        if (this.ready.length < n && this.running) return false;
        this.clock.clearTimeout(timer);
        resolve();
        return true;
      };
      this.arrivalWaiters.push(check);
    });
  }

  /** Stops pulling and hands every prefetched and held message back to the stream, in stream order. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.halt();
    // The pull in flight is left to expire rather than closed: the server may still hand it a
    // message (one nak'ed below too), which would then wait for ack-wait in a closed inbox.
    // What it brings is handed back with the rest.
    const current = this.stopCurrent;
    const timer = this.clock.setTimeout(() => current?.(), this.options.expires + 1000);
    await this.loop?.catch(() => {});
    this.clock.clearTimeout(timer);
    this.loop = null;
    const all = [...this.ready.toArray(), ...this.held].sort(byStreamSeq);
    this.ready.clear();
    this.arrived.clear();
    this.readyBytes = 0;
    this.nak(all);
  }

  /**
   * What a killed process leaves: nothing more is pulled, acked or handed back; the server
   * delivers the prefetched and held messages again after ack-wait.
   */
  crash(): void {
    if (!this.running) return;
    this.halt();
    this.stopCurrent?.();
    this.ready.clear();
    this.arrived.clear();
    this.readyBytes = 0;
    this.held.clear();
    this.here.clear();
    this.lastAlive.clear();
    this.loop = null;
  }

  private halt(): void {
    this.running = false;
    if (this.handBackTimer) this.clock.clearTimeout(this.handBackTimer);
    if (this.aliveTimer) this.serverClock.clearTimeout(this.aliveTimer);
    this.handBackTimer = this.aliveTimer = null;
    this.roomWaiter?.();
    this.roomWaiter = null;
    for (const w of this.arrivalWaiters.splice(0)) w();
    for (const w of [...this.haltWaiters]) w();
  }

  /** Waits for `p`, or less when the puller stops: a stop never waits out a retry delay. */
  private untilHalted(p: Promise<unknown>): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.haltWaiters.delete(done);
        resolve();
      };
      this.haltWaiters.add(done);
      p.then(done, done);
    });
  }

  private forget(m: JsMsg): void {
    this.here.delete(m.seq);
    this.held.delete(m);
    this.lastAlive.delete(m);
  }

  private get prefetchBytes(): number {
    return this.options.prefetchBytes ?? PREFETCH_BYTES;
  }

  /** Messages a pull may ask for: none while half the prefetch's bytes are buffered. */
  private room(): number {
    if (this.readyBytes > this.prefetchBytes / 2) return 0;
    return this.options.prefetch - this.ready.length;
  }

  private pullThreshold(): number {
    return Math.max(1, this.options.prefetch / 4);
  }

  private async run(): Promise<void> {
    let consumer: Consumer | null = null;
    let failingSince = 0;
    while (this.running) {
      if (!this.link.ready) {
        consumer = null;
        await this.untilHalted(this.link.whenReady(1000));
        continue;
      }
      const room = this.room();
      if (room < this.pullThreshold()) {
        await new Promise<void>((resolve) => (this.roomWaiter = resolve));
        continue;
      }
      try {
        const { js } = this.link.requireReady();
        consumer ??= await js.consumers.get(this.options.stream, this.options.consumer);
        if (!this.running) break;
        // The client takes a count or a byte limit, not both: the bytes are bounded through the
        // mean size of the messages seen so far.
        const mean = this.seenMsgs > 0 ? this.seenBytes / this.seenMsgs : 0;
        const byBytes = mean > 0 ? Math.max(1, Math.floor((this.prefetchBytes - this.readyBytes) / mean)) : room;
        const messages = await consumer.fetch({ max_messages: Math.min(room, byBytes), expires: this.options.expires });
        this.stopCurrent = () => void messages.close().catch(() => {});
        for await (const m of messages) {
          // An event already here (prefetched or held) may be delivered again: after ack-wait,
          // or twice after a nak (nats-server 2.9). One copy is kept; the arrival still counts.
          if (this.here.has(m.seq)) {
            this.events.arrived?.(false, null);
            continue;
          }
          this.here.add(m.seq);
          const first = this.ready.length === 0;
          this.ready.pushBack(m);
          this.arrived.pushBack(this.clock.now());
          this.readyBytes += m.data.length;
          this.seenBytes += m.data.length;
          this.seenMsgs++;
          this.lastAlive.set(m, this.serverClock.now());
          this.events.arrived?.(first, m);
          if (this.arrivalWaiters.length > 0) this.arrivalWaiters = this.arrivalWaiters.filter((w) => !w());
        }
        this.stopCurrent = null;
        failingSince = 0;
      } catch (err) {
        this.stopCurrent = null;
        consumer = null;
        if (!this.running) break;
        const now = this.clock.now();
        if (failingSince === 0) {
          failingSince = now;
          this.logger.warn(`${this.label}: pulling from consumer ${this.options.consumer} of stream ${this.options.stream} failed: ${messageOf(err)}; retrying`);
        }
        // The client reports a pull the server left unanswered (a 409 it stalls on) only after two
        // idle heartbeats went missing, a wait in real time already: pull again at once.
        if (!HEARTBEATS_MISSED.test(messageOf(err))) await this.untilHalted(this.clock.sleep(Math.min(1000, this.link.settings.reconnectWait)));
      }
    }
  }

  private armTimers(): void {
    const handBackEvery = Math.max(250, Math.floor(this.options.ackWait / 4));
    const handBackTick = () => {
      this.handBackTimer = null;
      if (!this.running) return;
      this.handBack(this.options.ackWait / 2);
      this.handBackTimer = this.clock.setTimeout(handBackTick, handBackEvery);
    };
    this.handBackTimer = this.clock.setTimeout(handBackTick, handBackEvery);
    const aliveEvery = Math.max(100, Math.floor(this.options.ackWait / 5));
    const aliveTick = () => {
      this.aliveTimer = null;
      if (!this.running) return;
      this.keepAlive(Math.floor(this.options.ackWait * 0.6));
      this.aliveTimer = this.serverClock.setTimeout(aliveTick, aliveEvery);
    };
    this.aliveTimer = this.serverClock.setTimeout(aliveTick, aliveEvery);
  }

  /** When the oldest prefetched message waited longer than ms, hands the whole prefetch back in order. */
  private handBack(ms: number): void {
    const oldest = this.arrived.peekFront();
    if (oldest === undefined || this.clock.now() - oldest <= ms) return;
    const all = this.ready.toArray();
    this.ready.clear();
    this.arrived.clear();
    this.readyBytes = 0;
    this.nak(all);
    this.logger.debug(`${this.label}: handed ${all.length} prefetched messages back to the stream (not taken within ${ms} ms)`);
    this.events.handedBack?.(all);
    if (this.roomWaiter) {
      const w = this.roomWaiter;
      this.roomWaiter = null;
      w();
    }
  }

  /** Tells the server that held and prefetched messages are still ours (in-progress acks), on real time. */
  private keepAlive(ms: number): void {
    const now = this.serverClock.now();
    const touch = (m: JsMsg) => {
      if (now - (this.lastAlive.get(m) ?? 0) > ms) {
        m.working();
        this.lastAlive.set(m, now);
      }
    };
    for (const m of this.held) touch(m);
    for (let i = 0; i < this.ready.length; i++) touch(this.ready.at(i) as JsMsg);
  }
}
