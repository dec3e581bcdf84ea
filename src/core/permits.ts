import type { Clock, TimerHandle } from "./clock.ts";

interface Waiter {
  n: number;
  resolve: (ok: boolean) => void;
  timer: TimerHandle | null;
}

/**
 * A counting semaphore whose acquire can wait (on the injected clock) for permits released
 * later, as Java's Semaphore.tryAcquire(n, timeout). Waiters are served in arrival order so a
 * large request is not starved by small ones.
 */
export class Permits {
  private waiters: Waiter[] = [];

  constructor(
    private available: number,
    private readonly clock: Clock,
  ) {}

  get free(): number {
    return this.available;
  }

  /** Takes n permits now if possible. */
  tryAcquireNow(n: number): boolean {
    if (n <= 0) return true;
    if (this.waiters.length === 0 && this.available >= n) {
      this.available -= n;
      return true;
    }
    return false;
  }

  /** Takes n permits, waiting up to timeoutMs; resolves false when they did not come. */
  tryAcquire(n: number, timeoutMs: number): Promise<boolean> | boolean {
    if (this.tryAcquireNow(n)) return true;
    if (timeoutMs <= 0) return false;
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = { n, resolve, timer: null };
      waiter.timer = this.clock.setTimeout(() => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
        // The head may have been blocking others that now fit.
        this.drain();
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  release(n: number): void {
    if (n <= 0) return;
    this.available += n;
    this.drain();
  }

  /** Removes permits without waiting (may go negative after a shrink; callers check first). */
  reduce(n: number): void {
    this.available -= n;
  }

  private drain(): void {
    while (this.waiters.length > 0 && this.available >= this.waiters[0].n) {
      const w = this.waiters.shift() as Waiter;
      this.available -= w.n;
      if (w.timer) this.clock.clearTimeout(w.timer);
      w.resolve(true);
    }
  }
}
