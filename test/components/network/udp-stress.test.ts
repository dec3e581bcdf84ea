import { describe, expect, test } from "bun:test";
import dgram from "node:dgram";
import { definition as netcatUdp } from "../../../src/components/sources/netcat-udp.ts";
import { definition as stress, type StressSource } from "../../../src/components/sources/stress.ts";
import { parseConfig } from "../../../src/config/schema.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import type { Clock, TimerHandle } from "../../../src/core/clock.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import type { Source } from "../../../src/core/source.ts";
import { collect, rig, stoppedAfterEach, takeAll, text } from "../../support/network.ts";

const started = stoppedAfterEach<Source>();

function sendUdp(port: number, ...messages: (string | Uint8Array)[]): Promise<number> {
  return new Promise((resolve) => {
    const client = dgram.createSocket("udp4");
    let left = messages.length;
    for (const m of messages)
      client.send(m, port, "127.0.0.1", () => {
        if (--left === 0) {
          const local = client.address().port;
          client.close();
          resolve(local);
        }
      });
  });
}

describe("netcatudp", () => {
  test("each line of a datagram is an event; remoteAddressHeader holds /ip:port", async () => {
    const r = rig(netcatUdp, { bind: "127.0.0.1", port: "0", remoteAddressHeader: "remote" });
    await r.source.start();
    started.push(r.source);
    const from = await sendUdp(r.source.port, "one\n", "two\nthree\n");
    const events = await collect(r.channel, 3);
    expect(events.map(text).sort()).toEqual(["one", "three", "two"]);
    expect(events[0].headers.remote).toBe(`/127.0.0.1:${from}`);
    expect(r.source.counter.get("EventAcceptedCount")).toBe(3);
  });

  test("binary datagrams pass through as bytes and the source keeps serving", async () => {
    const r = rig(netcatUdp, { bind: "127.0.0.1", port: "0" });
    await r.source.start();
    started.push(r.source);
    await sendUdp(r.source.port, new Uint8Array([0xff, 0x00, 0xfe]));
    await sendUdp(r.source.port, "next");
    const events = await collect(r.channel, 2);
    expect(events.map((e) => [...e.body])).toContainEqual([0xff, 0x00, 0xfe]);
    expect(events.map(text)).toContain("next");
    expect(events[0].headers).toEqual({});
  });

  test("when the channel is full, datagrams beyond maxBacklog are dropped, counted and logged", async () => {
    const r = rig(netcatUdp, { bind: "127.0.0.1", port: "0", maxBacklog: "5" }, { capacity: 2, transactionCapacity: 2, keepAlive: 0 });
    await r.source.start();
    started.push(r.source);
    await sendUdp(r.source.port, ...Array.from({ length: 40 }, (_, i) => `m${i}`));
    const deadline = Date.now() + 5000;
    while (r.source.counter.get("ChannelWriteFail") === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
    expect(r.source.counter.get("ChannelWriteFail")).toBeGreaterThan(0);
    expect(r.logger.lines.some((l) => l.level === "error" && l.message.includes("127.0.0.1:"))).toBe(true);
  });
});

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
  const { config, errors } = parseConfig(stress.schema, raw);
  if (errors.length) throw new Error(JSON.stringify(errors));
  const source = stress.create(config, { name: "s1", agentName: "a1", clock, logger: new MemoryLogger() }) as StressSource;
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
