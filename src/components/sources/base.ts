import type { ChannelProcessor } from "../../core/channel-processor.ts";
import type { Clock } from "../../core/clock.ts";
import { SourceCounter } from "../../core/counters.ts";
import type { LifecycleState } from "../../core/lifecycle.ts";
import type { Logger } from "../../core/logger.ts";
import type { ComponentContext } from "../component.ts";

/** What every source shares: its name, counter, channel processor and lifecycle state. */
export abstract class BaseSource {
  readonly name: string;
  readonly counter: SourceCounter;
  protected readonly clock: Clock;
  protected readonly logger: Logger;
  protected state: LifecycleState = "IDLE";
  private processor: ChannelProcessor | null = null;

  constructor(ctx: ComponentContext) {
    this.name = ctx.name;
    this.clock = ctx.clock;
    this.logger = ctx.logger;
    this.counter = new SourceCounter(ctx.name, ctx.clock);
  }

  setChannelProcessor(processor: ChannelProcessor): void {
    this.processor = processor;
  }

  getChannelProcessor(): ChannelProcessor {
    if (!this.processor) throw new Error(`source ${this.name} has no channel processor`);
    return this.processor;
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }
}
