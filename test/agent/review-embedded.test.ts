import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import path from "node:path";
import { EmbeddedAgent } from "../../src/index.ts";
import { tempDir } from "../support/helpers.ts";

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
