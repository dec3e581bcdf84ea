// Model-based property test of MemoryChannel: random interleavings of several transactions
// (begin, put, take, commit, two commits started together, rollback, close) on one channel
// under capacity and byte-capacity pressure, checked against a plain reference model.
//
// keep-alive is 0, so a commit without room fails at once instead of waiting. Reproduce a
// failure with the seed and path fast-check prints: FC_SEED=<seed> FC_PATH=<path> bun test ...
import { expect, test } from "bun:test";
import fc from "fast-check";
import { ChannelException, ChannelFullException, TransactionStateError } from "../../src/core/errors.ts";
import { createEvent } from "../../src/core/event.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import type { Transaction } from "../../src/core/transaction.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { mulberry32 } from "./support.ts";

const TRANSACTIONS = 3;

interface Config {
  capacity: number;
  transactionCapacity: number;
  byteCapacity: number;
  byteCapacityBufferPercentage: number;
}

interface Ev {
  id: number;
  slots: number;
}

type TxState = "NONE" | "OPEN" | "COMPLETED" | "CLOSED";

interface TxModel {
  state: TxState;
  puts: Ev[];
  takes: Ev[];
}

/** The reference: a FIFO array, per-transaction lists, and the counts a user can observe. */
interface Model {
  cfg: Config;
  byteSlots: number;
  queue: Ev[];
  txs: TxModel[];
  nextId: number;
  putAttempts: number;
  takeAttempts: number;
  putSuccess: number;
  takeSuccess: number;
  /** ids of every event whose put was committed, and of every event whose take was committed */
  committedPuts: number[];
  consumed: number[];
}

interface Real {
  channel: MemoryChannel;
  txs: (Transaction | null)[];
}

function byteSlotsFor(cfg: Config): number {
  const slots = Math.floor((cfg.byteCapacity * (1 - cfg.byteCapacityBufferPercentage * 0.01)) / 100);
  return slots < 1 ? Number.MAX_SAFE_INTEGER : slots;
}

function slotsOf(size: number): number {
  return size === 0 ? 1 : Math.ceil(size / 100);
}

const sum = (evs: Ev[]) => evs.reduce((a, e) => a + e.slots, 0);
const openTakes = (m: Model) => m.txs.filter((t) => t.state === "OPEN").flatMap((t) => t.takes);
/** Slots held: events queued plus events taken by transactions not yet committed. */
const usedSlots = (m: Model) => m.queue.length + openTakes(m).length;
const usedBytes = (m: Model) => sum(m.queue) + sum(openTakes(m));

const idOf = (e: { headers: Record<string, string> } | null) => (e === null ? null : Number(e.headers.id));

function checkInvariants(m: Model, r: Real): void {
  seen.commands++;
  const c = r.channel.counter.values;
  expect(r.channel.size).toBe(m.queue.length);
  // Capacity: queued + taken-uncommitted never exceeds capacity, and the channel agrees on what is free.
  expect(usedSlots(m)).toBeLessThanOrEqual(m.cfg.capacity);
  expect(usedBytes(m)).toBeLessThanOrEqual(m.byteSlots);
  expect(r.channel.remainingCapacity).toBe(m.cfg.capacity - usedSlots(m));
  expect(r.channel.remainingByteSlots).toBe(m.byteSlots - usedBytes(m));
  expect(c.EventPutAttemptCount).toBe(m.putAttempts);
  expect(c.EventTakeAttemptCount).toBe(m.takeAttempts);
  expect(c.EventPutSuccessCount).toBe(m.putSuccess);
  expect(c.EventTakeSuccessCount).toBe(m.takeSuccess);
  // Committed puts minus committed takes is what is queued or held by open takes;
  // with no take open, it is exactly ChannelSize.
  expect(c.EventPutSuccessCount - c.EventTakeSuccessCount).toBe(m.queue.length + openTakes(m).length);
  if (openTakes(m).length === 0) expect(c.EventPutSuccessCount - c.EventTakeSuccessCount).toBe(c.ChannelSize);
}

