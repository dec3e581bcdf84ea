import type { Clock, TimerHandle } from "./clock.ts";
import { systemClock } from "./clock.ts";
import type { LifecycleAware, LifecycleState } from "./lifecycle.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import { isRetryable } from "./errors.ts";

/** When a failed start may be tried again: always (Flume's AlwaysRestartPolicy) or never. */
export type RestartPolicy = "always" | "once";

export interface SupervisedStatus {
  desired: "START" | "STOP";
  /** Failed start/stop attempts so far. */
  failures: number;
  /** The last error, when the component is in error. */
  lastError: string | null;
  /** The last error itself (what the component threw), null after a successful start. */
  cause: unknown;
  /** True when a start failed and the policy forbids another try. */
  error: boolean;
  /** True while a start attempt is under way (one waiting on a peer may take its whole bound). */
  starting: boolean;
}

interface Supervised {
  component: LifecycleAware;
  policy: RestartPolicy;
  status: SupervisedStatus;
  busy: boolean;
  /** The check in progress (a start or stop), which unsupervise waits for. */
  inflight: Promise<void> | null;
  timer: TimerHandle | null;
  /** Failed starts in a row, for the backoff (0 once a start succeeds). */
  failedStarts: number;
  /** Resolves when the component first reaches its desired state or gives up. */
  settled: Promise<void>;
  settle: () => void;
}

/**
 * Keeps components in their desired state (Flume's LifecycleSupervisor): a monitor checks
 * each one every `monitorInterval` ms and starts or stops it. A failed start is retried under
 * the "always" policy with a backoff: `firstRetryMs` after the first failure, doubling after
 * each one, capped at `monitorInterval` (Flume retries on its monitor interval, so the worst
 * case stays its 3 s while a peer that comes back soon is used soon).
 */
export class LifecycleSupervisor {
  private readonly supervised = new Map<LifecycleAware, Supervised>();
  /** Between abandonStarts() and resume(): nothing is started or tried again. */
  private stopping = false;

  constructor(
    private readonly clock: Clock = systemClock,
    private readonly logger: Logger = silentLogger,
    readonly monitorInterval = 3000,
    readonly firstRetryMs = 250,
  ) {}

  /** The wait before the next try after `failedStarts` failed starts in a row. */
  retryDelay(failedStarts: number): number {
    if (failedStarts <= 0) return this.monitorInterval;
    return Math.min(this.monitorInterval, this.firstRetryMs * 2 ** Math.min(failedStarts - 1, 30));
  }

  /** Starts supervising; the first check runs at once. Resolves after that first check. */
  supervise(component: LifecycleAware, policy: RestartPolicy = "always", desired: "START" | "STOP" = "START"): Promise<void> {
    if (this.supervised.has(component)) throw new Error(`${component.name} is already supervised`);
    let settle = () => {};
    const settled = new Promise<void>((r) => (settle = r));
    const entry: Supervised = {
      component,
      policy,
      status: { desired, failures: 0, lastError: null, cause: null, error: false, starting: false },
      busy: false,
      inflight: null,
      timer: null,
      failedStarts: 0,
      settled,
      settle,
    };
    this.supervised.set(component, entry);
    void this.check(entry);
    return settled;
  }

  /** Stops supervising and stops the component. */
  async unsupervise(component: LifecycleAware): Promise<void> {
    const entry = this.supervised.get(component);
    if (!entry) return;
    this.supervised.delete(component);
    if (entry.timer) this.clock.clearTimeout(entry.timer);
    entry.settle();
    // A start in flight (a retry) would otherwise finish after this and leave it running; one
    // waiting on a peer is told to give up, so the stop is not held by the peer's timeouts.
    if (entry.inflight) {
      component.abortStart?.();
      await entry.inflight;
    }
    if (component.getLifecycleState() === "START") {
      try {
        await component.stop();
      } catch (err) {
        this.logger.error(`Unable to stop ${component.name}: ${(err as Error).message}`);
      }
    }
  }

