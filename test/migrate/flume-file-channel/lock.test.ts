import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { checkFlumeLocks } from "../../../src/migrate/flume-file-channel/lock.ts";
import { parseProcLocks } from "../../../src/io/posix-locks.ts";
import { asyncCleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { holdPosixLock } from "../../support/flume-file-channel.ts";
import { needsPosixLockHolder } from "../../support/requires.ts";

const cleanups = asyncCleanupsAfterEach();

describe("telling whether Flume still holds in_use.lock", () => {
  test("/proc/locks lines are read with pid, device and inode (blocked waiters and OFD locks included)", () => {
    const text = "1: POSIX  ADVISORY  WRITE 21934 fe:00:2146820 0 EOF\n2: -> POSIX  ADVISORY  WRITE 22000 fe:00:2146820 0 EOF\n3: OFDLCK ADVISORY  READ  -1 08:1f:12 0 EOF\n";
    expect(parseProcLocks(text)).toEqual([
      { pid: 21934, major: 0xfe, minor: 0, inode: 2146820n },
      { pid: 22000, major: 0xfe, minor: 0, inode: 2146820n },
      { pid: -1, major: 8, minor: 0x1f, inode: 12n },
    ]);
  });

  test("no lock file: nothing to check; a lock file nobody locks is stale; an unreadable /proc/locks is unknown", () => {
    const t = tempDir("flume-lock-");
    cleanups.push(t.cleanup);
    const a = path.join(t.dir, "a");
    mkdirSync(a);
    expect(checkFlumeLocks([a])).toEqual({ locks: [], unknown: null });
    writeFileSync(path.join(a, "in_use.lock"), "");
    expect(checkFlumeLocks([a], path.join(t.dir, "empty-locks"))).toMatchObject({ locks: [{ state: "unknown" }] });
    writeFileSync(path.join(t.dir, "empty-locks"), "");
    expect(checkFlumeLocks([a], path.join(t.dir, "empty-locks"))).toEqual({ locks: [{ file: path.join(a, "in_use.lock"), state: "stale", pid: null }], unknown: null });
  });

  needsPosixLockHolder.test("a POSIX lock held by a live process is found by its inode, with the holder's pid", async () => {
    const t = tempDir("flume-lock-");
    cleanups.push(t.cleanup);
    const lock = path.join(t.dir, "in_use.lock");
    const holder = await holdPosixLock(lock);
    cleanups.push(() => holder.kill("SIGKILL"));
    expect(checkFlumeLocks([t.dir]).locks).toEqual([{ file: lock, state: "held", pid: holder.pid ?? -1 }]);
    holder.kill("SIGKILL");
    await new Promise((r) => holder.once("exit", r));
    expect(checkFlumeLocks([t.dir]).locks[0].state).toBe("stale");
  });
});
