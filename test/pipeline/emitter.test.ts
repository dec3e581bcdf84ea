// The one emission path of every source: Flume's source counters, offer (one attempt) and
// deliver (retry with one capped exponential backoff, split to transactionCapacity, stop).
import { describe, expect, test } from "bun:test";
import type { SourcePosition } from "../../src/core/channel.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { SourceCounter } from "../../src/core/counters.ts";
import { ChannelException } from "../../src/core/errors.ts";
import { createEvent, type Event } from "../../src/core/event.ts";
import type { Interceptor } from "../../src/core/interceptor.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { EmitError, RETRY_FIRST_MS, RETRY_MAX_MS, SourceEmitter, type EmitterOptions } from "../../src/pipeline/emitter.ts";
import { takeAll } from "../support/core.ts";

/** A memory channel that records the transactions committed on it and the positions they carried. */
class RecordingChannel extends MemoryChannel {
  readonly commits: { events: number; position: string | undefined }[] = [];
  override putNow(events: readonly Event[], position?: SourcePosition): boolean {
    const done = super.putNow(events, position);
    if (done) this.commits.push({ events: events.length, position: position?.value });
    return done;
  }
  override getTransaction() {
    const tx = super.getTransaction();
    let events = 0;
    let position: string | undefined;
    const put = tx.put.bind(tx);
    const setPosition = tx.setSourcePosition.bind(tx);
    const commit = tx.commit.bind(tx);
    const putAll = tx.putAll.bind(tx);
    tx.put = (e: Event) => {
      events++;
      put(e);
    };
    tx.putAll = (es: readonly Event[]) => {
      events += es.length;
      putAll(es);
    };
    tx.setSourcePosition = (source: string, value: string) => {
      position = value;
      setPosition(source, value);
    };
    tx.commit = async () => {
      await commit();
      this.commits.push({ events, position });
    };
    return tx;
  }
}

function rig(channelOptions: { capacity: number; transactionCapacity: number }, options: Partial<EmitterOptions> = {}, interceptors: Interceptor[] = []) {
  const clock = new VirtualClock(0);
  const channel = new RecordingChannel("c1", { ...channelOptions, keepAlive: 0 }, clock);
  channel.start();
  const processor = new ChannelProcessor(new ReplicatingChannelSelector([channel]), interceptors);
  const source = { name: "r1", counter: new SourceCounter("r1", clock), getChannelProcessor: () => processor };
  const emitter = new SourceEmitter(source, { clock, ...options });
  emitter.start();
  return { clock, channel, counter: source.counter.values, emitter };
}

const batch = (n: number, from = 0) => Array.from({ length: n }, (_, i) => createEvent(`e${from + i}`));
const exploding: Interceptor = {
  intercept: () => null,
  interceptAll: () => {
    throw new Error("interceptor exploded");
  },
};

/** The delay of each retry deliver() waits, read from the clock, until the promise settles. */
async function waits(clock: VirtualClock, done: () => boolean, max: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < max && !done(); i++) {
    await clock.flush();
    const next = clock.nextTimerAt();
    if (next === undefined) break;
    out.push(next - clock.now());
    await clock.advanceTo(next);
  }
  return out;
}

