import { describe, expect, test } from "bun:test";
import { type Event, bodyText } from "../../src/core/event.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import type { Cause } from "../../src/simulate/causes.ts";
import { Epoch, type SimWorld } from "../../src/simulate/components.ts";
import { SIM_ID_HEADER } from "../../src/simulate/event-ids.ts";
import { SimKafkaChannel } from "../../src/simulate/kafka-channel.ts";
import { SimBroker } from "../../src/simulate/kafka.ts";
import { DEFAULTS } from "../../src/simulate/options.ts";
import { seededRandom } from "../../src/simulate/rng.ts";
import { takeOpen } from "../support/core.ts";

const event = (id: number): Event => ({ headers: { [SIM_ID_HEADER]: String(id) }, body: new TextEncoder().encode(`event ${id}`) });

/** A world that only records what the channel tells it. */
function world() {
  const landed: { ids: readonly number[]; cause: Cause }[] = [];
  const w = {
    sinkFail: DEFAULTS.failSink,
    sinkRandom: Math.random,
    partialRandom: Math.random,
    sinkBatches: 0,
    produced() {},
    accepted() {},
    putFailed() {},
    delivered() {},
    sinkFailed() {},
    wrote() {},
    resendTag() {},
    brokerLost() {},
    landed(_ch: number, ids: readonly number[], cause: Cause) {
      landed.push({ ids, cause });
    },
    say() {},
  } satisfies SimWorld;
  return { w, landed };
}

