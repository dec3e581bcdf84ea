/**
 * The channel contract, written once and run against every channel type the registry knows
 * (conformance.test.ts). A model-based property test: random interleavings of several
 * transactions (begin, put, take, commit, rollback, close) with commits that wait for room
 * (keep-alive > 0) on a virtual clock, under capacity and transactionCapacity pressure, checked
 * after every step against a plain reference model. A channel whose definition says it survives
 * a crash is also stopped (cleanly, and by a simulated crash) and reopened at random points.
 *
 * The contract:
 * - takes return committed events first in, first out; a rollback returns its taken events to
 *   the head in their original order and discards its puts;
 * - capacity counts queued events plus events taken by open transactions; a commit that would
 *   exceed it waits up to keep-alive, waiting commits are served in arrival order, and one still
 *   without room fails with ChannelFullException and leaves its transaction open;
 *   transactionCapacity bounds the puts and the takes of one transaction; a channel without a
 *   capacity of its own (its definition's `unbounded`) never makes a commit wait;
 * - Flume's counters: EventPutAttemptCount/EventTakeAttemptCount per call, *SuccessCount per
 *   committed event, ChannelSize the events available to take;
 * - after a restart every committed, untaken event is there, each once; events never taken keep
 *   their commit order; nothing else comes back. A channel that keeps only part of its events
 *   through a crash (its definition's durability.lostOnCrash, e.g. SPILLABLEMEMORY's memory
 *   queue) names the events it will lose just before the crash: exactly those are missing after
 *   it, the rest come back as above; the same for a clean stop (durability.lostOnStop), which
 *   loses nothing for a channel that does not declare it. A channel that delivers committed,
 *   taken events again after a crash or stop (at least once: durability.repeatedOnCrash and
 *   repeatedOnStop) names them just before: exactly those come back besides.
 *
 * Reproduce a failure with the seed and path fast-check prints (FC_SEED / FC_PATH).
 */
import { expect } from "bun:test";
import fc from "fast-check";
import type { Channel } from "../../../src/core/channel.ts";
import { ChannelException, ChannelFullException, TransactionStateError } from "../../../src/core/errors.ts";
import { createEvent, type Event } from "../../../src/core/event.ts";
import type { Transaction } from "../../../src/core/transaction.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";

/** How the suite opens one channel type: fresh, or again on the same storage after a stop. */
export interface ChannelUnderTest {
  type: string;
  /** True when committed events survive a process crash (the definition says so). */
  survivesCrash: boolean;
  /** True for a channel without a capacity of its own (the definition says so): its commits never wait for room. */
  unbounded?: boolean;
  /** For a channel that keeps only part of its events through a crash: those it would lose now. */
  lostOnCrash?(channel: Channel): readonly Event[];
  /** The same for a clean stop, for a channel whose stop may lose events. */
  lostOnStop?(channel: Channel): readonly Event[];
  /** For a channel that may deliver committed, taken events again after a crash: those a crash now brings back. */
  repeatedOnCrash?(channel: Channel): readonly Event[];
  /** The same for a clean stop. */
  repeatedOnStop?(channel: Channel): readonly Event[];
  /**
   * Opens (or reopens) the channel on its storage with these limits, on the given clock; `held`:
   * how many events it should hold when it reopens (a channel fed by a server waits for them).
   */
  open(limits: Limits, clock: VirtualClock, held?: number): Promise<Channel>;
  /** Simulates the process dying: the channel object is dropped without a clean stop. */
  crash(channel: Channel): Promise<void>;
  /** Removes the channel's storage. */
  dispose(): void;
}

export interface Limits {
  capacity: number;
  transactionCapacity: number;
  /** Seconds a commit waits for room. */
  keepAlive: number;
  /**
   * How the capacity divides over a channel's capacity properties when it has several (they
   * add up): the first gets round(capacity × split), the others share the rest. 0.5 when unset.
   */
  split?: number;
}

/**
 * One step of a schedule. A transaction step with `strict` unset first brings its transaction
 * to where the step makes sense (closing a finished one, beginning a new one), so most
 * schedules do real work; strict steps run as written and test the state errors.
 */
