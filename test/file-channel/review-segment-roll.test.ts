import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ChannelException } from "../../src/core/errors.ts";
import { tempDir } from "../support/helpers.ts";
import { drain, openChannel, putAll, range } from "../support/file-channel.ts";

const big = (from: number, n: number) => range(from, n).map((s) => s.padEnd(200, "x"));

/**
 * A disk out of inodes (a tmpfs with nr_inodes): rolling to a new segment cannot create its
 * file. Mounting needs root; elsewhere the test is skipped.
 */
const { dir, cleanup } = tempDir("flume-fc-roll-");
const mnt = path.join(dir, "small-disk");
mkdirSync(mnt);
const mounted = process.platform === "linux" && spawnSync("mount", ["-t", "tmpfs", "-o", "size=16m,nr_inodes=32", "tmpfs", mnt]).status === 0;

afterAll(() => {
  if (mounted) spawnSync("umount", ["-l", mnt]);
  cleanup();
});

test.skipIf(!mounted)("a segment roll that cannot create its file fails the put; puts resume (in a new segment) once the disk has room again", async () => {
  const opts = { dataDirs: [path.join(mnt, "data")], maxFileSize: 4096, checkpointOnClose: false };
  const { ch } = await openChannel(dir, opts);
  await putAll(ch, range(0, 10));
  const fillers: string[] = [];
  for (let i = 0; ; i++) {
    const f = path.join(mnt, `filler-${i}`);
    try {
      writeFileSync(f, "x");
    } catch {
      break;
    }
    fillers.push(f);
  }
  const err = await putAll(ch, big(10, 100)).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ChannelException);
  expect((err as Error).message).toContain("ENOSPC");

  for (const f of fillers) rmSync(f);
  await putAll(ch, big(100, 100));
  await putAll(ch, big(200, 100));
  expect(await drain(ch)).toEqual([...range(0, 10), ...big(100, 200)]);
  await ch.stop();
});