describe("the Kafka channel on the simulated broker", () => {
  const spec = { topic: "t", group: "g", idempotent: true, requestTimeoutMs: 30_000, lossy: false };

  async function setup() {
    const clock = new VirtualClock();
    const broker = new SimBroker(clock, 1, 0, seededRandom(1, 11));
    const { w, landed } = world();
    const epoch = new Epoch(1, clock);
    const channel = new SimKafkaChannel("c1", 0, spec, 100, broker, 10, epoch, w);
    channel.start();
    /** Runs an operation to its end, moving virtual time. */
    const run = async <T>(p: Promise<T>): Promise<T> => {
      let done = false;
      const out = p.finally(() => (done = true));
      while (!done && (await clock.step()));
      return out;
    };
    /** Another member of the group, started (c2 joins with epoch 1; c1 comes back after a crash with epoch 2). */
    const member = (name: string, index: number, epoch: number): SimKafkaChannel => {
      const m = new SimKafkaChannel(name, index, spec, 100, broker, 10, new Epoch(epoch, clock), w);
      m.start();
      return m;
    };
    return { clock, broker, channel, landed, run, w, member };
  }

  /** Takes five times in one transaction and commits it: the bodies taken, null for none. */
  async function takeFiveAndCommit(channel: SimKafkaChannel, run: <T>(p: Promise<T>) => Promise<T>): Promise<(string | null)[]> {
    const tx = channel.getTransaction();
    tx.begin();
    const taken = [tx.take(), tx.take(), tx.take(), tx.take(), tx.take()];
    await run(tx.commit());
    tx.close();
    return taken.map((e) => (e ? bodyText(e) : null));
  }

  /** Events 0 to 3 put in one committed transaction. */
  async function putFour(channel: SimKafkaChannel, run: <T>(p: Promise<T>) => Promise<T>): Promise<void> {
    const put = channel.getTransaction();
    put.begin();
    for (let i = 0; i < 4; i++) put.put(event(i));
    await run(put.commit());
    put.close();
  }

  test("a put commits once the broker acknowledged it; takes committed above one still open come back after a crash, from the group's committed offset", async () => {
    const { broker, channel, run, member } = await setup();
    await putFour(channel, run);
    // Two takes at once: the first holds 0 and 1, the second takes 2 and 3 and commits first.
    const first = takeOpen(channel, 2).events;
    const { tx: second, events: b } = takeOpen(channel, 2);
    expect([...first, ...b].map(bodyText)).toEqual(["event 0", "event 1", "event 2", "event 3"]);
    await run(second.commit());
    second.close();
    expect(broker.group("t", "g").committed).toEqual([0]);
    expect(channel.repeatable().map(bodyText)).toEqual(["event 2", "event 3"]);
    // The agent dies with the first take open: a new channel of the group reads from offset 0.
    channel.crash();
    const again = member("c1", 0, 2);
    expect(await takeFiveAndCommit(again, run)).toEqual(["event 0", "event 1", "event 2", "event 3", null]);
    expect(broker.group("t", "g").committed).toEqual([4]);
    expect(broker.drained).toBe(true);
  });

  test("a take open while another member joins and rolled back after it is not given back: the partition's owner reads each record once, from the committed offset", async () => {
    const { broker, channel, run, member } = await setup();
    await putFour(channel, run);
    const { tx: open, events: openTaken } = takeOpen(channel, 4);
    expect(openTaken.map(bodyText)).toEqual(["event 0", "event 1", "event 2", "event 3"]);
    // c2 joins: the group reads again from its committed offset 0; the one partition stays c1's (members in name order).
    const c2 = member("c2", 1, 1);
    await open.rollback();
    open.close();
    expect(await takeFiveAndCommit(channel, run)).toEqual(["event 0", "event 1", "event 2", "event 3", null]);
    expect(broker.group("t", "g").committed).toEqual([4]);
    expect(channel.repeatable()).toEqual([]);
    const other = c2.getTransaction();
    other.begin();
    expect(other.take()).toBeNull();
  });

  test("after another member joins, a take moves the group's offset only past what it took: takes committed above an open one before it come again, and a crash delivers every record not committed since", async () => {
    const { broker, channel, run, member } = await setup();
    await putFour(channel, run);
    const { tx: open, events: openTaken } = takeOpen(channel, 2);
    expect(openTaken.map(bodyText)).toEqual(["event 0", "event 1"]);
    const { tx: above, events: aboveTaken } = takeOpen(channel, 2);
    expect(aboveTaken.map(bodyText)).toEqual(["event 2", "event 3"]);
    await run(above.commit());
    above.close();
    expect(broker.group("t", "g").committed).toEqual([0]);
    // c2 joins: the group reads again from offset 0, the partition stays c1's.
    member("c2", 1, 1);
    await open.rollback();
    open.close();
    const one = channel.getTransaction();
    one.begin();
    expect(bodyText(one.take() as Event)).toBe("event 0");
    await run(one.commit());
    one.close();
    expect(broker.group("t", "g").committed).toEqual([1]);
    channel.crash();
    const again = member("c1", 0, 2);
    expect(await takeFiveAndCommit(again, run)).toEqual(["event 1", "event 2", "event 3", null, null]);
  });

  test("a take rolled back before another member joins is not taken again from this member's list: the partition's owner reads it once, from the committed offset", async () => {
    const { broker, channel, run, member } = await setup();
    await putFour(channel, run);
    const { tx: early, events: earlyTaken } = takeOpen(channel, 2);
    expect(earlyTaken.map(bodyText)).toEqual(["event 0", "event 1"]);
    await early.rollback();
    early.close();
    member("c2", 1, 1);
    expect(await takeFiveAndCommit(channel, run)).toEqual(["event 0", "event 1", "event 2", "event 3", null]);
    expect(broker.group("t", "g").committed).toEqual([4]);
  });

  test("a put whose acknowledgement is lost fails after the request timeout, and its records count as landed in the channel (lost-ack)", async () => {
    const clock = new VirtualClock();
    const broker = new SimBroker(clock, 2, 1, seededRandom(1, 11));
    const { w, landed } = world();
    const channel = new SimKafkaChannel("c1", 0, spec, 100, broker, 10, new Epoch(1, clock), w);
    channel.start();
    const put = channel.getTransaction();
    put.begin();
    put.put(event(7));
    put.put(event(8));
    const commit = put.commit();
    let error: unknown;
    commit.catch((err: unknown) => (error = err));
    while (error === undefined && (await clock.step()));
    expect(String(error)).toContain("no acknowledgement from topic t within request.timeout.ms 30000");
    expect(clock.now()).toBeGreaterThanOrEqual(30_000);
    expect(landed).toEqual([{ ids: [7, 8], cause: "lost-ack" }]);
    // Readable all the same.
    await put.rollback();
    put.close();
    const tx = channel.getTransaction();
    tx.begin();
    expect([tx.take(), tx.take()].map((e) => bodyText(e as Event)).sort()).toEqual(["event 7", "event 8"]);
  });
});
