import type { Channel, SourcePosition } from "./channel.ts";
import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { ChannelCounter } from "./counters.ts";
import { Deque } from "./deque.ts";
import { ChannelException, ChannelFullException, ConfigurationError } from "./errors.ts";
import { bodyLength, type Event } from "./event.ts";
import type { LifecycleState } from "./lifecycle.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import { Permits } from "./permits.ts";
import { PutListeners } from "./put-listeners.ts";
import { BasicTransaction } from "./transaction.ts";

/** Byte capacity is counted in slots of this many body bytes, as Flume does. */
export const BYTE_CAPACITY_SLOT_SIZE = 100;

/**
 * Default byteCapacity in bytes. Flume uses 80% of the JVM's maximum heap; we have no heap
 * limit to read, so we bound event bodies at 1 GiB by default.
 */
export const DEFAULT_BYTE_CAPACITY = 1024 * 1024 * 1024;

export interface MemoryChannelOptions {
  capacity?: number;
  transactionCapacity?: number;
  /** Total bytes of event bodies allowed; 0 or less means unbounded. */
  byteCapacity?: number;
  byteCapacityBufferPercentage?: number;
  /** Seconds a commit waits for space (Flume's keep-alive). */
  keepAlive?: number;
}

const DEFAULTS = {
  capacity: 100,
  transactionCapacity: 100,
  byteCapacity: DEFAULT_BYTE_CAPACITY,
  byteCapacityBufferPercentage: 20,
  keepAlive: 3,
} as const;

const NO_EVENTS: readonly Event[] = [];

function slotsFor(event: Event): number {
  const n = bodyLength(event);
  return n === 0 ? 1 : Math.ceil(n / BYTE_CAPACITY_SLOT_SIZE);
}

/**
 * Flume's MemoryChannel: a bounded in-memory queue. Capacity is counted as Flume does: an
 * event taken but not yet committed still holds its slot (and its bytes), so a rollback always
 * has room to put it back.
 */
export class MemoryChannel implements Channel {
  readonly counter: ChannelCounter;
  readonly durable = false;
  private readonly queue = new Deque<Event>(1024);
  private capacity: number = DEFAULTS.capacity;
  private transactionCapacity: number = DEFAULTS.transactionCapacity;
  private byteCapacitySlots = 0;
  private keepAliveMs = DEFAULTS.keepAlive * 1000;
  private readonly slots: Permits;
  private readonly bytes: Permits;
  private state: LifecycleState = "IDLE";
  private readonly positions = new Map<string, string>();

  constructor(
    readonly name: string,
    options: MemoryChannelOptions = {},
    clock: Clock = systemClock,
    private readonly logger: Logger = silentLogger,
  ) {
    this.counter = new ChannelCounter(name, [], clock);
    this.slots = new Permits(0, clock);
    this.bytes = new Permits(0, clock);
    const o = this.resolve(options);
    this.capacity = o.capacity;
    this.slots.release(o.capacity);
    this.transactionCapacity = o.transactionCapacity;
    this.byteCapacitySlots = o.byteCapacitySlots;
    this.bytes.release(o.byteCapacitySlots);
    this.keepAliveMs = o.keepAlive * 1000;
    this.counter.set("ChannelCapacity", this.capacity);
  }

