// Sink and source runners (Flume's SinkRunner.PollingRunner, PollableSourceRunner and
// EventDrivenSourceRunner): READY loops at once, BACKOFF sleeps 1 s more each time up to 5 s,
// an exception sleeps maxBackoffSleep and never ends the loop. All on virtual time.
import { describe, expect, test } from "bun:test";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { SourceCounter } from "../../src/core/counters.ts";
import { EventDeliveryException } from "../../src/core/errors.ts";
import { createEvent, type Event } from "../../src/core/event.ts";
import type { Interceptor } from "../../src/core/interceptor.ts";
import type { LifecycleState } from "../../src/core/lifecycle.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { type BackoffOptions, SinkRunner, SourceRunner } from "../../src/core/runners.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { DefaultSinkProcessor } from "../../src/core/sink-processors.ts";
import type { SinkProcessor } from "../../src/core/sink-processors.ts";
import type { Status, Sink } from "../../src/core/sink.ts";
import type { EventDrivenSource, PollableSource } from "../../src/core/source.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import type { Channel } from "../../src/core/channel.ts";
import { LifecycleSupervisor } from "../../src/core/supervisor.ts";
import { drain } from "../support/core.ts";
import { sleep } from "../support/helpers.ts";

type Step = Status | Error;

/** A sink processor that plays a script of results and records the time of each call. */
class ScriptedProcessor implements SinkProcessor {
  readonly type = "scripted";
  readonly sinks = [];
  readonly times: number[] = [];
  started = 0;
  stopped = 0;
  private i = 0;
  constructor(
    private readonly clock: VirtualClock,
    private readonly script: Step[],
    private readonly after: Status = "BACKOFF",
  ) {}
  async start() {
    this.started++;
  }
  async stop() {
    this.stopped++;
  }
  getLifecycleState(): LifecycleState {
    return "START";
  }
  async process(): Promise<Status> {
    this.times.push(this.clock.now());
    const step = this.i < this.script.length ? this.script[this.i++] : this.after;
    if (step instanceof Error) throw step;
    return step;
  }
}

async function runUntil(clock: VirtualClock, done: () => boolean, maxSteps = 1000): Promise<void> {
  await clock.flush();
  for (let i = 0; i < maxSteps && !done(); i++) if (!(await clock.step())) break;
}

function sinkRunner(script: Step[], options: BackoffOptions = {}, after: Status = "BACKOFF") {
  const clock = new VirtualClock(0);
  const logger = new MemoryLogger();
  const processor = new ScriptedProcessor(clock, script, after);
  const runner = new SinkRunner("k1", processor, clock, logger, options);
  return { clock, logger, processor, runner };
}

