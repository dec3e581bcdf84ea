import type { Channel } from "../../core/channel.ts";
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
}
