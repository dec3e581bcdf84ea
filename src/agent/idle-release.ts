import type { Clock, TimerHandle } from "../core/clock.ts";

/** Quiet checks after a release whose RSS raises the floor: about what an idle agent pages back in over 2 minutes. */
const SETTLE_CHECKS = 120;

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
  /**
   * Release once right after the start, too, before the first quiet spell: parsing, validating
   * and building the agent do not run again, and a load that begins at once (a restart onto a
   * backlog) would otherwise peak on top of the 25 MB they left resident.
   */
  atStart?: boolean;
}

/**
 * Calls `release` once the agent has moved no events for `quietMs`: after the start (whose
 * parsing and building is not run again; with `atStart` also right away) and after each burst
 * of traffic, while the memory the burst took is still held. `activity` is a number that
 * changes whenever events move (a sum of counters); `rss` is the process's resident bytes.
 */
export class IdleMemoryRelease {
  private timer: TimerHandle | null = null;
  private running = false;
  private lastActivity = Number.NaN;
  private quietSince = 0;
  /**
   * The most RSS seen while quiet since the previous release (an idle agent pages some of what
   * was released back in); -Infinity before the first release, which always runs.
   */
  private floor = Number.NEGATIVE_INFINITY;
  /** Quiet checks left in which RSS is still taken into the floor after a release (it settles within a minute or two). */
  private settleChecks = 0;
  /** This quiet spell has been judged (released, or too little to release): RSS is not read again until events move. */
  private judged = false;
  private readonly checkMs: number;
  private readonly minGrowthBytes: number;

  constructor(
    private readonly clock: Clock,
    private readonly activity: () => number,
    private readonly rss: () => number,
    private readonly release: (after: "start" | "quiet") => Promise<void>,
    private readonly o: IdleReleaseOptions,
  ) {
    this.checkMs = o.checkMs ?? 1000;
    this.minGrowthBytes = o.minGrowthBytes ?? 8 * 1024 * 1024;
  }

  start(): void {
    this.running = true;
    this.quietSince = this.clock.now();
    this.lastActivity = this.activity();
    // A timer, not a call: the caller's start (its log line, its listeners) finishes first.
    if (this.o.atStart) this.timer = this.clock.setTimeout(() => this.releaseThenCheck("start"), 0);
    else this.schedule();
  }

  stop(): void {
    this.running = false;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    this.timer = this.clock.setTimeout(() => this.check(), this.checkMs);
  }

  /** Plain and synchronous: it runs every second of an idle agent's life. */
  private check(): void {
    const now = this.clock.now();
    const activity = this.activity();
    if (activity !== this.lastActivity) {
      this.lastActivity = activity;
      this.quietSince = now;
      this.settleChecks = 0;
      this.judged = false;
    } else {
      if (this.settleChecks > 0) {
        this.settleChecks--;
        this.floor = Math.max(this.floor, this.rss());
      }
      if (!this.judged && now - this.quietSince >= this.o.quietMs) {
        this.judged = true;
        if (this.rss() >= this.floor + this.minGrowthBytes) {
          this.releaseThenCheck("quiet");
          return;
        }
      }
    }
    this.schedule();
  }

  /**
   * The next check waits for the release to end. After a quiet one, what RSS is then starts the
   * floor anew; the one at the start leaves it, so the first quiet spell still releases what the
   * rest of the start and a first burst paged in.
   */
  private releaseThenCheck(after: "start" | "quiet"): void {
    this.timer = null;
    // A failed release (the caller logs why) must not become an unhandled rejection that ends the process.
    void this.release(after)
      .catch(() => undefined)
      .finally(() => {
        if (after === "quiet") {
          this.floor = this.rss();
          this.settleChecks = SETTLE_CHECKS;
        }
        if (this.running) this.schedule();
      });
  }
}
