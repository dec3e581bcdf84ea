import type { Clock } from "./clock.ts";

/** One commit waiting in a WaitLine; `wake` is set while it sleeps. */
export interface LineWaiter {
  wake: (() => void) | null;
}

/**
 * Commits waiting for room in a channel, in arrival order. Each sleeps until woken (room may
 * have come free, or the channel stopped) or until its own deadline, then looks again.
 */
export class WaitLine {
  private readonly waiters: LineWaiter[] = [];

  constructor(private readonly clock: Clock) {}

  get length(): number {
    return this.waiters.length;
  }

  join(): LineWaiter {
    const waiter: LineWaiter = { wake: null };
    this.waiters.push(waiter);
    return waiter;
  }

  isFirst(waiter: LineWaiter): boolean {
    return this.waiters[0] === waiter;
  }

  /** Sleeps until wakeAll() or until `ms` pass (null: only wakeAll() ends it). */
  async sleep(waiter: LineWaiter, ms: number | null): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = ms === null ? null : this.clock.setTimeout(resolve, ms);
      waiter.wake = () => {
        if (timer !== null) this.clock.clearTimeout(timer);
        resolve();
      };
    });
    waiter.wake = null;
  }

  /** Leaves the line and wakes the others: the next in line may fit now. */
  leave(waiter: LineWaiter): void {
    this.waiters.splice(this.waiters.indexOf(waiter), 1);
    this.wakeAll();
  }

  wakeAll(): void {
    for (const w of this.waiters) w.wake?.();
  }
}
