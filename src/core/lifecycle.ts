/** Lifecycle states as Flume's LifecycleState. */
export type LifecycleState = "IDLE" | "START" | "STOP" | "ERROR";

/** Anything the supervisor can start and stop: channels, sink runners, source runners. */
export interface LifecycleAware {
  readonly name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
  getLifecycleState(): LifecycleState;
}
