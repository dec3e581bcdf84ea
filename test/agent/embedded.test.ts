import { describe, expect, test } from "bun:test";
import { ChannelException, ConfigurationError, createEvent, EmbeddedAgent } from "../../src/index.ts";

describe("EmbeddedAgent", () => {
  test("put and putAll reach the sink through the configured channel", async () => {
    const agent = new EmbeddedAgent("app");
    agent.configure({
      "channel.type": "memory",
      "channel.capacity": "100",
      sinks: "k1",
      "k1.type": "null",
      "k1.batchSize": "10",
    });
    await agent.start();
    await agent.put(createEvent("one"));
    await agent.putAll([createEvent("two"), createEvent("three")]);
    const counters = [...agent.running!.counterGroups()];
    const source = counters.find((c) => c.type === "SOURCE")!;
    expect(source.values.EventAcceptedCount).toBe(3);
    const channel = counters.find((c) => c.type === "CHANNEL")!;
    for (let i = 0; i < 100 && channel.values.EventTakeSuccessCount < 3; i++) await new Promise((r) => setTimeout(r, 20));
    expect(channel.values.EventTakeSuccessCount).toBe(3);
    await agent.stop();
  });

  test("a full channel makes putAll throw ChannelException; what was accepted stays", async () => {
    const agent = new EmbeddedAgent();
    // The logger sink found the channel empty at start and sleeps 1 s (Flume's sink backoff),
    // so with keep-alive 0 the second batch finds no room.
    agent.configure({ "channel.type": "memory", "channel.capacity": "5", "channel.transactionCapacity": "5", "channel.keep-alive": "0", sinks: "k1", "k1.type": "logger" });
    await agent.start();
    const channel = [...agent.running!.counterGroups()].find((c) => c.type === "CHANNEL")!;
    await agent.putAll([1, 2, 3, 4, 5].map((n) => createEvent(String(n))));
    await expect(agent.putAll([6, 7].map((n) => createEvent(String(n))))).rejects.toBeInstanceOf(ChannelException);
    expect(channel.values.EventPutSuccessCount).toBe(5);
    expect(channel.values.ChannelSize + channel.values.EventTakeSuccessCount).toBe(5);
    await agent.stop();
  });

  test("interceptors and sink groups are configured as in Flume's EmbeddedAgent", async () => {
    const agent = new EmbeddedAgent();
    agent.configure({
      "channel.type": "memory",
      sinks: "k1 k2",
      "k1.type": "null",
      "k2.type": "null",
      "processor.type": "failover",
      "processor.priority.k1": "10",
      "source.interceptors": "i1",
      "source.interceptors.i1.type": "static",
      "source.interceptors.i1.key": "app",
      "source.interceptors.i1.value": "demo",
    });
    await agent.start();
    const seen: Record<string, string>[] = [];
    const channel = agent.running!.components.channels.get("channel")!.channel;
    // Look at what reached the channel before the sinks take it.
    const tx = channel.getTransaction();
    tx.begin();
    await agent.put(createEvent("x"));
    const e = tx.take();
    if (e) seen.push(e.headers);
    await tx.rollback();
    tx.close();
    expect(agent.running!.components.runners.get("group:group")!.runner.processor.type).toBe("failover");
    expect(seen).toEqual([{ app: "demo" }]);
    await agent.stop();
  });

  test("a bad configuration is refused with every problem named", () => {
    const agent = new EmbeddedAgent();
    expect(() => agent.configure({ "channel.type": "memory" })).toThrow(ConfigurationError);
    expect(() => agent.configure({ "channel.type": "memory", sinks: "k1", "k1.type": "nul" })).toThrow(/k1.*type|type.*nul/);
    expect(() => agent.configure({ "channel.type": "memory", sinks: "k1", "k1.type": "null", "k9.type": "null" })).toThrow(/k9.type/);
  });
});