type Op =
  | { op: "begin"; t: number; strict?: boolean }
  | { op: "put"; t: number; n: number; batch?: boolean; strict?: boolean }
  | { op: "take"; t: number; n: number; batch?: boolean; strict?: boolean }
  | { op: "commit"; t: number; strict?: boolean }
  | { op: "rollback"; t: number; strict?: boolean }
  | { op: "close"; t: number; strict?: boolean }
  | { op: "wait"; ms: number }
  | { op: "restart"; crash: boolean };

type TxState = "NONE" | "OPEN" | "COMMITTING" | "COMPLETED" | "CLOSED";

interface TxModel {
  state: TxState;
  puts: number[];
  takes: number[];
}

interface Waiting {
  t: number;
  deadline: number;
}

/** One event's life in the model: its commit sequence, and whether it was ever taken. */
interface EventInfo {
  seq: number;
  taken: boolean;
}

class Model {
  queue: number[] = [];
  txs: TxModel[];
  /** Commits waiting for room, in arrival order. */
  waiting: Waiting[] = [];
  nextId = 1;
  nextSeq = 1;
  info = new Map<number, EventInfo>();
  counts = { putAttempts: 0, takeAttempts: 0, putSuccess: 0, takeSuccess: 0 };
  /** ChannelSize as Flume sets it: the queue's length at the last commit or rollback. */
  reportedSize = 0;
  /** Every event whose put committed, and every event whose take committed. */
  committed = new Set<number>();
  consumed: number[] = [];
  /** Committed events a crash took, as the channel declared beforehand (partial durability). */
  crashLost: number[] = [];
  /** Committed, taken events a restart brought back, as the channel declared beforehand (at least once). */
  repeated: number[] = [];

  constructor(
    readonly limits: Limits,
    transactions: number,
  ) {
    this.txs = Array.from({ length: transactions }, () => ({ state: "NONE" as TxState, puts: [], takes: [] }));
  }

  /** Slots held: queued events plus events taken by transactions not yet committed. */
  used(): number {
    let n = this.queue.length;
    for (const t of this.txs) if (t.state === "OPEN" || t.state === "COMMITTING") n += t.takes.length;
    return n;
  }

  net(t: TxModel): number {
    return t.puts.length - t.takes.length;
  }

  apply(t: TxModel): void {
    for (const id of t.puts) {
      this.info.set(id, { seq: this.nextSeq++, taken: false });
      this.committed.add(id);
    }
    this.queue.push(...t.puts);
    this.counts.putSuccess += t.puts.length;
    this.counts.takeSuccess += t.takes.length;
    this.consumed.push(...t.takes);
    this.reportedSize = this.queue.length;
    t.puts = [];
    t.takes = [];
    t.state = "COMPLETED";
  }

  /** Serves waiting commits in arrival order while the head fits. */
  serve(): void {
    while (this.waiting.length > 0) {
      const head = this.txs[this.waiting[0].t];
      if (this.used() + this.net(head) > this.limits.capacity) return;
      this.waiting.shift();
      this.apply(head);
      coverage.commitServedAfterWait++;
    }
  }

  /** Fails the waiting commits whose keep-alive ran out by `now`, serving others as room allows. */
  expire(now: number): number[] {
    const failed: number[] = [];
    for (;;) {
      this.serve();
      const head = this.waiting[0];
      if (!head || head.deadline > now) break;
      this.waiting.shift();
      this.txs[head.t].state = "OPEN";
      failed.push(head.t);
    }
    // A later waiter can expire while an earlier one still waits (equal deadlines only, since
    // keep-alive is the same for all); the loop above has already handled the head.
    return failed;
  }
}

/** Settles everything the channel started without moving virtual time: microtasks and its I/O. */
async function quiesce(channel: () => Channel | null): Promise<void> {
  // Bounded by wall time, not turns: an fsync on a loaded machine can take a long while.
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    await nextTurn();
    if (!channel()?.ioBusy?.()) {
      await nextTurn();
      if (!channel()?.ioBusy?.()) return;
    }
  }
  throw new Error("the channel's I/O did not settle within 20 s");
}

