/**
 * Where the file channel runs its next append: on the main thread, or in the I/O thread pool.
 *
 * A write handed to the pool costs two thread wake-ups, there and back: 0.06-0.15 ms on this
 * project's 2-core VM, against 0.2 ms for a 130 KB O_DSYNC write, and paid by every commit.
 * A write on the main thread costs the rest of the agent the write's own time instead. That is
 * the better deal only while writes are fast: appends run inline while the smoothed duration of
 * recent writes (both kinds are timed) is within the limit. One stall (this VM's disk sometimes
 * takes 10-300 ms) moves the next writes to the pool; fast pooled writes bring them back.
 */

/** Weight of the newest write in the smoothed duration. */
const WEIGHT = 1 / 8;

export class InlineWrites {
  /** Appends written on the main thread, and in the pool. */
  inline = 0;
  pooled = 0;
  /** Smoothed duration of recent writes, in ms. */
  private recent = 0;

  /** `limitMs` 0: every append goes to the pool; Infinity: every append runs inline. */
  constructor(
    readonly limitMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Runs `inline` now, or returns `pooled()`; a failed write is timed like any other. */
  write(inline: () => void, pooled: () => Promise<void>): Promise<void> | undefined {
    if (this.limitMs <= 0) {
      this.pooled++;
      return pooled();
    }
    const start = this.now();
    if (this.recent > this.limitMs) {
      this.pooled++;
      const p = pooled();
      const timed = () => this.took(start);
      p.then(timed, timed);
      return p;
    }
    this.inline++;
    try {
      inline();
    } finally {
      this.took(start);
    }
    return undefined;
  }

  private took(start: number): void {
    this.recent += (this.now() - start - this.recent) * WEIGHT;
  }
}
