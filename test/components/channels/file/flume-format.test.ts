// A Flume TS file channel configured on an Apache Flume 1.11 channel's directories: it says so,
// names `flume channel migrate`, touches nothing there, and an agent's start fails instead of
// retrying forever (flume run's exit: test/cli/run.test.ts).
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import path from "node:path";
import { EmbeddedAgent } from "../../../../src/agent/embedded.ts";
import { FileChannel } from "../../../../src/components/channels/file/index.ts";
import { FlumeFormatChannelError } from "../../../../src/migrate/flume-file-channel/detect.ts";
import { cleanupsAfterEach, tempDir } from "../../../support/helpers.ts";
import { copyFixture, fingerprint } from "../../../support/flume-file-channel.ts";
import { options } from "../../../support/file-channel.ts";

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

test("an EmbeddedAgent on Flume's directories fails its start with the same message", async () => {
  const f = flumeDirs();
  const agent = new EmbeddedAgent();
  agent.configure({ "channel.type": "file", "channel.checkpointDir": f.checkpointDir, "channel.dataDirs": f.dataDir, sinks: "k1", "k1.type": "null" });
  await expect(agent.start()).rejects.toThrow(`channel channel cannot start and will not be retried: file channel channel: ${f.dataDir} holds an Apache Flume file channel`);
  await agent.stop();
});
