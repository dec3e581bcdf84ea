// VirtualClock: deterministic time for the simulator and for these tests; SystemClock for real runs.
import { describe, expect, test } from "bun:test";
import { SystemClock } from "../../src/core/clock.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";

describe("VirtualClock", () => {
  test("timers fire in time order, ties in the order they were set, only when time is advanced", async () => {
    const clock = new VirtualClock(100);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push("b@50"), 50);
    clock.setTimeout(() => fired.push("a@10"), 10);
    clock.setTimeout(() => fired.push("c@50"), 50);
    expect(clock.nextTimerAt()).toBe(110);
    await clock.flush();
    expect(fired).toEqual([]);
    await clock.advance(49);
    expect(fired).toEqual(["a@10"]);
    expect(clock.now()).toBe(149);
    await clock.advance(1);
    expect(fired).toEqual(["a@10", "b@50", "c@50"]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("a cleared timer never fires", async () => {
    const clock = new VirtualClock();
    let fired = false;
    const h = clock.setTimeout(() => (fired = true), 10);
    clock.clearTimeout(h);
    await clock.advance(100);
    expect(fired).toBe(false);
  });

  test("code woken by a timer runs to its next wait before the next timer fires", async () => {
    const clock = new VirtualClock();
    const log: string[] = [];
    const task = async () => {
      await clock.sleep(10);
      log.push(`woke ${clock.now()}`);
      await clock.sleep(10);
      log.push(`woke ${clock.now()}`);
    };
    const done = task();
    await clock.advance(25);
    await done;
    expect(log).toEqual(["woke 10", "woke 20"]);
    expect(clock.now()).toBe(25);
  });

  test("step fires exactly one timer, even when that timer re-arms a zero-delay timer", async () => {
    const clock = new VirtualClock();
    let ticks = 0;
    const tick = () => {
      ticks++;
      clock.setTimeout(tick, 0);
    };
    clock.setTimeout(tick, 5);
    expect(await clock.step()).toBe(true);
    expect(ticks).toBe(1);
    expect(clock.now()).toBe(5);
    expect(await clock.step()).toBe(true);
    expect(ticks).toBe(2);
    const empty = new VirtualClock();
    expect(await empty.step()).toBe(false);
  });
});

describe("SystemClock", () => {
  test("now is the wall clock; sleep and timers use the host's timers", async () => {
    const clock = new SystemClock();
    expect(Math.abs(clock.now() - Date.now())).toBeLessThan(1000);
    let fired = false;
    const h = clock.setTimeout(() => (fired = true), 1);
    clock.clearTimeout(h);
    await clock.sleep(5);
    expect(fired).toBe(false);
  });
});
