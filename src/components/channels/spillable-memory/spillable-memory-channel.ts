/**
 * Flume's spillable memory channel: events go to an in-memory queue while it has room, and the
 * rest to an overflow, a file channel on disk. A drain order (drain-order.ts) keeps one first
 * in, first out queue across both stores.
 *
 * Unlike Flume's, one transaction may mix puts and takes, and its takes may cross from memory
 * to the overflow and back: each transaction keeps at most one overflow (file channel)
 * transaction, begun at its first overflow take or at a commit that spills, so the overflow
 * part of a commit is one durable record. Capacity is Flume's sum (memoryCapacity +
 * overflowCapacity), counted as the memory channel counts it: an event taken by an open
 * transaction keeps its slot in its store.
 *
 * A commit's puts go to memory as far as it has room (event slots and bytes), the rest to the
 * overflow. When they do not all fit in memory the commit first waits up to overflowTimeout for
 * room there (not while the overflow is active: then it spills at once), then spills; with no
 * room in the overflow either it waits up to keep-alive more and fails with
 * ChannelFullException. Waiting commits are served in arrival order.
 *
 * What survives: the overflow is a file channel, so its events survive kill -9; the memory
 * queue does not. A clean stop writes the memory queue to the overflow when that keeps the
 * order (no memory event queued before an overflow event) and there is room.
 */
import type { Channel } from "../../../core/channel.ts";
import { type Clock, systemClock } from "../../../core/clock.ts";
import { ChannelCounter } from "../../../core/counters.ts";
import { Deque } from "../../../core/deque.ts";
import { ChannelException, ChannelFullException } from "../../../core/errors.ts";
import { bodyLength, type Event } from "../../../core/event.ts";
import type { LifecycleState } from "../../../core/lifecycle.ts";
import { type Logger, silentLogger } from "../../../core/logger.ts";
import { PutListeners } from "../../../core/put-listeners.ts";
import { ChannelTransaction } from "../../../core/transaction.ts";
import { WaitLine } from "../../../core/wait-line.ts";
import type { FileChannel, FileTransaction } from "../file/index.ts";
import { DrainOrder, type Store } from "./drain-order.ts";

export interface SpillableSettings {
  memoryCapacity: number;
  /** 0 disables the overflow (then `overflow` is null). */
  overflowCapacity: number;
  transactionCapacity: number;
  /** Seconds a commit that does not fit in memory waits for room there before it spills. */
  overflowTimeout: number;
  /** Percent of memory free again at which commits stop spilling at once. */
  overflowDeactivationThreshold: number;
  byteCapacity: number;
  byteCapacityBufferPercentage: number;
  /** Memory bytes are counted in units of this many body bytes, as Flume does. */
  avgEventSize: number;
  /** Seconds a commit waits for room when memory and overflow are full. */
  keepAlive: number;
}

/**
 * Where one commit's puts go: the first `memory` to the memory queue, the rest to the overflow.
 * The `reserved*` parts are the room held until the commit applies: its puts beyond what its own
 * takes free there, since those takes still count as taken until then.
 */
interface Placement {
  memory: number;
  memorySlots: number;
  overflow: number;
  reservedMemory: number;
  reservedSlots: number;
  reservedOverflow: number;
}

const NOTHING_PLACED: Placement = { memory: 0, memorySlots: 0, overflow: 0, reservedMemory: 0, reservedSlots: 0, reservedOverflow: 0 };

/** An overflow commit in flight: its effects are applied in the order the overflow wrote them. */
interface Ticket {
  written: boolean;
  apply(): void;
}

export class SpillableMemoryTransaction extends ChannelTransaction {
  puts: Event[] = [];
  putSlots = 0;
  memTakes: Event[] = [];
  memTakeSlots = 0;
  overflowTakes = 0;
  /** The takes in order as drain-order runs (positive: memory, negative: overflow), for a rollback. */
  runs: number[] = [];
  overflowTx: FileTransaction | null = null;
  /** Set when the overflow refused this transaction's commit: only a rollback is left. */
  failed: Error | null = null;

  constructor(protected readonly ch: SpillableMemoryChannel) {
    super();
  }

  get takeCount(): number {
    return this.memTakes.length + this.overflowTakes;
  }

  protected override doClose(): void {
    this.overflowTx?.close();
  }

  clear(): void {
    this.puts = [];
    this.putSlots = 0;
    this.memTakes = [];
    this.memTakeSlots = 0;
    this.overflowTakes = 0;
    this.runs = [];
  }
}

