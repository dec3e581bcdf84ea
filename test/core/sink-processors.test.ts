// Sink processors: default, failover and load_balance (Flume's TestFailoverSinkProcessor and
// TestLoadBalancingSinkProcessor), on virtual time.
import { describe, expect, test } from "bun:test";
import { ConfigurationError, EventDeliveryException } from "../../src/core/errors.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { DefaultSinkProcessor, FailoverSinkProcessor, LoadBalancingSinkProcessor, type SinkProcessor } from "../../src/core/sink-processors.ts";
import type { Status } from "../../src/core/sink.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { events, mulberry32, putAll, TestSink } from "../support/core.ts";

const START = 1_700_000_000_000;

function channel(clock: VirtualClock): MemoryChannel {
  const c = new MemoryChannel("ch", { capacity: 20_000, transactionCapacity: 1000 }, clock);
  c.start();
  return c;
}

async function fill(c: MemoryChannel, n: number, prefix = "test"): Promise<void> {
  for (let i = 0; i < n; i += 1000) await putAll(c, events(Math.min(1000, n - i), prefix, i));
}

function sinks(c: MemoryChannel, ...names: string[]): TestSink[] {
  return names.map((n) => {
    const s = new TestSink(n);
    s.setChannel(c);
    return s;
  });
}

/** Calls process() until it returns BACKOFF (as Flume's tests do), with a safety bound. */
async function untilBackoff(p: SinkProcessor): Promise<void> {
  let s: Status = "READY";
  for (let i = 0; i < 100_000 && s !== "BACKOFF"; i++) s = await p.process();
  expect(s).toBe("BACKOFF");
}

describe("default sink processor", () => {
  test("passes process() straight to its one sink and starts and stops it", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [s] = sinks(c, "k1");
    const p = new DefaultSinkProcessor(s);
    await p.start();
    expect(s.getLifecycleState()).toBe("START");
    expect(p.getLifecycleState()).toBe("START");
    await fill(c, 1);
    expect(await p.process()).toBe("READY");
    expect(await p.process()).toBe("BACKOFF");
    s.fail = true;
    await expect(p.process()).rejects.toBeInstanceOf(EventDeliveryException);
    await p.stop();
    expect(s.getLifecycleState()).toBe("STOP");
  });
});

