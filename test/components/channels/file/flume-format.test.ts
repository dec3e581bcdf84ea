// A Flume TS file channel configured on an Apache Flume 1.11 channel's directories: it says so,
// names `flume channel migrate`, touches nothing there, and an agent's start fails with that
// error, once, instead of retrying forever (flume run's output: test/cli/run.test.ts).
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import path from "node:path";
import { Agent } from "../../../../src/agent/agent.ts";
import { EmbeddedAgent } from "../../../../src/agent/embedded.ts";
import { MemoryLogger } from "../../../../src/core/logger.ts";
import { FileChannel } from "../../../../src/components/channels/file/index.ts";
import { FlumeFormatChannelError } from "../../../../src/migrate/flume-file-channel/detect.ts";
import { cleanupsAfterEach, tempDir } from "../../../support/helpers.ts";
import { copyFixture, fingerprint } from "../../../support/flume-file-channel.ts";
import { options } from "../../../support/file-channel.ts";
import { parseAgentConfig, seqConf } from "../../../support/agent.ts";

const cleanups = cleanupsAfterEach();

function flumeDirs() {
  const t = tempDir("flume-format-");
  cleanups.push(t.cleanup);
  return { dir: t.dir, ...copyFixture("pending-clean", t.dir) };
}

test("start() refuses Flume's directories with a final (not retryable) error naming the migrate command; nothing there changes", async () => {
  const f = flumeDirs();
  const before = fingerprint(f.root);
  const ch = new FileChannel("c1", options(f.dir, { checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] }));
  const err = await ch.start().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(FlumeFormatChannelError);
  expect((err as FlumeFormatChannelError).retryable).toBe(false);
  expect((err as Error).message).toContain(`file channel c1: ${f.dataDir} holds an Apache Flume file channel (log-1, log-1.meta)`);
  expect((err as Error).message).toContain(`flume channel migrate --from-flume --checkpointDir ${f.checkpointDir} --dataDirs ${f.dataDir} --to-checkpointDir`);
  expect(fingerprint(f.root)).toEqual(before);
  expect(existsSync(path.join(f.dataDir, "in_use.lock"))).toBe(false);
});

test("a checkpointDir of Flume's (checkpoint.meta) with empty dataDirs is refused too", async () => {
  const f = flumeDirs();
  const ch = new FileChannel("c1", options(f.dir, { checkpointDir: f.checkpointDir, dataDirs: [path.join(f.dir, "new-data")] }));
  await expect(ch.start()).rejects.toThrow(`${f.checkpointDir} holds an Apache Flume file channel (checkpoint.meta, inflightputs, inflighttakes)`);
});

const fileChannel = (name: string, f: { checkpointDir: string; dataDir: string }) => `a1.channels.${name}.type = file
a1.channels.${name}.checkpointDir = ${f.checkpointDir}
a1.channels.${name}.dataDirs = ${f.dataDir}`;

describe("an agent with a file channel on Flume's directories", () => {
  test("an EmbeddedAgent's start fails with the channel's own error (typed), which the supervisor did not log as well", async () => {
    const f = flumeDirs();
    const logger = new MemoryLogger();
    const agent = new EmbeddedAgent(undefined, { logger });
    agent.configure({ "channel.type": "file", "channel.checkpointDir": f.checkpointDir, "channel.dataDirs": f.dataDir, sinks: "k1", "k1.type": "null" });
    const err = await agent.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FlumeFormatChannelError);
    expect((err as Error).message).toStartWith(`file channel channel: ${f.dataDir} holds an Apache Flume file channel`);
    expect(logger.lines.filter((l) => l.level !== "debug" && l.message.includes("holds an Apache Flume file channel"))).toEqual([]);
    await agent.stop();
  });

  test("two such channels: the start fails naming both", async () => {
    const a = flumeDirs();
    const b = flumeDirs();
    const conf = seqConf(1, { channel: `${fileChannel("c1", a)}\n${fileChannel("c2", b)}` }).replace("a1.channels = c1", "a1.channels = c1 c2");
    const agent = new Agent("a1", { drainTimeout: 100 });
    const err = await agent.start(parseAgentConfig(conf)).catch((e: unknown) => e);
    expect((err as Error).message).toContain(`channel c1 cannot start: file channel c1: ${a.dataDir} holds an Apache Flume file channel`);
    expect((err as Error).message).toContain(`; channel c2 cannot start: file channel c2: ${b.dataDir} holds an Apache Flume file channel`);
    await agent.stop();
  });

  test("a reload onto them reports the channel as not started and not retried, with the migrate command, once", async () => {
    const f = flumeDirs();
    const logger = new MemoryLogger();
    const agent = new Agent("a1", { drainTimeout: 100, logger });
    try {
      await agent.start(parseAgentConfig(seqConf(0)));
      const r = await agent.reload(parseAgentConfig(seqConf(0, { channel: fileChannel("c1", f) })));
      expect(r.started[0]).toStartWith(`channel c1 (not started, not retried: file channel c1: ${f.dataDir} holds an Apache Flume file channel`);
      expect(r.started[0]).toContain(`flume channel migrate --from-flume --checkpointDir ${f.checkpointDir}`);
      expect(logger.lines.filter((l) => l.level === "error" && l.message.startsWith("Unable to start c1"))).toEqual([]);
    } finally {
      await agent.stop();
    }
  });
});
