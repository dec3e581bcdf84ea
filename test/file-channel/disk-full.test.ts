import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ChannelException } from "../../src/core/errors.ts";
import { tempDir } from "../support/helpers.ts";
import { drain, openChannel, putAll, range, takeSome } from "../support/file-channel.ts";

/**
 * A real full disk: an 8 MB tmpfs. Mounting needs root; elsewhere the test is skipped (the
 * threshold test in durability.test.ts covers the low-space path without it).
 */
const { dir, cleanup } = tempDir("flume-fc-full-");
const mnt = path.join(dir, "small-disk");
mkdirSync(mnt);
const mounted = process.platform === "linux" && spawnSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt]).status === 0;

afterAll(() => {
  if (mounted) spawnSync("umount", [mnt]);
  cleanup();
});

const big = (prefix: string, n: number) => range(0, n, prefix).map((s) => s.padEnd(10 * 1024, "x"));

test.skipIf(!mounted)("disk full (ENOSPC): the put fails with ChannelException, nothing half-written stays, takes work, puts resume when space returns", async () => {
  const filler = path.join(mnt, "filler");
  writeFileSync(filler, Buffer.alloc(4 * 1024 * 1024));
  const opts = { dataDirs: [path.join(mnt, "data")], transactionCapacity: 1000, minimumRequiredSpace: 1024 * 1024, checkpointOnClose: false };
  const { ch } = await openChannel(dir, opts);
  await putAll(ch, range(0, 100));
  // About 4 MB free, above minimumRequiredSpace: the 5 MB batch passes the check and hits ENOSPC.
  const err = await putAll(ch, big("big", 500)).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ChannelException);
  expect((err as Error).message).toContain("ENOSPC");
  expect(ch.counter.snapshot().EventPutErrorCount).toBe("500");
  expect((await takeSome(ch, 10)).length).toBe(10);

  rmSync(filler);
  await putAll(ch, big("big", 500));
  await ch.stop();

  // The failed write left no torn record behind: a replay of the whole log reads cleanly.
  const again = await openChannel(dir, opts);
  expect(again.logger.lines.filter((l) => l.level === "warn")).toEqual([]);
  const bodies = await drain(again.ch);
  expect(bodies.slice(0, 90)).toEqual(range(10, 90));
  expect(bodies.length).toBe(590);
  await again.ch.stop();
});
