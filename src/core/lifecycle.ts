/** Lifecycle states as Flume's LifecycleState. */
export type LifecycleState = "IDLE" | "START" | "STOP" | "ERROR";

/** Anything the supervisor can start and stop: channels, sink runners, source runners. */
export interface LifecycleAware {
  readonly name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
  getLifecycleState(): LifecycleState;
  /**
   * Its owner stops it while start() is under way: a start waiting on a peer (a broker that does
   * not answer) fails soon instead of when its own bound runs out, so the stop is not held.
   */
  abortStart?(): void;
}
