// WaitLine: commits waiting in line for room, each until woken or its own deadline.
import { describe, expect, test } from "bun:test";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { WaitLine } from "../../src/core/wait-line.ts";
import { watch } from "../support/core.ts";

describe("WaitLine", () => {
  test("keeps arrival order: only the first in line is first, and the next one is after it leaves", () => {
    const line = new WaitLine(new VirtualClock());
    const a = line.join();
    const b = line.join();
    expect(line.length).toBe(2);
    expect(line.isFirst(a)).toBe(true);
    expect(line.isFirst(b)).toBe(false);
    line.leave(a);
    expect(line.length).toBe(1);
    expect(line.isFirst(b)).toBe(true);
  });

  test("a sleep ends at its deadline, and its timer is gone", async () => {
    const clock = new VirtualClock();
    const line = new WaitLine(clock);
    const w = line.join();
    const s = watch(line.sleep(w, 1000));
    await clock.advance(999);
    expect(s.done).toBe(false);
    await clock.advance(1);
    await s.promise;
    expect(s.done).toBe(true);
    expect(w.wake).toBeNull();
    expect(clock.pendingTimers).toBe(0);
  });

  test("wakeAll ends every sleep at once, those without a deadline too, and clears their timers", async () => {
    const clock = new VirtualClock();
    const line = new WaitLine(clock);
    const a = line.join();
    const b = line.join();
    const sa = watch(line.sleep(a, 60_000));
    const sb = watch(line.sleep(b, null));
    await clock.flush();
    expect(sa.done || sb.done).toBe(false);
    line.wakeAll();
    await Promise.all([sa.promise, sb.promise]);
    expect(sa.done && sb.done).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  test("leaving wakes the ones still in line (the next may fit now)", async () => {
    const clock = new VirtualClock();
    const line = new WaitLine(clock);
    const a = line.join();
    const b = line.join();
    const sb = watch(line.sleep(b, null));
    line.leave(a);
    await sb.promise;
    expect(sb.done).toBe(true);
    expect(line.isFirst(b)).toBe(true);
  });
});
