import { expect, test } from "bun:test";
import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { ChannelException } from "../../src/core/errors.ts";
import { cleanupsAfterEach, tempDir } from "../support/helpers.ts";
import { openChannel, putAll, range } from "../support/file-channel.ts";

const cleanups = cleanupsAfterEach();

function segmentFiles(dataDir: string): string[] {
  return readdirSync(dataDir).filter((n) => !n.startsWith(".") && !n.endsWith(".lock")).map((n) => path.join(dataDir, n));
}

test("file channel: when its data directory is deleted while running, puts fail with a ChannelException naming the data file instead of being acknowledged", async () => {
  const t = tempDir("flume-review2-fc-deldir-");
  cleanups.push(t.cleanup);
  const dataDir = path.join(t.dir, "data");
  const { ch } = await openChannel(t.dir, { checkpointOnClose: false });
  await putAll(ch, range(0, 10));
  const [segment] = segmentFiles(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
  for (let i = 0; i < 2; i++) {
    const err = await putAll(ch, range(10, 5)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain(segment);
    expect((err as Error).message).toContain("deleted");
  }
  expect(ch.counter.snapshot().EventPutErrorCount).toBe("10");
  await ch.stop();
});

test("file channel: when its current data file is deleted while running, puts fail with a ChannelException naming it", async () => {
  const t = tempDir("flume-review2-fc-delfile-");
  cleanups.push(t.cleanup);
  const dataDir = path.join(t.dir, "data");
  const { ch } = await openChannel(t.dir, { checkpointOnClose: false, fsyncPerTransaction: false });
  await putAll(ch, range(0, 10));
  const [segment] = segmentFiles(dataDir);
  rmSync(segment);
  const err = await putAll(ch, range(10, 5)).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ChannelException);
  expect((err as Error).message).toContain(segment);
  await ch.stop();
});
