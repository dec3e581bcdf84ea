import type { Clock, TimerHandle } from "../core/clock.ts";

/** How long a run of similar warnings is summed up before one line reports it. */
export const WARNING_INTERVAL_MS = 10_000;

/**
 * Logs the first of a run of similar warnings at once, then at most one line per interval
 * carrying the latest message and how many were not logged, so a lasting condition (a full
 * channel) cannot flood the log. Counters are the caller's: they still count every failure.
 */
export class WarningThrottle {
  private timer: TimerHandle | null = null;
  private suppressed = 0;
  private latest = "";

  constructor(
    private readonly clock: Clock,
    private readonly log: (message: string) => void,
    private readonly intervalMs = WARNING_INTERVAL_MS,
  ) {}

  warn(message: string): void {
    if (this.timer === null) {
      this.log(message);
      this.timer = this.clock.setTimeout(() => this.summarize(), this.intervalMs);
      return;
    }
    this.suppressed++;
    this.latest = message;
  }

  /** Logs what is still unreported and cancels the timer (the component is stopping). */
  stop(): void {
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    this.flush();
  }

  private summarize(): void {
    this.timer = null;
    // Nothing since the last line: the run is over, the next warning is logged at once.
    if (this.suppressed === 0) return;
    this.flush();
    this.timer = this.clock.setTimeout(() => this.summarize(), this.intervalMs);
  }

  private flush(): void {
    if (this.suppressed === 0) return;
    const seconds = Math.round(this.intervalMs / 1000);
    this.log(`${this.latest} (${this.suppressed} more like this in the last ${seconds} s, not logged one by one)`);
    this.suppressed = 0;
  }
}
