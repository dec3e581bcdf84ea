// ChannelProcessor: interceptors, then the selector's required and optional channels, one
// transaction per channel per batch (Flume's TestChannelProcessor and ChannelProcessor rules).
import { describe, expect, test } from "bun:test";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { ChannelException, ChannelFullException } from "../../src/core/errors.ts";
import { bodyEvent, bodyText, createEvent, type Event } from "../../src/core/event.ts";
import { EventInterceptor, type Interceptor } from "../../src/core/interceptor.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { LoadBalancingChannelSelector, MultiplexingChannelSelector, ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import type { Transaction } from "../../src/core/transaction.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { drain, events, putAll, takeAll } from "../support/core.ts";

/** A MemoryChannel that counts its transactions and can be told to fail them. */
/** A memory channel that takes every put in a transaction it records (no putNow). */
class ProbeChannel extends MemoryChannel {
  override putNow(): boolean {
    return false;
  }
  transactions = 0;
  failGetTransaction: Error | null = null;
  failCommit: Error | null = null;
  readonly states: Transaction[] = [];

  override getTransaction() {
    if (this.failGetTransaction) throw this.failGetTransaction;
    this.transactions++;
    const tx = super.getTransaction();
    this.states.push(tx);
    const failCommit = this.failCommit;
    if (failCommit) {
      tx.commit = () => Promise.reject(failCommit);
    }
    return tx;
  }
}

function probes(n: number, options = {}): ProbeChannel[] {
  return Array.from({ length: n }, (_, i) => {
    const c = new ProbeChannel(`ch${i}`, { keepAlive: 0, ...options }, new VirtualClock());
    c.start();
    return c;
  });
}

/** Adds a header; records which form was called. */
class Tagger implements Interceptor {
  singleCalls = 0;
  batchCalls = 0;
  constructor(
    private readonly key: string,
    private readonly value: string,
  ) {}
  intercept(event: Event): Event | null {
    this.singleCalls++;
    event.headers[this.key] = this.value;
    return event;
  }
  interceptAll(events: Event[]): Event[] {
    this.batchCalls++;
    for (const e of events) e.headers[this.key] = this.value;
    return events;
  }
}

/** Drops events whose body contains "drop". */
class DropFilter extends EventInterceptor {
  intercept(event: Event): Event | null {
    return bodyText(event).includes("drop") ? null : event;
  }
}

