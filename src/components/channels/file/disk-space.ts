import fs from "node:fs";
import type { Clock } from "../../../core/clock.ts";
import type { Logger } from "../../../core/logger.ts";

/** Flume's floor for minimumRequiredSpace: 1 MB. */
export const MINIMUM_REQUIRED_SPACE_FLOOR = 1024 * 1024;
/** How often put() re-checks free disk space while the channel is refusing puts. */
const LOW_DISK_RECHECK_MS = 1000;
/**
 * With this much more than minimumRequiredSpace free, commits within SPACE_CHECK_MS of a check
 * skip the next one (a statfs per commit was 4% of a fast pipeline; 100 ms of commits write far less).
 */
const SPACE_MARGIN = 256 * 1024 * 1024;
const SPACE_CHECK_MS = 100;

/** Free space on the data disk against minimumRequiredSpace: below it, puts are refused. */
export class DiskSpace {
  /** Why puts are refused, or null. */
  low: string | null = null;
  private lastCheck = 0;
  /** Free bytes at the last check. */
  private lastFree = 0;
  private minimumRequired: number;

  /** `dir`: the directory the next write goes to. */
  constructor(
    private readonly channel: string,
    minimumRequiredSpace: number,
    private readonly dir: () => string,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.minimumRequired = Math.max(minimumRequiredSpace, MINIMUM_REQUIRED_SPACE_FLOOR);
  }

  /** A new minimumRequiredSpace (reconfiguration); the next check looks at the disk again. */
  setMinimum(bytes: number): void {
    this.minimumRequired = Math.max(bytes, MINIMUM_REQUIRED_SPACE_FLOOR);
    this.lastCheck = Number.NEGATIVE_INFINITY;
  }

  /**
   * Returns why puts are refused (free space below minimumRequiredSpace), or null. While puts
   * are refused, put() re-checks at most once a second so a full disk costs no syscall per event.
   */
  check(throttled: boolean): string | null {
    const now = this.clock.now();
    if (throttled && now - this.lastCheck < LOW_DISK_RECHECK_MS) return this.low;
    if (this.low === null && now - this.lastCheck < SPACE_CHECK_MS && this.lastFree - this.minimumRequired > SPACE_MARGIN) return null;
    this.lastCheck = now;
    const dir = this.dir();
    try {
      const st = fs.statfsSync(dir);
      const free = Number(st.bavail) * Number(st.bsize);
      this.lastFree = free;
      if (free < this.minimumRequired) {
        if (this.low === null) this.logger.warn(`file channel ${this.channel}: disk space low in ${dir}; refusing puts until it returns`);
        this.low = `file channel ${this.channel}: only ${free} bytes free in ${dir}, below minimumRequiredSpace ${this.minimumRequired}; puts are refused until space is freed (takes keep working)`;
      } else {
        if (this.low !== null) this.logger.info(`file channel ${this.channel}: disk space is back in ${dir}; accepting puts again`);
        this.low = null;
      }
    } catch {
      // statfs unsupported: rely on ENOSPC from the writes themselves.
      this.low = null;
    }
    return this.low;
  }
}
