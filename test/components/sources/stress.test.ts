import { componentContext } from "../../../src/components/component.ts";
import { describe, expect, test } from "bun:test";
import { definition as netcatUdp } from "../../../src/components/sources/netcat-udp.ts";
import { definition as stress, type StressSource } from "../../../src/components/sources/stress.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import type { Clock, TimerHandle } from "../../../src/core/clock.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { takeAll } from "../../support/network.ts";

/** A clock whose time only moves when the code under test sleeps. */
class VirtualClock implements Clock {
  t = 1_000_000;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    this.t += ms;
    fn();
    return { id: 0 };
  }
  clearTimeout(): void {}
  async sleep(ms: number): Promise<void> {
    this.t += ms;
  }
}

function stressRig(raw: Record<string, string>, clock: Clock, capacity = 100000) {
  const { options: config, errors } = stress.parse(raw);
  if (errors.length) throw new Error(JSON.stringify(errors));
  const source = stress.create(config, componentContext("s1", { agentName: "a1", clock, logger: new MemoryLogger() })) as StressSource;
  const channel = new MemoryChannel("c1", { capacity, transactionCapacity: Math.min(capacity, 1000), keepAlive: 0 });
  channel.start();
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  source.start();
  return { source, channel };
}

describe("stress", () => {
  test("generates maxTotalEvents events of size bytes (all 127) in batches, then backs off", async () => {
    const { source, channel } = stressRig({ size: "64", batchSize: "30", maxTotalEvents: "100" }, new VirtualClock());
    const statuses: string[] = [];
    for (let i = 0; i < 5; i++) statuses.push(await source.process());
    expect(statuses).toEqual(["READY", "READY", "READY", "READY", "BACKOFF"]);
    const events = await takeAll(channel);
    expect(events.length).toBe(100);
    expect(events[0].body.length).toBe(64);
    expect(events[0].body.every((b) => b === 127)).toBe(true);
    expect(events[0].headers).toEqual({});
    expect(source.counter.get("EventAcceptedCount")).toBe(100);
    expect(source.counter.get("AppendBatchAcceptedCount")).toBe(4);
  });

  test("maxEventsPerSecond paces the batches on the source's clock", async () => {
    const clock = new VirtualClock();
    const { source } = stressRig({ size: "10", batchSize: "10", maxTotalEvents: "200", maxEventsPerSecond: "50" }, clock);
    const t0 = clock.now();
    while ((await source.process()) === "READY");
    // 200 events at 50/s: the 20th batch may start 19 batches * 200 ms after the first.
    expect(clock.now() - t0).toBe(3800);
  });

  test("a full channel makes it back off and count the failure; maxSuccessfulEvents stops it", async () => {
    const { source, channel } = stressRig({ size: "1", batchSize: "5", maxSuccessfulEvents: "10" }, new VirtualClock(), 7);
    expect(await source.process()).toBe("READY");
    expect(await source.process()).toBe("BACKOFF");
    expect(source.stats.failed).toBe(5);
    expect(source.counter.get("ChannelWriteFail")).toBe(1);
    await takeAll(channel);
    expect(await source.process()).toBe("READY");
    expect(await source.process()).toBe("BACKOFF");
    expect(source.stats.successful).toBe(10);
  });

  test("type names", () => {
    expect(stress.schema.type).toBe("stress");
    expect(stress.schema.aliases).toContain("org.apache.flume.source.StressSource");
    expect(netcatUdp.schema.aliases).toContain("org.apache.flume.source.NetcatUdpSource");
  });
});