export class SpillableMemoryChannel implements Channel {
  readonly counter: ChannelCounter;
  /** Only the overflow survives a crash, so sources keep their own positions (as with a memory channel). */
  readonly durable = false;
  private state: LifecycleState = "IDLE";
  private readonly clock: Clock;
  private readonly logger: Logger;

  private readonly memory = new Deque<Event>(1024);
  private readonly order = new DrainOrder();
  private readonly byteSlots: number;
  /** Memory byte slots of queued events, of events taken by open transactions, and reserved by commits in flight. */
  private memBytes = 0;
  private memTakenBytes = 0;
  private memReservedBytes = 0;
  private memTaken = 0;
  private memReserved = 0;
  private overflowTaken = 0;
  private overflowReserved = 0;
  /** Spilling without waiting: set when memory filled up, cleared when enough of it is free again. */
  private overflowActive = false;
  private readonly takers = new Set<SpillableMemoryTransaction>();
  private readonly line: WaitLine;
  private readonly tickets: Ticket[] = [];
  private ticketsDone: (() => void)[] = [];
  private readonly putListeners = new PutListeners();

  constructor(
    readonly name: string,
    private readonly settings: SpillableSettings,
    private readonly overflow: FileChannel | null,
    deps: { clock?: Clock; logger?: Logger } = {},
  ) {
    this.clock = deps.clock ?? systemClock;
    this.line = new WaitLine(this.clock);
    this.logger = deps.logger ?? silentLogger;
    this.counter = new ChannelCounter(name, [], this.clock);
    this.counter.set("ChannelCapacity", settings.memoryCapacity + settings.overflowCapacity);
    const slots = Math.floor((settings.byteCapacity * (1 - settings.byteCapacityBufferPercentage * 0.01)) / settings.avgEventSize);
    this.byteSlots = slots < 1 ? Number.MAX_SAFE_INTEGER : slots;
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  getTransaction(): SpillableMemoryTransaction {
    return new SpillableMemoryTransaction(this);
  }

  getTransactionCapacity(): number {
    return this.settings.transactionCapacity;
  }

  /** Events waiting to be taken, in memory and in the overflow. */
  get size(): number {
    return this.order.memoryCount + this.order.overflowCount;
  }

  /** Events waiting in the overflow. */
  get overflowSize(): number {
    return this.order.overflowCount;
  }

  /** Events waiting in memory. */
  get memorySize(): number {
    return this.order.memoryCount;
  }

  ioBusy(): boolean {
    return this.tickets.length > 0 || (this.overflow?.ioBusy() ?? false);
  }

  onPutsCommitted(listener: () => void): () => void {
    return this.putListeners.add(listener);
  }

  async start(): Promise<void> {
    if (this.state === "START") return;
    this.memory.clear();
    this.order.clear();
    this.memBytes = this.memTakenBytes = this.memReservedBytes = 0;
    this.memTaken = this.memReserved = this.overflowTaken = this.overflowReserved = 0;
    this.overflowActive = false;
    this.takers.clear();
    if (this.overflow) {
      await this.overflow.start();
      const n = this.overflow.size;
      this.order.pushBack("overflow", n);
      this.logger.info(
        `spillable memory channel ${this.name}: the overflow holds ${n} event${n === 1 ? "" : "s"} from before (kept on disk); ` +
          `the memory queue starts empty (what it held when the process ended is gone)`,
      );
    }
    this.counter.start();
    this.counter.set("ChannelSize", this.size);
    this.state = "START";
  }

  async stop(): Promise<void> {
    if (this.state !== "START") return;
    this.state = "STOP";
    this.line.wakeAll();
    if (this.overflow) {
      await this.saveMemory();
      await this.overflow.stop();
    } else if (this.memTaken + this.memory.length > 0) {
      this.logger.warn(`spillable memory channel ${this.name}: stopping with ${this.memTaken + this.memory.length} events in memory and no overflow (overflowCapacity 0): they are lost`);
    }
    this.counter.set("ChannelSize", this.size);
    this.counter.stop();
  }

  /** What a killed process leaves: the overflow's files as written, nothing of the memory queue. */
  crash(): void {
    if (this.state !== "START") return;
    this.state = "STOP";
    this.line.wakeAll();
    this.overflow?.crash();
    this.counter.stop();
  }

  /** Events held in memory, taken by open transactions first: what a crash now would lose. */
  memoryEvents(): Event[] {
    const out: Event[] = [];
    for (const tx of this.takers) out.push(...tx.memTakes);
    for (const e of this.memory) out.push(e);
    return out;
  }

  /** What a clean stop now would lose: nothing when the memory queue can go to the overflow. */
  lostOnStop(): Event[] {
    return this.canSaveMemory() ? [] : this.memoryEvents();
  }

  private canSaveMemory(): boolean {
    const n = this.memTaken + this.memory.length;
    if (n === 0) return true;
    if (!this.overflow) return false;
    return this.order.memoryIsTail() && n <= this.overflowFree(0);
  }

  /** On a clean stop: the memory queue (and taken memory events) go to the overflow when order and room allow. */
  private async saveMemory(): Promise<void> {
    await this.whenTicketsDone();
    const events = this.memoryEvents();
    if (events.length === 0 || !this.overflow) return;
    if (!this.canSaveMemory()) {
      const why = this.order.memoryIsTail() ? "the overflow has no room for them" : "they are queued before overflowed events, whose order writing them now would break";
      this.logger.warn(`spillable memory channel ${this.name}: stopping with ${events.length} events in memory that are lost: ${why}`);
      return;
    }
    const tx = this.overflow.getTransaction();
    tx.begin();
    try {
      for (const e of events) tx.put(e);
      await tx.commit();
      this.logger.info(`spillable memory channel ${this.name}: wrote the ${events.length} events held in memory to the overflow`);
    } catch (err) {
      await tx.rollback().catch(() => {});
      this.logger.error(`spillable memory channel ${this.name}: could not write the ${events.length} events held in memory to the overflow, they are lost: ${(err as Error).message}`);
    } finally {
      tx.close();
    }
    this.memory.clear();
    this.order.clear();
  }

  private whenTicketsDone(): Promise<void> {
    if (this.tickets.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.ticketsDone.push(resolve));
  }

  private requireOpen(): void {
    if (this.state !== "START") throw new ChannelException(`spillable memory channel ${this.name} is not open (state ${this.state})`);
  }

  private slotsOf(event: Event): number {
    return Math.ceil(Math.max(1, bodyLength(event)) / this.settings.avgEventSize);
  }

  private overflowFree(ownTakes: number): number {
    return this.settings.overflowCapacity - (this.order.overflowCount + this.overflowTaken + this.overflowReserved) + ownTakes;
  }

  // ---- transaction operations ----

  put(tx: SpillableMemoryTransaction, event: Event): void {
    this.counter.values.EventPutAttemptCount++;
    this.requireOpen();
    const tc = this.settings.transactionCapacity;
    if (tx.puts.length >= tc) {
      throw new ChannelException(`Put queue for SpillableMemoryTransaction of capacity ${tc} full, consider committing more frequently, increasing capacity or increasing thread count (channel ${this.name})`);
    }
    tx.puts.push(event);
    tx.putSlots += this.slotsOf(event);
  }

  take(tx: SpillableMemoryTransaction): Event | null {
    this.counter.values.EventTakeAttemptCount++;
    this.requireOpen();
    const tc = this.settings.transactionCapacity;
    if (tx.takeCount >= tc) {
      throw new ChannelException(`Take list for SpillableMemoryTransaction, capacity ${tc} full, consider committing more frequently, increasing capacity, or increasing thread count (channel ${this.name})`);
    }
    const store = this.order.front();
    if (store === null) return null;
    let event: Event;
    if (store === "memory") {
      event = this.memory.popFront() as Event;
      const s = this.slotsOf(event);
      this.memBytes -= s;
      this.memTakenBytes += s;
      this.memTaken++;
      tx.memTakes.push(event);
      tx.memTakeSlots += s;
    } else {
      const otx = this.overflowTx(tx);
      const e = otx.take();
      if (e === null) throw new ChannelException(`spillable memory channel ${this.name}: the overflow has fewer events than the drain order expects`);
      event = e;
      this.overflowTaken++;
      tx.overflowTakes++;
    }
    this.order.takeFront(store);
    addRun(tx.runs, store);
    if (tx.takeCount === 1) this.takers.add(tx);
    return event;
  }

  private overflowTx(tx: SpillableMemoryTransaction): FileTransaction {
    if (!tx.overflowTx) {
      tx.overflowTx = (this.overflow as FileChannel).getTransaction();
      tx.overflowTx.begin();
    }
    return tx.overflowTx;
  }

  async commit(tx: SpillableMemoryTransaction): Promise<void> {
    if (tx.failed) throw new ChannelException(`spillable memory channel ${this.name}: this transaction's commit failed (${tx.failed.message}); roll it back`);
    const puts = tx.puts.length;
    const takes = tx.takeCount;
    if (puts === 0 && takes === 0) {
      this.counter.values.ChannelSize = this.size;
      return;
    }
    this.requireOpen();
    let placement = NOTHING_PLACED;
    if (puts > 0) {
      const net = puts - takes;
      // A commit that frees as much as it adds never waits (and may spill into what it frees).
      const now = net <= 0 || this.line.length === 0 ? this.reserve(tx, net <= 0 || this.spillsAtOnce()) : null;
      placement = now ?? (await this.waitForRoom(tx));
    }
    if (placement.overflow > 0 || tx.overflowTakes > 0) await this.commitOverflow(tx, placement);
    else this.apply(tx, placement);
  }

  private spillsAtOnce(): boolean {
    return this.overflowActive || this.settings.overflowTimeout === 0 || this.settings.memoryCapacity === 0;
  }

  /**
   * Places a commit's puts: memory as far as it has room, the rest in the overflow when
   * `spill` allows it and there is room. Reserves the room and returns where they go, or null.
   */
  private reserve(tx: SpillableMemoryTransaction, spill: boolean): Placement | null {
    const s = this.settings;
    const puts = tx.puts;
    const memFree = s.memoryCapacity - (this.memory.length + this.memTaken + this.memReserved) + tx.memTakes.length;
    const bytesFree = this.byteSlots - (this.memBytes + this.memTakenBytes + this.memReservedBytes) + tx.memTakeSlots;
    let k = 0;
    let kSlots = 0;
    if (puts.length <= memFree && tx.putSlots <= bytesFree) {
      k = puts.length;
      kSlots = tx.putSlots;
    } else {
      while (k < puts.length && k < memFree) {
        const sl = this.slotsOf(puts[k]);
        if (kSlots + sl > bytesFree) break;
        kSlots += sl;
        k++;
      }
    }
    const rest = puts.length - k;
    if (rest > 0) {
      if (!this.overflow || !spill || rest > this.overflowFree(tx.overflowTakes)) return null;
      if (!this.overflowActive && s.memoryCapacity > 0) {
        this.overflowActive = true;
        this.logger.info(`spillable memory channel ${this.name}: memory is full (${s.memoryCapacity} events); spilling to the overflow on disk`);
      }
    }
    const p: Placement = {
      memory: k,
      memorySlots: kSlots,
      overflow: rest,
      reservedMemory: Math.max(0, k - tx.memTakes.length),
      reservedSlots: Math.max(0, kSlots - tx.memTakeSlots),
      reservedOverflow: Math.max(0, rest - tx.overflowTakes),
    };
    this.memReserved += p.reservedMemory;
    this.memReservedBytes += p.reservedSlots;
    this.overflowReserved += p.reservedOverflow;
    return p;
  }

  private release(p: Placement): void {
    this.memReserved -= p.reservedMemory;
    this.memReservedBytes -= p.reservedSlots;
    this.overflowReserved -= p.reservedOverflow;
    this.line.wakeAll();
  }

  /** Waits in line for room: overflowTimeout for memory (unless spilling at once), then keep-alive for any. */
  private async waitForRoom(tx: SpillableMemoryTransaction): Promise<Placement> {
    const start = this.clock.now();
    const spillAt = !this.overflow || this.spillsAtOnce() ? start : start + this.settings.overflowTimeout * 1000;
    const failAt = spillAt + this.settings.keepAlive * 1000;
    const waiter = this.line.join();
    try {
      for (;;) {
        this.requireOpen();
        const now = this.clock.now();
        const first = this.line.isFirst(waiter);
        if (first) {
          const p = this.reserve(tx, now >= spillAt || this.spillsAtOnce());
          if (p) return p;
          if (now >= failAt) break;
        }
        // Only the first in line fails at its deadline; the next ones are woken when it goes.
        const until = first && now < spillAt ? spillAt : failAt;
        await this.line.sleep(waiter, first || until > now ? Math.max(0, until - now) : null);
      }
    } finally {
      this.line.leave(waiter);
    }
    throw new ChannelFullException(
      `Space for commit to queue couldn't be acquired. Sinks are likely not keeping up with sources, or the buffer size is too tight ` +
        `(channel ${this.name}, memoryCapacity ${this.settings.memoryCapacity}, overflowCapacity ${this.settings.overflowCapacity})`,
    );
  }

  /** The overflow part of a commit (spilled puts, overflow takes) as one file channel commit. */
  private async commitOverflow(tx: SpillableMemoryTransaction, p: Placement): Promise<void> {
    const otx = this.overflowTx(tx);
    let applied: () => void = () => {};
    const done = new Promise<void>((resolve) => (applied = resolve));
    const ticket: Ticket = {
      written: false,
      apply: () => {
        this.apply(tx, p);
        applied();
      },
    };
    try {
      for (let i = p.memory; i < tx.puts.length; i++) otx.put(tx.puts[i]);
      this.tickets.push(ticket);
      await otx.commit();
    } catch (err) {
      const at = this.tickets.indexOf(ticket);
      if (at >= 0) this.tickets.splice(at, 1);
      // Its puts are in the overflow transaction now: a retry would add them twice.
      tx.failed = err instanceof Error ? err : new Error(String(err));
      this.release(p);
      this.applyWritten();
      throw err;
    }
    ticket.written = true;
    this.applyWritten();
    await done;
  }

  /** Applies written overflow commits in the order the overflow wrote them (its queue's order). */
  private applyWritten(): void {
    while (this.tickets.length > 0 && this.tickets[0].written) (this.tickets.shift() as Ticket).apply();
    if (this.tickets.length === 0) for (const done of this.ticketsDone.splice(0)) done();
  }

  /** Makes a commit visible: puts join the queue (memory part first), takes are forgotten. */
  private apply(tx: SpillableMemoryTransaction, p: Placement): void {
    const puts = tx.puts;
    for (let i = 0; i < p.memory; i++) this.memory.pushBack(puts[i]);
    this.memReserved -= p.reservedMemory;
    this.memReservedBytes -= p.reservedSlots;
    this.memBytes += p.memorySlots;
    this.order.pushBack("memory", p.memory);
    this.overflowReserved -= p.reservedOverflow;
    this.order.pushBack("overflow", p.overflow);
    const takes = tx.takeCount;
    this.memTaken -= tx.memTakes.length;
    this.memTakenBytes -= tx.memTakeSlots;
    this.overflowTaken -= tx.overflowTakes;
    this.takers.delete(tx);
    const c = this.counter.values;
    c.EventPutSuccessCount += puts.length;
    c.EventTakeSuccessCount += takes;
    c.ChannelSize = this.size;
    tx.clear();
    if (takes > 0) {
      this.maybeDeactivate();
      this.line.wakeAll();
    }
    if (puts.length > 0) this.putListeners.notify();
  }

  private maybeDeactivate(): void {
    const m = this.settings.memoryCapacity;
    if (!this.overflowActive || m === 0) return;
    const free = (m - (this.memory.length + this.memTaken + this.memReserved)) / m;
    if (free * 100 >= this.settings.overflowDeactivationThreshold) {
      this.overflowActive = false;
      this.logger.info(`spillable memory channel ${this.name}: memory has room again; new events go to memory`);
    }
  }

  async rollback(tx: SpillableMemoryTransaction): Promise<void> {
    // The overflow's own rollback puts its takes back at the head of its queue, in order.
    const overflowRollback = tx.overflowTx?.state === "OPEN" ? tx.overflowTx.rollback() : null;
    if (this.state === "START") {
      for (let i = tx.memTakes.length - 1; i >= 0; i--) this.memory.pushFront(tx.memTakes[i]);
      this.memTaken -= tx.memTakes.length;
      this.memTakenBytes -= tx.memTakeSlots;
      this.memBytes += tx.memTakeSlots;
      this.overflowTaken -= tx.overflowTakes;
      for (let i = tx.runs.length - 1; i >= 0; i--) {
        const r = tx.runs[i];
        this.order.pushFront(r > 0 ? "memory" : "overflow", Math.abs(r));
      }
      this.counter.values.ChannelSize = this.size;
    }
    this.takers.delete(tx);
    tx.clear();
    await overflowRollback;
  }
}

function addRun(runs: number[], store: Store): void {
  const v = store === "memory" ? 1 : -1;
  const last = runs.length - 1;
  if (last >= 0 && Math.sign(runs[last]) === v) runs[last] += v;
  else runs.push(v);
}
