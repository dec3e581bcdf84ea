import { describe, expect, test } from "bun:test";
import type { Channel } from "../../src/core/channel.ts";
import type { LifecycleState } from "../../src/core/lifecycle.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { SinkRunner } from "../../src/core/runners.ts";
import { DefaultSinkProcessor } from "../../src/core/sink-processors.ts";
import type { Sink, Status } from "../../src/core/sink.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";

/** A sink whose process() finds the channel empty (BACKOFF), and can be held inside process(). */
class HeldSink implements Sink {
  readonly name = "k1";
  private channel: Channel | null = null;
  private state: LifecycleState = "IDLE";
  inProcess = false;
  private release: (() => void) | null = null;
  hold = false;
  setChannel(c: Channel): void {
    this.channel = c;
  }
  getChannel(): Channel {
    return this.channel as Channel;
  }
  start(): void {
    this.state = "START";
  }
  stop(): void {
    this.state = "STOP";
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
  async process(): Promise<Status> {
    this.inProcess = true;
    if (this.hold) await new Promise<void>((r) => (this.release = r));
    this.inProcess = false;
    return "BACKOFF";
  }
  letGo(): void {
    this.hold = false;
    this.release?.();
  }
}

describe("sink runner stop", () => {
  test("a stop that arrives while process() runs does not wait out the BACKOFF sleep that follows", async () => {
    const clock = new VirtualClock();
    const channel = new MemoryChannel("c1", {}, clock);
    const sink = new HeldSink();
    sink.setChannel(channel);
    const runner = new SinkRunner("k1", new DefaultSinkProcessor(sink), clock);
    await runner.start();
    sink.hold = true;
    // The first process() (BACKOFF) leads to a 1 s sleep; end it so the runner enters a held process().
    await clock.advance(1000);
    expect(sink.inProcess).toBe(true);
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    sink.letGo();
    // No virtual time passes: the backoff sleep (1-5 s) must not be what ends the stop.
    await clock.flush();
    expect(stopped).toBe(true);
    await clock.advance(10000);
    await stopping;
  });
});
