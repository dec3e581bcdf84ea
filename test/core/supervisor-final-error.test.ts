// The supervisor retries a failed start forever (Flume's AlwaysRestartPolicy), except an error
// that says retrying cannot help (`retryable = false`): then it gives up at once.
import { expect, test } from "bun:test";
import { ChannelException, isRetryable } from "../../src/core/errors.ts";
import type { LifecycleAware, LifecycleState } from "../../src/core/lifecycle.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { LifecycleSupervisor } from "../../src/core/supervisor.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";

class FinalError extends ChannelException {
  readonly retryable = false;
}

function failing(error: () => Error): LifecycleAware & { starts: number } {
  return {
    name: "c1",
    starts: 0,
    start() {
      this.starts++;
      throw error();
    },
    stop() {},
    getLifecycleState: (): LifecycleState => "IDLE",
  };
}

test("an error with retryable = false: one start, the supervisor gives up and says so", async () => {
  const clock = new VirtualClock(0);
  const logger = new MemoryLogger();
  const supervisor = new LifecycleSupervisor(clock, logger);
  const c = failing(() => new FinalError("directory holds another format"));
  await supervisor.supervise(c, "always");
  await clock.advance(10_000);
  expect(c.starts).toBe(1);
  expect(supervisor.isComponentInErrorState(c)).toBe(true);
  expect(logger.lines.map((l) => l.message)).toEqual(["Unable to start c1 (failure 1), giving up: directory holds another format"]);
});

test("any other error is retried every monitor interval", async () => {
  const clock = new VirtualClock(0);
  const supervisor = new LifecycleSupervisor(clock, new MemoryLogger());
  const c = failing(() => new ChannelException("port in use"));
  await supervisor.supervise(c, "always");
  await clock.advance(10_000);
  expect(c.starts).toBe(4);
  expect(supervisor.isComponentInErrorState(c)).toBe(false);
  expect([isRetryable(new Error("x")), isRetryable(new FinalError("y")), isRetryable("text")]).toEqual([true, false, true]);
});