describe("sink runner", () => {
  test("BACKOFF sleeps 1, 2, 3, 4, 5, 5 s; READY resets it; an exception sleeps 5 s and the loop goes on", async () => {
    const { clock, logger, processor, runner } = sinkRunner([
      "BACKOFF",
      "BACKOFF",
      "BACKOFF",
      "BACKOFF",
      "BACKOFF",
      "BACKOFF",
      "READY",
      "BACKOFF",
      new EventDeliveryException("peer down"),
      "BACKOFF",
      new TypeError("bug in sink"),
      "READY",
    ]);
    await runner.start();
    expect(runner.getLifecycleState()).toBe("START");
    expect(processor.started).toBe(1);
    await runUntil(clock, () => processor.times.length >= 12);
    expect(processor.times.slice(0, 12)).toEqual([0, 1000, 3000, 6000, 10000, 15000, 20000, 20000, 21000, 26000, 28000, 33000]);
    expect(runner.stats.deliveryErrors).toBe(1);
    expect(runner.stats.errors).toBe(1);
    // 8 in the script, plus the one right after the last READY (the script has ended).
    expect(runner.stats.backoffs).toBe(9);
    expect(logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual([
      expect.stringContaining("Unable to deliver event"),
      expect.stringContaining("Unhandled exception"),
    ]);
    await runner.stop();
    expect(runner.getLifecycleState()).toBe("STOP");
    expect(processor.stopped).toBe(1);
  });

  test("a delivery that fails while the runner stops is logged as failing while stopping, not as a sleep that never comes", async () => {
    const clock = new VirtualClock(0);
    const logger = new MemoryLogger();
    let fail: (err: Error) => void = () => {};
    const processor = new ScriptedProcessor(clock, []);
    processor.process = () => new Promise<Status>((_, reject) => (fail = reject));
    const runner = new SinkRunner("k1", processor, clock, logger);
    await runner.start();
    await clock.flush();
    const stopping = runner.stop();
    fail(new EventDeliveryException("broker gone"));
    await stopping;
    expect(logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual(["sink runner k1: Unable to deliver event while stopping: broker gone"]);
  });

  test("backoffSleepIncrement and maxBackoffSleep are configurable", async () => {
    const { clock, processor, runner } = sinkRunner(["BACKOFF", "BACKOFF", "BACKOFF", "BACKOFF", new Error("x")], { backoffSleepIncrement: 100, maxBackoffSleep: 250 });
    await runner.start();
    await runUntil(clock, () => processor.times.length >= 6);
    expect(processor.times.slice(0, 6)).toEqual([0, 100, 300, 550, 800, 1050]);
    await runner.stop();
  });

  test("an exception on every call never ends the loop", async () => {
    const { clock, processor, runner } = sinkRunner([], {}, "READY");
    processor.process = async () => {
      processor.times.push(clock.now());
      throw new EventDeliveryException("always");
    };
    await runner.start();
    await runUntil(clock, () => processor.times.length >= 20);
    expect(processor.times.length).toBe(20);
    expect(processor.times[19]).toBe(19 * 5000);
    expect(runner.stats.deliveryErrors).toBeGreaterThanOrEqual(19);
    await runner.stop();
  });

  test("stop during a backoff sleep ends the loop at once and leaves no timer behind", async () => {
    const { clock, processor, runner } = sinkRunner([]);
    await runner.start();
    await runUntil(clock, () => processor.times.length >= 3);
    const calls = processor.times.length;
    await runner.stop();
    await clock.advance(60_000);
    expect(processor.times.length).toBe(calls);
    expect(clock.pendingTimers).toBe(0);
  });

  test("poke wakes the runner from a backoff sleep", async () => {
    const { clock, processor, runner } = sinkRunner(["BACKOFF", "BACKOFF", "BACKOFF"]);
    await runner.start();
    await runUntil(clock, () => processor.times.length >= 3); // now sleeping 3 s
    expect(processor.times.at(-1)).toBe(3000);
    runner.poke();
    await clock.flush();
    expect(processor.times.length).toBe(4);
    expect(processor.times[3]).toBe(3000);
    await runner.stop();
  });

  test("an always-READY loop still yields to timers (every 64 calls)", async () => {
    const { clock, processor, runner } = sinkRunner([], {}, "READY");
    await runner.start();
    await clock.flush();
    expect(processor.times.length).toBe(64);
    expect(clock.pendingTimers).toBe(1);
    await clock.step();
    expect(processor.times.length).toBe(128);
    await runner.stop();
    expect(clock.pendingTimers).toBe(0);
  });
});

/** A pollable source like Flume's TestPollableSourceRunner: every 20th call fails and backs off. */
class CountingSource implements PollableSource {
  readonly kind = "pollable";
  readonly counter = new SourceCounter("r1");
  readonly backoffSleepIncrement = 1000;
  readonly maxBackoffSleep = 5000;
  calls = 0;
  private state: LifecycleState = "IDLE";
  private processor: ChannelProcessor | null = null;
  constructor(
    readonly name: string,
    private readonly channel: MemoryChannel,
  ) {}
  setChannelProcessor(p: ChannelProcessor) {
    this.processor = p;
  }
  getChannelProcessor(): ChannelProcessor {
    if (!this.processor) throw new Error("no processor");
    return this.processor;
  }
  start() {
    this.state = "START";
  }
  stop() {
    this.state = "STOP";
  }
  getLifecycleState() {
    return this.state;
  }
  async process(): Promise<Status> {
    const tx = this.channel.getTransaction();
    tx.begin();
    try {
      this.calls++;
      const event = createEvent(`Event ${this.calls}`);
      if (this.calls % 20 === 0) throw new EventDeliveryException(`I don't like event ${this.calls}`);
      tx.put(event);
      await tx.commit();
      return "READY";
    } catch (err) {
      await tx.rollback();
      if (err instanceof EventDeliveryException) return "BACKOFF";
      throw err;
    } finally {
      tx.close();
    }
  }
}

describe("source runners", () => {
  test("a pollable source is polled in a loop with backoff (Flume's TestPollableSourceRunner)", async () => {
    const clock = new VirtualClock(0);
    const channel = new MemoryChannel("c1", {}, clock);
    channel.start();
    const source = new CountingSource("r1", channel);
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
    const runner = new SourceRunner(source, clock);
    expect(runner.name).toBe("r1");
    await runner.start();
    expect(source.getLifecycleState()).toBe("START");
    await runUntil(clock, () => source.calls >= 50);
    await runner.stop();
    expect(source.getLifecycleState()).toBe("STOP");
    // Every 20th call was rolled back and backed off; each backoff was the first in a row (1 s).
    const failed = Math.floor(source.calls / 20);
    expect(source.calls).toBeGreaterThanOrEqual(50);
    expect(runner.stats?.backoffs).toBe(failed);
    expect(channel.size).toBe(source.calls - failed);
    expect(runner.stats?.consecutiveBackoffs).toBeLessThanOrEqual(1);
  });

  test("a pollable source whose process throws keeps being polled after maxBackoffSleep", async () => {
    const clock = new VirtualClock(0);
    const channel = new MemoryChannel("c1", {}, clock);
    const source = new CountingSource("r1", channel);
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
    source.process = async () => {
      source.calls++;
      throw new RangeError("broken source");
    };
    const runner = new SourceRunner(source, clock, new MemoryLogger());
    await runner.start();
    await runUntil(clock, () => source.calls >= 4);
    expect(clock.now()).toBe(3 * 5000);
    expect(runner.stats?.errors).toBe(4);
    await runner.stop();
  });

  test("an event-driven source is started and stopped with its interceptors initialized and closed", async () => {
    const calls: string[] = [];
    const interceptor: Interceptor = {
      initialize: () => calls.push("interceptor init"),
      close: () => calls.push("interceptor close"),
      intercept: (e: Event) => e,
      interceptAll: (es: Event[]) => es,
    };
    const channel = new MemoryChannel("c1");
    let processor: ChannelProcessor = new ChannelProcessor(new ReplicatingChannelSelector([channel]), [interceptor]);
    let state: LifecycleState = "IDLE";
    const source: EventDrivenSource = {
      kind: "event-driven",
      name: "r2",
      counter: new SourceCounter("r2"),
      setChannelProcessor: (p) => (processor = p),
      getChannelProcessor: () => processor,
      start: async () => {
        calls.push("source start");
        state = "START";
        await processor.processEvent(createEvent("hello"));
      },
      stop: () => {
        calls.push("source stop");
        state = "STOP";
      },
      getLifecycleState: () => state,
    };
    const runner = new SourceRunner(source);
    expect(runner.stats).toBeNull();
    await runner.start();
    await runner.stop();
    expect(calls).toEqual(["interceptor init", "source start", "source stop", "interceptor close"]);
    expect(await drain(channel)).toEqual(["hello"]);
  });
});

/** A sink whose process() finds the channel empty (BACKOFF), and can be held inside process(). */
class HeldSink implements Sink {
  readonly name = "k1";
  private channel: Channel | null = null;
  private state: LifecycleState = "IDLE";
  inProcess = false;
  private release: (() => void) | null = null;
  hold = false;
  setChannel(c: Channel): void {
    this.channel = c;
  }
  getChannel(): Channel {
    return this.channel as Channel;
  }
  start(): void {
    this.state = "START";
  }
  stop(): void {
    this.state = "STOP";
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
  async process(): Promise<Status> {
    this.inProcess = true;
    if (this.hold) await new Promise<void>((r) => (this.release = r));
    this.inProcess = false;
    return "BACKOFF";
  }
  letGo(): void {
    this.hold = false;
    this.release?.();
  }
}

/** A started runner of the sink, inside a process() the sink holds. */
async function runnerInHeldProcess(sink: HeldSink): Promise<{ clock: VirtualClock; runner: SinkRunner }> {
  const clock = new VirtualClock();
  sink.setChannel(new MemoryChannel("c1", {}, clock));
  const runner = new SinkRunner("k1", new DefaultSinkProcessor(sink), clock);
  await runner.start();
  sink.hold = true;
  // The first process() (BACKOFF) leads to a 1 s sleep; end it so the runner enters a held process().
  await clock.advance(1000);
  expect(sink.inProcess).toBe(true);
  return { clock, runner };
}

describe("sink runner stop", () => {
  test("a stop that arrives while process() runs does not wait out the BACKOFF sleep that follows", async () => {
    const sink = new HeldSink();
    const { clock, runner } = await runnerInHeldProcess(sink);
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    sink.letGo();
    // No virtual time passes: the backoff sleep (1-5 s) must not be what ends the stop.
    await clock.flush();
    expect(stopped).toBe(true);
    await clock.advance(10000);
    await stopping;
  });

  test("a process() waiting on deliveries in flight is interrupted by the stop: the stop ends without it ending by itself, the sink stopped after", async () => {
    const order: string[] = [];
    // Holds process() until interrupted, as a sink whose batches wait for a broker that is gone.
    const sink = new (class extends HeldSink {
      interrupt(): void {
        order.push("interrupt");
        this.letGo();
      }
      override stop(): void {
        order.push("stop");
        super.stop();
      }
    })();
    const { runner } = await runnerInHeldProcess(sink);
    await runner.stop();
    expect(order).toEqual(["interrupt", "stop"]);
    expect(runner.getLifecycleState()).toBe("STOP");
  });
});

/** An interceptor holding a resource between initialize() and close() (a file, a timer). */
class ResourceInterceptor implements Interceptor {
  open = 0;
  initialize(): void {
    this.open++;
  }
  close(): void {
    this.open--;
  }
  intercept(event: Event): Event {
    return event;
  }
  interceptAll(events: Event[]): Event[] {
    return events;
  }
}

/** A source whose port is taken for its first `failures` starts. */
class FlakySource implements EventDrivenSource {
  readonly kind = "event-driven";
  readonly name = "r1";
  readonly counter = new SourceCounter("r1");
  private processor: ChannelProcessor | null = null;
  private state: LifecycleState = "IDLE";
  constructor(private failures: number) {}
  setChannelProcessor(p: ChannelProcessor): void {
    this.processor = p;
  }
  getChannelProcessor(): ChannelProcessor {
    return this.processor!;
  }
  start(): void {
    if (this.failures-- > 0) throw new Error("listen EADDRINUSE: address already in use 127.0.0.1:4141");
    this.state = "START";
  }
  stop(): void {
    this.state = "STOP";
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
}

describe("source start retried by the supervisor", () => {
  test("the channel processor's interceptors are closed after each failed start (initialize and close pair up)", async () => {
    const interceptor = new ResourceInterceptor();
    const source = new FlakySource(3);
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([new MemoryChannel("c1")]), [interceptor]));
    const runner = new SourceRunner(source);
    const supervisor = new LifecycleSupervisor(undefined, undefined, 10);
    await supervisor.supervise(runner);
    // The first start failed: nothing stays open.
    expect(runner.getLifecycleState()).not.toBe("START");
    expect(interceptor.open).toBe(0);
    for (let i = 0; i < 300 && runner.getLifecycleState() !== "START"; i++) await sleep(5);
    expect(runner.getLifecycleState()).toBe("START");
    // Open once while running, after three failed starts.
    expect(interceptor.open).toBe(1);
    await supervisor.stop();
    expect(interceptor.open).toBe(0);
  });
});
