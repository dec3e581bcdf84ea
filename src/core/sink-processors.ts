import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { ConfigurationError, EventDeliveryException } from "./errors.ts";
import type { LifecycleState } from "./lifecycle.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { Sink, Status } from "./sink.ts";

/** Decides which of a sink group's sinks processes next (Flume's SinkProcessor). */
export interface SinkProcessor {
  readonly type: string;
  readonly sinks: readonly Sink[];
  start(): Promise<void>;
  stop(): Promise<void>;
  getLifecycleState(): LifecycleState;
  process(): Promise<Status>;
}

abstract class BaseSinkProcessor implements SinkProcessor {
  abstract readonly type: string;
  private state: LifecycleState = "IDLE";

  constructor(readonly sinks: readonly Sink[]) {
    if (sinks.length === 0) throw new ConfigurationError("sinks", "a sink processor needs at least one sink");
  }

  async start(): Promise<void> {
    for (const s of this.sinks) await s.start();
    this.state = "START";
  }

  async stop(): Promise<void> {
    for (const s of this.sinks) await s.stop();
    this.state = "STOP";
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  abstract process(): Promise<Status>;
}

/** One sink, no group: process passes straight through. */
export class DefaultSinkProcessor extends BaseSinkProcessor {
  readonly type = "default";

  constructor(sink: Sink) {
    super([sink]);
  }

  process(): Promise<Status> {
    return this.sinks[0].process();
  }
}

/** Base penalty of a failed sink; doubles per consecutive failure (Flume's FAILURE_PENALTY). */
export const FAILURE_PENALTY_MS = 1000;

/** How long a sink sits out after `failures` consecutive failures: doubling from a second, at most maxMs (both of Flume's processors). */
function penaltyMs(failures: number, maxMs: number): number {
  return Math.min(maxMs, FAILURE_PENALTY_MS * 2 ** failures);
}

export interface FailoverOptions {
  /** sink name -> priority; higher goes first. */
  priorities?: Record<string, number>;
  /** Upper bound of a failed sink's penalty (Flume's maxpenalty). */
  maxPenalty?: number;
}

interface FailedSink {
  sink: Sink;
  priority: number;
  failures: number;
  refresh: number;
}

/**
 * Sends everything to the live sink of highest priority; a sink that throws sits out
 * min(maxpenalty, 1000 * 2^failures) ms, then is tried again (Flume's FailoverSinkProcessor).
 */
export class FailoverSinkProcessor extends BaseSinkProcessor {
  readonly type = "failover";
  readonly maxPenalty: number;
  /** priority -> sink, for live sinks */
  private readonly live = new Map<number, Sink>();
  private failed: FailedSink[] = [];
  private active: Sink | null = null;
  private readonly priorityOf = new Map<Sink, number>();

  constructor(
    sinks: readonly Sink[],
    options: FailoverOptions = {},
    private readonly clock: Clock = systemClock,
    private readonly logger: Logger = silentLogger,
  ) {
    super(sinks);
    this.maxPenalty = options.maxPenalty ?? 30000;
    // Sinks without a priority rank below those with one, in the order given (as Flume).
    let nextPriority = 0;
    for (const sink of sinks) {
      const p = options.priorities?.[sink.name] ?? --nextPriority;
      if (this.live.has(p)) {
        this.logger.warn(`Sink ${sink.name} not added to the failover processor: its priority ${p} duplicates that of sink ${this.live.get(p)?.name}`);
        continue;
      }
      this.live.set(p, sink);
      this.priorityOf.set(sink, p);
    }
    this.active = this.best();
  }

  private best(): Sink | null {
    let top = -Infinity;
    for (const p of this.live.keys()) if (p > top) top = p;
    return top === -Infinity ? null : (this.live.get(top) ?? null);
  }

  /** Sinks currently sitting out, with the time they may be tried again. */
  penalties(): { sink: string; failures: number; until: number }[] {
    return this.failed.map((f) => ({ sink: f.sink.name, failures: f.failures, until: f.refresh }));
  }

  private penalize(f: FailedSink): void {
    f.refresh = this.clock.now() + penaltyMs(f.failures, this.maxPenalty);
    this.failed.push(f);
    this.failed.sort((a, b) => a.refresh - b.refresh);
  }