/** What a commit of transaction t must do, decided from the model alone. */
function commitOutcome(m: Model, t: TxModel): "ok" | "bytes" | "full" {
  const byteChange = sum(t.puts) - sum(t.takes);
  const slotChange = t.puts.length - t.takes.length;
  if (byteChange > 0 && usedBytes(m) + byteChange > m.byteSlots) return "bytes";
  if (slotChange > 0 && usedSlots(m) + slotChange > m.cfg.capacity) return "full";
  return "ok";
}

function applyCommit(m: Model, t: TxModel): void {
  m.queue.push(...t.puts);
  m.putSuccess += t.puts.length;
  m.takeSuccess += t.takes.length;
  m.committedPuts.push(...t.puts.map((e) => e.id));
  m.consumed.push(...t.takes.map((e) => e.id));
  t.puts = [];
  t.takes = [];
  t.state = "COMPLETED";
}

function expectCommitResult(outcome: "ok" | "bytes" | "full", error: unknown): void {
  if (outcome === "ok") {
    expect(error).toBeUndefined();
  } else if (outcome === "full") {
    expect(error).toBeInstanceOf(ChannelFullException);
  } else {
    expect(error).toBeInstanceOf(ChannelException);
    expect(error).not.toBeInstanceOf(ChannelFullException);
    expect((error as Error).message).toContain("Byte capacity");
  }
}

async function settle(p: Promise<void>): Promise<unknown> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return e;
  }
}

type Cmd = fc.AsyncCommand<Model, Real>;

/** How often each interesting case came up over all runs, so the test proves it exercised them. */
const seen = { commitOk: 0, commitFull: 0, commitBytes: 0, putQueueFull: 0, takeListFull: 0, takeEmpty: 0, rollbackTakes: 0, stateErrors: 0, commands: 0 };

function countOutcome(outcome: "ok" | "bytes" | "full"): void {
  if (outcome === "ok") seen.commitOk++;
  else if (outcome === "full") seen.commitFull++;
  else seen.commitBytes++;
}

class Begin implements Cmd {
  constructor(readonly t: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const tm = m.txs[this.t];
    if (tm.state === "NONE" || tm.state === "CLOSED") {
      const tx = r.channel.getTransaction();
      expect(tx.state).toBe("NEW");
      tx.begin();
      r.txs[this.t] = tx;
      m.txs[this.t] = { state: "OPEN", puts: [], takes: [] };
    } else {
      expect(() => r.txs[this.t]?.begin()).toThrow(TransactionStateError);
      seen.stateErrors++;
    }
    checkInvariants(m, r);
  }
  toString = () => `begin(${this.t})`;
}

class Put implements Cmd {
  constructor(
    readonly t: number,
    readonly size: number,
  ) {}
  check = (m: Readonly<Model>) => m.txs[this.t].state !== "NONE";
  async run(m: Model, r: Real) {
    const tm = m.txs[this.t];
    const tx = r.txs[this.t] as Transaction;
    const id = m.nextId++;
    const event = createEvent(new Uint8Array(this.size), { id: String(id) });
    if (tm.state !== "OPEN") {
      expect(() => tx.put(event)).toThrow(TransactionStateError);
    } else {
      m.putAttempts++;
      if (tm.puts.length >= m.cfg.transactionCapacity) {
        expect(() => tx.put(event)).toThrow(`Put queue for MemoryTransaction of capacity ${m.cfg.transactionCapacity} full`);
        seen.putQueueFull++;
      } else {
        tx.put(event);
        tm.puts.push({ id, slots: slotsOf(this.size) });
      }
    }
    checkInvariants(m, r);
  }
  toString = () => `put(${this.t}, ${this.size}B)`;
}