  private resolve(options: MemoryChannelOptions) {
    const capacity = options.capacity ?? DEFAULTS.capacity;
    const transactionCapacity = options.transactionCapacity ?? DEFAULTS.transactionCapacity;
    const byteCapacity = options.byteCapacity ?? DEFAULTS.byteCapacity;
    const pct = options.byteCapacityBufferPercentage ?? DEFAULTS.byteCapacityBufferPercentage;
    const keepAlive = options.keepAlive ?? DEFAULTS.keepAlive;
    if (!(capacity > 0)) throw new ConfigurationError("capacity", `must be greater than 0, got ${capacity}`, this.name);
    if (!(transactionCapacity > 0)) throw new ConfigurationError("transactionCapacity", `must be greater than 0, got ${transactionCapacity}`, this.name);
    if (transactionCapacity > capacity) {
      throw new ConfigurationError(
        "transactionCapacity",
        `Transaction Capacity of Memory Channel cannot be higher than the capacity (${transactionCapacity} > ${capacity})`,
        this.name,
      );
    }
    if (pct < 0 || pct > 100) throw new ConfigurationError("byteCapacityBufferPercentage", `must be between 0 and 100, got ${pct}`, this.name);
    if (keepAlive < 0) throw new ConfigurationError("keep-alive", `must not be negative, got ${keepAlive}`, this.name);
    let byteCapacitySlots = Math.floor((byteCapacity * (1 - pct * 0.01)) / BYTE_CAPACITY_SLOT_SIZE);
    if (byteCapacitySlots < 1) byteCapacitySlots = Number.MAX_SAFE_INTEGER;
    return { capacity, transactionCapacity, byteCapacitySlots, keepAlive };
  }

  /**
   * Applies new settings to a running channel without losing events (Flume's reconfigure):
   * growing is immediate; shrinking waits up to keep-alive for the space and is abandoned
   * with a warning when the events do not fit.
   */
  async reconfigure(options: MemoryChannelOptions): Promise<void> {
    const o = this.resolve(options);
    this.keepAliveMs = o.keepAlive * 1000;
    this.transactionCapacity = o.transactionCapacity;
    const capacity = await this.resize(this.slots, this.capacity, o.capacity);
    if (capacity !== o.capacity) this.logger.warn(`${this.name}: could not free ${this.capacity - o.capacity} slots to shrink capacity to ${o.capacity}; keeping ${this.capacity}`);
    this.capacity = capacity;
    if (this.transactionCapacity > this.capacity) this.transactionCapacity = this.capacity;
    const byteSlots = await this.resize(this.bytes, this.byteCapacitySlots, o.byteCapacitySlots);
    if (byteSlots !== o.byteCapacitySlots) this.logger.warn(`${this.name}: could not free byte capacity to shrink it; keeping the old byteCapacity`);
    this.byteCapacitySlots = byteSlots;
    this.counter.set("ChannelCapacity", this.capacity);
  }

  /** Grows `permits` from `current` to `wanted` at once, or shrinks it within keep-alive; returns the size it has now. */
  private async resize(permits: Permits, current: number, wanted: number): Promise<number> {
    if (wanted > current) permits.release(wanted - current);
    else if (wanted < current && !(await permits.tryAcquire(current - wanted, this.keepAliveMs))) return current;
    return wanted;
  }

  getTransaction(): MemoryTransaction {
    return new MemoryTransaction(this, this.transactionCapacity);
  }

  start(): void {
    this.counter.start();
    this.counter.set("ChannelCapacity", this.capacity);
    this.counter.set("ChannelSize", this.queue.length);
    this.state = "START";
  }

