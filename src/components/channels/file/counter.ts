import type { Clock } from "../../../core/clock.ts";
import { ChannelCounter } from "../../../core/counters.ts";

export const FILE_CHANNEL_COUNTERS = [
  "EventPutErrorCount",
  "EventTakeErrorCount",
  "CheckpointWriteErrorCount",
  "CheckpointBackupWriteErrorCount",
] as const;
export type FileChannelCounterKey = (typeof FILE_CHANNEL_COUNTERS)[number];

/** Flume's FileChannelCounter: the channel counters plus Open, Closed, Unhealthy and error counts. */
export class FileChannelCounter extends ChannelCounter<FileChannelCounterKey> {
  /** True while the channel's log is open for transactions. */
  open = false;
  /** True when the channel failed to start (for example a damaged data file). */
  unhealthy = false;

  constructor(name: string, clock?: Clock) {
    super(name, FILE_CHANNEL_COUNTERS, clock);
  }

  protected override extra(): Record<string, string> {
    return {
      ...super.extra(),
      Open: String(this.open),
      Closed: this.open ? "0" : "1",
      Unhealthy: this.unhealthy ? "1" : "0",
    };
  }
}
