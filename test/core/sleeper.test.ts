import { describe, expect, test } from "bun:test";
import { systemClock } from "../../src/core/clock.ts";
import { Sleeper } from "../../src/core/sleeper.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";

describe("Sleeper", () => {
  test("a sleep ends after its time on the clock, or at once when woken", async () => {
    const clock = new VirtualClock();
    const sleeper = new Sleeper(clock);
    let done = false;
    void sleeper.sleep(1000).then(() => (done = true));
    expect(sleeper.sleeping).toBe(true);
    await clock.advance(999);
    expect(done).toBe(false);
    await clock.advance(1);
    expect(done).toBe(true);
    expect(sleeper.sleeping).toBe(false);

    let woken = false;
    void sleeper.sleep(60_000).then(() => (woken = true));
    sleeper.wake();
    await clock.flush();
    expect(woken).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    sleeper.wake(); // not sleeping: nothing happens
  });

  test("wakeSoon ends the sleep on the clock's next turn, once however often it is called", async () => {
    const sleeper = new Sleeper(systemClock);
    let ends = 0;
    void sleeper.sleep(60_000).then(() => ends++);
    sleeper.wakeSoon();
    sleeper.wakeSoon();
    for (let i = 0; i < 20; i++) await Promise.resolve(); // promise continuations run first
    expect(sleeper.sleeping).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(sleeper.sleeping).toBe(false);
    expect(ends).toBe(1);
    sleeper.wakeSoon(); // not sleeping: nothing happens
  });

  test("a wakeSoon whose sleep was already ended does not end the next sleep", async () => {
    const sleeper = new Sleeper(systemClock);
    void sleeper.sleep(60_000);
    sleeper.wakeSoon();
    sleeper.wake();
    let woken = false;
    void sleeper.sleep(60_000).then(() => (woken = true));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(woken).toBe(false);
    expect(sleeper.sleeping).toBe(true);
    sleeper.wake();
  });

  test("on a clock without defer (virtual time) wakeSoon ends the sleep at a 0 ms timer", async () => {
    const clock = new VirtualClock();
    const sleeper = new Sleeper(clock);
    let done = false;
    void sleeper.sleep(1000).then(() => (done = true));
    sleeper.wakeSoon();
    await clock.flush();
    expect(done).toBe(false);
    await clock.advance(0);
    expect(done).toBe(true);
    expect(clock.now()).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });
});
