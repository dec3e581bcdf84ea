import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { definition as fileChannel } from "../../src/components/channels/file/index.ts";
import { definition as spillableChannel } from "../../src/components/channels/spillable-memory/index.ts";
import { componentContext } from "../../src/components/component.ts";
import type { Channel } from "../../src/core/channel.ts";
import { SinkCounter } from "../../src/core/counters.ts";
import { ChannelException, EventDeliveryException } from "../../src/core/errors.ts";
import { createEvent, type Event } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import type { Transaction } from "../../src/core/transaction.ts";
import { TakeLoop, type TakeLoopOptions } from "../../src/pipeline/take-loop.ts";

const decoder = new TextDecoder();
const bodies = (events: readonly Event[]) => events.map((e) => decoder.decode(e.body));

async function channelWith(n: number, transactionCapacity = 100): Promise<MemoryChannel> {
  const channel = new MemoryChannel("c1", { capacity: 1000, transactionCapacity });
  channel.start();
  for (let i = 0; i < n; ) {
    const tx = channel.getTransaction();
    tx.begin();
    for (const end = Math.min(n, i + transactionCapacity); i < end; i++) tx.put(createEvent(`e${i}`));
    await tx.commit();
    tx.close();
  }
  return channel;
}

async function remaining(channel: MemoryChannel): Promise<string[]> {
  const tx = channel.getTransaction();
  tx.begin();
  const out: Event[] = [];
  for (let e = tx.take(); e !== null; e = tx.take()) out.push(e);
  await tx.commit();
  tx.close();
  return bodies(out);
}

function loop(options: Partial<TakeLoopOptions> & Pick<TakeLoopOptions, "deliver">) {
  const counter = new SinkCounter("k1");
  const logger = new MemoryLogger();
  return { loop: new TakeLoop({ label: "sink k1", logger, counter, batchSize: 3, ...options }), counter: counter.values, logger };
}

describe("sink take loop", () => {
  test("takes up to the batch size per transaction, commits, and counts batches as Flume's SinkCounter", async () => {
    const channel = await channelWith(4);
    const seen: string[][] = [];
    const { loop: l, counter } = loop({ deliver: (events) => void seen.push(bodies(events)) });
    expect(await l.process(channel)).toBe("READY");
    expect(await l.process(channel)).toBe("BACKOFF"); // ran dry after one event
    expect(await l.process(channel)).toBe("BACKOFF"); // empty: deliver is not called
    expect(seen).toEqual([["e0", "e1", "e2"], ["e3"]]);
    expect(counter).toMatchObject({ BatchCompleteCount: 1, BatchUnderflowCount: 1, BatchEmptyCount: 1, EventDrainAttemptCount: 4, EventDrainSuccessCount: 4, EventWriteFail: 0 });
    // No take beyond the batch size: 3, then 1 + the empty one, then the empty one.
    expect(channel.counter.values.EventTakeAttemptCount).toBe(6);
    expect(channel.size).toBe(0);
  });

  test("underflow READY (the RPC sinks): a short batch does not make the runner wait; an empty one does", async () => {
    const channel = await channelWith(2);
    const { loop: l } = loop({ underflow: "READY", deliver: () => {} });
    expect(await l.process(channel)).toBe("READY");
    expect(await l.process(channel)).toBe("BACKOFF");
  });

  test("a verdict rolls the batch back, sets the status and what counts as drained", async () => {
    const channel = await channelWith(2);
    const { loop: l, counter } = loop({ deliver: () => ({ commit: false, status: "BACKOFF", drained: 1 }) });
    expect(await l.process(channel)).toBe("BACKOFF");
    expect(counter).toMatchObject({ EventDrainAttemptCount: 2, EventDrainSuccessCount: 1, EventWriteFail: 0 });
    expect(await remaining(channel)).toEqual(["e0", "e1"]);

    const again = await channelWith(2);
    const commit = loop({ deliver: () => ({ commit: true, status: "READY" }) });
    expect(await commit.loop.process(again)).toBe("READY");
    expect(commit.counter.EventDrainSuccessCount).toBe(2);
    expect(again.size).toBe(0);
  });

  test("a failing deliver: rolled back in order, EventWriteFail, EventDeliveryException naming the target with the cause, cleanup called", async () => {
    const channel = await channelWith(3);
    const boom = Object.assign(new Error("connect refused"), { code: "ECONNREFUSED" });
    const cleaned: unknown[] = [];
    const { loop: l, counter } = loop({
      target: () => "collector:4141",
      deliver: async () => {
        throw boom;
      },
      failed: (err) => void cleaned.push(err),
    });
    const err = await l.process(channel).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toBe("sink k1: failed to deliver 3 events to collector:4141: ECONNREFUSED: connect refused; rolled back into channel c1");
    expect((err as Error).cause).toBe(boom);
    expect(cleaned).toEqual([boom]);
    expect(counter).toMatchObject({ EventWriteFail: 1, ChannelReadFail: 0, EventDrainSuccessCount: 0 });
    expect(await remaining(channel)).toEqual(["e0", "e1", "e2"]);
  });

  test("a channel's error counts ChannelReadFail: a batch larger than the channel's transactionCapacity", async () => {
    const channel = await channelWith(5, 2);
    const { loop: l, counter } = loop({ deliver: () => {} });
    const err = await l.process(channel).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^sink k1: unable to take events from channel c1: Take list .* capacity 2 full.*; 2 events rolled back$/);
    expect((err as Error).cause).toBeInstanceOf(ChannelException);
    expect(counter).toMatchObject({ ChannelReadFail: 1, EventWriteFail: 0 });
    expect(channel.size).toBe(5);
  });

  test("a failed commit rolls back and calls cleanup: the sink can undo a delivery the channel did not record", async () => {
    const channel = await channelWith(2);
    const orig = channel.getTransaction.bind(channel);
    channel.getTransaction = () => {
      const tx = orig();
      tx.commit = async () => {
        throw new ChannelException("log disk gone");
      };
      return tx;
    };
    let cleaned = 0;
    const { loop: l, counter } = loop({ deliver: () => {}, failed: () => void cleaned++ });
    const err = await l.process(channel).catch((e: unknown) => e);
    expect((err as Error).message).toBe("sink k1: delivered 2 events but channel c1 could not commit the take: log disk gone; rolled back, they will be delivered again");
    expect(cleaned).toBe(1);
    expect(counter.ChannelReadFail).toBe(1);
    expect(channel.size).toBe(2);
  });

  test("a rollback that fails too: both errors logged, the transaction closed, the original failure thrown", async () => {
    const channel = await channelWith(2);
    const orig = channel.getTransaction.bind(channel);
    let last: Transaction | null = null;
    channel.getTransaction = () => {
      const tx = orig();
      (tx as unknown as { doRollback(): void }).doRollback = () => {
        throw new ChannelException("rollback record not written");
      };
      last = tx;
      return tx;
    };
    const original = new Error("destination said no");
    const { loop: l, logger } = loop({
      deliver: () => {
        throw original;
      },
    });
    const err = await l.process(channel).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).cause).toBe(original);
    expect((last as Transaction | null)?.state).toBe("CLOSED");
    const errors = logger.lines.filter((line) => line.level === "error").map((line) => line.message);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("rollback record not written");
    expect(errors[0]).toContain("destination said no");
    expect(errors[0]).toContain("channel c1");
  });

  test("a rollback the verdict asked for that fails is the failure reported", async () => {
    const channel = await channelWith(1);
    const orig = channel.getTransaction.bind(channel);
    channel.getTransaction = () => {
      const tx = orig();
      (tx as unknown as { doRollback(): void }).doRollback = () => {
        throw new ChannelException("rollback record not written");
      };
      return tx;
    };
    const { loop: l, counter } = loop({ deliver: () => ({ commit: false, status: "READY" }) });
    const err = await l.process(channel).catch((e: unknown) => e);
    expect((err as Error).message).toBe("sink k1: rolling back 1 event into channel c1 failed: rollback record not written");
    expect(counter.ChannelReadFail).toBe(1);
  });
});