class Take implements Cmd {
  constructor(readonly t: number) {}
  check = (m: Readonly<Model>) => m.txs[this.t].state !== "NONE";
  async run(m: Model, r: Real) {
    const tm = m.txs[this.t];
    const tx = r.txs[this.t] as Transaction;
    if (tm.state !== "OPEN") {
      expect(() => tx.take()).toThrow(TransactionStateError);
    } else {
      m.takeAttempts++;
      if (tm.takes.length >= m.cfg.transactionCapacity) {
        expect(() => tx.take()).toThrow(`Take list for MemoryTransaction, capacity ${m.cfg.transactionCapacity} full`);
        seen.takeListFull++;
      } else {
        const expected = m.queue.shift() ?? null;
        const got = tx.take();
        // FIFO: the head of the committed queue, or null at once when there is none.
        expect(idOf(got)).toBe(expected === null ? null : expected.id);
        if (expected) tm.takes.push(expected);
        else seen.takeEmpty++;
      }
    }
    checkInvariants(m, r);
  }
  toString = () => `take(${this.t})`;
}

/** putAll: as put() of each event until the put queue is full (that put throws, the rest are not tried). */
class PutAll implements Cmd {
  constructor(
    readonly t: number,
    readonly sizes: number[],
  ) {}
  check = (m: Readonly<Model>) => m.txs[this.t].state !== "NONE";
  async run(m: Model, r: Real) {
    const tm = m.txs[this.t];
    const tx = r.txs[this.t] as Transaction;
    const events = this.sizes.map((size) => ({ size, id: m.nextId++ }));
    const real = events.map((e) => createEvent(new Uint8Array(e.size), { id: String(e.id) }));
    if (tm.state !== "OPEN") {
      expect(() => tx.putAll(real)).toThrow(TransactionStateError);
    } else {
      const room = m.cfg.transactionCapacity - tm.puts.length;
      const fits = Math.min(room, events.length);
      for (const e of events.slice(0, fits)) tm.puts.push({ id: e.id, slots: slotsOf(e.size) });
      if (fits < events.length) {
        m.putAttempts += fits + 1;
        expect(() => tx.putAll(real)).toThrow(`Put queue for MemoryTransaction of capacity ${m.cfg.transactionCapacity} full`);
        seen.putQueueFull++;
      } else {
        m.putAttempts += fits;
        tx.putAll(real);
      }
    }
    checkInvariants(m, r);
  }
  toString = () => `putAll(${this.t}, [${this.sizes.join(", ")}])`;
}

/** takeInto: as take() until max events or null (or the take list is full: that take throws). */
class TakeInto implements Cmd {
  constructor(
    readonly t: number,
    readonly max: number,
  ) {}
  check = (m: Readonly<Model>) => m.txs[this.t].state !== "NONE";
  async run(m: Model, r: Real) {
    const tm = m.txs[this.t];
    const tx = r.txs[this.t] as Transaction;
    const out: { headers: Record<string, string> }[] = [];
    if (tm.state !== "OPEN") {
      expect(() => tx.takeInto(out as never, this.max)).toThrow(TransactionStateError);
      checkInvariants(m, r);
      return;
    }
    const expected: Ev[] = [];
    let error: string | null = null;
    while (expected.length < this.max) {
      m.takeAttempts++;
      if (tm.takes.length >= m.cfg.transactionCapacity) {
        error = `Take list for MemoryTransaction, capacity ${m.cfg.transactionCapacity} full`;
        seen.takeListFull++;
        break;
      }
      const e = m.queue.shift();
      if (!e) {
        seen.takeEmpty++;
        break;
      }
      tm.takes.push(e);
      expected.push(e);
    }
    if (error) expect(() => tx.takeInto(out as never, this.max)).toThrow(error);
    else expect(tx.takeInto(out as never, this.max)).toBe(expected.length);
    expect(out.map(idOf)).toEqual(expected.map((e) => e.id));
    checkInvariants(m, r);
  }
  toString = () => `takeInto(${this.t}, ${this.max})`;
}

class Commit implements Cmd {
  constructor(readonly t: number) {}
  check = (m: Readonly<Model>) => m.txs[this.t].state !== "NONE";
  async run(m: Model, r: Real) {
    const tm = m.txs[this.t];
    const tx = r.txs[this.t] as Transaction;
    if (tm.state !== "OPEN") {
      expect(await settle(tx.commit())).toBeInstanceOf(TransactionStateError);
    } else {
      const outcome = commitOutcome(m, tm);
      countOutcome(outcome);
      expectCommitResult(outcome, await settle(tx.commit()));
      if (outcome === "ok") applyCommit(m, tm);
      expect(tx.state).toBe(tm.state);
    }
    checkInvariants(m, r);
  }
  toString = () => `commit(${this.t})`;
}