describe("ChannelProcessor with a replicating selector", () => {
  test("processEvent and processEventBatch reach required and optional channels (Flume's testRequiredAndOptionalChannels)", async () => {
    const channels = probes(4, { capacity: 200, transactionCapacity: 100 });
    const p = new ChannelProcessor(new ReplicatingChannelSelector(channels, ["ch2", "ch3"]));
    p.initialize();
    const e1 = createEvent("event 1");
    await p.processEvent(e1);
    for (const c of channels) {
      const tx = c.getTransaction();
      tx.begin();
      expect(tx.take()).toBe(e1);
      await tx.commit();
      tx.close();
    }
    await p.processEventBatch(events(100));
    for (const c of channels) {
      const got = await drain(c, 100);
      expect(got.length).toBe(100);
      expect(got[0]).toBe("event 0");
      expect(got[99]).toBe("event 99");
    }
    expect(p.getChannels()).toEqual(channels);
  });

  test("a batch is written in one transaction per channel", async () => {
    const channels = probes(3);
    const p = new ChannelProcessor(new ReplicatingChannelSelector(channels, ["ch2"]));
    await p.processEventBatch(events(50));
    expect(channels.map((c) => c.transactions)).toEqual([1, 1, 1]);
    expect(channels.map((c) => c.size)).toEqual([50, 50, 50]);
    for (const c of channels) expect(c.states.map((t) => t.state)).toEqual(["CLOSED"]);
  });

  test("a failed required channel rolls back its transaction and raises ChannelException to the source", async () => {
    const [ok, full] = probes(2, { capacity: 5, transactionCapacity: 5 });
    await putAll(full, events(4, "old"));
    const p = new ChannelProcessor(new ReplicatingChannelSelector([ok, full]));
    let err: unknown;
    try {
      await p.processEventBatch(events(3));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ChannelException);
    expect(err).toBeInstanceOf(ChannelFullException);
    // The full channel kept only what it had; its transaction was rolled back and closed.
    expect(full.size).toBe(4);
    expect(full.remainingCapacity).toBe(1);
    expect(full.states.at(-1)?.state).toBe("CLOSED");
    // A channel committed before the failure keeps the batch (Flume's at-least-once: the retry may duplicate it).
    expect(ok.size).toBe(3);
  });

  test("a non-channel error on a required channel is wrapped in ChannelException naming the channel", async () => {
    const [c] = probes(1);
    c.failCommit = new TypeError("disk on fire");
    const p = new ChannelProcessor(new ReplicatingChannelSelector([c]));
    let err: unknown;
    try {
      await p.processEventBatch(events(2));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain("Unable to put batch on required channel: ch0");
    expect((err as Error).message).toContain("disk on fire");
    expect((err as Error).cause).toBe(c.failCommit);
    expect(c.size).toBe(0);
  });

  test("a ChannelException thrown by getTransaction reaches the source unchanged (Flume's testExceptionFromGetTransaction)", async () => {
    const [c] = probes(1);
    const boom = new ChannelException("doh!");
    c.failGetTransaction = boom;
    const p = new ChannelProcessor(new ReplicatingChannelSelector([c]));
    await expect(p.processEventBatch(events(1))).rejects.toBe(boom);
    await expect(p.processEvent(createEvent("x"))).rejects.toBe(boom);
  });

  test("a failing optional channel is logged and ignored; required channels get the batch", async () => {
    const [req, opt] = probes(2, { capacity: 2, transactionCapacity: 2 });
    await putAll(opt, events(2, "old"));
    const logger = new MemoryLogger();
    const p = new ChannelProcessor(new ReplicatingChannelSelector([req, opt], ["ch1"]), [], logger);
    await p.processEventBatch(events(2));
    expect(req.size).toBe(2);
    expect(opt.size).toBe(2);
    expect(opt.states.at(-1)?.state).toBe("CLOSED");
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("optional channel: ch1"))).toBe(true);
    await drain(req);
    opt.failGetTransaction = new Error("gone");
    await p.processEvent(createEvent("single"));
    expect(req.size).toBe(1);
  });
});

