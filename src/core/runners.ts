import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { EventDeliveryException } from "./errors.ts";
import { Sleeper } from "./sleeper.ts";
import type { LifecycleAware, LifecycleState } from "./lifecycle.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { SinkProcessor } from "./sink-processors.ts";
import type { Status } from "./sink.ts";
import type { AnySource, PollableSource } from "./source.ts";

export interface BackoffOptions {
  /** Added to the sleep after each consecutive BACKOFF (Flume: 1000 ms). */
  backoffSleepIncrement?: number;
  /** Ceiling of that sleep, and the sleep after an exception (Flume: 5000 ms). */
  maxBackoffSleep?: number;
}

/** Counts kept by a runner loop, as Flume's runner counter group. */
export interface RunnerStats {
  backoffs: number;
  consecutiveBackoffs: number;
  deliveryErrors: number;
  errors: number;
}

/**
 * Calls process() in a loop: at once after READY, after a growing sleep after BACKOFF, and
 * after maxBackoffSleep when it throws. An exception never ends the loop.
 */
class PollingLoop {
  readonly stats: RunnerStats = { backoffs: 0, consecutiveBackoffs: 0, deliveryErrors: 0, errors: 0 };
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly sleeper: Sleeper;
  /** True while sleeping after a BACKOFF (not after an error). */
  private backingOff = false;
  /** Work arrived while process() ran: skip the next BACKOFF sleep (it may predate the work). */
  private wakePending = false;
  private readonly increment: number;
  private readonly max: number;

  constructor(
    private readonly label: string,
    private readonly step: () => Promise<Status>,
    clock: Clock,
    private readonly logger: Logger,
    options: BackoffOptions,
  ) {
    this.increment = options.backoffSleepIncrement ?? 1000;
    this.max = options.maxBackoffSleep ?? 5000;
    this.sleeper = new Sleeper(clock);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.interrupt();
    await this.loop;
    this.loop = null;
  }

  /** Ends a backoff sleep early, for example because new events arrived. */
  interrupt(): void {
    this.sleeper.wake();
  }

  /**
   * Ends a BACKOFF sleep because there is work again (events committed to the channel, or a
   * source's file written). Flume's sinks get the same effect from a take that waits
   * keep-alive for an event; our take never blocks, so the channel tells the runner instead.
   * Sleeps after an error are not cut short: they protect a failing downstream.
   */
  wakeFromBackoff(): void {
    if (this.backingOff) this.interrupt();
    else this.wakePending = true;
  }

  private sleep(ms: number): Promise<void> {
    return this.sleeper.sleep(ms);
  }

  private async run(): Promise<void> {
    // Yield once so start() returns before the first process() call.
    await Promise.resolve();
    let readyStreak = 0;
    while (this.running) {
      try {
        this.wakePending = false;
        const status = await this.step();
        if (status === "BACKOFF") {
          this.stats.backoffs++;
          this.stats.consecutiveBackoffs++;
          readyStreak = 0;
          if (this.wakePending) {
            this.wakePending = false;
            continue;
          }
          // stop() came while step() ran: its interrupt found no sleep to cut short.
          if (!this.running) break;
          this.backingOff = true;
          try {
            await this.sleep(Math.min(this.stats.consecutiveBackoffs * this.increment, this.max));
          } finally {
            this.backingOff = false;
          }
        } else {
          this.stats.consecutiveBackoffs = 0;
          // A sink that is always READY would otherwise starve timers and sockets.
          if (++readyStreak >= 64) {
            readyStreak = 0;
            // Through sleep() so stop() can cut it short (on a paused virtual clock it never fires).
            await this.sleep(0);
          }
        }
      } catch (err) {
        if (err instanceof EventDeliveryException) this.stats.deliveryErrors++;
        else this.stats.errors++;
        const what = err instanceof EventDeliveryException ? "Unable to deliver event" : "Unhandled exception";
        // A failure that ends the loop's last step (stop() came meanwhile) is followed by no sleep.
        this.logger.error(`${this.label}: ${what}${this.running ? `, sleeping ${this.max} ms` : " while stopping"}: ${(err as Error).message}`);
        readyStreak = 0;
        if (this.running) await this.sleep(this.max);
      }
    }
  }
}