  stop(): void {
    this.counter.set("ChannelSize", this.queue.length);
    this.counter.stop();
    this.state = "STOP";
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  /** Events committed and not taken. */
  get size(): number {
    return this.queue.length;
  }

  getCapacity(): number {
    return this.capacity;
  }

  getTransactionCapacity(): number {
    return this.transactionCapacity;
  }

  /** Free slots: capacity minus queued events minus events taken by open transactions. */
  get remainingCapacity(): number {
    return this.slots.free;
  }

  /** Free byte-capacity slots (100 body bytes each), counted like remainingCapacity (Flume's getBytesRemainingValue). */
  get remainingByteSlots(): number {
    return this.bytes.free;
  }

  private readonly putListeners = new PutListeners();

  onPutsCommitted(listener: () => void): () => void {
    return this.putListeners.add(listener);
  }

  sourcePosition(source: string): string | undefined {
    return this.positions.get(source);
  }

  // Internal operations used by MemoryTransaction.

  /** @internal */
  pollEvent(): Event | undefined {
    return this.queue.popFront();
  }

  /** @internal The queue, for a transaction taking a batch (MemoryTransaction.doTakeInto). */
  queueForTakes(): Deque<Event> {
    return this.queue;
  }

  putNow(events: readonly Event[], position?: SourcePosition): boolean {
    const n = events.length;
    // Too many for one transaction: the transaction's putAll counts and refuses them.
    if (n > this.transactionCapacity) return false;
    let slots = 0;
    for (let i = 0; i < n; i++) slots += slotsFor(events[i]);
    if (!this.commitNow(events, slots, NO_EVENTS, 0, null)) return false;
    if (position) this.positions.set(position.source, position.value);
    this.counter.values.EventPutAttemptCount += n;
    return true;
  }

  /** @internal Done before returning (no promise) when the commit needs no wait for room. */
  commitTransaction(puts: Event[], putSlots: number, takes: Event[], takeSlots: number, positions: Map<string, string> | null): Promise<void> | void {
    if (!this.commitNow(puts, putSlots, takes, takeSlots, positions)) return this.commitWaiting(puts, putSlots, takes, takeSlots, positions);
  }

  /** Commits if the room it needs is free now (and nobody waits for room ahead of it); false, holding nothing, if not. */
  private commitNow(puts: readonly Event[], putSlots: number, takes: readonly Event[], takeSlots: number, positions: Map<string, string> | null): boolean {
    const slotChange = puts.length - takes.length;
    const byteChange = putSlots - takeSlots;
    if (byteChange > 0 && !this.bytes.tryAcquireNow(byteChange)) return false;
    if (slotChange > 0 && !this.slots.tryAcquireNow(slotChange)) {
      // Given back at once: nobody waited (the bytes were free), so nobody is woken.
      if (byteChange > 0) this.bytes.release(byteChange);
      return false;
    }
    this.applyCommit(puts, takes, slotChange, byteChange, positions);
    return true;
  }

  private async commitWaiting(puts: Event[], putSlots: number, takes: Event[], takeSlots: number, positions: Map<string, string> | null): Promise<void> {
    const slotChange = puts.length - takes.length;
    const byteChange = putSlots - takeSlots;
    // Await only when a wait really started: a refusal must release what this commit holds
    // before any other commit runs, or that one could fail for space this one is giving back.
    if (byteChange > 0) {
      let got = this.bytes.tryAcquire(byteChange, this.keepAliveMs);
      if (typeof got !== "boolean") got = await got;
      if (!got) {
        throw new ChannelException(
          `Cannot commit transaction. Byte capacity allocated to store event body ${this.byteCapacitySlots * BYTE_CAPACITY_SLOT_SIZE} reached. ` +
            `Please increase the byte capacity allocated to the channel ${this.name}, as the sinks may not be keeping up with the sources`,
        );
      }
    }
    if (slotChange > 0) {
      let got = this.slots.tryAcquire(slotChange, this.keepAliveMs);
      if (typeof got !== "boolean") got = await got;
      if (!got) {
        if (byteChange > 0) this.bytes.release(byteChange);
        throw new ChannelFullException(
          `Space for commit to queue couldn't be acquired. Sinks are likely not keeping up with sources, or the buffer size is too tight (channel ${this.name}, capacity ${this.capacity})`,
        );
      }
    }
    this.applyCommit(puts, takes, slotChange, byteChange, positions);
  }

  /** The commit once its room is held: queue the puts, give back what the takes held, count. */
  private applyCommit(puts: readonly Event[], takes: readonly Event[], slotChange: number, byteChange: number, positions: Map<string, string> | null): void {
    this.queue.pushBackAll(puts);
    if (byteChange < 0) this.bytes.release(-byteChange);
    if (slotChange < 0) this.slots.release(-slotChange);
    if (positions) for (const [k, v] of positions) this.positions.set(k, v);
    const c = this.counter.values;
    c.EventPutSuccessCount += puts.length;
    c.EventTakeSuccessCount += takes.length;
    c.ChannelSize = this.queue.length;
    if (puts.length > 0) this.putListeners.notify();
  }

  /** @internal Returns taken events to the head of the queue in their original order. */
  rollbackTakes(takes: Event[]): void {
    for (let i = takes.length - 1; i >= 0; i--) this.queue.pushFront(takes[i]);
    this.counter.values.ChannelSize = this.queue.length;
  }
}

export class MemoryTransaction extends BasicTransaction {
  private readonly puts: Event[] = [];
  private readonly takes: Event[] = [];
  private putSlots = 0;
  private takeSlots = 0;