/** One turn of the event loop: every pending continuation runs (cheaper than a 0 ms timer). */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const body = (id: number) => createEvent(`event ${id}`, { id: String(id) });
const idOf = (e: { headers: Record<string, string> } | null) => (e === null ? null : Number(e.headers.id));

/** What the run exercised, so the test proves the interesting cases came up. */
export const coverage = {
  commitWaited: 0,
  commitServedAfterWait: 0,
  commitFull: 0,
  putListFull: 0,
  takeListFull: 0,
  takeEmpty: 0,
  /** put and take steps made as one putAll or takeInto call. */
  batches: 0,
  rollbackTakes: 0,
  stateErrors: 0,
  restarts: 0,
  crashes: 0,
  /** Events a crash took from a channel that keeps only part of them, and events it kept. */
  crashLostEvents: 0,
  /** Committed, taken events a restart brought back (declared). */
  repeatedEvents: 0,
  crashKeptEvents: 0,
  steps: 0,
};

class Run {
  private channel: Channel | null = null;
  private real: (Transaction | null)[];
  /** Outcomes of commits in flight: undefined while pending, null when resolved, else the error. */
  private inflight = new Map<number, { done: boolean; error: unknown }>();
  readonly clock: VirtualClock;
  readonly model: Model;

  constructor(
    private readonly cut: ChannelUnderTest,
    readonly limits: Limits,
    transactions: number,
  ) {
    this.clock = new VirtualClock(1_000_000, () => quiesce(() => this.channel));
    this.model = new Model(cut.unbounded ? { ...limits, capacity: Number.POSITIVE_INFINITY } : limits, transactions);
    this.real = Array.from({ length: transactions }, () => null);
  }

  async start(): Promise<void> {
    this.channel = await this.cut.open(this.limits, this.clock);
  }

  async stop(): Promise<void> {
    if (!this.channel) return;
    await this.settleAll();
    await this.channel.stop();
    this.channel = null;
  }

  /** Lets waiting commits run out their keep-alive, so nothing is left pending. */
  private async settleAll(): Promise<void> {
    while (this.model.waiting.length > 0) await this.step({ op: "wait", ms: this.limits.keepAlive * 1000 + 1 });
  }

  private ch(): Channel {
    if (!this.channel) throw new Error("channel not open");
    return this.channel;
  }

  async step(op: Op): Promise<void> {
    if (op.op === "wait" || op.op === "restart" || op.strict) return this.exec(op);
    const tm = this.model.txs[op.t];
    if (tm.state === "COMMITTING") return;
    if (op.op === "close" || op.op === "begin") {
      if (tm.state === "OPEN") return;
      return this.exec(op);
    }
    if (tm.state === "COMPLETED") await this.exec({ op: "close", t: op.t });
    if (this.model.txs[op.t].state !== "OPEN") {
      if (op.op === "rollback" || op.op === "commit") return;
      await this.exec({ op: "begin", t: op.t });
    }
    return this.exec(op);
  }

