import { describe, expect, test } from "bun:test";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { SourceCounter } from "../../src/core/counters.ts";
import type { Event } from "../../src/core/event.ts";
import type { Interceptor } from "../../src/core/interceptor.ts";
import type { LifecycleState } from "../../src/core/lifecycle.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { SourceRunner } from "../../src/core/runners.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import type { EventDrivenSource } from "../../src/core/source.ts";
import { LifecycleSupervisor } from "../../src/core/supervisor.ts";
import { sleep } from "../support/helpers.ts";

/** An interceptor holding a resource between initialize() and close() (a file, a timer). */
class ResourceInterceptor implements Interceptor {
  open = 0;
  initialize(): void {
    this.open++;
  }
  close(): void {
    this.open--;
  }
  intercept(event: Event): Event {
    return event;
  }
  interceptAll(events: Event[]): Event[] {
    return events;
  }
}

/** A source whose port is taken for its first `failures` starts. */
class FlakySource implements EventDrivenSource {
  readonly kind = "event-driven";
  readonly name = "r1";
  readonly counter = new SourceCounter("r1");
  private processor: ChannelProcessor | null = null;
  private state: LifecycleState = "IDLE";
  constructor(private failures: number) {}
  setChannelProcessor(p: ChannelProcessor): void {
    this.processor = p;
  }
  getChannelProcessor(): ChannelProcessor {
    return this.processor!;
  }
  start(): void {
    if (this.failures-- > 0) throw new Error("listen EADDRINUSE: address already in use 127.0.0.1:4141");
    this.state = "START";
  }
  stop(): void {
    this.state = "STOP";
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
}

describe("source start retried by the supervisor", () => {
  test("the channel processor's interceptors are closed after each failed start (initialize and close pair up)", async () => {
    const interceptor = new ResourceInterceptor();
    const source = new FlakySource(3);
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([new MemoryChannel("c1")]), [interceptor]));
    const runner = new SourceRunner(source);
    const supervisor = new LifecycleSupervisor(undefined, undefined, 10);
    await supervisor.supervise(runner);
    // The first start failed: nothing stays open.
    expect(runner.getLifecycleState()).not.toBe("START");
    expect(interceptor.open).toBe(0);
    for (let i = 0; i < 300 && runner.getLifecycleState() !== "START"; i++) await sleep(5);
    expect(runner.getLifecycleState()).toBe("START");
    // Open once while running, after three failed starts.
    expect(interceptor.open).toBe(1);
    await supervisor.stop();
    expect(interceptor.open).toBe(0);
  });
});
