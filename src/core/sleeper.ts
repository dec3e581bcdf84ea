import type { Clock, TimerHandle } from "./clock.ts";

/**
 * A sleep on a clock that someone else can cut short (a stop, or new work arriving). One
 * sleep at a time: the loops that use it sleep, wake, work, and sleep again.
 */
export class Sleeper {
  private timer: TimerHandle | null = null;
  private resolve: (() => void) | null = null;
  /** wakeSoon() already asked for this sleep to end. */
  private ending = false;

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
    this.ending = false;
    const r = this.resolve;
    this.resolve = null;
    r?.();
  }

  /**
   * Ends the current sleep on the clock's next turn, after the work already queued; does
   * nothing when not sleeping. Many calls in one turn end it once.
   */
  wakeSoon(): void {
    const r = this.resolve;
    if (r === null || this.ending) return;
    this.ending = true;
    const end = () => {
      if (this.resolve === r) this.wake();
    };
    if (this.clock.defer) this.clock.defer(end);
    else this.clock.setTimeout(end, 0);
  }
}
