import type { Channel } from "../../core/channel.ts";
import { EventDeliveryException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { Status } from "../../core/sink.ts";
import type { Clock } from "../../core/clock.ts";
import type { LifecycleState } from "../../core/lifecycle.ts";
import type { Logger } from "../../core/logger.ts";
import type { ComponentContext } from "../component.ts";

/** What every sink shares: its name, channel and lifecycle state. */
export abstract class BaseSink {
  readonly name: string;
  protected readonly clock: Clock;
  protected readonly logger: Logger;
  protected state: LifecycleState = "IDLE";
  private channel: Channel | null = null;

  constructor(ctx: ComponentContext) {
    this.name = ctx.name;
    this.clock = ctx.clock;
    this.logger = ctx.logger;
  }

  setChannel(channel: Channel): void {
    this.channel = channel;
  }

  getChannel(): Channel {
    if (!this.channel) throw new Error(`sink ${this.name} has no channel`);
    return this.channel;
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  /**
   * One take transaction: up to max events, handed to deliver; commits when deliver returns,
   * rolls back and throws EventDeliveryException when it throws. BACKOFF when the channel ran
   * dry before max events.
   */
  protected async takeBatch(max: number, deliver: (events: Event[]) => void | Promise<void>): Promise<{ status: Status; count: number }> {
    const tx = this.getChannel().getTransaction();
    tx.begin();
    // One array per sink, reused: deliver must not keep it.
    const events = this.batch;
    events.length = 0;
    try {
      let status: Status = "READY";
      while (events.length < max) {
        const e = tx.take();
        if (e === null) {
          status = "BACKOFF";
          break;
        }
        events.push(e);
      }
      if (events.length > 0) await deliver(events);
      await tx.commit();
      return { status, count: events.length };
    } catch (err) {
      await tx.rollback();
      throw new EventDeliveryException(`sink ${this.name}: failed to deliver ${events.length} events: ${(err as Error).message}`, { cause: err });
    } finally {
      events.length = 0;
      tx.close();
    }
  }

  private readonly batch: Event[] = [];
}