  private async exec(op: Op): Promise<void> {
    coverage.steps++;
    const m = this.model;
    switch (op.op) {
      case "begin": {
        const tm = m.txs[op.t];
        if (tm.state === "NONE" || tm.state === "CLOSED") {
          const tx = this.ch().getTransaction();
          expect(tx.state).toBe("NEW");
          tx.begin();
          this.real[op.t] = tx;
          m.txs[op.t] = { state: "OPEN", puts: [], takes: [] };
        } else {
          expect(() => this.real[op.t]?.begin()).toThrow(TransactionStateError);
          coverage.stateErrors++;
        }
        break;
      }
      case "put": {
        const tm = m.txs[op.t];
        const tx = this.real[op.t];
        if (!tx) break;
        if (op.batch && tm.state === "OPEN") {
          // putAll: as put() of each event until the list is full (that one counted, then thrown).
          coverage.batches++;
          const events = Array.from({ length: op.n }, (_, i) => body(m.nextId + i));
          const fits = Math.min(op.n, m.limits.transactionCapacity - tm.puts.length);
          for (let i = 0; i < fits; i++) tm.puts.push(m.nextId + i);
          m.nextId += op.n;
          m.counts.putAttempts += fits < op.n ? fits + 1 : fits;
          if (fits < op.n) {
            expect(() => tx.putAll(events)).toThrow(ChannelException);
            coverage.putListFull++;
          } else tx.putAll(events);
          break;
        }
        for (let i = 0; i < op.n; i++) {
          const id = m.nextId++;
          if (tm.state !== "OPEN") {
            expect(() => tx.put(body(id))).toThrow(TransactionStateError);
            coverage.stateErrors++;
            break;
          }
          m.counts.putAttempts++;
          if (tm.puts.length >= m.limits.transactionCapacity) {
            expect(() => tx.put(body(id))).toThrow(ChannelException);
            coverage.putListFull++;
            break;
          }
          tx.put(body(id));
          tm.puts.push(id);
        }
        break;
      }
      case "take": {
        const tm = m.txs[op.t];
        const tx = this.real[op.t];
        if (!tx) break;
        if (op.batch && tm.state === "OPEN") {
          // takeInto: as take() until n were taken, the channel ran dry (that call counted) or
          // the take list was full (that call counted, then thrown, the events before it kept).
          coverage.batches++;
          const room = m.limits.transactionCapacity - tm.takes.length;
          const expected = m.queue.splice(0, Math.min(op.n, room));
          const full = room < op.n && expected.length === room;
          m.counts.takeAttempts += expected.length < op.n ? expected.length + 1 : expected.length;
          const out: Event[] = [];
          if (full) {
            expect(() => tx.takeInto(out, op.n)).toThrow(ChannelException);
            coverage.takeListFull++;
          } else {
            expect(tx.takeInto(out, op.n)).toBe(expected.length);
            if (expected.length < op.n) coverage.takeEmpty++;
          }
          expect(out.map(idOf)).toEqual(expected);
          for (const id of expected) {
            tm.takes.push(id);
            (m.info.get(id) as EventInfo).taken = true;
          }
          break;
        }
        for (let i = 0; i < op.n; i++) {
          if (tm.state !== "OPEN") {
            expect(() => tx.take()).toThrow(TransactionStateError);
            coverage.stateErrors++;
            break;
          }
          m.counts.takeAttempts++;
          if (tm.takes.length >= m.limits.transactionCapacity) {
            expect(() => tx.take()).toThrow(ChannelException);
            coverage.takeListFull++;
            break;
          }
          const expected = m.queue.shift() ?? null;
          const got = tx.take();
          expect(idOf(got)).toBe(expected);
          if (expected === null) {
            coverage.takeEmpty++;
            break;
          }
          tm.takes.push(expected);
          (m.info.get(expected) as EventInfo).taken = true;
        }
        break;
      }
      case "commit": {
        const tm = m.txs[op.t];
        const tx = this.real[op.t];
        if (!tx) break;
        if (tm.state !== "OPEN") {
          let error: unknown;
          await tx.commit().catch((e) => (error = e));
          expect(error).toBeInstanceOf(TransactionStateError);
          coverage.stateErrors++;
          break;
        }
        const outcome = { done: false, error: undefined as unknown };
        this.inflight.set(op.t, outcome);
        tx.commit().then(
          () => (outcome.done = true),
          (e) => {
            outcome.done = true;
            outcome.error = e ?? new Error("rejected");
          },
        );
        tm.state = "COMMITTING";
        // The commit goes through at once when its net puts fit and nobody waits before it.
        if (m.net(tm) <= 0 || (m.waiting.length === 0 && m.used() + m.net(tm) <= m.limits.capacity)) m.apply(tm);
        else {
          m.waiting.push({ t: op.t, deadline: this.clock.now() + m.limits.keepAlive * 1000 });
          coverage.commitWaited++;
        }
        m.serve();
        await this.clock.flush();
        break;
      }
      case "rollback": {
        const tm = m.txs[op.t];
        const tx = this.real[op.t];
        if (!tx) break;
        if (tm.state !== "OPEN") {
          let error: unknown;
          await tx.rollback().catch((e) => (error = e));
          expect(error).toBeInstanceOf(TransactionStateError);
          coverage.stateErrors++;
          break;
        }
        await tx.rollback();
        if (tm.takes.length > 0) coverage.rollbackTakes++;
        m.queue.unshift(...tm.takes);
        m.reportedSize = m.queue.length;
        tm.puts = [];
        tm.takes = [];
        tm.state = "COMPLETED";
        m.serve();
        await this.clock.flush();
        break;
      }
      case "close": {
        const tm = m.txs[op.t];
        const tx = this.real[op.t];
        if (!tx) break;
        if (tm.state === "OPEN" || tm.state === "COMMITTING") {
          expect(() => tx.close()).toThrow(TransactionStateError);
          coverage.stateErrors++;
        } else {
          tx.close();
          tm.state = "CLOSED";
        }
        break;
      }
      case "wait": {
        const before = this.clock.now();
        const target = before + op.ms;
        // Expire waiters at their own deadlines, in order, as the channel's timers fire.
        for (const w of [...m.waiting]) {
          if (w.deadline > target) break;
          for (const t of m.expire(w.deadline)) this.expectFailed(t);
        }
        await this.clock.advanceTo(target);
        break;
      }
      case "restart": {
        if (!this.cut.survivesCrash) break;
        await this.restart(op.crash);
        break;
      }
    }
    this.check();
  }