/** Two commits started in the same tick, awaited together: the second sees the first's effect. */
class CommitTogether implements Cmd {
  constructor(
    readonly a: number,
    readonly b: number,
  ) {}
  check = (m: Readonly<Model>) => this.a !== this.b && m.txs[this.a].state === "OPEN" && m.txs[this.b].state === "OPEN";
  async run(m: Model, r: Real) {
    const ta = m.txs[this.a];
    const tb = m.txs[this.b];
    const pa = settle((r.txs[this.a] as Transaction).commit());
    const pb = settle((r.txs[this.b] as Transaction).commit());
    const [ea, eb] = await Promise.all([pa, pb]);
    const oa = commitOutcome(m, ta);
    countOutcome(oa);
    expectCommitResult(oa, ea);
    if (oa === "ok") applyCommit(m, ta);
    const ob = commitOutcome(m, tb);
    countOutcome(ob);
    expectCommitResult(ob, eb);
    if (ob === "ok") applyCommit(m, tb);
    checkInvariants(m, r);
  }
  toString = () => `commitTogether(${this.a}, ${this.b})`;
}

class Rollback implements Cmd {
  constructor(readonly t: number) {}
  check = (m: Readonly<Model>) => m.txs[this.t].state !== "NONE";
  async run(m: Model, r: Real) {
    const tm = m.txs[this.t];
    const tx = r.txs[this.t] as Transaction;
    if (tm.state !== "OPEN") {
      expect(await settle(tx.rollback())).toBeInstanceOf(TransactionStateError);
    } else {
      await tx.rollback();
      if (tm.takes.length > 0) seen.rollbackTakes++;
      // Taken events go back to the head in their original order; puts are discarded.
      m.queue.unshift(...tm.takes);
      tm.puts = [];
      tm.takes = [];
      tm.state = "COMPLETED";
    }
    checkInvariants(m, r);
  }
  toString = () => `rollback(${this.t})`;
}

class Close implements Cmd {
  constructor(readonly t: number) {}
  check = (m: Readonly<Model>) => m.txs[this.t].state !== "NONE";
  async run(m: Model, r: Real) {
    const tm = m.txs[this.t];
    const tx = r.txs[this.t] as Transaction;
    if (tm.state === "OPEN") {
      expect(() => tx.close()).toThrow("commit or rollback first");
    } else {
      tx.close();
      tm.state = "CLOSED";
    }
    expect(tx.state).toBe(tm.state as Exclude<TxState, "NONE">);
    checkInvariants(m, r);
  }
  toString = () => `close(${this.t})`;
}

const tx = fc.integer({ min: 0, max: TRANSACTIONS - 1 });
const size = fc.constantFrom(0, 1, 99, 100, 101, 250);
const put = fc.tuple(tx, size).map(([t, s]) => new Put(t, s));
const take = tx.map((t) => new Take(t));
// Repeats weight the mix towards puts, so the channel runs into its capacities often.
const commandArbs = [
  tx.map((t) => new Begin(t)),
  tx.map((t) => new Begin(t)),
  put,
  put,
  put,
  put,
  put,
  take,
  take,
  fc.tuple(tx, fc.array(size, { minLength: 0, maxLength: 6 })).map(([t, sizes]) => new PutAll(t, sizes)),
  fc.tuple(tx, fc.integer({ min: 0, max: 6 })).map(([t, max]) => new TakeInto(t, max)),
  tx.map((t) => new Commit(t)),
  tx.map((t) => new Commit(t)),
  fc.tuple(tx, tx).map(([a, b]) => new CommitTogether(a, b)),
  tx.map((t) => new Rollback(t)),
  tx.map((t) => new Close(t)),
  tx.map((t) => new Close(t)),
];

