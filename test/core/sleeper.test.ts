import { describe, expect, test } from "bun:test";
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
});