  private expectFailed(t: number): void {
    coverage.commitFull++;
    this.expectFull.add(t);
  }
  private readonly expectFull = new Set<number>();

  /** Compares what the channel did with the model after a step. */
  private check(): void {
    const m = this.model;
    for (const [t, outcome] of this.inflight) {
      const tm = m.txs[t];
      if (tm.state === "COMMITTING") {
        expect(outcome.done).toBe(false);
        continue;
      }
      expect(outcome.done).toBe(true);
      if (this.expectFull.delete(t)) {
        expect(outcome.error).toBeInstanceOf(ChannelFullException);
        expect(this.real[t]?.state).toBe("OPEN");
      } else {
        if (outcome.error) throw outcome.error;
        expect(this.real[t]?.state).toBe("COMPLETED");
      }
      this.inflight.delete(t);
    }
    expect(m.used()).toBeLessThanOrEqual(m.limits.capacity);
    const c = this.ch().counter.values as Record<string, number>;
    expect(c.ChannelSize).toBe(m.reportedSize);
    expect(c.EventPutAttemptCount).toBe(m.counts.putAttempts);
    expect(c.EventTakeAttemptCount).toBe(m.counts.takeAttempts);
    expect(c.EventPutSuccessCount).toBe(m.counts.putSuccess);
    expect(c.EventTakeSuccessCount).toBe(m.counts.takeSuccess);
  }

