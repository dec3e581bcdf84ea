import type { Clock, TimerHandle } from "./clock.ts";

/**
 * A sleep on a clock that someone else can cut short (a stop, or new work arriving). One
 * sleep at a time: the loops that use it sleep, wake, work, and sleep again.
 */
export class Sleeper {
  private timer: TimerHandle | null = null;
  private resolve: (() => void) | null = null;

  constructor(private readonly clock: Clock) {}

  get sleeping(): boolean {
    return this.resolve !== null;
  }

  sleep(ms: number): Promise<void> {
    this.wake();
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.timer = this.clock.setTimeout(() => {
        this.timer = null;
        this.resolve = null;
        resolve();
      }, ms);
    });
  }

  /** Ends the current sleep now; does nothing when not sleeping. */
  wake(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
    const r = this.resolve;
    this.resolve = null;
    r?.();
  }
}