describe("offer: one attempt, Flume's counters", () => {
  test("a committed batch counts AppendBatch and Event received/accepted", async () => {
    const r = rig({ capacity: 10, transactionCapacity: 10 });
    expect(await r.emitter.offer(batch(3))).toBeNull();
    expect(r.counter).toMatchObject({ AppendBatchReceivedCount: 1, AppendBatchAcceptedCount: 1, EventReceivedCount: 3, EventAcceptedCount: 3, ChannelWriteFail: 0 });
  });

  test("a refused batch comes back as the ChannelException, counted as ChannelWriteFail; nothing is retried", async () => {
    const r = rig({ capacity: 2, transactionCapacity: 2 });
    await r.emitter.offer(batch(2));
    const refused = await r.emitter.offer(batch(2));
    expect(refused).toBeInstanceOf(ChannelException);
    expect(r.counter).toMatchObject({ AppendBatchReceivedCount: 2, AppendBatchAcceptedCount: 1, EventReceivedCount: 4, EventAcceptedCount: 2, ChannelWriteFail: 1 });
    expect(r.clock.pendingTimers).toBe(0);
  });

  test("a single append counts Append received/accepted", async () => {
    const r = rig({ capacity: 10, transactionCapacity: 10 });
    expect(await r.emitter.offerOne(createEvent("one"))).toBeNull();
    expect(r.counter).toMatchObject({ AppendReceivedCount: 1, AppendAcceptedCount: 1, EventReceivedCount: 1, EventAcceptedCount: 1, AppendBatchReceivedCount: 0 });
  });

  test('counting "accepted" counts only accepted events and batches, as Flume\'s seq source', async () => {
    const r = rig({ capacity: 10, transactionCapacity: 10 }, { counting: "accepted" });
    await r.emitter.offer(batch(3));
    await r.emitter.offerOne(createEvent("one"));
    expect(r.counter).toMatchObject({ EventReceivedCount: 0, AppendBatchReceivedCount: 0, AppendReceivedCount: 0, AppendAcceptedCount: 0, AppendBatchAcceptedCount: 1, EventAcceptedCount: 4 });
  });

  test("a failure other than the channel's is returned as EmitError, counted as GenericProcessingFail and logged", async () => {
    const logger = new MemoryLogger();
    const r = rig({ capacity: 10, transactionCapacity: 10 }, { logger, label: "test source r1" }, [exploding]);
    const failed = await r.emitter.offer(batch(2), "127.0.0.1:9");
    expect(failed).toBeInstanceOf(EmitError);
    expect(failed?.message).toBe("test source r1: could not write 2 events from 127.0.0.1:9: interceptor exploded");
    expect(r.counter).toMatchObject({ GenericProcessingFail: 1, ChannelWriteFail: 0 });
    expect(logger.lines).toEqual([{ level: "error", message: failed?.message as string }]);
  });
});

