import type { ChannelProcessor } from "../../core/channel-processor.ts";
import type { Clock } from "../../core/clock.ts";
import { SourceCounter } from "../../core/counters.ts";
import type { LifecycleState } from "../../core/lifecycle.ts";
import type { Logger } from "../../core/logger.ts";
import { type EmitterOptions, SourceEmitter } from "../../pipeline/emitter.ts";
import type { ComponentContext } from "../component.ts";

/**
 * How a source's emitter names it and retries (see SourceEmitter). unlogged: refusals and
 * failures are not logged, for a caller that reports them itself (the simulator, whose log
 * throttles would run timers in virtual time).
 */
export type EmissionOptions = Omit<EmitterOptions, "clock" | "logger"> & { unlogged?: boolean };

/**
 * What every source shares: its name, counter, channel processor, lifecycle state, and the
 * emitter through which all its events go to the channels.
 */
export abstract class BaseSource {
  readonly name: string;
  readonly counter: SourceCounter;
  protected readonly clock: Clock;
  protected readonly logger: Logger;
  protected readonly emitter: SourceEmitter;
  protected state: LifecycleState = "IDLE";
  private processor: ChannelProcessor | null = null;

  /** counterKeys: counters this source type adds to Flume's (declare the counter's type in the subclass). */
  constructor(ctx: ComponentContext, emission: EmissionOptions = {}, counterKeys: readonly string[] = []) {
    this.name = ctx.name;
    this.clock = ctx.clock;
    this.logger = ctx.logger;
    this.counter = new SourceCounter(ctx.name, ctx.clock, counterKeys);
    const { unlogged = false, ...rest } = emission;
    this.emitter = new SourceEmitter(this, { clock: ctx.clock, logger: unlogged ? undefined : ctx.logger, ...rest });
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

  /** Counters start over (as Flume's) and the emitter may retry again; call first in start(). */
  protected beginStart(): void {
    this.counter.start();
    this.emitter.start();
  }

  /** start() of a source with nothing else to start. */
  protected markStarted(): void {
    this.beginStart();
    this.state = "START";
  }

  /** stop() of a source with nothing else to stop: waits on a full channel end now. */
  protected markStopped(): void {
    this.emitter.stop();
    this.counter.stop();
    this.state = "STOP";
  }
}