  /**
   * Stops the channel (a clean stop, or a simulated crash) and opens it again on the same
   * storage: every committed, untaken event comes back once; the model continues from what the
   * channel now holds.
   */
  private async restart(crash: boolean): Promise<void> {
    const m = this.model;
    const ch = this.ch();
    await this.clock.flush();
    let lost: number[] = [];
    let repeated: number[] = [];
    if (crash) {
      coverage.crashes++;
      lost = (this.cut.lostOnCrash?.(ch) ?? []).map((e) => idOf(e) as number);
      repeated = (this.cut.repeatedOnCrash?.(ch) ?? []).map((e) => idOf(e) as number);
      await this.cut.crash(ch);
    } else {
      coverage.restarts++;
      lost = (this.cut.lostOnStop?.(ch) ?? []).map((e) => idOf(e) as number);
      repeated = (this.cut.repeatedOnStop?.(ch) ?? []).map((e) => idOf(e) as number);
      await ch.stop();
      await this.clock.flush();
    }
    this.channel = null;
    for (const t of this.inflight.keys()) this.inflight.delete(t);
    this.expectFull.clear();
    // Open transactions die with the process: their puts are gone, their takes come back.
    const survivors = [...m.queue];
    for (const tm of m.txs) {
      if (tm.state === "OPEN" || tm.state === "COMMITTING") survivors.push(...tm.takes);
    }
    // What the channel said it would lose must be committed events it held, each once.
    expect(new Set(lost).size).toBe(lost.length);
    const held = new Set(survivors);
    for (const id of lost) expect({ lost: id, held: held.has(id) }).toEqual({ lost: id, held: true });
    const gone = new Set(lost);
    // What it said would come again must be committed events taken for good, each once.
    expect(new Set(repeated).size).toBe(repeated.length);
    const consumed = new Set(m.consumed);
    for (const id of repeated) expect({ repeated: id, consumed: consumed.has(id) && !held.has(id) }).toEqual({ repeated: id, consumed: true });
    m.repeated.push(...repeated);
    coverage.repeatedEvents += repeated.length;
    const expected = [...survivors.filter((id) => !gone.has(id)), ...repeated];
    m.crashLost.push(...lost);
    if (crash && this.cut.lostOnCrash) {
      coverage.crashLostEvents += lost.length;
      coverage.crashKeptEvents += expected.length;
    }
    m.waiting = [];
    m.txs = m.txs.map(() => ({ state: "NONE" as TxState, puts: [], takes: [] }));
    this.real = this.real.map(() => null);
    m.counts = { putAttempts: 0, takeAttempts: 0, putSuccess: 0, takeSuccess: 0 };

    this.channel = await this.cut.open(this.limits, this.clock, expected.length);
    const restored = await this.drainFor(expected.length + 1);
    expect([...restored].sort((a, b) => a - b)).toEqual([...expected].sort((a, b) => a - b));
    // Events never taken keep their commit order.
    const neverTaken = restored.filter((id) => !(m.info.get(id) as EventInfo).taken);
    const seqs = neverTaken.map((id) => (m.info.get(id) as EventInfo).seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    m.queue = restored;
    m.reportedSize = restored.length;
  }

  /** Reads the whole queue by taking and rolling back (the events stay, in order). */
  private async drainFor(max: number): Promise<number[]> {
    const ch = this.ch();
    const out: number[] = [];
    const limit = this.limits.transactionCapacity;
    const txs: Transaction[] = [];
    let attempts = 0;
    // Several transactions when the queue is longer than one transaction may take.
    while (out.length < max) {
      const tx = ch.getTransaction();
      tx.begin();
      txs.push(tx);
      let got = 0;
      for (; got < limit; got++) {
        attempts++;
        const e = tx.take();
        if (!e) break;
        out.push(idOf(e) as number);
      }
      if (got < limit) break;
    }
    for (const tx of txs.reverse()) {
      await tx.rollback();
      tx.close();
    }
    await this.clock.flush();
    this.model.counts.takeAttempts += attempts;
    this.model.reportedSize = out.length;
    return out;
  }

  /** Ends the run: everything settles, every open transaction rolls back, the rest is drained. */
  async finish(): Promise<void> {
    const m = this.model;
    await this.settleAll();
    for (let t = 0; t < m.txs.length; t++) {
      if (m.txs[t].state === "OPEN") await this.exec({ op: "rollback", t });
    }
    const left = await this.drainFor(m.queue.length + 1);
    expect(left).toEqual(m.queue);
    // Nothing lost, nothing duplicated: every committed put was consumed once or is still
    // queued, besides the repeats the channel declared.
    const all = [...m.consumed, ...left, ...m.crashLost].sort((a, b) => a - b);
    expect(all).toEqual([...m.committed, ...m.repeated].sort((a, b) => a - b));
  }
}

const opArb = (transactions: number, limits: Limits, durable: boolean): fc.Arbitrary<Op> => {
  const t = fc.integer({ min: 0, max: transactions - 1 });
  const n = fc.integer({ min: 1, max: limits.transactionCapacity + 1 });
  const strict = fc.integer({ min: 0, max: 9 }).map((x) => x === 0);
  const ops: fc.WeightedArbitrary<Op>[] = [
    { weight: 1, arbitrary: fc.record({ op: fc.constant("begin" as const), t, strict }) },
    { weight: 8, arbitrary: fc.record({ op: fc.constant("put" as const), t, n, batch: fc.boolean(), strict }) },
    { weight: 5, arbitrary: fc.record({ op: fc.constant("take" as const), t, n, batch: fc.boolean(), strict }) },
    { weight: 7, arbitrary: fc.record({ op: fc.constant("commit" as const), t, strict }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("rollback" as const), t, strict }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("close" as const), t, strict }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: limits.keepAlive * 1000 + 500 }).map((ms) => ({ op: "wait" as const, ms })) },
  ];
  if (durable) ops.push({ weight: 1, arbitrary: fc.boolean().map((crash) => ({ op: "restart" as const, crash })) });
  return fc.oneof(...ops);
};