  setDesiredState(component: LifecycleAware, desired: "START" | "STOP"): void {
    const entry = this.supervised.get(component);
    if (!entry) throw new Error(`${component.name} is not supervised`);
    entry.status.desired = desired;
    entry.status.error = false;
    entry.failedStarts = 0;
    void this.check(entry);
  }

  status(component: LifecycleAware): SupervisedStatus | undefined {
    return this.supervised.get(component)?.status;
  }

  isComponentInErrorState(component: LifecycleAware): boolean {
    return this.supervised.get(component)?.status.error ?? false;
  }

  /**
   * The owner is about to stop everything: starts under way are told to give up (abortStart),
   * and until resume() no start is tried, or tried again. A start that waits on a peer would
   * otherwise hold the owner's stop, which waits for its start to end, for the peer's timeouts.
   */
  abandonStarts(): void {
    this.stopping = true;
    for (const entry of this.supervised.values()) {
      if (entry.timer) this.clock.clearTimeout(entry.timer);
      entry.timer = null;
      if (entry.inflight) entry.component.abortStart?.();
    }
  }

  /** Starts may be tried again (after abandonStarts). */
  resume(): void {
    this.stopping = false;
  }

  /** Unsupervises and stops everything, in reverse order of supervision. */
  async stop(): Promise<void> {
    for (const c of [...this.supervised.keys()].reverse()) await this.unsupervise(c);
  }

  private schedule(entry: Supervised, ms: number): void {
    if (this.stopping || !this.supervised.has(entry.component)) return;
    if (entry.timer) this.clock.clearTimeout(entry.timer);
    entry.timer = this.clock.setTimeout(() => {
      entry.timer = null;
      void this.check(entry);
    }, ms);
  }

  private check(entry: Supervised): Promise<void> {
    if (entry.busy || !this.supervised.has(entry.component)) return Promise.resolve();
    // Left as it is; whoever waits for its first check goes on.
    if (this.stopping) {
      entry.settle();
      return Promise.resolve();
    }
    entry.busy = true;
    const run = this.runCheck(entry);
    // A check with nothing to do (the component is as desired) ended within the call: nothing is under way.
    if (entry.busy) entry.inflight = run;
    return run;
  }

  private async runCheck(entry: Supervised): Promise<void> {
    const { component, status } = entry;
    const actual: LifecycleState = component.getLifecycleState();
    try {
      if (status.desired === "START" && actual !== "START" && !status.error) {
        if (entry.policy === "once" && status.failures > 0) {
          status.error = true;
        } else {
          status.starting = true;
          await component.start();
          entry.failedStarts = 0;
          status.lastError = null;
          status.cause = null;
        }
      } else if (status.desired === "STOP" && actual === "START") {
        await component.stop();
      }
    } catch (err) {
      // Abandoned or unsupervised while it started (the owner stops): no retry follows, nothing to report.
      if (status.desired === "START" && (this.stopping || !this.supervised.has(component))) {
        this.logger.info(`${component.name}: start given up, as it stops (${(err as Error).message})`);
        return;
      }
      status.failures++;
      const starting = status.desired === "START";
      if (starting) entry.failedStarts++;
      status.lastError = (err as Error).message;
      status.cause = err;
      const retry = entry.policy === "always" && isRetryable(err);
      if (!retry) status.error = true;
      // Once the backoff reached its cap, the same text each time, so the log folds the repeats (status() keeps the failure count).
      const next = starting ? this.retryDelay(entry.failedStarts) : this.monitorInterval;
      const line = `Unable to ${starting ? "start" : "stop"} ${component.name}, ${retry ? `retrying in ${next} ms` : "giving up"}: ${status.lastError}`;
      // An error that says retrying cannot help is for the owner to report, once, from status()
      // (the agent fails its start with it, a reload lists it): logged here too, it would be printed twice.
      if (isRetryable(err)) this.logger.error(line);
      else this.logger.debug(line);
    } finally {
      status.starting = false;
      entry.busy = false;
      entry.inflight = null;
      entry.settle();
      const retrying = status.desired === "START" && !status.error;
      this.schedule(entry, retrying ? this.retryDelay(entry.failedStarts) : this.monitorInterval);
    }
  }
}
