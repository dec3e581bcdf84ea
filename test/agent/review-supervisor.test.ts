import { describe, expect, test } from "bun:test";
import type { LifecycleAware, LifecycleState } from "../../src/core/lifecycle.ts";
import { LifecycleSupervisor } from "../../src/core/supervisor.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";

/** A component whose first start fails (port in use) and whose retry takes a while (a replay). */
class SlowRetry implements LifecycleAware {
  readonly name = "c1";
  state: LifecycleState = "IDLE";
  starts = 0;
  stops = 0;
  private release: () => void = () => {};
  async start(): Promise<void> {
    if (++this.starts === 1) throw new Error("address in use");
    await new Promise<void>((r) => (this.release = r));
    this.state = "START";
  }
  stop(): void {
    this.stops++;
    this.state = "STOP";
  }
  finishStart(): void {
    this.release();
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
}

describe("supervisor retry racing a stop", () => {
  test("unsupervise during a retried start waits for it and stops the component (no orphan holding a port or lock)", async () => {
    const clock = new VirtualClock();
    const supervisor = new LifecycleSupervisor(clock);
    const c = new SlowRetry();
    await supervisor.supervise(c);
    expect(c.starts).toBe(1);
    await clock.advance(supervisor.monitorInterval);
    expect(c.starts).toBe(2); // the retry is in start() now
    const unsupervised = supervisor.unsupervise(c);
    c.finishStart();
    await unsupervised;
    expect(c.getLifecycleState()).toBe("STOP");
    expect(c.stops).toBe(1);
  });
});