describe("deliver: retried until committed", () => {
  test(`waits ${RETRY_FIRST_MS} ms, doubling up to ${RETRY_MAX_MS} ms, then commits once there is room`, async () => {
    const r = rig({ capacity: 2, transactionCapacity: 2 });
    await r.emitter.offer(batch(2));
    const state: { result?: boolean } = {};
    const p = r.emitter.deliver(batch(2, 2)).then((ok) => (state.result = ok));
    expect(await waits(r.clock, () => state.result !== undefined, 9)).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    await takeAll(r.channel, 2);
    await waits(r.clock, () => state.result !== undefined, 1);
    await p;
    expect(state.result).toBe(true);
    expect(r.counter).toMatchObject({ ChannelWriteFail: 10, AppendBatchReceivedCount: 2, AppendBatchAcceptedCount: 2, EventReceivedCount: 4, EventAcceptedCount: 4 });
    expect(await takeAll(r.channel, 2)).toEqual(["e2", "e3"]);
  });

  test("a source's own cap (spooldir's maxBackoff) bounds the waits", async () => {
    const r = rig({ capacity: 1, transactionCapacity: 1 }, { maxBackoff: 1000 });
    await r.emitter.offer(batch(1));
    let done = false;
    void r.emitter.deliver(batch(1)).then(() => (done = true));
    expect(await waits(r.clock, () => done, 7)).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    r.emitter.stop();
  });

  test("a cap below the first wait makes every wait the cap", async () => {
    const r = rig({ capacity: 1, transactionCapacity: 1 }, { maxBackoff: 30 });
    await r.emitter.offer(batch(1));
    let done = false;
    void r.emitter.deliver(batch(1)).then(() => (done = true));
    expect(await waits(r.clock, () => done, 3)).toEqual([30, 30, 30]);
    r.emitter.stop();
  });

  test("a batch larger than transactionCapacity goes in parts; the position goes with the last part only", async () => {
    const r = rig({ capacity: 100, transactionCapacity: 4 });
    expect(await r.emitter.deliver(batch(10), { position: { source: "r1", value: "after-10" } })).toBe(true);
    expect(r.channel.commits).toEqual([
      { events: 4, position: undefined },
      { events: 4, position: undefined },
      { events: 2, position: "after-10" },
    ]);
    expect(r.counter).toMatchObject({ AppendBatchReceivedCount: 1, AppendBatchAcceptedCount: 1, EventReceivedCount: 10, EventAcceptedCount: 10, ChannelWriteFail: 0 });
  });

  test("stop() ends a wait at once: deliver resolves false; a delivery after stop gets one attempt", async () => {
    const r = rig({ capacity: 1, transactionCapacity: 1 });
    await r.emitter.offer(batch(1));
    const p = r.emitter.deliver(batch(1));
    await r.clock.flush();
    expect(r.clock.pendingTimers).toBe(1);
    r.emitter.stop();
    expect(await p).toBe(false);
    expect(r.clock.pendingTimers).toBe(0);
    const failsBefore = r.counter.ChannelWriteFail;
    expect(await r.emitter.deliver(batch(1))).toBe(false);
    expect(r.counter.ChannelWriteFail).toBe(failsBefore + 1);
    await takeAll(r.channel, 1);
    expect(await r.emitter.deliver(batch(1))).toBe(true);
  });

  test("concurrent deliveries (several clients) all wait, and stop() ends every wait", async () => {
    const r = rig({ capacity: 1, transactionCapacity: 1 });
    await r.emitter.offer(batch(1));
    const all = Promise.all([r.emitter.deliver(batch(1)), r.emitter.deliver(batch(1)), r.emitter.deliver(batch(1))]);
    await r.clock.flush();
    expect(r.clock.pendingTimers).toBe(3);
    r.emitter.stop();
    expect(await all).toEqual([false, false, false]);
  });

  test("a lasting full channel logs one warning, then one summary per interval, while ChannelWriteFail counts every attempt", async () => {
    const logger = new MemoryLogger();
    const r = rig({ capacity: 1, transactionCapacity: 1 }, { logger, label: "test source r1", maxBackoff: 100 });
    await r.emitter.offer(batch(1));
    logger.lines.length = 0;
    void r.emitter.deliver(batch(1), { from: "127.0.0.1:9" });
    await r.clock.flush();
    for (let i = 0; i < 99; i++) await r.clock.advance(100);
    expect(r.counter.ChannelWriteFail).toBe(100);
    const warned = logger.lines.filter((l) => l.level === "warn").map((l) => l.message);
    expect(warned.length).toBe(1);
    expect(warned[0]).toStartWith("test source r1: channel refused 1 events from 127.0.0.1:9 (");
    await r.clock.advance(100);
    const after = logger.lines.filter((l) => l.level === "warn").map((l) => l.message);
    expect(after.length).toBe(2);
    expect(after[1]).toContain("more like this in the last 10 s");
    r.emitter.stop();
  });

  test("a failure other than the channel's is thrown as EmitError, counted once, not retried", async () => {
    const logger = new MemoryLogger();
    const r = rig({ capacity: 10, transactionCapacity: 10 }, { logger, label: "test source r1" }, [exploding]);
    let thrown: unknown;
    await r.emitter.deliver(batch(2)).catch((err) => (thrown = err));
    expect(thrown).toBeInstanceOf(EmitError);
    expect(r.counter).toMatchObject({ GenericProcessingFail: 1, ChannelWriteFail: 0, AppendBatchAcceptedCount: 0 });
    expect(r.clock.pendingTimers).toBe(0);
    r.emitter.failed(thrown, "2 lines dropped");
    expect(r.counter.GenericProcessingFail).toBe(1);
    expect(logger.lines.at(-1)).toEqual({ level: "error", message: "test source r1: could not write 2 events: interceptor exploded; 2 lines dropped" });
    r.emitter.failed(new Error("disk on fire"), "reading");
    expect(r.counter.GenericProcessingFail).toBe(2);
  });
});