const configArb: fc.Arbitrary<Config> = fc
  .record({
    capacity: fc.integer({ min: 1, max: 6 }),
    txFraction: fc.double({ min: 0, max: 1, noNaN: true }),
    // 0 means unbounded (byteCapacity below one slot), so half the runs press on capacity alone.
    byteCapacity: fc.oneof(fc.integer({ min: 100, max: 1500 }), fc.constant(0)),
    byteCapacityBufferPercentage: fc.constantFrom(0, 20),
  })
  .map(({ capacity, txFraction, byteCapacity, byteCapacityBufferPercentage }) => ({
    capacity,
    transactionCapacity: Math.max(1, Math.round(txFraction * capacity)),
    byteCapacity,
    byteCapacityBufferPercentage,
  }));

test("MemoryChannel matches the reference model under random interleavings of transactions", async () => {
  const seed = Number(process.env.FC_SEED ?? 20261130);
  const runs = Number(process.env.FC_RUNS ?? 1000);
  await fc.assert(
    fc.asyncProperty(configArb, fc.commands(commandArbs, { maxCommands: 80, size: "max", replayPath: process.env.FC_PATH }), async (cfg, cmds) => {
      const channel = new MemoryChannel("model", { ...cfg, keepAlive: 0 }, new VirtualClock());
      channel.start();
      const model: Model = {
        cfg,
        byteSlots: byteSlotsFor(cfg),
        queue: [],
        txs: Array.from({ length: TRANSACTIONS }, () => ({ state: "NONE" as TxState, puts: [], takes: [] })),
        nextId: 1,
        putAttempts: 0,
        takeAttempts: 0,
        putSuccess: 0,
        takeSuccess: 0,
        committedPuts: [],
        consumed: [],
      };
      const real: Real = { channel, txs: Array.from({ length: TRANSACTIONS }, () => null) };
      await fc.asyncModelRun(() => ({ model, real }), cmds);

      // End of the run: roll back whatever is open, then drain. Every committed event is
      // either consumed or still queued, exactly once, and the queue drains in model order.
      for (let t = 0; t < TRANSACTIONS; t++) {
        if (model.txs[t].state === "OPEN") await new Rollback(t).run(model, real);
      }
      const drained: number[] = [];
      for (;;) {
        const d = channel.getTransaction();
        d.begin();
        const e = d.take();
        await d.commit();
        d.close();
        if (e === null) break;
        drained.push(idOf(e) as number);
      }
      expect(drained).toEqual(model.queue.map((e) => e.id));
      const delivered = [...model.consumed, ...drained];
      expect(new Set(delivered).size).toBe(delivered.length);
      expect([...delivered].sort((a, b) => a - b)).toEqual([...model.committedPuts].sort((a, b) => a - b));
      const c = channel.counter.values;
      expect(c.EventPutSuccessCount - c.EventTakeSuccessCount).toBe(c.ChannelSize);
      expect(c.ChannelSize).toBe(0);
      expect(channel.remainingCapacity).toBe(cfg.capacity);
      expect(channel.remainingByteSlots).toBe(model.byteSlots);
    }),
    { numRuns: runs, seed, path: process.env.FC_PATH, endOnFailure: false },
  );
  // Every kind of pressure and failure came up many times (checked on full-length runs).
  for (const [name, count] of Object.entries(seen)) {
    if (runs >= 1000 && count < 10) throw new Error(`the random runs hit "${name}" only ${count} times: ${JSON.stringify(seen)}`);
  }
});