/** Drives a sink processor (one sink or a sink group), as Flume's SinkRunner. */
export class SinkRunner implements LifecycleAware {
  private state: LifecycleState = "IDLE";
  private readonly loop: PollingLoop;

  constructor(
    readonly name: string,
    readonly processor: SinkProcessor,
    clock: Clock = systemClock,
    logger: Logger = silentLogger,
    options: BackoffOptions = {},
  ) {
    this.loop = new PollingLoop(`sink runner ${name}`, () => processor.process(), clock, logger, options);
  }

  get stats(): RunnerStats {
    return this.loop.stats;
  }

  private unsubscribe: (() => void)[] = [];

  async start(): Promise<void> {
    try {
      await this.processor.start();
    } catch (err) {
      // The sinks that did start (a connection, a roll timer) would be left running: the
      // supervisor only stops a runner that reached START, and it retries the start.
      await this.processor.stop().catch(() => {});
      throw err;
    }
    const channels = new Set(this.processor.sinks.map((s) => s.getChannel()));
    for (const c of channels) {
      const off = c.onPutsCommitted?.(() => this.loop.wakeFromBackoff());
      if (off) this.unsubscribe.push(off);
    }
    this.loop.start();
    this.state = "START";
  }

  async stop(): Promise<void> {
    for (const off of this.unsubscribe) off();
    this.unsubscribe = [];
    const stopped = this.loop.stop();
    // After the loop stopped calling it: a process() under way may wait on deliveries in flight.
    for (const s of this.processor.sinks) s.interrupt?.();
    await stopped;
    await this.processor.stop();
    this.state = "STOP";
  }

  abortStart(): void {
    for (const s of this.processor.sinks) s.abortStart?.();
  }

  /** Wakes the runner from any sleep, a sleep after an error included. */
  poke(): void {
    this.loop.interrupt();
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }
}

/** Starts and stops a source; pollable sources are driven by a loop like a sink's. */
export class SourceRunner implements LifecycleAware {
  private state: LifecycleState = "IDLE";
  private readonly loop: PollingLoop | null;

  constructor(
    readonly source: AnySource,
    clock: Clock = systemClock,
    logger: Logger = silentLogger,
  ) {
    if (source.kind === "pollable") {
      const p = source as PollableSource;
      this.loop = new PollingLoop(`source runner ${source.name}`, () => p.process(), clock, logger, {
        backoffSleepIncrement: p.backoffSleepIncrement,
        maxBackoffSleep: p.maxBackoffSleep,
      });
    } else {
      this.loop = null;
    }
  }

  get name(): string {
    return this.source.name;
  }

  get stats(): RunnerStats | null {
    return this.loop?.stats ?? null;
  }

  async start(): Promise<void> {
    const processor = this.source.getChannelProcessor();
    processor.initialize();
    try {
      await this.source.start();
    } catch (err) {
      // The supervisor retries the start, which initializes again: close to pair them up.
      processor.close();
      throw err;
    }
    this.loop?.start();
    if (this.source.kind === "pollable" && this.loop) {
      const loop = this.loop;
      this.source.setWakeup?.(() => loop.wakeFromBackoff());
    }
    this.state = "START";
  }

  async stop(): Promise<void> {
    if (this.loop) {
      const stopped = this.loop.stop();
      // After the loop stopped calling it: a process() under way may be waiting on a full channel.
      if (this.source.kind === "pollable") this.source.interrupt?.();
      await stopped;
    }
    await this.source.stop();
    this.source.getChannelProcessor().close();
    this.state = "STOP";
  }

  abortStart(): void {
    this.source.abortStart?.();
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }
}
