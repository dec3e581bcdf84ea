import type { Clock, TimerHandle } from "../core/clock.ts";

export interface IdleReleaseOptions {
  /** Milliseconds without events before memory is released. */
  quietMs: number;
  /** Milliseconds between looks at the counters (default 1000). */
  checkMs?: number;
  /**
   * Bytes RSS must have grown since the previous release for another one (default 8 MiB): a
   * trickle of events with long gaps leaves little to return, and a release costs a full
   * collection and recompiling what runs next.
   */
  minGrowthBytes?: number;
}

/**
 * Calls `release` once the agent has moved no events for `quietMs`: after the start (whose
 * parsing and building is not run again) and after each burst of traffic, while the memory the
 * burst took is still held. `activity` is a number that changes whenever events move (a sum of
 * counters); `rss` is the process's resident bytes.
 */
export class IdleMemoryRelease {
  private timer: TimerHandle | null = null;
  private lastActivity = Number.NaN;
  private quietSince = 0;
  /**
   * The most RSS seen while quiet since the previous release (an idle agent pages some of what
   * was released back in); -Infinity before the first release, which always runs.
   */
  private floor = Number.NEGATIVE_INFINITY;
  /** Quiet since the previous release: RSS now is what an idle agent holds, not what a burst took. */
  private settling = false;
  private releasing = false;
  private readonly checkMs: number;
  private readonly minGrowthBytes: number;

  constructor(
    private readonly clock: Clock,
    private readonly activity: () => number,
    private readonly rss: () => number,
    private readonly release: () => Promise<void>,
    private readonly o: IdleReleaseOptions,
  ) {
    this.checkMs = o.checkMs ?? 1000;
    this.minGrowthBytes = o.minGrowthBytes ?? 8 * 1024 * 1024;
  }

  start(): void {
    this.quietSince = this.clock.now();
    this.lastActivity = this.activity();
    this.schedule();
  }

  stop(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    this.timer = this.clock.setTimeout(() => void this.check().finally(() => this.timer && this.schedule()), this.checkMs);
  }

  private async check(): Promise<void> {
    const now = this.clock.now();
    const activity = this.activity();
    if (activity !== this.lastActivity) {
      this.lastActivity = activity;
      this.quietSince = now;
      this.settling = false;
      return;
    }
    if (this.releasing) return;
    const rss = this.rss();
    if (this.settling) this.floor = Math.max(this.floor, rss);
    if (now - this.quietSince < this.o.quietMs || rss < this.floor + this.minGrowthBytes) return;
    this.releasing = true;
    try {
      await this.release();
    } finally {
      this.releasing = false;
      this.floor = this.rss();
      this.settling = true;
    }
  }
}
