import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { ChannelException, ConfigurationError, createEvent, EmbeddedAgent } from "../../src/index.ts";
import { freePort, tempDir, waitUntil } from "../support/helpers.ts";

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
    await waitUntil(() => channel.values.EventTakeSuccessCount >= 3, "3 events taken", 2000);
    expect(channel.values.EventTakeSuccessCount).toBe(3);
    await agent.stop();
  });

  test("a full channel makes putAll throw ChannelException; what was accepted stays", async () => {
    // The sink cannot deliver (nothing listens on its port), so taken events are rolled back
    // and keep their slots; with keep-alive 0 the second batch finds no room.
    const port = await freePort();
    const agent = new EmbeddedAgent("app", { drainTimeout: 100 });
    agent.configure({
      "channel.type": "memory",
      "channel.capacity": "5",
      "channel.transactionCapacity": "5",
      "channel.keep-alive": "0",
      sinks: "k1",
      "k1.type": "avro",
      "k1.hostname": "127.0.0.1",
      "k1.port": String(port),
      "k1.connect-timeout": "200",
      "k1.batch-size": "5",
    });
    await agent.start();
    const channel = [...agent.running!.counterGroups()].find((c) => c.type === "CHANNEL")!;
    await agent.putAll([1, 2, 3, 4, 5].map((n) => createEvent(String(n))));
    await expect(agent.putAll([6, 7].map((n) => createEvent(String(n))))).rejects.toBeInstanceOf(ChannelException);
    expect(channel.values.EventPutSuccessCount).toBe(5);
    expect(channel.values.EventTakeSuccessCount).toBe(0);
    await agent.stop();
  });

  test("interceptors and sink groups are configured as in Flume's EmbeddedAgent", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const agent = new EmbeddedAgent();
      agent.configure({
        "channel.type": "memory",
        sinks: "k1 k2",
        "k1.type": "file_roll",
        "k1.sink.directory": dir,
        "k1.sink.serializer": "header_and_text",
        "k2.type": "null",
        "processor.type": "failover",
        "processor.priority.k1": "10",
        "source.interceptors": "i1",
        "source.interceptors.i1.type": "static",
        "source.interceptors.i1.key": "app",
        "source.interceptors.i1.value": "demo",
      });
      await agent.start();
      expect(agent.running!.components.runners.get("group:group")!.runner.processor.type).toBe("failover");
      await agent.put(createEvent("x"));
      await agent.stop();
      const files = readdirSync(dir);
      const text = files.map((f) => readFileSync(path.join(dir, f), "utf8")).join("");
      expect(text).toBe("{app=demo} x\n");
    } finally {
      cleanup();
    }
  });

  test("a bad configuration is refused with every problem named", () => {
    const agent = new EmbeddedAgent();
    expect(() => agent.configure({ "channel.type": "memory" })).toThrow(ConfigurationError);
    expect(() => agent.configure({ "channel.type": "memory", sinks: "k1", "k1.type": "nul" })).toThrow(/k1.*type|type.*nul/);
    expect(() => agent.configure({ "channel.type": "memory", sinks: "k1", "k1.type": "null", "k9.type": "null" })).toThrow(/k9.type/);
  });
});

describe("EmbeddedAgent stop racing start", () => {
  test("stop() called before start() finished stops the agent once it is up (the file channel lock is released)", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const agent = new EmbeddedAgent("app", { drainTimeout: 100 });
      agent.configure({
        "channel.type": "file",
        "channel.checkpointDir": path.join(dir, "ckpt"),
        "channel.dataDirs": path.join(dir, "data"),
        sinks: "k1",
        "k1.type": "null",
      });
      const starting = agent.start();
      await agent.stop();
      await starting;
      expect(agent.running === null).toBe(true);
      expect(existsSync(path.join(dir, "ckpt", "in_use.lock"))).toBe(false);
    } finally {
      cleanup();
    }
  });
});