/** Schedules that once broke a channel, run first for every type (shrunk counterexamples). */
const REGRESSIONS: [Limits, Op[]][] = [
  // A channel that stores a commit's puts together (the jetstream channel's batch messages):
  // a crash, then a clean stop, while part of a commit's events are taken for good.
  [
    { capacity: 8, transactionCapacity: 4, keepAlive: 1 },
    [
      { op: "put", t: 0, n: 4 },
      { op: "commit", t: 0 },
      { op: "take", t: 1, n: 1 },
      { op: "commit", t: 1 },
      { op: "restart", crash: true },
      { op: "take", t: 1, n: 2 },
      { op: "commit", t: 1 },
      { op: "take", t: 0, n: 1 },
      { op: "restart", crash: false },
      { op: "take", t: 1, n: 4 },
      { op: "commit", t: 1 },
    ],
  ],
  // SPILLABLEMEMORY: a commit whose own takes make room for its puts waited behind a commit
  // that could not fit and failed with it, instead of being served when that one expired.
  [
    { capacity: 7, transactionCapacity: 6, keepAlive: 1, split: 0 },
    [
      { op: "put", t: 0, n: 5 },
      { op: "commit", t: 0 },
      { op: "put", t: 0, n: 1 },
      { op: "put", t: 1, n: 1 },
      { op: "take", t: 1, n: 5, strict: true },
      { op: "put", t: 1, n: 2 },
      { op: "put", t: 1, n: 3 },
      { op: "put", t: 2, n: 3 },
      { op: "commit", t: 2 },
      { op: "commit", t: 1, strict: true },
      { op: "commit", t: 0, strict: true },
      { op: "take", t: 0, n: 1 },
      { op: "commit", t: 0 },
      { op: "rollback", t: 0 },
      { op: "begin", t: 0 },
      { op: "wait", ms: 1 },
      { op: "wait", ms: 1 },
      { op: "begin", t: 0 },
    ],
  ],
];

/** Runs the model-based property over `runs` random schedules against fresh channels. */
export async function checkChannelContract(makeChannel: () => ChannelUnderTest, opts: { runs: number; seed?: number; transactions?: number }): Promise<void> {
  // FC_SEED reproduces a random run; a type with a fixed seed keeps it (its coverage relies on it).
  const seed = opts.seed ?? (process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined);
  const transactions = opts.transactions ?? 3;
  const limitsArb = fc.record({
    capacity: fc.integer({ min: 2, max: 10 }),
    transactionCapacity: fc.integer({ min: 1, max: 6 }),
    keepAlive: fc.integer({ min: 1, max: 3 }),
    split: fc.integer({ min: 0, max: 10 }).map((x) => x / 10),
  }).filter((l) => l.transactionCapacity <= l.capacity);
  const probe = makeChannel();
  const durable = probe.survivesCrash;
  probe.dispose();
  const scenario = limitsArb.chain((limits) => fc.tuple(fc.constant(limits), fc.array(opArb(transactions, limits, durable), { minLength: 10, maxLength: 80, size: "max" })));
  await fc.assert(
    fc.asyncProperty(scenario, async ([limits, ops]) => {
      const cut = makeChannel();
      const run = new Run(cut, limits, transactions);
      try {
        await run.start();
        for (const op of ops) await run.step(op);
        await run.finish();
      } finally {
        await run.stop().catch(() => {});
        cut.dispose();
      }
    }),
    { numRuns: opts.runs, seed, path: opts.seed === undefined ? process.env.FC_PATH : undefined, endOnFailure: false, examples: REGRESSIONS.map((r) => [r] as [[Limits, Op[]]]) },
  );
}
