import { describe, expect } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ChannelException } from "../../../../src/core/errors.ts";
import { cleanupsAfterEach, tempDir } from "../../../support/helpers.ts";
import { needsTmpfs } from "../../../support/requires.ts";
import { mountTmpfs } from "../../../support/tmpfs.ts";
import { drain, openChannel, putAll, range, takeSome } from "../../../support/file-channel.ts";

/**
 * Real full disks: small tmpfs mounts (the threshold test in durability.test.ts covers the
 * low-space path without one).
 */
const cleanups = cleanupsAfterEach();

/** A temporary folder with a tmpfs of the mount options on its small-disk folder. */
function smallDisk(prefix: string, options: string): { dir: string; mnt: string } {
  const t = tempDir(prefix);
  cleanups.push(t.cleanup);
  const { mnt, unmount } = mountTmpfs(t.dir, "small-disk", options);
  cleanups.push(unmount);
  return { dir: t.dir, mnt };
}

const bigBodies = (prefix: string, n: number) => range(0, n, prefix).map((s) => s.padEnd(10 * 1024, "x"));

const big = (from: number, n: number) => range(from, n).map((s) => s.padEnd(200, "x"));

describe("file channel on a full disk", () => {
  for (const inlineWriteLimit of [2, 0]) {
    needsTmpfs.test(`ENOSPC (writes ${inlineWriteLimit ? "on the main thread" : "in the I/O pool"}): the put fails with ChannelException, nothing half-written stays, takes work, puts resume when space returns`, async () => {
      const { dir, mnt } = smallDisk("flume-fc-full-", "size=8m");
      const filler = path.join(mnt, "filler");
      writeFileSync(filler, Buffer.alloc(4 * 1024 * 1024));
      const opts = { dataDirs: [path.join(mnt, "data")], transactionCapacity: 1000, minimumRequiredSpace: 1024 * 1024, checkpointOnClose: false, inlineWriteLimit };
      const { ch } = await openChannel(dir, opts);
      await putAll(ch, range(0, 100));
      // About 4 MB free, above minimumRequiredSpace: the 5 MB batch passes the check and hits ENOSPC.
      const err = await putAll(ch, bigBodies("big", 500)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelException);
      expect((err as Error).message).toContain("ENOSPC");
      expect(ch.counter.snapshot().EventPutErrorCount).toBe("500");
      expect((await takeSome(ch, 10)).length).toBe(10);

      rmSync(filler);
      await putAll(ch, bigBodies("big", 500));
      await ch.stop();

      // The failed write left no torn record behind: a replay of the whole log reads cleanly.
      const again = await openChannel(dir, opts);
      expect(again.logger.lines.filter((l) => l.level === "warn")).toEqual([]);
      const bodies = await drain(again.ch);
      expect(bodies.slice(0, 90)).toEqual(range(10, 90));
      expect(bodies.length).toBe(590);
      await again.ch.stop();
    });
  }

  needsTmpfs.test("out of inodes: a segment roll that cannot create its file fails the put; puts resume (in a new segment) once the disk has room again", async () => {
    const { dir, mnt } = smallDisk("flume-fc-roll-", "size=16m,nr_inodes=32");
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
});
