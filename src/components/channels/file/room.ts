import type { Clock } from "../../../core/clock.ts";
import { ChannelFullException } from "../../../core/errors.ts";
import { WaitLine } from "../../../core/wait-line.ts";

/**
 * The channel's capacity as commits claim it: each commit reserves what it will add beyond
 * the slots its own takes already hold (puts - takes, at least 0), released when it is applied
 * or fails; a commit that does not fit waits in line up to keep-alive.
 */
export class Room {
  /** Room promised to commits on their way to disk. */
  reserved = 0;
  /** Commits waiting for room, in arrival order: only the first may reserve. */
  private readonly line: WaitLine;

  /** `used`: slots queued or taken; `requireOpen` throws once the channel is not open. */
  constructor(
    private readonly channel: string,
    private readonly capacity: number,
    private readonly keepAliveSeconds: number,
    private readonly used: () => number,
    private readonly requireOpen: () => void,
    private readonly clock: Clock,
  ) {
    this.line = new WaitLine(clock);
  }

  /** Whether `room` more slots fit beside what is queued, taken and promised. */
  private fits(room: number): boolean {
    return this.used() + this.reserved + room <= this.capacity;
  }

  /**
   * Reserves room for a commit's puts: at once when its net puts fit and no commit waits before
   * it, else (returning a promise) after waiting in line up to keep-alive. The check and the
   * reservation happen in the same tick, so commits woken together cannot overfill the channel.
   */
  reserve(room: number): Promise<void> | null {
    if (room === 0 || (this.line.length === 0 && this.fits(room))) {
      this.reserved += room;
      return null;
    }
    return this.waitFor(room);
  }

  private async waitFor(room: number): Promise<void> {
    const deadline = this.clock.now() + this.keepAliveSeconds * 1000;
    const waiter = this.line.join();
    try {
      for (;;) {
        this.requireOpen();
        if (this.line.isFirst(waiter) && this.fits(room)) {
          this.reserved += room;
          return;
        }
        const left = deadline - this.clock.now();
        if (left <= 0) break;
        await this.line.sleep(waiter, left);
      }
    } finally {
      // The next in line may fit now (this one got room, gave up, or the channel stopped).
      this.line.leave(waiter);
    }
    throw new ChannelFullException(
      `Space for commit to queue couldn't be acquired. Sinks are likely not keeping up with sources, or the buffer size is too tight (channel ${this.channel}, capacity ${this.capacity})`,
    );
  }

  /** Room may have come free (or the channel stopped): the waiting commits look again. */
  wake(): void {
    this.line.wakeAll();
  }
}
