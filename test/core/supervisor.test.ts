// LifecycleSupervisor (Flume's TestLifecycleSupervisor): desired states, start/stop, restart of
// a failed component on the monitor interval, failure counts, giving up on an error that says
// retrying cannot help. On virtual time.
import { describe, expect, test } from "bun:test";
import { ChannelException, isRetryable } from "../../src/core/errors.ts";
import type { LifecycleAware, LifecycleState } from "../../src/core/lifecycle.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { LifecycleSupervisor } from "../../src/core/supervisor.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";

/** Counts starts and stops (Flume's CountingLifecycleAware); can be told to fail. */
class Counting implements LifecycleAware {
  starts: number[] = [];
  stops: number[] = [];
  failStarts = 0;
  failStop = false;
  state: LifecycleState = "IDLE";
  constructor(
    readonly name: string,
    private readonly clock: VirtualClock,
    private readonly log: string[] = [],
  ) {}
  start(): void {
    this.starts.push(this.clock.now());
    if (this.failStarts > 0) {
      this.failStarts--;
      throw new Error(`${this.name} cannot start`);
    }
    this.state = "START";
    this.log.push(`start ${this.name}`);
  }
  stop(): void {
    this.stops.push(this.clock.now());
    if (this.failStop) throw new Error(`${this.name} cannot stop`);
    this.state = "STOP";
    this.log.push(`stop ${this.name}`);
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
}

function setup() {
  const clock = new VirtualClock(0);
  const logger = new MemoryLogger();
  const supervisor = new LifecycleSupervisor(clock, logger);
  return { clock, logger, supervisor };
}

describe("lifecycle supervisor", () => {
  test("the monitor interval defaults to 3 s", () => {
    expect(new LifecycleSupervisor().monitorInterval).toBe(3000);
  });

  test("supervise starts a component at once and leaves a healthy one alone (Flume's testStopServce)", async () => {
    const { clock, supervisor } = setup();
    const c = new Counting("c", clock);
    await supervisor.supervise(c, "once", "START");
    expect(c.starts).toEqual([0]);
    await clock.advance(3200);
    expect(c.starts.length).toBe(1);
    expect(c.stops.length).toBe(0);
    supervisor.setDesiredState(c, "STOP");
    await clock.advance(3200);
    expect(c.starts.length).toBe(1);
    expect(c.stops.length).toBe(1);
    expect(supervisor.status(c)?.desired).toBe("STOP");
    await supervisor.stop();
  });

  test("a failed start is retried with a backoff under the always policy: 250 ms first, doubling, capped at the monitor interval, counting failures", async () => {
    const { clock, logger, supervisor } = setup();
    const c = new Counting("flaky", clock);
    c.failStarts = 6;
    await supervisor.supervise(c, "always");
    expect(supervisor.status(c)).toMatchObject({ failures: 1, lastError: "flaky cannot start", error: false });
    await clock.advance(249);
    expect(c.starts).toEqual([0]);
    await clock.advance(1);
    expect(c.starts).toEqual([0, 250]);
    await clock.advance(20_000);
    // Waits of 250, 500, 1000, 2000, then the monitor interval (3000) until a start succeeds.
    expect(c.starts).toEqual([0, 250, 750, 1750, 3750, 6750, 9750]);
    expect(c.getLifecycleState()).toBe("START");
    expect(supervisor.status(c)).toMatchObject({ failures: 6, lastError: null, error: false });
    // Each log line says when the next try is.
    expect(logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual(
      [250, 500, 1000, 2000, 3000, 3000].map((ms) => `Unable to start flaky, retrying in ${ms} ms: flaky cannot start`),
    );
    await supervisor.stop();
  });

  test("the backoff starts over after a successful start: a component that crashes is checked on the monitor interval, then retried from 250 ms", async () => {
    const { clock, supervisor } = setup();
    const c = new Counting("c", clock);
    c.failStarts = 3;
    await supervisor.supervise(c);
    await clock.advance(2000);
    expect(c.starts).toEqual([0, 250, 750, 1750]);
    c.state = "ERROR"; // it crashed on its own
    c.failStarts = 2;
    await clock.advance(10_000);
    // The monitor check 3000 ms after the start finds it down; then 250, 500 again.
    expect(c.starts).toEqual([0, 250, 750, 1750, 4750, 5000, 5500]);
    expect(c.getLifecycleState()).toBe("START");
    await supervisor.stop();
  });

  test("a larger first retry or monitor interval given to the supervisor shape the backoff the same way", () => {
    const s = new LifecycleSupervisor(new VirtualClock(0), new MemoryLogger(), 10_000, 1000);
    expect([1, 2, 3, 4, 5, 6, 100].map((n) => s.retryDelay(n))).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
  });

  test("a component that fails after starting is restarted at the next monitor check", async () => {
    const { clock, supervisor } = setup();
    const c = new Counting("c", clock);
    await supervisor.supervise(c);
    await clock.advance(1000);
    c.state = "ERROR"; // it crashed on its own
    await clock.advance(1999);
    expect(c.starts).toEqual([0]);
    await clock.advance(1);
    expect(c.starts).toEqual([0, 3000]);
    expect(c.getLifecycleState()).toBe("START");
    await supervisor.stop();
  });

  test("under the once policy a failed start puts the component in error and is not retried (Flume's testSuperviseBroken)", async () => {
    const { clock, supervisor } = setup();
    const c = new Counting("broken", clock);
    c.failStarts = 100;
    await supervisor.supervise(c, "once");
    await clock.advance(15_000);
    expect(c.starts).toEqual([0]);
    expect(supervisor.isComponentInErrorState(c)).toBe(true);
    expect(supervisor.status(c)).toMatchObject({ failures: 1, error: true });
    await supervisor.stop();
    expect(c.stops.length).toBe(0); // never started, so nothing to stop
  });

  test("a failed stop is counted and retried on the next check", async () => {
    const { clock, supervisor } = setup();
    const c = new Counting("c", clock);
    await supervisor.supervise(c);
    c.failStop = true;
    supervisor.setDesiredState(c, "STOP");
    await clock.flush();
    expect(supervisor.status(c)?.failures).toBe(1);
    c.failStop = false;
    await clock.advance(3000);
    expect(c.getLifecycleState()).toBe("STOP");
    expect(c.stops.length).toBe(2);
    await supervisor.stop();
  });

  test("unsupervise stops a started component and ends its monitoring (Flume's testUnsuperviseServce)", async () => {
    const { clock, supervisor } = setup();
    const c = new Counting("c", clock);
    await supervisor.supervise(c);
    await supervisor.unsupervise(c);
    expect(c.stops.length).toBe(1);
    expect(supervisor.status(c)).toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
    c.state = "ERROR";
    await clock.advance(10_000);
    expect(c.starts.length).toBe(1);
  });

  test("stop unsupervises everything in reverse order of supervision", async () => {
    const { clock, supervisor } = setup();
    const log: string[] = [];
    const channel = new Counting("channel", clock, log);
    const sink = new Counting("sink", clock, log);
    const source = new Counting("source", clock, log);
    for (const c of [channel, sink, source]) await supervisor.supervise(c);
    await supervisor.stop();
    expect(log).toEqual(["start channel", "start sink", "start source", "stop source", "stop sink", "stop channel"]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("a component desired STOP is not started; supervising twice or an unknown component is an error", async () => {
    const { clock, supervisor } = setup();
    const c = new Counting("c", clock);
    await supervisor.supervise(c, "always", "STOP");
    await clock.advance(6000);
    expect(c.starts.length).toBe(0);
    expect(() => supervisor.supervise(c)).toThrow("already supervised");
    expect(() => supervisor.setDesiredState(new Counting("other", clock), "START")).toThrow("not supervised");
    await supervisor.stop();
  });

  test("a supervisor can supervise a component that is itself a supervisor's child (Flume's testSuperviseSupervisor)", async () => {
    const { clock, supervisor } = setup();
    const inner = new LifecycleSupervisor(clock);
    const node = new Counting("node", clock);
    let state: LifecycleState = "IDLE";
    const innerComponent: LifecycleAware = {
      name: "inner-supervisor",
      start: async () => {
        await inner.supervise(node, "once");
        state = "START";
      },
      stop: async () => {
        await inner.stop();
        state = "STOP";
      },
      getLifecycleState: () => state,
    };
    await supervisor.supervise(innerComponent, "always");
    await clock.advance(10_000);
    expect(node.starts).toEqual([0]);
    await supervisor.stop();
    expect(node.stops.length).toBe(1);
  });
});

/** A component whose first start fails (port in use) and whose retry takes a while (a replay). */
class SlowRetry implements LifecycleAware {
  readonly name = "c1";
  state: LifecycleState = "IDLE";
  starts = 0;
  stops = 0;
  private release: () => void = () => {};
  async start(): Promise<void> {
    if (++this.starts === 1) throw new Error("address in use");
    await new Promise<void>((r) => (this.release = r));
    this.state = "START";
  }
  stop(): void {
    this.stops++;
    this.state = "STOP";
  }
  finishStart(): void {
    this.release();
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
}

describe("supervisor retry racing a stop", () => {
  test("unsupervise during a retried start waits for it and stops the component (no orphan holding a port or lock)", async () => {
    const clock = new VirtualClock();
    const supervisor = new LifecycleSupervisor(clock);
    const c = new SlowRetry();
    await supervisor.supervise(c);
    expect(c.starts).toBe(1);
    await clock.advance(supervisor.monitorInterval);
    expect(c.starts).toBe(2); // the retry is in start() now
    const unsupervised = supervisor.unsupervise(c);
    c.finishStart();
    await unsupervised;
    expect(c.getLifecycleState()).toBe("STOP");
    expect(c.stops).toBe(1);
  });
});

/** A component whose start waits on a peer that never answers, until abortStart() makes it fail. */
class WaitingOnPeer implements LifecycleAware {
  readonly name = "k1";
  starts = 0;
  aborts = 0;
  private fail: ((err: Error) => void) | null = null;
  start(): Promise<void> {
    this.starts++;
    return new Promise((_, reject) => (this.fail = reject));
  }
  abortStart(): void {
    this.aborts++;
    this.fail?.(new Error("k1: stopped while it started"));
  }
  stop(): void {}
  getLifecycleState(): LifecycleState {
    return "IDLE";
  }
}

describe("a start waiting on a peer when its owner stops", () => {
  test("a component that started long ago is not told to give up a start (abortStart) when it is unsupervised or the owner abandons starts: none is under way", async () => {
    const { clock, supervisor } = setup();
    const aborts: string[] = [];
    const started = [new Counting("c1", clock), new Counting("c2", clock)].map((c) => Object.assign(c, { abortStart: () => aborts.push(c.name) }));
    for (const c of started) await supervisor.supervise(c, "always", "START");
    // Monitor checks that find each as desired.
    await clock.advance(supervisor.monitorInterval * 2 + 1);
    expect(started.map((c) => c.starts.length)).toEqual([1, 1]);
    supervisor.abandonStarts();
    await supervisor.unsupervise(started[0]);
    expect(aborts).toEqual([]);
    expect(started[0].stops).toHaveLength(1);
  });

  test("unsupervise tells the start to give up (abortStart) instead of waiting for the peer, and logs no retry", async () => {
    const { logger, supervisor } = setup();
    const c = new WaitingOnPeer();
    void supervisor.supervise(c);
    expect(c.starts).toBe(1);
    await supervisor.unsupervise(c);
    expect(c.aborts).toBe(1);
    expect(logger.lines).toEqual([{ level: "info", message: "k1: start given up, as it stops (k1: stopped while it started)" }]);
  });

  test("abandonStarts aborts the starts under way, settles whoever waits for a first check, and tries nothing again until resume", async () => {
    const { clock, logger, supervisor } = setup();
    const waiting = new WaitingOnPeer();
    const settled = supervisor.supervise(waiting);
    const retried = new Counting("c2", clock);
    retried.failStarts = 1;
    await supervisor.supervise(retried);
    expect(retried.starts).toHaveLength(1);
    supervisor.abandonStarts();
    await settled;
    expect(waiting.aborts).toBe(1);
    // Neither the failed start nor the aborted one is tried again; a component supervised now is not started.
    const later = new Counting("c3", clock);
    await supervisor.supervise(later);
    await clock.advance(supervisor.monitorInterval * 3);
    expect(waiting.starts).toBe(1);
    expect(retried.starts).toHaveLength(1);
    expect(later.starts).toHaveLength(0);
    expect(logger.lines.map((l) => l.message)).toEqual(["Unable to start c2, retrying in 250 ms: c2 cannot start", "k1: start given up, as it stops (k1: stopped while it started)"]);
    supervisor.resume();
    supervisor.setDesiredState(later, "START");
    await clock.advance(0);
    expect(later.starts).toHaveLength(1);
  });
});

/** An error saying that trying again cannot help (a channel on another program's directories). */
class FinalError extends ChannelException {
  readonly retryable = false;
}

/** A component whose every start throws error(). */
function failing(error: () => Error): LifecycleAware & { starts: number } {
  return {
    name: "c1",
    starts: 0,
    start() {
      this.starts++;
      throw error();
    },
    stop() {},
    getLifecycleState: (): LifecycleState => "IDLE",
  };
}

describe("supervisor and errors marked retryable = false", () => {
  test("such an error: one start, then the supervisor gives up; the error is in status() for its owner to report, logged here only at debug level", async () => {
    const { clock, logger, supervisor } = setup();
    const error = new FinalError("directory holds another format");
    const c = failing(() => error);
    await supervisor.supervise(c, "always");
    await clock.advance(10_000);
    expect(c.starts).toBe(1);
    expect(supervisor.isComponentInErrorState(c)).toBe(true);
    expect(supervisor.status(c)).toMatchObject({ failures: 1, lastError: "directory holds another format", cause: error, error: true });
    expect(logger.lines).toEqual([{ level: "debug", message: "Unable to start c1, giving up: directory holds another format" }]);
  });

  test("any other error is retried, backing off up to the monitor interval", async () => {
    const { clock, supervisor } = setup();
    const c = failing(() => new ChannelException("port in use"));
    await supervisor.supervise(c, "always");
    await clock.advance(10_000);
    expect(c.starts).toBe(7); // at 0, 250, 750, 1750, 3750, 6750, 9750
    expect(supervisor.isComponentInErrorState(c)).toBe(false);
    expect([isRetryable(new Error("x")), isRetryable(new FinalError("y")), isRetryable("text")]).toEqual([true, false, true]);
  });
});