/** A promise settled from outside: a delivery the test acknowledges or fails when it wants. */
function deferred(): { promise: Promise<void>; resolve(): void; reject(err: Error): void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe("sink take loop with batches in flight", () => {
  function pipelined(inFlight: number) {
    const deliveries: { bodies: string[]; ack: ReturnType<typeof deferred> }[] = [];
    const failedWith: unknown[] = [];
    const made = loop({
      inFlight,
      deliver: (events) => {
        const ack = deferred();
        deliveries.push({ bodies: bodies(events), ack });
        return ack.promise;
      },
      failed: (err) => void failedWith.push(err),
    });
    return { ...made, deliveries, failedWith };
  }

  test("up to inFlight batches are taken before the first is acknowledged; each take commits when its own batch is", async () => {
    const channel = await channelWith(9);
    const { loop: l, counter, deliveries } = pipelined(2);
    expect(await l.process(channel)).toBe("READY");
    expect(await l.process(channel)).toBe("READY");
    expect(l.inFlight).toBe(2);
    expect(deliveries.map((d) => d.bodies)).toEqual([["e0", "e1", "e2"], ["e3", "e4", "e5"]]);
    // A third call waits for a free place: the second batch is acknowledged first.
    let third = false;
    const next = l.process(channel).then((s) => ((third = true), s));
    await Bun.sleep(5);
    expect(third).toBe(false);
    deliveries[1].ack.resolve();
    expect(await next).toBe("READY");
    expect(counter.EventDrainSuccessCount).toBe(3);
    expect(deliveries[2].bodies).toEqual(["e6", "e7", "e8"]);
    // The first take is still open: its events are not in the channel, and not drained.
    expect(channel.size).toBe(0);
    deliveries[0].ack.resolve();
    deliveries[2].ack.resolve();
    await l.settle();
    expect(l.inFlight).toBe(0);
    expect(l.maxUnsettled).toBe(2);
    expect(counter).toMatchObject({ EventDrainAttemptCount: 9, EventDrainSuccessCount: 9, BatchCompleteCount: 3, EventWriteFail: 0 });
    expect(await l.process(channel)).toBe("BACKOFF");
    expect(channel.counter.values.EventTakeSuccessCount).toBe(9);
  });

  test("a batch in flight that fails is rolled back, and thrown by the next call once every batch in flight is settled", async () => {
    const channel = await channelWith(6);
    const { loop: l, counter, deliveries, failedWith } = pipelined(2);
    await l.process(channel);
    await l.process(channel);
    const refused = new Error("OUT_OF_ORDER_SEQUENCE_NUMBER");
    deliveries[0].ack.reject(new Error("connection closed"));
    deliveries[1].ack.reject(refused);
    const err = await l.process(channel).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect((err as Error).message).toBe("sink k1: failed to deliver 3 events: connection closed; rolled back into channel c1 (and 1 more batch in flight, rolled back too)");
    expect(failedWith).toHaveLength(2);
    expect(counter).toMatchObject({ EventWriteFail: 2, EventDrainSuccessCount: 0 });
    expect(l.inFlight).toBe(0);
    // Nothing lost: both batches are back (the later one's rollback put it at the head).
    expect(channel.size).toBe(6);
    expect((await remaining(channel)).sort()).toEqual(["e0", "e1", "e2", "e3", "e4", "e5"]);
    // The failure is thrown once.
    expect(await l.process(channel)).toBe("BACKOFF");
  });

  test("settle() (a sink's stop) waits for every batch in flight: committed if acknowledged, else rolled back and logged", async () => {
    const channel = await channelWith(6);
    const { loop: l, counter, deliveries, logger } = pipelined(3);
    await l.process(channel);
    await l.process(channel);
    let settled = false;
    const stopping = l.settle().then(() => (settled = true));
    await Bun.sleep(5);
    expect(settled).toBe(false);
    deliveries[0].ack.resolve();
    deliveries[1].ack.reject(new Error("broker gone"));
    await stopping;
    expect(counter).toMatchObject({ EventDrainSuccessCount: 3, EventWriteFail: 1 });
    expect(await remaining(channel)).toEqual(["e3", "e4", "e5"]);
    expect(logger.lines.filter((line) => line.level === "warn").map((line) => line.message)).toEqual(["sink k1: failed to deliver 3 events: broker gone; rolled back into channel c1"]);
  });

  test("a batch that fails before it is handed to deliver fails its own call, as with one batch at a time", async () => {
    const channel = await channelWith(5, 2);
    const { loop: l, counter } = pipelined(2);
    const err = await l.process(channel).catch((e: unknown) => e);
    expect((err as Error).cause).toBeInstanceOf(ChannelException);
    expect(counter.ChannelReadFail).toBe(1);
    expect(channel.size).toBe(5);
  });
});

describe("batches in flight on the durable channels", () => {
  // Each take is its own transaction: the file and spillable channels take several at once (as Flume's, for several sinks).
  for (const [type, props] of [
    ["file", { capacity: "1000", transactionCapacity: "3" }],
    ["spillablememory", { memoryCapacity: "4", overflowCapacity: "1000", transactionCapacity: "3" }],
  ] as const) {
    test(`${type} channel: two takes in flight, the later acknowledged first, the earlier failed: nothing lost`, async () => {
      const def = type === "file" ? fileChannel : spillableChannel;
      const dir = mkdtempSync(path.join(os.tmpdir(), `flume-take-loop-${type}-`));
      const { options, errors } = def.parse({ checkpointDir: path.join(dir, "checkpoint"), dataDirs: path.join(dir, "data"), ...props });
      expect(errors).toEqual([]);
      const channel = def.create(options as never, componentContext("c1", { agentName: "a1" })) as Channel;
      await channel.start();
      try {
        for (let i = 0; i < 6; i += 3) {
          const tx = channel.getTransaction();
          tx.begin();
          for (let j = i; j < i + 3; j++) tx.put(createEvent(`e${j}`));
          await tx.commit();
          tx.close();
        }
        const acks: ReturnType<typeof deferred>[] = [];
        const seen: string[][] = [];
        const { loop: l, counter } = loop({
          inFlight: 2,
          deliver: (events) => {
            seen.push(bodies(events));
            const ack = deferred();
            acks.push(ack);
            return ack.promise;
          },
        });
        expect(await l.process(channel)).toBe("READY");
        expect(await l.process(channel)).toBe("READY");
        acks[1].resolve();
        acks[0].reject(new Error("refused"));
        await expect(l.process(channel)).rejects.toThrow("sink k1: failed to deliver 3 events: refused; rolled back into channel c1");
        expect(counter.EventDrainSuccessCount).toBe(3);
        // The failed batch is back and is taken again.
        expect(await l.process(channel)).toBe("READY");
        acks[2].resolve();
        await l.settle();
        expect(seen).toEqual([["e0", "e1", "e2"], ["e3", "e4", "e5"], ["e0", "e1", "e2"]]);
        expect(counter.EventDrainSuccessCount).toBe(6);
        expect(await l.process(channel)).toBe("BACKOFF");
      } finally {
        await channel.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