  async process(): Promise<Status> {
    // Give sinks whose penalty has passed one try; a success brings them back.
    const now = this.clock.now();
    while (this.failed.length > 0 && this.failed[0].refresh <= now) {
      const f = this.failed.shift() as FailedSink;
      try {
        const status = await f.sink.process();
        if (status === "READY") {
          this.live.set(f.priority, f.sink);
          this.active = this.best();
        } else {
          // BACKOFF is not a failure: keep it out without a longer penalty.
          this.failed.push(f);
          this.failed.sort((a, b) => a.refresh - b.refresh);
        }
        return status;
      } catch (err) {
        f.failures++;
        this.logger.warn(`Sink ${f.sink.name} failed again (${f.failures} in a row): ${(err as Error).message}`);
        this.penalize(f);
      }
    }
    while (this.active !== null) {
      const sink = this.active;
      try {
        return await sink.process();
      } catch (err) {
        this.logger.warn(`Sink ${sink.name} failed and has been sent to failover list: ${(err as Error).message}`);
        const priority = this.priorityOf.get(sink) as number;
        this.live.delete(priority);
        this.penalize({ sink, priority, failures: 1, refresh: 0 });
        this.active = this.best();
      }
    }
    throw new EventDeliveryException("All sinks failed to process, nothing left to failover to");
  }
}

export type SinkSelectorPolicy = "round_robin" | "random";

export interface LoadBalanceOptions {
  selector?: SinkSelectorPolicy;
  /** Back off failed sinks exponentially (Flume's processor.backoff). */
  backoff?: boolean;
  /** Upper bound of the backoff (Flume's processor.selector.maxTimeOut). */
  maxTimeOut?: number;
  random?: () => number;
}

interface BackoffState {
  sequentialFails: number;
  lastFail: number;
  restoreTime: number;
}

/** Failures within this long after the previous backoff ended count as consecutive (Flume's CONSIDER_SEQUENTIAL_RANGE: one hour). */
const CONSIDER_SEQUENTIAL_RANGE_MS = 60 * 60 * 1000;
const MAX_EXPONENT = 16;

/**
 * Spreads batches over sinks in rotation or at random; a failing sink is skipped for that call
 * and, with backoff, excluded for min(maxTimeOut, 1000 * 2^n) ms (Flume's
 * LoadBalancingSinkProcessor with its OrderSelector).
 */
export class LoadBalancingSinkProcessor extends BaseSinkProcessor {
  readonly type = "load_balance";
  readonly policy: SinkSelectorPolicy;
  readonly backoff: boolean;
  readonly maxTimeOut: number;
  private readonly random: () => number;
  private readonly states: BackoffState[];
  private nextHead = 0;

  constructor(
    sinks: readonly Sink[],
    options: LoadBalanceOptions = {},
    private readonly clock: Clock = systemClock,
    private readonly logger: Logger = silentLogger,
  ) {
    super(sinks);
    this.policy = options.selector ?? "round_robin";
    this.backoff = options.backoff ?? false;
    this.maxTimeOut = options.maxTimeOut ?? 30000;
    this.random = options.random ?? Math.random;
    this.states = sinks.map(() => ({ sequentialFails: 0, lastFail: 0, restoreTime: 0 }));
  }

  /** The order in which this call tries the sinks. */
  private order(): number[] {
    const now = this.clock.now();
    const active: number[] = [];
    for (let i = 0; i < this.sinks.length; i++) if (this.states[i].restoreTime <= now) active.push(i);
    const size = active.length;
    if (this.policy === "random") {
      for (let i = size - 1; i > 0; i--) {
        const j = Math.floor(this.random() * (i + 1));
        [active[i], active[j]] = [active[j], active[i]];
      }
      return active;
    }
    if (this.nextHead >= size) this.nextHead = 0;
    const begin = this.nextHead++;
    if (this.nextHead >= size) this.nextHead = 0;
    const out = new Array<number>(size);
    for (let i = 0; i < size; i++) out[i] = active[(begin + i) % size];
    return out;
  }

  private failed(index: number): void {
    if (!this.backoff) return;
    const s = this.states[index];
    const now = this.clock.now();
    const lastBackoff = penaltyMs(s.sequentialFails, this.maxTimeOut);
    if (lastBackoff + CONSIDER_SEQUENTIAL_RANGE_MS > now - s.lastFail) {
      if (s.sequentialFails < MAX_EXPONENT) s.sequentialFails++;
    } else {
      s.sequentialFails = 1;
    }
    s.lastFail = now;
    s.restoreTime = now + penaltyMs(s.sequentialFails, this.maxTimeOut);
  }

  async process(): Promise<Status> {
    for (const i of this.order()) {
      try {
        return await this.sinks[i].process();
      } catch (err) {
        this.failed(i);
        this.logger.warn(`Sink ${this.sinks[i].name} failed to consume events; trying the next sink if available: ${(err as Error).message}`);
      }
    }
    throw new EventDeliveryException("All configured sinks have failed");
  }
}
