// A Flume TS file channel configured on an Apache Flume 1.11 channel's directories: it says so,
// names `flume channel migrate`, touches nothing there, and `flume run` stops instead of
// retrying the start forever.
import { expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { EmbeddedAgent } from "../../../../src/agent/embedded.ts";
import { FileChannel } from "../../../../src/components/channels/file/index.ts";
import { FlumeFormatChannelError } from "../../../../src/migrate/flume-file-channel/detect.ts";
import { cleanupsAfterEach, runCli, tempDir } from "../../../support/helpers.ts";
import { copyFixture, fingerprint } from "../../../migrate/flume-file-channel/support.ts";
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

test("flume run on Flume's directories prints the hint once and exits 1 instead of retrying", () => {
  const f = flumeDirs();
  const before = fingerprint(f.root);
  const conf = path.join(f.dir, "a1.conf");
  writeFileSync(
    conf,
    `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.channels = c1
a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${f.checkpointDir}
a1.channels.c1.dataDirs = ${f.dataDir}
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
`,
  );
  const r = runCli(["run", "-f", conf, "-n", "a1", "--no-reload-conf", "--quiet"], { timeout: 15000 });
  const out = r.stdout + r.stderr;
  expect(r.signal).toBeNull(); // it exited by itself, well before the timeout
  expect(r.code).toBe(1);
  expect(out).toContain(`Unable to start c1 (failure 1), giving up: file channel c1: ${f.dataDir} holds an Apache Flume file channel`);
  expect(out.split("Unable to start c1").length - 1).toBe(1); // one attempt, no retries
  expect(out).toContain(`flume channel migrate --from-flume --checkpointDir ${f.checkpointDir} --dataDirs ${f.dataDir} --to-checkpointDir NEW_CHECKPOINT_DIR --to-dataDirs NEW_DATA_DIR`);
  expect(out).toContain(`agent a1 failed to start: channel c1 cannot start and will not be retried: file channel c1: ${f.dataDir} holds an Apache Flume file channel`);
  expect(out).not.toContain("[r1]"); // the source never started to fail on the channel
  expect(out).not.toContain("retrying");
  expect(out).not.toContain("bad magic");
  expect(fingerprint(f.root)).toEqual(before);
});

test("an EmbeddedAgent on Flume's directories fails its start with the same message", async () => {
  const f = flumeDirs();
  const agent = new EmbeddedAgent();
  agent.configure({ "channel.type": "file", "channel.checkpointDir": f.checkpointDir, "channel.dataDirs": f.dataDir, sinks: "k1", "k1.type": "null" });
  await expect(agent.start()).rejects.toThrow(`channel channel cannot start and will not be retried: file channel channel: ${f.dataDir} holds an Apache Flume file channel`);
  await agent.stop();
});
