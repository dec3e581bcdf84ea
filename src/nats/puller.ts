/**
 * Keeps up to `prefetch` messages of a durable pull consumer in memory so that takes are
 * synchronous. One pull request is outstanding at a time, for as many messages as there is
 * room; it is a long poll, so new messages arrive as soon as they are stored.
 *
 * A prefetched message is already delivered and counts against the consumer's ack-wait, so
 * messages left untaken for half of ack-wait are handed back (nak) for any agent to take,
 * and messages taken by an open transaction are kept alive (in-progress acks) until it ends.
 */
import type { Consumer, JsMsg } from "@nats-io/jetstream";
import type { Clock, TimerHandle } from "../core/clock.ts";
import { Deque } from "../core/deque.ts";
import type { Logger } from "../core/logger.ts";
import type { NatsLink } from "./connection.ts";
import { messageOf } from "./errors.ts";

export interface PullerOptions {
  stream: string;
  consumer: string;
  prefetch: number;
  /** Milliseconds; see ConsumerSettings.ackWait. */
  ackWait: number;
  /** Milliseconds one pull request waits on the server for messages. */
  expires: number;
}

export class Puller {
  private readonly ready = new Deque<JsMsg>(64);
  private readonly arrived = new Deque<number>(64);
  private running = false;
  private loop: Promise<void> | null = null;
  private stopCurrent: (() => void) | null = null;
  private roomWaiter: (() => void) | null = null;
  private guard: TimerHandle | null = null;
  /** Messages taken by open transactions, with when they were last kept alive. */
  private readonly held = new Map<JsMsg, number>();
  private arrivalWaiters: (() => boolean)[] = [];

  constructor(
    private readonly link: NatsLink,
    private readonly options: PullerOptions,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly onArrival: () => void = () => {},
  ) {}

  get label(): string {
    return this.link.label;
  }

  /** Messages prefetched and not yet taken. */
  get buffered(): number {
    return this.ready.length;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
    this.armGuard();
  }

  /** The next prefetched message, or undefined; the caller must settle it (ack/nak via settle*). */
  shift(): JsMsg | undefined {
    const m = this.ready.popFront();
    if (m === undefined) return undefined;
    this.arrived.popFront();
    this.held.set(m, this.clock.now());
    if (this.roomWaiter && this.ready.length <= this.options.prefetch / 2) {
      const w = this.roomWaiter;
      this.roomWaiter = null;
      w();
    }
    return m;
  }

  /** Acknowledges messages a commit is done with; resolves when the server has them. */
  async ack(msgs: readonly JsMsg[], timeout: number): Promise<void> {
    for (let i = 0; i < msgs.length; i++) {
      this.held.delete(msgs[i]);
      msgs[i].ack();
    }
    await this.flush(timeout);
  }

  /** Hands messages back to the stream for redelivery to any agent at once. */
  nak(msgs: readonly JsMsg[]): void {
    for (let i = 0; i < msgs.length; i++) {
      this.held.delete(msgs[i]);
      msgs[i].nak();
    }
  }

  /** Forgets messages without settling them (the server redelivers them after ack-wait). */
  release(msgs: readonly JsMsg[]): void {
    for (let i = 0; i < msgs.length; i++) this.held.delete(msgs[i]);
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

  private async flush(timeout: number): Promise<void> {
    const nc = this.link.nc;
    if (!nc) throw new Error(`${this.label}: not connected to NATS; the acknowledgements will not reach the server`);
    let timer: TimerHandle | null = null;
    try {
      await Promise.race([
        nc.flush(),
        new Promise<never>((_, reject) => {
          timer = this.clock.setTimeout(() => reject(new Error(`${this.label}: acknowledgements not confirmed by the NATS server within ${timeout} ms`)), timeout);
        }),
      ]);
    } finally {
      if (timer) this.clock.clearTimeout(timer);
    }
  }

  /** Stops pulling and hands every prefetched message back. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.guard) this.clock.clearTimeout(this.guard);
    this.guard = null;
    // The pull in flight is left to expire rather than closed: the server would go on
    // delivering to it (a nak'ed message too), and what it delivers to a closed inbox waits
    // for ack-wait. What it brings is handed back below.
    const current = this.stopCurrent;
    const timer = this.clock.setTimeout(() => current?.(), this.options.expires + 1000);
    this.roomWaiter?.();
    for (const w of this.arrivalWaiters.splice(0)) w();
    await this.loop?.catch(() => {});
    this.clock.clearTimeout(timer);
    this.loop = null;
    this.handBack(Number.POSITIVE_INFINITY);
  }

  private async run(): Promise<void> {
    let consumer: Consumer | null = null;
    let failingSince = 0;
    while (this.running) {
      if (!this.link.ready) {
        consumer = null;
        await this.link.whenReady(1000);
        continue;
      }
      const room = this.options.prefetch - this.ready.length;
      if (room < Math.max(1, this.options.prefetch / 4)) {
        await new Promise<void>((resolve) => (this.roomWaiter = resolve));
        continue;
      }
      try {
        const { js } = this.link.requireReady();
        consumer ??= await js.consumers.get(this.options.stream, this.options.consumer);
        const messages = await consumer.fetch({ max_messages: room, expires: this.options.expires });
        this.stopCurrent = () => void messages.close().catch(() => {});
        for await (const m of messages) {
          this.ready.pushBack(m);
          this.arrived.pushBack(this.clock.now());
          if (this.ready.length === 1) this.onArrival();
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
        await this.clock.sleep(Math.min(1000, this.link.settings.reconnectWait));
      }
    }
  }

  private armGuard(): void {
    const every = Math.max(250, Math.floor(this.options.ackWait / 4));
    const tick = () => {
      this.guard = null;
      if (!this.running) return;
      this.handBack(this.options.ackWait / 2);
      this.keepAlive(this.options.ackWait / 3);
      this.guard = this.clock.setTimeout(tick, every);
    };
    this.guard = this.clock.setTimeout(tick, every);
  }

  /** Naks prefetched messages that waited longer than ms, so another agent can take them. */
  private handBack(ms: number): void {
    const now = this.clock.now();
    let n = 0;
    while (this.ready.length > 0 && (ms === Number.POSITIVE_INFINITY || now - (this.arrived.peekFront() ?? now) > ms)) {
      const m = this.ready.popFront() as JsMsg;
      this.arrived.popFront();
      m.nak();
      n++;
    }
    if (n > 0 && ms !== Number.POSITIVE_INFINITY) this.logger.debug(`${this.label}: handed ${n} prefetched events back to the stream (not taken within ${ms} ms)`);
    if (n > 0 && this.roomWaiter) {
      const w = this.roomWaiter;
      this.roomWaiter = null;
      w();
    }
  }

  /** Tells the server that messages held by open transactions are still being worked on. */
  private keepAlive(ms: number): void {
    const now = this.clock.now();
    for (const [m, since] of this.held) {
      if (now - since > ms) {
        m.working();
        this.held.set(m, now);
      }
    }
  }
}