describe("failover sink processor", () => {
  test("Flume's testFailover: the highest-priority live sink takes everything; recovered sinks come back after their penalty", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [s1, s2, s3] = sinks(c, "s1", "s2", "s3");
    s1.remaining = 10;
    s2.remaining = 50;
    s3.remaining = 100;
    for (const s of [s1, s2, s3]) s.readyWhenEmpty = true;
    const p = new FailoverSinkProcessor([s1, s2, s3], { priorities: { s1: 3, s2: 2, s3: 1 }, maxPenalty: 10000 }, clock);
    await p.start();
    for (const s of [s1, s2, s3]) expect(s.getLifecycleState()).toBe("START");

    const run = async () => {
      for (let i = 0; i < 1000 && c.size > 0; i++) await p.process();
    };
    await fill(c, 15);
    await run();
    expect([s1.received.length, s2.received.length]).toEqual([10, 5]);

    await fill(c, 50);
    await run();
    expect([s2.received.length, s3.received.length]).toEqual([50, 5]);

    s2.remaining = 20;
    await clock.advance(5000); // past the failed sinks' 2 s penalty
    await fill(c, 100);
    await run();
    expect([s1.received.length, s2.received.length, s3.received.length]).toEqual([10, 70, 85]);
    await p.stop();
  });

  test("a failed sink sits out min(maxpenalty, 1000 * 2^failures) ms: 2 s, 4 s, 8 s, then the cap", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [a, b] = sinks(c, "a", "b");
    a.fail = true;
    const p = new FailoverSinkProcessor([a, b], { priorities: { a: 10, b: 5 }, maxPenalty: 10000 }, clock);
    expect(await p.process()).toBe("BACKOFF"); // a failed, b (empty channel) answered
    const seen: number[] = [];
    for (let round = 0; round < 5; round++) {
      const [pen] = p.penalties();
      expect(pen.sink).toBe("a");
      seen.push(pen.until - clock.now());
      const callsBefore = a.calls;
      await clock.advance(pen.until - clock.now() - 1);
      await p.process();
      expect(a.calls).toBe(callsBefore); // not retried before its penalty is over
      await clock.advance(1);
      await p.process();
      expect(a.calls).toBe(callsBefore + 1); // retried once, failed again
    }
    expect(seen).toEqual([2000, 4000, 8000, 10000, 10000]);
    expect(p.penalties()[0].failures).toBe(6);
  });

  test("the default maxpenalty is 30000 ms", () => {
    const clock = new VirtualClock(START);
    const [a] = sinks(channel(clock), "a");
    expect(new FailoverSinkProcessor([a], {}, clock).maxPenalty).toBe(30000);
  });

  test("a sink that recovers is used again as soon as its retry succeeds", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [hi, lo] = sinks(c, "hi", "lo");
    const p = new FailoverSinkProcessor([hi, lo], { priorities: { hi: 2, lo: 1 } }, clock);
    await fill(c, 10);
    hi.fail = true;
    await p.process();
    await p.process();
    expect([hi.received.length, lo.received.length]).toEqual([0, 2]);
    hi.fail = false;
    await p.process();
    expect(lo.received.length).toBe(3); // still penalized
    await clock.advance(2001);
    await p.process();
    await p.process();
    expect(hi.received.length).toBe(2);
    expect(p.penalties()).toEqual([]);
  });

  test("a retried sink that answers BACKOFF stays in the failover list without a longer penalty", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [hi, lo] = sinks(c, "hi", "lo");
    const p = new FailoverSinkProcessor([hi, lo], { priorities: { hi: 2, lo: 1 } }, clock);
    hi.fail = true;
    await p.process();
    hi.fail = false;
    await clock.advance(2001);
    expect(await p.process()).toBe("BACKOFF"); // hi retried on an empty channel
    expect(p.penalties().map((x) => [x.sink, x.failures])).toEqual([["hi", 1]]);
    await fill(c, 1);
    expect(await p.process()).toBe("READY");
    expect(hi.received).toEqual(["test 0"]);
    expect(p.penalties()).toEqual([]);
  });

  test("sinks without a priority rank below those with one, first listed first; a duplicate priority is dropped with a warning", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [x, y, z] = sinks(c, "x", "y", "z");
    await fill(c, 3);
    const first = new FailoverSinkProcessor([x, y], {}, clock);
    await first.process();
    expect(x.received.length).toBe(1);
    const logger = new MemoryLogger();
    const dup = new FailoverSinkProcessor([x, y, z], { priorities: { x: 1, y: 1, z: 0 } }, clock, logger);
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("Sink y not added"))).toBe(true);
    x.fail = true;
    await dup.process();
    expect([y.received.length, z.received.length]).toEqual([0, 1]);
  });

  test("when every sink fails, process throws EventDeliveryException", async () => {
    const clock = new VirtualClock(START);
    const [a, b] = sinks(channel(clock), "a", "b");
    a.fail = true;
    b.fail = true;
    const p = new FailoverSinkProcessor([a, b], {}, clock);
    await expect(p.process()).rejects.toThrow("All sinks failed to process, nothing left to failover to");
    await expect(p.process()).rejects.toBeInstanceOf(EventDeliveryException);
  });

  test("a sink group needs at least one sink", () => {
    expect(() => new FailoverSinkProcessor([], {})).toThrow(ConfigurationError);
  });
});