describe("ChannelProcessor interceptors", () => {
  test("interceptors change events: processEvent uses the single form, processEventBatch the batch form, in chain order", async () => {
    const [c] = probes(1);
    const a = new Tagger("k", "first");
    const b = new Tagger("k", "second");
    const p = new ChannelProcessor(new ReplicatingChannelSelector([c]), [a, b]);
    await p.processEvent(createEvent("one"));
    await p.processEventBatch(events(3));
    expect([a.singleCalls, a.batchCalls, b.singleCalls, b.batchCalls]).toEqual([1, 1, 1, 1]);
    const tx = c.getTransaction();
    tx.begin();
    for (let i = 0; i < 4; i++) expect(tx.take()?.headers.k).toBe("second");
    await tx.commit();
    tx.close();
  });

  test("an interceptor may drop events, single or in a batch; a batch emptied by interceptors writes nothing", async () => {
    const [c] = probes(1);
    const p = new ChannelProcessor(new ReplicatingChannelSelector([c]), [new DropFilter()]);
    await p.processEvent(createEvent("drop me"));
    expect(c.transactions).toBe(0);
    await p.processEventBatch([createEvent("keep 1"), createEvent("drop 2"), createEvent("keep 3")]);
    expect(c.transactions).toBe(1);
    await p.processEventBatch([createEvent("drop a"), createEvent("drop b")]);
    expect(c.transactions).toBe(1);
    expect(await drain(c)).toEqual(["keep 1", "keep 3"]);
  });

  test("later interceptors do not see events dropped by earlier ones", async () => {
    const [c] = probes(1);
    const after = new Tagger("seen", "yes");
    const p = new ChannelProcessor(new ReplicatingChannelSelector([c]), [new DropFilter(), after]);
    await p.processEvent(createEvent("drop"));
    expect(after.singleCalls).toBe(0);
    await p.processEventBatch([createEvent("drop")]);
    expect(after.batchCalls).toBe(0);
  });

  test("events kept from a read that interceptors mostly dropped hold only their own bytes, one buffer per batch; without drops bodies are not copied", async () => {
    const [c] = probes(1, { capacity: 1000, transactionCapacity: 1000 });
    const read = new TextEncoder().encode(Array.from({ length: 500 }, (_, i) => (i % 100 === 0 ? `keep ${i}` : `drop ${i}`).padEnd(99) + "\n").join(""));
    const lines = (): Event[] => Array.from({ length: 500 }, (_, i) => ({ headers: {}, body: read.subarray(i * 100, i * 100 + 99) }));
    const p = new ChannelProcessor(new ReplicatingChannelSelector([c]), [new DropFilter()]);
    await p.processEventBatch(lines());
    const tx = c.getTransaction();
    tx.begin();
    const kept = [tx.take(), tx.take(), tx.take(), tx.take(), tx.take()] as Event[];
    expect(tx.take()).toBeNull();
    await tx.commit();
    tx.close();
    expect(kept.map((e) => bodyText(e).trim())).toEqual(["keep 0", "keep 100", "keep 200", "keep 300", "keep 400"]);
    for (const e of kept) expect(e.body.buffer.byteLength).toBe(5 * 99);
    expect(new Set(kept.map((e) => e.body.buffer)).size).toBe(1);
    const unfiltered = new ChannelProcessor(new ReplicatingChannelSelector([c]));
    const all = lines();
    await unfiltered.processEventBatch(all);
    expect(all[0].body.buffer).toBe(read.buffer);
  });

  test("initialize and close reach every interceptor", () => {
    const calls: string[] = [];
    const i: Interceptor = {
      initialize: () => calls.push("init"),
      close: () => calls.push("close"),
      intercept: (e) => e,
      interceptAll: (es) => es,
    };
    const p = new ChannelProcessor(new ReplicatingChannelSelector(probes(1)), [i, i]);
    p.initialize();
    p.close();
    expect(calls).toEqual(["init", "init", "close", "close"]);
  });
});

describe("ChannelProcessor with event-dependent selectors", () => {
  test("multiplexing: each channel gets one transaction holding only its events, in order", async () => {
    const channels = probes(3);
    const selector = new MultiplexingChannelSelector(channels, {
      header: "type",
      mapping: { a: ["ch0"], b: ["ch1", "ch2"] },
      default: ["ch2"],
    });
    const p = new ChannelProcessor(selector);
    const batch = ["a", "b", "x", "a", "b"].map((t, i) => createEvent(`${t}${i}`, { type: t }));
    await p.processEventBatch(batch);
    expect(channels.map((c) => c.transactions)).toEqual([1, 1, 1]);
    expect(await drain(channels[0])).toEqual(["a0", "a3"]);
    expect(await drain(channels[1])).toEqual(["b1", "b4"]);
    expect(await drain(channels[2])).toEqual(["b1", "x2", "b4"]);
  });

  test("multiplexing: a failed optional channel does not fail the batch; a failed required one does", async () => {
    const [a, b] = probes(2, { capacity: 1, transactionCapacity: 1 });
    await putAll(b, events(1, "old"));
    const selector = new MultiplexingChannelSelector([a, b], { header: "t", mapping: { x: ["ch0"] }, optional: { x: ["ch1"] }, default: ["ch1"] });
    const p = new ChannelProcessor(selector);
    await p.processEvent(createEvent("x", { t: "x" }));
    expect(a.size).toBe(1);
    await expect(p.processEvent(createEvent("y", { t: "y" }))).rejects.toBeInstanceOf(ChannelException);
  });

  test("multiplexing routes events made without headers by the header an interceptor gives them", async () => {
    const channels = probes(2);
    class Tag extends EventInterceptor {
      intercept(event: Event): Event {
        event.headers.kind = bodyText(event).startsWith("ERR") ? "error" : "info";
        return event;
      }
    }
    const selector = new MultiplexingChannelSelector(channels, { header: "kind", mapping: { error: ["ch0"] }, default: ["ch1"] });
    const p = new ChannelProcessor(selector, [new Tag()]);
    const lines = ["ERR disk full", "ok", "ERR again"].map((l) => bodyEvent(new TextEncoder().encode(l)));
    await p.processEventBatch(lines);
    expect(await drain(channels[0])).toEqual(["ERR disk full", "ERR again"]);
    expect(await drain(channels[1])).toEqual(["ok"]);
  });

  test("load_balancing round_robin spreads a batch over the channels, one transaction each", async () => {
    const channels = probes(4);
    const p = new ChannelProcessor(new LoadBalancingChannelSelector(channels));
    await p.processEventBatch(events(8));
    expect(channels.map((c) => c.transactions)).toEqual([1, 1, 1, 1]);
    expect(await drain(channels[0])).toEqual(["event 0", "event 4"]);
    expect(await drain(channels[3])).toEqual(["event 3", "event 7"]);
  });
});

