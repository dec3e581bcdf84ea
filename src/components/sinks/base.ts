import type { Channel } from "../../core/channel.ts";
import type { Clock } from "../../core/clock.ts";
import type { SinkCounter } from "../../core/counters.ts";
import type { LifecycleState } from "../../core/lifecycle.ts";
import type { Logger } from "../../core/logger.ts";
import type { Sink, Status } from "../../core/sink.ts";
import { TakeLoop, type TakeLoopOptions } from "../../pipeline/take-loop.ts";
import type { ComponentContext } from "../component.ts";

/**
 * What every sink shares: its name, channel, lifecycle state and process(), which runs the
 * sink's take loop (src/pipeline/take-loop.ts). A sink makes its TakeLoop in its constructor
 * with its deliver policy; one with work before the transaction (rolling a file, replacing a
 * connection) overrides process() and ends with super.process().
 */
export abstract class BaseSink implements Sink {
  readonly name: string;
  protected readonly clock: Clock;
  protected readonly logger: Logger;
  protected state: LifecycleState = "IDLE";
  /** Flume's SinkCounter, for the sinks that have one (Flume's null and logger sinks have none). */
  readonly counter?: SinkCounter;
  protected abstract readonly takeLoop: TakeLoop;
  private channel: Channel | null = null;

  constructor(ctx: ComponentContext) {
    this.name = ctx.name;
    this.clock = ctx.clock;
    this.logger = ctx.logger;
  }

  start(): void | Promise<void> {
    this.counter?.start();
    this.state = "START";
  }

  stop(): void | Promise<void> {
    this.counter?.stop();
    this.state = "STOP";
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

  /** A take loop labelled "sink <name>" (unless options say otherwise) that logs to this sink's logger. */
  protected newTakeLoop(options: Omit<TakeLoopOptions, "label" | "logger"> & { label?: string }): TakeLoop {
    return new TakeLoop({ label: `sink ${this.name}`, logger: this.logger, ...options });
  }

  process(): Promise<Status> {
    return this.takeLoop.process(this.getChannel());
  }
}
