// MemoryChannel: Flume's parameters, defaults, messages and capacity accounting
// (the behaviours of Flume's TestMemoryChannel and TestMemoryChannelTransaction).
import { describe, expect, test } from "bun:test";
import { ChannelException, ChannelFullException, ConfigurationError } from "../../src/core/errors.ts";
import { bodyText, createEvent, lineEvent } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { DEFAULT_BYTE_CAPACITY, MemoryChannel, type MemoryChannelOptions } from "../../src/core/memory-channel.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { drain, events, putAll, takeAll, watch } from "../support/core.ts";

function make(options: MemoryChannelOptions = {}, clock = new VirtualClock(), logger = new MemoryLogger()) {
  const channel = new MemoryChannel("mc", options, clock, logger);
  channel.start();
  return { channel, clock, logger };
}

const body405 = () => createEvent(new Uint8Array(405));

describe("MemoryChannel defaults and configuration", () => {
  test("defaults are Flume's: capacity 100, transactionCapacity 100, keep-alive 3 s", async () => {
    const { channel, clock } = make();
    expect(channel.getCapacity()).toBe(100);
    expect(channel.getTransactionCapacity()).toBe(100);
    expect(channel.remainingCapacity).toBe(100);
    await putAll(channel, events(100));
    // A full channel: the next commit waits 3 s (keep-alive) for space, then gives up.
    const tx = channel.getTransaction();
    tx.begin();
    tx.put(createEvent("one too many"));
    const commit = watch(tx.commit());
    await clock.advance(2999);
    expect(commit.done).toBe(false);
    await clock.advance(1);
    await commit.promise;
    expect(commit.error).toBeInstanceOf(ChannelFullException);
    await tx.rollback();
    tx.close();
  });

  test("the default byteCapacity is documented as 1 GiB of event bodies (no JVM heap to size it from), less the 20% buffer", () => {
    expect(DEFAULT_BYTE_CAPACITY).toBe(1024 * 1024 * 1024);
    expect(make().channel.remainingByteSlots).toBe(Math.floor((DEFAULT_BYTE_CAPACITY * 0.8) / 100));
    // Below one slot means unbounded, as in Flume.
    expect(make({ byteCapacity: 0 }).channel.remainingByteSlots).toBe(Number.MAX_SAFE_INTEGER);
  });

  test("byte slots follow Flume's arithmetic: byteCapacity 1000 with 20% buffer is 8 slots; a rolled-back put gives its slots back", async () => {
    const { channel } = make({ byteCapacity: 1000 });
    expect(channel.remainingByteSlots).toBe(8);
    const tx = channel.getTransaction();
    tx.begin();
    tx.put(createEvent(new Uint8Array(0)));
    await tx.rollback();
    tx.close();
    expect(channel.remainingByteSlots).toBe(8);
    await putAll(channel, [createEvent(new Uint8Array(250))]);
    expect(channel.remainingByteSlots).toBe(5);
  });

  test("a line that is a range of a large read counts its own bytes, not the read's", async () => {
    const { channel } = make({ byteCapacity: 1000 });
    const read = new Uint8Array(64 * 1024).fill(97);
    await putAll(channel, [lineEvent(read, 100, 350), lineEvent(read, 350, 450)]);
    expect(channel.remainingByteSlots).toBe(4);
    const taken = await takeAll(channel, 2);
    expect(taken).toEqual(["a".repeat(250), "a".repeat(100)]);
    expect(channel.remainingByteSlots).toBe(8);
  });

  test("transactionCapacity above capacity is a configuration error naming the key", () => {
    let err: unknown;
    try {
      new MemoryChannel("mc", { capacity: 10, transactionCapacity: 11 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigurationError);
    expect((err as ConfigurationError).key).toBe("transactionCapacity");
    expect((err as Error).message).toContain("Transaction Capacity of Memory Channel cannot be higher than the capacity");
  });

  test("non-positive capacities are refused with a configuration error naming the key", () => {
    expect(() => new MemoryChannel("mc", { capacity: -3, transactionCapacity: 1 })).toThrow(ConfigurationError);
    expect(() => new MemoryChannel("mc", { capacity: -3, transactionCapacity: 1 })).toThrow("capacity");
    expect(() => new MemoryChannel("mc", { capacity: 5, transactionCapacity: 0 })).toThrow("transactionCapacity");
    expect(() => new MemoryChannel("mc", { byteCapacityBufferPercentage: 120 })).toThrow("byteCapacityBufferPercentage");
    expect(() => new MemoryChannel("mc", { keepAlive: -1 })).toThrow("keep-alive");
  });

  test("put then take returns the same event", async () => {
    const { channel } = make();
    const e = createEvent("test event", { test_key: "" });
    await putAll(channel, [e]);
    const tx = channel.getTransaction();
    tx.begin();
    expect(tx.take()).toBe(e);
    await tx.commit();
    tx.close();
  });
});

describe("transaction capacity", () => {
  test("a put beyond transactionCapacity throws ChannelException 'Put queue for MemoryTransaction of capacity N full'", async () => {
    const { channel } = make({ capacity: 5, transactionCapacity: 2 });
    const tx = channel.getTransaction();
    tx.begin();
    tx.put(createEvent("a"));
    tx.put(createEvent("b"));
    let err: unknown;
    try {
      tx.put(createEvent("c"));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toStartWith("Put queue for MemoryTransaction of capacity 2 full, consider committing more frequently");
    await tx.rollback();
    tx.close();
    expect(channel.size).toBe(0);
  });

  test("a take beyond transactionCapacity throws ChannelException 'Take list for MemoryTransaction, capacity N full'", async () => {
    const { channel } = make({ capacity: 5, transactionCapacity: 2 });
    await putAll(channel, events(2));
    await putAll(channel, events(2, "more"));
    const tx = channel.getTransaction();
    tx.begin();
    tx.take();
    tx.take();
    expect(() => tx.take()).toThrow(ChannelException);
    expect(() => tx.take()).toThrow("Take list for MemoryTransaction, capacity 2 full");
    await tx.rollback();
    tx.close();
    // Nothing was lost: all four events are still there, in order.
    expect(await drain(channel)).toEqual(["event 0", "event 1", "more 0", "more 1"]);
  });
});

describe("channel capacity", () => {
  test("a commit that would exceed capacity fails with ChannelFullException after keep-alive (Flume's testCapacityOverload)", async () => {
    const { channel, clock } = make({ capacity: 5, transactionCapacity: 3, keepAlive: 1 });
    await putAll(channel, events(3));
    const tx = channel.getTransaction();
    tx.begin();
    for (const e of events(3, "x")) tx.put(e);
    const commit = watch(tx.commit());
    await clock.advance(999);
    expect(commit.done).toBe(false);
    await clock.advance(1);
    await commit.promise;
    expect(commit.error).toBeInstanceOf(ChannelFullException);
    expect((commit.error as Error).message).toStartWith("Space for commit to queue couldn't be acquired. Sinks are likely not keeping up with sources, or the buffer size is too tight");
    await tx.rollback();
    tx.close();
    expect(channel.size).toBe(3);
    expect(channel.remainingCapacity).toBe(2);
  });

  test("with keep-alive 0 a commit on a full channel fails at once", async () => {
    const { channel } = make({ capacity: 2, transactionCapacity: 2, keepAlive: 0 });
    await putAll(channel, events(2));
    await expect(putAll(channel, events(1, "x"))).rejects.toBeInstanceOf(ChannelFullException);
    expect(channel.size).toBe(2);
  });

  test("a waiting commit goes through as soon as a take commit frees the space, in FIFO order", async () => {
    const { channel, clock } = make({ capacity: 5, transactionCapacity: 5 });
    await putAll(channel, events(5, "old"));
    const commit = watch(putAll(channel, events(3, "new")));
    await clock.advance(1000);
    expect(commit.done).toBe(false);
    expect(await takeAll(channel, 3)).toEqual(["old 0", "old 1", "old 2"]);
    await clock.flush();
    expect(commit.done).toBe(true);
    expect(commit.error).toBeUndefined();
    expect(await drain(channel)).toEqual(["old 3", "old 4", "new 0", "new 1", "new 2"]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("taken-but-uncommitted events still hold their slots, so a rollback always has room", async () => {
    const { channel } = make({ capacity: 3, transactionCapacity: 3, keepAlive: 0 });
    await putAll(channel, events(3));
    const taker = channel.getTransaction();
    taker.begin();
    taker.take();
    taker.take();
    expect(channel.size).toBe(1);
    expect(channel.remainingCapacity).toBe(0);
    await expect(putAll(channel, events(1, "x"))).rejects.toBeInstanceOf(ChannelFullException);
    await taker.rollback();
    taker.close();
    expect(await drain(channel)).toEqual(["event 0", "event 1", "event 2"]);
  });

  test("space is freed by a take commit (Flume's testCapacityBufferEmptyingAfterTakeCommit)", async () => {
    const { channel } = make({ capacity: 3, transactionCapacity: 3, keepAlive: 0 });
    await putAll(channel, events(3));
    await takeAll(channel, 2);
    await putAll(channel, events(2, "x"));
    expect(channel.size).toBe(3);
  });

  test("a rolled-back put frees its space (Flume's testCapacityBufferEmptyingAfterRollback)", async () => {
    const { channel } = make({ capacity: 3, transactionCapacity: 3, keepAlive: 0 });
    const tx = channel.getTransaction();
    tx.begin();
    for (const e of events(3)) tx.put(e);
    await tx.rollback();
    tx.close();
    await putAll(channel, events(3, "x"));
    expect(await drain(channel)).toEqual(["x 0", "x 1", "x 2"]);
  });

  test("a transaction that takes as many as it puts needs no free space", async () => {
    const { channel } = make({ capacity: 2, transactionCapacity: 2, keepAlive: 0 });
    await putAll(channel, events(2));
    const tx = channel.getTransaction();
    tx.begin();
    expect(bodyText(tx.take() as never)).toBe("event 0");
    tx.put(createEvent("x"));
    await tx.commit();
    tx.close();
    expect(await drain(channel)).toEqual(["event 1", "x"]);
  });
});

describe("byte capacity (100-byte slots, byteCapacityBufferPercentage 20)", () => {
  test("byteCapacity 1000 with the 20% buffer holds 8 slots: 8 events of up to 100 bytes fit, a 9th does not", async () => {
    const { channel } = make({ byteCapacity: 1000, keepAlive: 0 });
    await putAll(channel, Array.from({ length: 8 }, () => createEvent(new Uint8Array(100))));
    let err: unknown;
    try {
      await putAll(channel, [createEvent(new Uint8Array(1))]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ChannelException);
    expect(err).not.toBeInstanceOf(ChannelFullException);
    expect((err as Error).message).toContain("Byte capacity allocated to store event body 800 reached");
    expect(channel.size).toBe(8);
  });

  test("a body of 101 bytes takes 2 slots and an empty body takes 1", async () => {
    const a = make({ byteCapacity: 1000, keepAlive: 0 }).channel;
    await putAll(a, Array.from({ length: 4 }, () => createEvent(new Uint8Array(101))));
    await expect(putAll(a, [createEvent(new Uint8Array(0))])).rejects.toBeInstanceOf(ChannelException);
    const b = make({ byteCapacity: 1000, keepAlive: 0 }).channel;
    await putAll(b, Array.from({ length: 8 }, () => createEvent(new Uint8Array(0))));
    await expect(putAll(b, [createEvent(new Uint8Array(0))])).rejects.toBeInstanceOf(ChannelException);
  });

  test("byteCapacityBufferPercentage 0 uses the whole byteCapacity", async () => {
    const { channel } = make({ byteCapacity: 1000, byteCapacityBufferPercentage: 0, keepAlive: 0 });
    await putAll(channel, Array.from({ length: 10 }, () => createEvent(new Uint8Array(100))));
    await expect(putAll(channel, [createEvent("x")])).rejects.toBeInstanceOf(ChannelException);
  });

  test("a commit over byte capacity fails (Flume's testByteCapacityOverload: 2000 bytes, 405-byte bodies)", async () => {
    const { channel, clock } = make({ byteCapacity: 2000, byteCapacityBufferPercentage: 20 });
    await putAll(channel, [body405(), body405(), body405()]);
    const commit = watch(putAll(channel, [body405(), body405()]));
    await clock.advance(3000);
    await commit.promise;
    expect(commit.error).toBeInstanceOf(ChannelException);
    expect(channel.size).toBe(3);
  });

  test("a rolled-back put gives its bytes back (Flume's testByteCapacityBufferEmptyingAfterRollback)", async () => {
    const { channel } = make({ byteCapacity: 2000, keepAlive: 0 });
    const tx = channel.getTransaction();
    tx.begin();
    tx.put(body405());
    tx.put(body405());
    tx.put(body405());
    await tx.rollback();
    tx.close();
    await putAll(channel, [body405(), body405(), body405()]);
    expect(channel.size).toBe(3);
  });

  test("a take commit gives the bytes back; a take rollback keeps them reserved", async () => {
    const { channel } = make({ byteCapacity: 2000, keepAlive: 0 });
    await putAll(channel, [body405(), body405(), body405()]);
    // 15 of 16 slots used: a rolled-back take frees nothing.
    const tx = channel.getTransaction();
    tx.begin();
    tx.take();
    await tx.rollback();
    tx.close();
    await expect(putAll(channel, [body405()])).rejects.toBeInstanceOf(ChannelException);
    await takeAll(channel, 2);
    await putAll(channel, [body405(), body405()]);
    expect(channel.size).toBe(3);
  });

  test("reconfigure grows and shrinks byte capacity; a shrink that does not fit is abandoned with a warning (Flume's testByteCapacityBufferChangeConfig)", async () => {
    const { channel, clock, logger } = make({ byteCapacity: 2000, byteCapacityBufferPercentage: 20 });
    await putAll(channel, [body405()]); // 5 of 16 slots
    await channel.reconfigure({ byteCapacity: 1500 }); // 12 slots, 7 free
    const over = watch(putAll(channel, [body405(), body405()]));
    await clock.advance(3000);
    await over.promise;
    expect(over.error).toBeInstanceOf(ChannelException);

    // 250 bytes would be 2 slots, below the 5 in use: the shrink waits keep-alive and is abandoned.
    const shrink = watch(channel.reconfigure({ byteCapacity: 250 }));
    await clock.advance(3000);
    await shrink.promise;
    expect(shrink.error).toBeUndefined();
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("byte capacity"))).toBe(true);
    await putAll(channel, [body405()]); // still 12 slots: 10 used now

    await channel.reconfigure({ byteCapacity: 3300 }); // 26 slots, 16 free
    const fifteen = watch(putAll(channel, Array.from({ length: 15 }, body405)));
    await clock.advance(3000);
    await fifteen.promise;
    expect(fifteen.error).toBeInstanceOf(ChannelException);
    await putAll(channel, [body405(), body405(), body405()]);
    expect(channel.size).toBe(5);
  });
});

describe("take", () => {
  test("take on an empty channel returns null at once, without a timer or a promise", () => {
    const { channel, clock } = make();
    const tx = channel.getTransaction();
    tx.begin();
    const got = tx.take();
    expect(got).toBeNull();
    expect(clock.pendingTimers).toBe(0);
    expect(channel.counter.values.EventTakeAttemptCount).toBe(1);
  });

  test("ten committed events come out in order and then null (Flume's testCommit)", async () => {
    const { channel } = make({ keepAlive: 1, capacity: 100, transactionCapacity: 50 });
    await putAll(channel, events(10, "test event"));
    const tx = channel.getTransaction();
    tx.begin();
    for (let i = 0; i < 10; i++) expect(bodyText(tx.take() as never)).toBe(`test event ${i}`);
    expect(tx.take()).toBeNull();
    await tx.commit();
    tx.close();
    expect(channel.size).toBe(0);
  });
});

describe("rollback", () => {
  test("a put rollback discards the puts; a take rollback returns the events in their order (Flume's testRollBack)", async () => {
    const { channel } = make({ keepAlive: 1 });
    const put = channel.getTransaction();
    put.begin();
    for (const e of events(10)) put.put(e);
    await put.rollback();
    put.close();
    expect(await takeAll(channel)).toEqual([]);

    await putAll(channel, events(10));
    for (let round = 0; round < 2; round++) {
      const tx = channel.getTransaction();
      tx.begin();
      for (let i = 0; i < 10; i++) expect(bodyText(tx.take() as never)).toBe(`event ${i}`);
      expect(tx.take()).toBeNull();
      await tx.rollback();
      tx.close();
    }
    expect(channel.size).toBe(10);
  });

  test("rolled-back takes go back to the head, ahead of events not yet taken", async () => {
    const { channel } = make();
    await putAll(channel, events(6));
    const a = channel.getTransaction();
    a.begin();
    a.take();
    a.take(); // event 0, 1
    const b = channel.getTransaction();
    b.begin();
    b.take(); // event 2
    await a.rollback();
    a.close();
    await b.commit();
    b.close();
    expect(await drain(channel)).toEqual(["event 0", "event 1", "event 3", "event 4", "event 5"]);
  });

  test("a source position is stored with the commit and dropped by a rollback", async () => {
    const { channel } = make();
    const rolled = channel.getTransaction();
    rolled.begin();
    rolled.put(createEvent("a"));
    rolled.setSourcePosition("src", "10");
    await rolled.rollback();
    rolled.close();
    expect(channel.sourcePosition("src")).toBeUndefined();
    const tx = channel.getTransaction();
    tx.begin();
    tx.put(createEvent("b"));
    tx.setSourcePosition("src", "20");
    await tx.commit();
    tx.close();
    expect(channel.sourcePosition("src")).toBe("20");
  });
});

describe("reconfigure (resize without losing events)", () => {
  test("Flume's testChannelResize: overflow, grow to 6, a shrink below the queued count is abandoned", async () => {
    const { channel, clock, logger } = make({ capacity: 5, transactionCapacity: 5 });
    await putAll(channel, events(5));
    const overflow = watch(putAll(channel, [createEvent("overflow event")]));
    await clock.advance(3000);
    await overflow.promise;
    expect(overflow.error).toBeInstanceOf(ChannelException);

    await channel.reconfigure({ capacity: 6, transactionCapacity: 5 });
    expect(channel.getCapacity()).toBe(6);
    expect(channel.counter.values.ChannelCapacity).toBe(6);
    await putAll(channel, [createEvent("extended capacity event")]);

    const shrink = watch(channel.reconfigure({ capacity: 2, transactionCapacity: 2 }));
    await clock.advance(2999);
    expect(shrink.done).toBe(false);
    await clock.advance(1);
    await shrink.promise;
    expect(shrink.error).toBeUndefined();
    expect(channel.getCapacity()).toBe(6);
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("shrink capacity to 2"))).toBe(true);
    const got: string[] = [];
    for (let i = 0; i < 6; i++) got.push(...(await takeAll(channel, 1)));
    expect(got).toEqual(["event 0", "event 1", "event 2", "event 3", "event 4", "extended capacity event"]);
  });

  test("a shrink waits for takes to make room, then applies", async () => {
    const { channel, clock } = make({ capacity: 10, transactionCapacity: 5 });
    await putAll(channel, events(5));
    await putAll(channel, events(3, "x"));
    const shrink = watch(channel.reconfigure({ capacity: 4, transactionCapacity: 4 }));
    await clock.advance(500);
    expect(shrink.done).toBe(false);
    expect(await takeAll(channel, 4)).toEqual(["event 0", "event 1", "event 2", "event 3"]);
    await clock.flush();
    expect(shrink.done).toBe(true);
    expect(channel.getCapacity()).toBe(4);
    expect(channel.getTransactionCapacity()).toBe(4);
    expect(await drain(channel)).toEqual(["event 4", "x 0", "x 1", "x 2"]);
    await putAll(channel, events(4, "y"));
    await expect(channel.reconfigure({ capacity: 4, transactionCapacity: 4, keepAlive: 0 }).then(() => putAll(channel, [createEvent("z")]))).rejects.toBeInstanceOf(ChannelFullException);
  });

  test("new transactions get the new transactionCapacity; open ones keep theirs", async () => {
    const { channel } = make({ capacity: 10, transactionCapacity: 2 });
    const open = channel.getTransaction();
    open.begin();
    await channel.reconfigure({ capacity: 10, transactionCapacity: 5 });
    open.put(createEvent("a"));
    open.put(createEvent("b"));
    expect(() => open.put(createEvent("c"))).toThrow("capacity 2 full");
    await open.rollback();
    open.close();
    await putAll(channel, events(5));
    expect(channel.size).toBe(5);
  });
});

describe("interleaved transactions", () => {
  test("many producers and consumers interleaved across awaits deliver every event exactly once, in per-producer order", async () => {
    const clock = new VirtualClock();
    const channel = new MemoryChannel("mc", { capacity: 20, transactionCapacity: 7, keepAlive: 1 }, clock);
    channel.start();
    const producers = 6;
    const perProducer = 60;
    let finishedProducers = 0;
    let maxOccupied = 0;
    const produce = async (p: number) => {
      for (let sent = 0; sent < perProducer; ) {
        const n = Math.min(1 + ((p + sent) % 7), perProducer - sent);
        const batch = events(n, `p${p}`, sent);
        try {
          await putAll(channel, batch);
          sent += n;
        } catch (err) {
          if (!(err instanceof ChannelFullException)) throw err;
        }
        await clock.sleep(1 + (p % 3));
      }
      finishedProducers++;
    };
    const received: string[] = [];
    const consume = async (c: number) => {
      for (;;) {
        const tx = channel.getTransaction();
        tx.begin();
        const got: string[] = [];
        for (let i = 0; i < 1 + c * 2; i++) {
          const e = tx.take();
          if (e === null) break;
          got.push(bodyText(e));
        }
        maxOccupied = Math.max(maxOccupied, channel.getCapacity() - channel.remainingCapacity);
        await clock.sleep(c + 1); // hold the taken events across an await
        // Every third batch is rolled back and retaken later.
        if (got.length > 0 && (received.length + c) % 3 === 0) {
          await tx.rollback();
        } else {
          await tx.commit();
          received.push(...got);
        }
        tx.close();
        if (got.length === 0) {
          if (finishedProducers === producers && channel.size === 0) return;
          await clock.sleep(2);
        }
      }
    };
    const all = Promise.all([...Array.from({ length: producers }, (_, p) => produce(p)), ...Array.from({ length: 3 }, (_, c) => consume(c))]);
    let settled = false;
    void all.then(() => (settled = true));
    for (let i = 0; i < 100_000 && !settled; i++) await clock.step();
    await all;
    expect(received.length).toBe(producers * perProducer);
    expect(new Set(received).size).toBe(received.length);
    expect(maxOccupied).toBeLessThanOrEqual(20);
    // Each producer's events arrive in the order it sent them.
    for (let p = 0; p < producers; p++) {
      const mine = received.filter((b) => b.startsWith(`p${p} `)).map((b) => Number(b.split(" ")[1]));
      expect(mine).toEqual([...mine].sort((x, y) => x - y));
    }
    const c = channel.counter.values;
    expect(c.EventPutSuccessCount).toBe(producers * perProducer);
    expect(c.EventTakeSuccessCount).toBe(producers * perProducer);
    expect(c.ChannelSize).toBe(0);
    expect(channel.remainingCapacity).toBe(20);
  });
});

describe("putNow (a put transaction committed at once, when it needs no wait)", () => {
  test("it leaves the queue, counters, position and listeners as a committed put transaction does", async () => {
    const viaTx = make({ capacity: 50, transactionCapacity: 20, byteCapacity: 4000 });
    const now = make({ capacity: 50, transactionCapacity: 20, byteCapacity: 4000 });
    const woken = [0, 0];
    viaTx.channel.onPutsCommitted(() => woken[0]++);
    now.channel.onPutsCommitted(() => woken[1]++);
    const batch = [...events(9), createEvent(new Uint8Array(250))];
    const tx = viaTx.channel.getTransaction();
    tx.begin();
    tx.putAll(batch);
    tx.setSourcePosition("r1", "at-10");
    await tx.commit();
    tx.close();
    expect(now.channel.putNow(batch, { source: "r1", value: "at-10" })).toBe(true);
    expect(now.channel.counter.values).toEqual(viaTx.channel.counter.values);
    expect(now.channel.counter.values).toMatchObject({ EventPutAttemptCount: 10, EventPutSuccessCount: 10, ChannelSize: 10 });
    expect(now.channel.remainingCapacity).toBe(viaTx.channel.remainingCapacity);
    expect(now.channel.remainingByteSlots).toBe(viaTx.channel.remainingByteSlots);
    expect(now.channel.sourcePosition("r1")).toBe("at-10");
    expect(woken).toEqual([1, 1]);
    expect(await drain(now.channel)).toEqual(await drain(viaTx.channel));
    // A position alone (a batch interceptors emptied) is stored too, and wakes nobody.
    expect(now.channel.putNow([], { source: "r1", value: "at-12" })).toBe(true);
    expect(now.channel.sourcePosition("r1")).toBe("at-12");
    expect(woken[1]).toBe(1);
  });

  test("no room, no byte room or more than transactionCapacity: false, with nothing queued, taken or counted", async () => {
    const { channel } = make({ capacity: 10, transactionCapacity: 5, byteCapacity: 1000 }); // 8 byte slots
    expect(channel.putNow(events(5), undefined)).toBe(true);
    const before = { ...channel.counter.values };
    const free = [channel.remainingCapacity, channel.remainingByteSlots];
    expect(channel.putNow(events(6), undefined)).toBe(false); // over transactionCapacity
    expect(channel.putNow(events(4), undefined)).toBe(false); // 4 byte slots, 3 free
    expect(channel.putNow([createEvent(new Uint8Array(301))], undefined)).toBe(false); // 4 byte slots
    expect(channel.counter.values).toEqual(before);
    expect([channel.remainingCapacity, channel.remainingByteSlots]).toEqual(free);
    expect(channel.size).toBe(5);
    expect(channel.putNow(events(3, "more"), undefined)).toBe(true);
    expect(channel.size).toBe(8);
    // Room enough, but more than one transaction holds: left to the transaction, which refuses it.
    const roomy = make({ capacity: 100, transactionCapacity: 5 }).channel;
    expect(roomy.putNow(events(6), undefined)).toBe(false);
    expect(roomy.size).toBe(0);
    expect(roomy.counter.values.EventPutAttemptCount).toBe(0);
  });

  test("a commit already waiting for room keeps its turn: putNow does not pass it", async () => {
    const { channel, clock } = make({ capacity: 5, transactionCapacity: 5 });
    expect(channel.putNow(events(4, "old"), undefined)).toBe(true);
    const waiting = watch(putAll(channel, events(3, "waiting")));
    await clock.flush();
    expect(waiting.done).toBe(false);
    expect(await takeAll(channel, 2)).toEqual(["old 0", "old 1"]); // 3 free: the waiter fits
    await clock.flush();
    expect(waiting.done).toBe(true);
    const blocked = watch(putAll(channel, events(2, "second")));
    await clock.flush();
    expect(await takeAll(channel, 1)).toEqual(["old 2"]); // 1 free, the waiter wants 2
    expect(channel.putNow(events(1, "late"), undefined)).toBe(false);
    expect(await takeAll(channel, 1)).toEqual(["old 3"]);
    await clock.flush();
    expect(blocked.done).toBe(true);
    expect(await drain(channel)).toEqual(["waiting 0", "waiting 1", "waiting 2", "second 0", "second 1"]);
  });
});
