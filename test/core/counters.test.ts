// Counters named and rendered as Flume's (ChannelCounter, SourceCounter, SinkCounter).
import { describe, expect, test } from "bun:test";
import { CHANNEL_COUNTERS, javaDouble, SINK_COUNTERS, SinkCounter, SOURCE_COUNTERS, SourceCounter } from "../../src/core/counters.ts";
import { createEvent } from "../../src/core/event.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { events, putAll, takeAll } from "../support/core.ts";

describe("javaDouble renders numbers as Java's Double.toString", () => {
  test.each([
    [0, "0.0"],
    [45.5, "45.5"],
    [100, "100.0"],
    [1, "1.0"],
    [33.333333333333336, "33.333333333333336"],
    [0.001, "0.001"],
    [0.0001, "1.0E-4"],
    [1e7, "1.0E7"],
    [12345678.9, "1.23456789E7"],
    [-2.5, "-2.5"],
  ])("%p -> %s", (value, text) => {
    expect(javaDouble(value)).toBe(text);
  });
});

describe("channel counters", () => {
  test("a channel's snapshot has Flume's keys, every value a string", () => {
    const clock = new VirtualClock(1_700_000_000_000);
    const c = new MemoryChannel("c1", {}, clock);
    c.start();
    const snap = c.counter.snapshot();
    for (const key of [...CHANNEL_COUNTERS, "ChannelFillPercentage", "StartTime", "StopTime", "Type"]) expect(snap).toHaveProperty(key);
    expect(snap.Type).toBe("CHANNEL");
    expect(snap.ChannelCapacity).toBe("100");
    expect(snap.ChannelSize).toBe("0");
    expect(snap.ChannelFillPercentage).toBe("0.0");
    expect(snap.StartTime).toBe("1700000000000");
    expect(snap.StopTime).toBe("0");
    for (const v of Object.values(snap)) expect(typeof v).toBe("string");
  });

  test("attempts count every put and take call; successes count only committed events", async () => {
    const c = new MemoryChannel("c1", { capacity: 10, transactionCapacity: 3, keepAlive: 0 }, new VirtualClock());
    c.start();
    await putAll(c, events(3));
    const rolled = c.getTransaction();
    rolled.begin();
    rolled.put(createEvent("a"));
    rolled.put(createEvent("b"));
    await rolled.rollback();
    rolled.close();
    const over = c.getTransaction();
    over.begin();
    for (let i = 0; i < 3; i++) over.put(createEvent("x"));
    expect(() => over.put(createEvent("x"))).toThrow();
    await over.rollback();
    over.close();
    await takeAll(c, 2);
    const empty = c.getTransaction();
    empty.begin();
    empty.take();
    empty.take();
    await empty.rollback();
    empty.close();
    const v = c.counter.values;
    expect(v.EventPutAttemptCount).toBe(3 + 2 + 4);
    expect(v.EventPutSuccessCount).toBe(3);
    expect(v.EventTakeAttemptCount).toBe(2 + 2);
    expect(v.EventTakeSuccessCount).toBe(2);
    expect(v.ChannelSize).toBe(1);
    expect(v.EventPutSuccessCount - v.EventTakeSuccessCount).toBe(v.ChannelSize);
  });

  test("ChannelSize follows rollbacks of takes; ChannelFillPercentage is size*100/capacity ('45.5')", async () => {
    const c = new MemoryChannel("c1", { capacity: 200, transactionCapacity: 100 }, new VirtualClock());
    c.start();
    await putAll(c, events(91));
    expect(c.counter.snapshot().ChannelFillPercentage).toBe("45.5");
    const tx = c.getTransaction();
    tx.begin();
    tx.take();
    await tx.rollback();
    tx.close();
    expect(c.counter.values.ChannelSize).toBe(91);
    await takeAll(c, 91);
    expect(c.counter.snapshot().ChannelFillPercentage).toBe("0.0");
  });

  test("stop records StopTime; a restart resets the event counts but keeps size and capacity, as Flume", async () => {
    const clock = new VirtualClock(1000);
    const c = new MemoryChannel("c1", {}, clock);
    c.start();
    await putAll(c, events(4));
    await clock.advance(500);
    c.stop();
    expect(c.counter.snapshot().StopTime).toBe("1500");
    expect(c.getLifecycleState()).toBe("STOP");
    await clock.advance(500);
    c.start();
    const snap = c.counter.snapshot();
    expect(snap.StartTime).toBe("2000");
    expect(snap.StopTime).toBe("0");
    expect(snap.EventPutSuccessCount).toBe("0");
    expect(snap.ChannelSize).toBe("4");
    expect(snap.ChannelCapacity).toBe("100");
  });
});

describe("source and sink counters", () => {
  test("a source counter has Flume's names and Type SOURCE", () => {
    const s = new SourceCounter("r1").snapshot();
    for (const key of ["EventReceivedCount", "EventAcceptedCount", "AppendReceivedCount", "AppendAcceptedCount", "AppendBatchReceivedCount", "AppendBatchAcceptedCount", "OpenConnectionCount", "EventReadFail", "ChannelWriteFail", "GenericProcessingFail"]) {
      expect(s[key]).toBe("0");
    }
    expect(SOURCE_COUNTERS.length).toBe(10);
    expect(s.Type).toBe("SOURCE");
  });

  test("a sink counter has Flume's names and Type SINK", () => {
    const counter = new SinkCounter("k1");
    counter.inc("EventDrainSuccessCount", 5);
    const s = counter.snapshot();
    for (const key of ["ConnectionCreatedCount", "ConnectionClosedCount", "ConnectionFailedCount", "BatchEmptyCount", "BatchUnderflowCount", "BatchCompleteCount", "EventDrainAttemptCount", "EventDrainSuccessCount", "EventWriteFail", "ChannelReadFail"]) {
      expect(s).toHaveProperty(key);
    }
    expect(SINK_COUNTERS.length).toBe(10);
    expect(s.EventDrainSuccessCount).toBe("5");
    expect(s.Type).toBe("SINK");
  });
});
