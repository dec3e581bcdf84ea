/**
 * How `flume replay` replays a channel kept by a broker (its definition declares
 * brokerLink.channel: the Kafka channel). Which record a take gets there depends on the broker
 * (partitions, leaders, elections, the group's committed offsets after a crash), and whether a
 * put commit succeeds too (a lost acknowledgement, an election past the request timeout): a
 * replay has no broker. So the trace says which event each take got and how each commit ended,
 * and the replay checks what it can: a take gets an event the channel holds and no other open
 * take has, and the ledger comes out the same. What the broker did outside the transactions
 * comes as trace lines of its own: copies written without a commit counting them ("landed":
 * a failed or retried put, a crash, committed takes a crash gives back) and records a failover
 * lost ("brokerLost"). What the channel holds lives in the topic: a BrokerStore outlives a crash.
 */
import type { Channel } from "../core/channel.ts";
import { ChannelCounter } from "../core/counters.ts";
import { ChannelException } from "../core/errors.ts";
import type { Event } from "../core/event.ts";
import type { LifecycleState } from "../core/lifecycle.ts";
import { ChannelTransaction } from "../core/transaction.ts";

/** The events a broker-kept channel holds, by id: its copies, and how many no open take has. */
export class BrokerStore {
  private readonly held = new Map<string, { event: Event; copies: number; free: number }>();
  size = 0;

  add(key: string, event: Event): void {
    const h = this.held.get(key);
    if (h) {
      h.copies++;
      h.free++;
    } else this.held.set(key, { event, copies: 1, free: 1 });
    this.size++;
  }

  /** A copy of `key` no open take has, now taken; null when there is none. */
  take(key: string): Event | null {
    const h = this.held.get(key);
    if (!h || h.free === 0) return null;
    h.free--;
    return h.event;
  }

  /** A taken copy goes back (rollback, crash). */
  giveBack(key: string): void {
    const h = this.held.get(key);
    if (h && h.free < h.copies) h.free++;
  }

  /** A taken copy's take committed: it leaves. */
  remove(key: string): void {
    const h = this.held.get(key);
    if (!h) return;
    h.copies--;
    this.size--;
    if (h.copies === 0) this.held.delete(key);
  }

  /** A failover lost a copy no take has. */
  lose(key: string): void {
    const h = this.held.get(key);
    if (!h || h.free === 0) return;
    h.free--;
    this.remove(key);
  }
}

export class BrokerTransaction extends ChannelTransaction {
  puts: { key: string; event: Event }[] = [];
  takes: string[] = [];
  /** How the commit under way ends, once the trace says. */
  settle: ((error: string | null) => void) | null = null;
  /** Its puts are in the store already: a take got one before the commit's "committed" line. */
  early = false;

  constructor(protected readonly ch: ReplayedBrokerChannel) {
    super();
  }
}

export class ReplayedBrokerChannel implements Channel {
  readonly durable = true;
  readonly counter: ChannelCounter;
  /** The id (its id header's value) the next take gets, from the trace. */
  wanted: string | null = null;
  private state: LifecycleState = "IDLE";
  private readonly open = new Set<BrokerTransaction>();
  /** Commits under way, not settled yet. */
  private readonly committing = new Set<BrokerTransaction>();

  constructor(
    readonly name: string,
    private readonly store: BrokerStore,
    private readonly keyOf: (e: Event) => string,
  ) {
    this.counter = new ChannelCounter(name);
    this.counter.values.ChannelSize = store.size;
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  start(): void {
    this.counter.start();
    this.state = "START";
  }

  stop(): void {
    this.state = "STOP";
  }

  /** A killed process: its open takes go back (the group reads them again from its committed offsets). */
  crash(): void {
    for (const tx of this.open) this.release(tx);
    this.open.clear();
    this.committing.clear();
    this.state = "STOP";
  }

  getTransaction(): BrokerTransaction {
    return new BrokerTransaction(this);
  }

  put(tx: BrokerTransaction, event: Event): void {
    this.counter.values.EventPutAttemptCount++;
    this.open.add(tx);
    tx.puts.push({ key: this.keyOf(event), event });
  }

  take(tx: BrokerTransaction): Event | null {
    this.counter.values.EventTakeAttemptCount++;
    const key = this.wanted;
    this.wanted = null;
    if (key === null) return null;
    const e = this.store.take(key) ?? (this.showEarly(key) ? this.store.take(key) : null);
    if (!e) return null;
    this.open.add(tx);
    tx.takes.push(key);
    return e;
  }

  /**
   * A take got an event of a put commit under way: the broker had its acknowledgement, so the
   * records were readable, and the commit's "committed" line came after the take (its promise
   * resolved later). That commit's puts go in now.
   */
  private showEarly(key: string): boolean {
    for (const tx of this.committing) {
      if (tx.early || !tx.puts.some((p) => p.key === key)) continue;
      for (const p of tx.puts) this.store.add(p.key, p.event);
      tx.early = true;
      return true;
    }
    return false;
  }

  /** Waits for the trace to say how it ended (settle). */
  commit(tx: BrokerTransaction): Promise<void> {
    this.committing.add(tx);
    return new Promise((resolve, reject) => {
      tx.settle = (error) => {
        tx.settle = null;
        this.committing.delete(tx);
        if (error !== null) {
          // A failed put's copies come as "landed" lines: what went in early goes out again.
          if (tx.early) for (const p of tx.puts) this.store.lose(p.key);
          this.counter.values.ChannelSize = this.store.size;
          return reject(new ChannelException(error));
        }
        if (!tx.early) for (const p of tx.puts) this.store.add(p.key, p.event);
        for (const k of tx.takes) this.store.remove(k);
        this.counter.inc("EventPutSuccessCount", tx.puts.length);
        this.counter.inc("EventTakeSuccessCount", tx.takes.length);
        tx.puts = [];
        tx.takes = [];
        this.open.delete(tx);
        this.counter.values.ChannelSize = this.store.size;
        resolve();
      };
    });
  }

  rollback(tx: BrokerTransaction): void {
    this.release(tx);
    this.open.delete(tx);
  }

  private release(tx: BrokerTransaction): void {
    for (const k of tx.takes) this.store.giveBack(k);
    tx.puts = [];
    tx.takes = [];
  }

  /** Copies the broker wrote without a commit counting them. */
  landed(events: readonly Event[]): void {
    for (const e of events) this.store.add(this.keyOf(e), e);
    this.counter.values.ChannelSize = this.store.size;
  }

  /** Copies a failover lost. */
  lost(keys: readonly string[]): void {
    for (const k of keys) this.store.lose(k);
    this.counter.values.ChannelSize = this.store.size;
  }
}