describe("load_balance sink processor", () => {
  test("round_robin is the default and shares a backlog evenly (Flume's testDefaultConfiguration)", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const ss = sinks(c, "s1", "s2", "s3");
    await fill(c, 300);
    const p = new LoadBalancingSinkProcessor(ss, {}, clock);
    expect([p.policy, p.backoff, p.maxTimeOut]).toEqual(["round_robin", false, 30000]);
    await untilBackoff(p);
    expect(ss.map((s) => s.received.length)).toEqual([100, 100, 100]);
  });

  test("random with one live sink sends everything to it (Flume's testRandomOneActiveSink)", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [s1, s2, s3] = sinks(c, "s1", "s2", "s3");
    s1.fail = true;
    s3.fail = true;
    await fill(c, 10);
    await untilBackoff(new LoadBalancingSinkProcessor([s1, s2, s3], { selector: "random", random: mulberry32(1) }, clock));
    expect([s1.received.length, s2.received.length, s3.received.length]).toEqual([0, 10, 0]);
  });

  test("random with backoff: failed sinks sit out, then come back (Flume's testRandomBackoff)", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [s1, s2, s3] = sinks(c, "s1", "s2", "s3");
    s1.fail = true;
    s3.fail = true;
    await fill(c, 100);
    const p = new LoadBalancingSinkProcessor([s1, s2, s3], { selector: "random", backoff: true, random: mulberry32(7) }, clock);
    for (let i = 0; i < 50; i++) await p.process();
    expect(s2.received.length).toBe(50);
    s2.fail = true;
    s1.fail = false; // still backed off
    await expect(p.process()).rejects.toThrow("All configured sinks have failed");
    await clock.advance(2100);
    await untilBackoff(p);
    expect([s1.received.length, s2.received.length, s3.received.length]).toEqual([50, 50, 0]);
  });

  test("random without failures uses every sink, unevenly (Flume's testRandomNoFailure and testRandomPersistentFailure)", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const ss = sinks(c, ...Array.from({ length: 10 }, (_, i) => `s${i}`));
    await fill(c, 10_000);
    await untilBackoff(new LoadBalancingSinkProcessor(ss, { selector: "random", random: mulberry32(3) }, clock));
    const counts = ss.map((s) => s.received.length);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(10_000);
    expect(new Set(counts).size).toBeGreaterThan(1);

    const [a, b, d] = sinks(c, "a", "b", "d");
    b.fail = true;
    await fill(c, 300);
    await untilBackoff(new LoadBalancingSinkProcessor([a, b, d], { selector: "random" }, clock));
    expect(b.received.length).toBe(0);
    expect(a.received.length + d.received.length).toBe(300);
  });

  test("round_robin with failing sinks (Flume's testRoundRobinOneActiveSink and testRoundRobinPersistentFailure)", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [s1, s2, s3] = sinks(c, "s1", "s2", "s3");
    s1.fail = true;
    s3.fail = true;
    await fill(c, 10);
    await untilBackoff(new LoadBalancingSinkProcessor([s1, s2, s3], { selector: "round_robin" }, clock));
    expect([s1.received.length, s2.received.length, s3.received.length]).toEqual([0, 10, 0]);

    const [t1, t2, t3] = sinks(c, "t1", "t2", "t3");
    t2.fail = true;
    await fill(c, 300);
    await untilBackoff(new LoadBalancingSinkProcessor([t1, t2, t3], { selector: "round_robin" }, clock));
    expect([t1.received.length, t2.received.length, t3.received.length]).toEqual([100, 0, 200]);
  });

  test("round_robin backoff keeps a sink out briefly even if it recovers at once (Flume's testRoundRobinBackoffInitialFailure)", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [s1, s2, s3] = sinks(c, "s1", "s2", "s3");
    await fill(c, 300);
    const p = new LoadBalancingSinkProcessor([s1, s2, s3], { selector: "round_robin", backoff: true }, clock);
    for (let i = 0; i < 3; i++) await p.process();
    s2.fail = true;
    for (let i = 0; i < 3; i++) await p.process();
    s2.fail = false;
    await untilBackoff(p);
    expect([s1.received.length, s2.received.length, s3.received.length]).toEqual([150, 1, 149]);
  });

  test("round_robin backoff grows on repeated failures (Flume's testRoundRobinBackoffIncreasingBackoffs)", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [s1, s2, s3] = sinks(c, "s1", "s2", "s3");
    s2.fail = true;
    await fill(c, 300);
    const p = new LoadBalancingSinkProcessor([s1, s2, s3], { selector: "round_robin", backoff: true }, clock);
    for (let i = 0; i < 3; i++) await p.process();
    expect(s2.received.length).toBe(0);
    await clock.advance(2100); // out of its 2 s backoff: fails again, now 4 s
    for (let i = 0; i < 3; i++) await p.process();
    expect(s2.received.length).toBe(0);
    s2.fail = false;
    await clock.advance(2100); // still inside the 4 s backoff
    for (let i = 0; i < 3; i++) await p.process();
    expect(s2.received.length).toBe(0);
    await clock.advance(2100);
    await untilBackoff(p);
    expect([s1.received.length, s2.received.length, s3.received.length]).toEqual([102, 97, 101]);
  });

  test("round_robin backoff: a recovered sink rejoins after its backoff (Flume's testRoundRobinBackoffFailureRecovery)", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [s1, s2, s3] = sinks(c, "s1", "s2", "s3");
    s2.fail = true;
    await fill(c, 300);
    const p = new LoadBalancingSinkProcessor([s1, s2, s3], { selector: "round_robin", backoff: true }, clock);
    for (let i = 0; i < 3; i++) await p.process();
    s2.fail = false;
    await clock.advance(2001);
    await untilBackoff(p);
    expect([s1.received.length, s2.received.length, s3.received.length]).toEqual([101, 99, 100]);
  });

  test("a failure within an hour of the last backoff counts as consecutive; selector.maxTimeOut caps the backoff", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [a, b] = sinks(c, "a", "b");
    const p = new LoadBalancingSinkProcessor([a, b], { selector: "round_robin", backoff: true, maxTimeOut: 5000 }, clock);
    await fill(c, 1000);
    /** Runs a few calls and says whether sink a was tried. */
    const tried = async () => {
      const before = a.calls;
      for (let i = 0; i < 4; i++) await p.process();
      return a.calls > before;
    };
    a.fail = true;
    expect(await tried()).toBe(true); // fails: 2 s backoff
    await clock.advance(12_000); // long after, but within the hour
    expect(await tried()).toBe(true); // fails again: consecutive, 4 s
    await clock.advance(3000);
    expect(await tried()).toBe(false);
    await clock.advance(1001);
    expect(await tried()).toBe(true); // third failure: 8 s capped at maxTimeOut 5 s
    await clock.advance(4999);
    expect(await tried()).toBe(false);
    await clock.advance(2);
    a.fail = false;
    expect(await tried()).toBe(true);
    expect(a.received.length).toBeGreaterThan(0);
  });

  test("a failure more than an hour after the last one starts the backoff over at 2 s", async () => {
    const clock = new VirtualClock(START);
    const c = channel(clock);
    const [a, b] = sinks(c, "a", "b");
    const p = new LoadBalancingSinkProcessor([a, b], { selector: "round_robin", backoff: true }, clock);
    await fill(c, 1000);
    a.fail = true;
    for (let i = 0; i < 2; i++) await p.process(); // 2 s
    await clock.advance(2001);
    for (let i = 0; i < 2; i++) await p.process(); // 4 s
    await clock.advance(2 * 60 * 60 * 1000);
    for (let i = 0; i < 2; i++) await p.process(); // fresh failure: 2 s again
    const before = a.calls;
    await clock.advance(2001);
    for (let i = 0; i < 2; i++) await p.process();
    expect(a.calls).toBe(before + 1);
  });

  test("when every sink fails, process throws EventDeliveryException", async () => {
    const clock = new VirtualClock(START);
    const ss = sinks(channel(clock), "a", "b");
    for (const s of ss) s.fail = true;
    const p = new LoadBalancingSinkProcessor(ss, {}, clock);
    await expect(p.process()).rejects.toBeInstanceOf(EventDeliveryException);
    expect(ss.map((s) => s.calls)).toEqual([1, 1]);
  });
});