test("producers and consumers with waiting commits (keep-alive > 0) lose and duplicate nothing, on random timing", async () => {
  const runs = Number(process.env.FC_RUNS_TIMED ?? 100);
  const timed = { waitedThenCommitted: 0, full: 0 };
  const scenario = fc.record({
    capacity: fc.integer({ min: 1, max: 12 }),
    txFraction: fc.double({ min: 0, max: 1, noNaN: true }),
    keepAlive: fc.integer({ min: 0, max: 3 }),
    producers: fc.integer({ min: 1, max: 4 }),
    consumers: fc.integer({ min: 1, max: 3 }),
    perProducer: fc.integer({ min: 1, max: 40 }),
    seed: fc.integer(),
  });
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      const rand = mulberry32(s.seed);
      // setImmediate drains the woken code as well as a host timer does, much faster.
      const clock = new VirtualClock(0, () => new Promise<void>((r) => setImmediate(r)));
      const transactionCapacity = Math.max(1, Math.round(s.txFraction * s.capacity));
      const channel = new MemoryChannel("model", { capacity: s.capacity, transactionCapacity, keepAlive: s.keepAlive }, clock);
      channel.start();
      const committed: string[] = [];
      const received: string[] = [];
      let producing = s.producers;
      const check = () => {
        expect(channel.remainingCapacity).toBeWithin(0, s.capacity + 1);
        expect(channel.size).toBeLessThanOrEqual(s.capacity);
      };
      const produce = async (p: number) => {
        let sent = 0;
        while (sent < s.perProducer) {
          const n = Math.min(1 + Math.floor(rand() * transactionCapacity), s.perProducer - sent);
          const ids = Array.from({ length: n }, (_, i) => `p${p}-${sent + i}`);
          const tx = channel.getTransaction();
          tx.begin();
          for (const id of ids) tx.put(createEvent(new Uint8Array(Math.floor(rand() * 300)), { id }));
          const before = clock.now();
          try {
            await tx.commit();
            committed.push(...ids);
            sent += n;
            if (clock.now() > before) timed.waitedThenCommitted++;
          } catch (err) {
            expect(err).toBeInstanceOf(ChannelFullException);
            expect(clock.now() - before).toBe(s.keepAlive * 1000);
            timed.full++;
            await tx.rollback();
          } finally {
            tx.close();
          }
          check();
          await clock.sleep(Math.floor(rand() * 1500));
        }
        producing--;
      };
      const consume = async () => {
        for (;;) {
          const tx = channel.getTransaction();
          tx.begin();
          const got: string[] = [];
          const want = 1 + Math.floor(rand() * transactionCapacity);
          for (let i = 0; i < want; i++) {
            const e = tx.take();
            if (e === null) break;
            got.push(e.headers.id);
          }
          check();
          if (rand() < 0.5) await clock.sleep(Math.floor(rand() * 1000)); // hold the takes across an await
          if (got.length > 0 && rand() < 0.25) {
            await tx.rollback();
          } else {
            await tx.commit();
            received.push(...got);
          }
          tx.close();
          check();
          if (got.length === 0) {
            if (producing === 0 && channel.size === 0) return;
            await clock.sleep(1 + Math.floor(rand() * 500));
          }
        }
      };
      const all = Promise.all([...Array.from({ length: s.producers }, (_, p) => produce(p)), ...Array.from({ length: s.consumers }, () => consume())]);
      let finished = false;
      void all.then(
        () => (finished = true),
        () => (finished = true),
      );
      let steps = 0;
      while (!finished && steps < 100_000 && (await clock.step())) steps++;
      await clock.flush();
      expect(finished).toBe(true);
      await all;
      expect(committed.length).toBe(s.producers * s.perProducer);
      expect(new Set(received).size).toBe(received.length);
      expect([...received].sort()).toEqual([...committed].sort());
      if (s.consumers === 1) {
        // One consumer sees each producer's events in the order they were committed.
        for (let p = 0; p < s.producers; p++) {
          const mine = (xs: string[]) => xs.filter((id) => id.startsWith(`p${p}-`));
          expect(mine(received)).toEqual(mine(committed));
        }
      }
      const c = channel.counter.values;
      expect(c.EventPutSuccessCount - c.EventTakeSuccessCount).toBe(c.ChannelSize);
      expect(c.ChannelSize).toBe(0);
      expect(channel.remainingCapacity).toBe(s.capacity);
      expect(clock.pendingTimers).toBe(0);
    }),
    { numRuns: runs, seed: Number(process.env.FC_SEED ?? 20261130), path: process.env.FC_PATH_TIMED, endOnFailure: false },
  );
  // Commits both waited for space and timed out after keep-alive, many times.
  if (runs >= 100) {
    expect(timed.waitedThenCommitted).toBeGreaterThanOrEqual(10);
    expect(timed.full).toBeGreaterThanOrEqual(10);
  }
});