describe("ChannelProcessor and source positions", () => {
  test("the batch's position is committed with the batch", async () => {
    const [c] = probes(1);
    const p = new ChannelProcessor(new ReplicatingChannelSelector([c]));
    await p.processEventBatch(events(2), { source: "tail", value: "42" });
    expect(c.sourcePosition("tail")).toBe("42");
  });
});

describe("ChannelProcessor with channels that take a batch at once (putNow)", () => {
  function memory(name: string, options = {}, clock = new VirtualClock()): MemoryChannel {
    const c = new MemoryChannel(name, { keepAlive: 3, ...options }, clock);
    c.start();
    return c;
  }

  test("a batch every channel takes at once is written before processEventBatch returns: no promise to wait for", async () => {
    const [a, b] = [memory("a"), memory("b")];
    const p = new ChannelProcessor(new ReplicatingChannelSelector([a, b], ["b"]));
    expect(p.processEventBatch(events(3))).toBeUndefined();
    expect(await drain(a)).toEqual(["event 0", "event 1", "event 2"]);
    expect(await drain(b)).toEqual(["event 0", "event 1", "event 2"]);
  });

  test("a full required channel makes the batch wait for room; the channels after it get the batch once it has", async () => {
    const clock = new VirtualClock();
    const full = memory("full", { capacity: 2, transactionCapacity: 2 }, clock);
    const probe = new ProbeChannel("probe", { keepAlive: 0 }, clock);
    probe.start();
    const next = memory("next", {}, clock);
    await putAll(full, events(2, "old"));
    const p = new ChannelProcessor(new ReplicatingChannelSelector([full, probe, next]));
    const writing = p.processEventBatch(events(2, "new"));
    expect(writing).toBeInstanceOf(Promise);
    let done = false;
    void (writing as Promise<void>).then(() => (done = true));
    await clock.flush();
    expect(done).toBe(false);
    expect(next.size).toBe(0);
    expect(await takeAll(full, 2)).toEqual(["old 0", "old 1"]);
    await clock.flush();
    expect(done).toBe(true);
    expect(await drain(full)).toEqual(["new 0", "new 1"]);
    expect(await drain(probe)).toEqual(["new 0", "new 1"]);
    expect(await drain(next)).toEqual(["new 0", "new 1"]);
  });

  test("an optional channel that refuses the batch is logged and skipped; the required one has it", async () => {
    const clock = new VirtualClock();
    const logger = new MemoryLogger();
    const required = memory("required", {}, clock);
    const optional = memory("optional", { capacity: 1, transactionCapacity: 1, keepAlive: 0 }, clock);
    const p = new ChannelProcessor(new ReplicatingChannelSelector([required, optional], ["optional"]), [], logger);
    await p.processEventBatch(events(2));
    expect(await drain(required)).toEqual(["event 0", "event 1"]);
    expect(optional.size).toBe(0);
    expect(logger.lines.map((l) => l.message).join("\n")).toContain("Unable to put batch on optional channel: optional: Put queue for MemoryTransaction of capacity 1 full");
  });
});
