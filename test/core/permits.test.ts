// Permits: the counting semaphore behind capacity (Java's Semaphore.tryAcquire(n, timeout)).
import { describe, expect, test } from "bun:test";
import { Permits } from "../../src/core/permits.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { watch } from "../support/core.ts";

describe("Permits", () => {
  test("takes permits at once when free, synchronously (no promise)", () => {
    const p = new Permits(5, new VirtualClock());
    expect(p.tryAcquire(3, 1000)).toBe(true);
    expect(p.free).toBe(2);
    expect(p.tryAcquireNow(3)).toBe(false);
    expect(p.tryAcquire(3, 0)).toBe(false);
    expect(p.tryAcquireNow(0)).toBe(true);
  });

  test("a waiter gets its permits when they are released, before its timeout", async () => {
    const clock = new VirtualClock();
    const p = new Permits(1, clock);
    const w = watch(Promise.resolve(p.tryAcquire(3, 1000)));
    await clock.advance(500);
    expect(w.done).toBe(false);
    p.release(2);
    await clock.flush();
    expect(w.value).toBe(true);
    expect(p.free).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  test("a waiter gives up after its timeout and takes nothing", async () => {
    const clock = new VirtualClock();
    const p = new Permits(1, clock);
    const w = watch(Promise.resolve(p.tryAcquire(3, 1000)));
    await clock.advance(999);
    expect(w.done).toBe(false);
    await clock.advance(1);
    expect(w.value).toBe(false);
    expect(p.free).toBe(1);
  });

  test("waiters are served in arrival order: a large request is not starved by later small ones", async () => {
    const clock = new VirtualClock();
    const p = new Permits(0, clock);
    const big = watch(Promise.resolve(p.tryAcquire(3, 10_000)));
    const small = watch(Promise.resolve(p.tryAcquire(1, 10_000)));
    expect(p.tryAcquireNow(1)).toBe(false);
    p.release(1);
    await clock.flush();
    expect(big.done).toBe(false);
    expect(small.done).toBe(false); // waits behind the big one
    p.release(3);
    await clock.flush();
    expect(big.value).toBe(true);
    expect(small.value).toBe(true);
    expect(p.free).toBe(0);
  });

  test("when the head waiter times out, the ones behind it that now fit are served", async () => {
    const clock = new VirtualClock();
    const p = new Permits(2, clock);
    const big = watch(Promise.resolve(p.tryAcquire(5, 1000)));
    const small = watch(Promise.resolve(p.tryAcquire(2, 5000)));
    await clock.advance(1000);
    expect(big.value).toBe(false);
    expect(small.value).toBe(true);
  });

  test("reduce removes permits (free may go negative until releases cover it)", () => {
    const p = new Permits(2, new VirtualClock());
    p.reduce(3);
    expect(p.free).toBe(-1);
    expect(p.tryAcquireNow(1)).toBe(false);
    p.release(2);
    expect(p.tryAcquireNow(1)).toBe(true);
  });
});