  constructor(
    private readonly channel: MemoryChannel,
    private readonly capacity: number,
  ) {
    super();
  }

  protected doPut(event: Event): void {
    this.channel.counter.values.EventPutAttemptCount++;
    if (this.puts.length >= this.capacity) throw this.putsFull();
    this.puts.push(event);
    this.putSlots += slotsFor(event);
  }

  protected override doPutAll(events: readonly Event[]): void {
    const room = this.capacity - this.puts.length;
    const n = Math.min(events.length, room);
    const puts = this.puts;
    let slots = 0;
    for (let i = 0; i < n; i++) {
      const e = events[i];
      puts.push(e);
      slots += slotsFor(e);
    }
    this.putSlots += slots;
    // As n + 1 put() calls when the last one finds the transaction full.
    this.channel.counter.values.EventPutAttemptCount += n < events.length ? n + 1 : n;
    if (n < events.length) throw this.putsFull();
  }

  private putsFull(): ChannelException {
    return new ChannelException(
      `Put queue for MemoryTransaction of capacity ${this.capacity} full, consider committing more frequently, increasing capacity or increasing thread count (channel ${this.channel.name})`,
    );
  }

  protected doTake(): Event | null {
    this.channel.counter.values.EventTakeAttemptCount++;
    if (this.takes.length >= this.capacity) throw this.takesFull();
    const event = this.channel.pollEvent();
    if (event === undefined) return null;
    this.takes.push(event);
    this.takeSlots += slotsFor(event);
    return event;
  }

  protected override doTakeInto(out: Event[], max: number): number {
    const takes = this.takes;
    const room = this.capacity - takes.length;
    const want = Math.min(max, room);
    const first = out.length;
    const n = this.channel.queueForTakes().popFrontInto(out, want);
    let slots = 0;
    for (let i = first; i < first + n; i++) {
      const e = out[i];
      takes.push(e);
      slots += slotsFor(e);
    }
    this.takeSlots += slots;
    // As take() called n times, once more when it came back empty or the list was full.
    const ranDry = n < want;
    const overfull = !ranDry && n < max;
    this.channel.counter.values.EventTakeAttemptCount += ranDry || overfull ? n + 1 : n;
    if (overfull) throw this.takesFull();
    return n;
  }

  private takesFull(): ChannelException {
    return new ChannelException(
      `Take list for MemoryTransaction, capacity ${this.capacity} full, consider committing more frequently, increasing capacity, or increasing thread count (channel ${this.channel.name})`,
    );
  }

  protected doCommit(): Promise<void> | void {
    if (this.puts.length === 0 && this.takes.length === 0 && this.positions === null) {
      this.channel.counter.values.ChannelSize = this.channel.size;
      return;
    }
    const pending = this.channel.commitTransaction(this.puts, this.putSlots, this.takes, this.takeSlots, this.positions);
    if (pending) return pending.then(() => this.clear());
    this.clear();
  }

  private clear(): void {
    this.puts.length = 0;
    this.takes.length = 0;
    this.putSlots = 0;
    this.takeSlots = 0;
  }

  protected doRollback(): void {
    this.channel.rollbackTakes(this.takes);
    this.clear();
  }
}
