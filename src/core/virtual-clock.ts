import type { Clock, TimerHandle } from "./clock.ts";

interface VirtualTimer {
  id: number;
  at: number;
  seq: number;
  fn: () => void;
}

interface HostTimers {
  setTimeout(fn: () => void, ms: number): unknown;
}

/** Lets every pending promise continuation run (one host macrotask drains the microtasks). */
export function drainMicrotasks(): Promise<void> {
  const host = globalThis as unknown as HostTimers;
  return new Promise((resolve) => host.setTimeout(resolve, 0));
}

/**
 * A clock that moves only when told to. Timers fire in time order (ties in the order they were
 * set), and after each one the code it woke runs to its next wait, so a run is deterministic.
 */
export class VirtualClock implements Clock {
  private time: number;
  private readonly timers: VirtualTimer[] = [];
  private nextId = 1;
  private seq = 0;

  constructor(
    start = 0,
    private readonly settle: () => Promise<void> = drainMicrotasks,
  ) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: VirtualTimer = { id: this.nextId++, at: this.time + Math.max(0, ms), seq: this.seq++, fn };
    // Keep sorted by (at, seq); insertion from the back is cheap for the common short delays.
    let i = this.timers.length;
    while (i > 0 && (this.timers[i - 1].at > timer.at || (this.timers[i - 1].at === timer.at && this.timers[i - 1].seq > timer.seq))) i--;
    this.timers.splice(i, 0, timer);
    return { id: timer.id };
  }

  clearTimeout(handle: TimerHandle): void {
    const i = this.timers.findIndex((t) => t.id === handle.id);
    if (i >= 0) this.timers.splice(i, 1);
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  /** The time of the next timer, or undefined when none is set. */
  nextTimerAt(): number | undefined {
    return this.timers[0]?.at;
  }

  /** Lets woken code run without moving time. */
  async flush(): Promise<void> {
    await this.settle();
  }

  /** Moves time forward by ms, firing every timer due on the way. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.time + ms);
  }

  async advanceTo(target: number): Promise<void> {
    await this.settle();
    while (this.timers.length > 0 && this.timers[0].at <= target) {
      const t = this.timers.shift() as VirtualTimer;
      this.time = Math.max(this.time, t.at);
      t.fn();
      await this.settle();
    }
    this.time = Math.max(this.time, target);
  }

  /**
   * Fires the next timer only (moving time to it); false when there is none. Only one: a loop
   * that re-arms a zero-delay timer (a runner yielding between READY batches) would otherwise
   * keep step() at the same instant forever.
   */
  async step(): Promise<boolean> {
    await this.settle();
    const next = this.timers.shift();
    if (!next) return false;
    this.time = Math.max(this.time, next.at);
    next.fn();
    await this.settle();
    return true;
  }
}
