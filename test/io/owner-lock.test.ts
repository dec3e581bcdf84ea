import { describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { LockHeldError, OwnerLock, otherOwner, readOwner, selfOwner } from "../../src/io/owner-lock.ts";
import { cleanupsAfterEach, tempDir, waitUntil } from "../support/helpers.ts";
import { needsProc } from "../support/requires.ts";

const cleanups = cleanupsAfterEach();
const HOLDER = path.join(import.meta.dir, "..", "support", "runners", "hold-lock.ts");

function lockFile(): string {
  const t = tempDir("flume-lock-");
  cleanups.push(t.cleanup);
  return path.join(t.dir, "in_use.lock");
}

function stateOf(pid: number): string | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    return s.slice(s.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return undefined;
  }
}

describe("one owner per lock file", () => {
  needsProc.test("a live holder in another process is named; the lock is free once it is killed", async () => {
    const file = lockFile();
    const child = spawn(process.execPath, [HOLDER, file, "hold"], { stdio: ["ignore", "pipe", "inherit"] });
    cleanups.push(() => child.kill("SIGKILL"));
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
    expect(otherOwner(file)?.pid).toBe(child.pid as number);
    let error: unknown;
    try {
      OwnerLock.acquire(file, "directory /data of file channel c1");
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(LockHeldError);
    expect((error as Error).message).toBe(`directory /data of file channel c1 is in use by process ${child.pid} (test holder); stop that agent or give this one its own (lock file ${file})`);
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    const lock = OwnerLock.acquire(file, "x");
    expect(lock.tookOverFrom?.pid).toBe(child.pid as number);
    expect(readOwner(file)?.pid).toBe(process.pid);
    lock.release();
  });

  needsProc.test("a holder that died but is not reaped yet (a zombie) does not keep the lock", async () => {
    const file = lockFile();
    // The lock taker's parent is `sleep`, which never waits for its children: it stays a zombie.
    const sh = spawn("sh", ["-c", `"${process.execPath}" "${HOLDER}" "${file}" exit & echo $!; exec sleep 30`], { stdio: ["ignore", "pipe", "inherit"] });
    cleanups.push(() => sh.kill("SIGKILL"));
    const pid = await new Promise<number>((resolve) => sh.stdout.once("data", (d) => resolve(Number(String(d).trim()))));
    await waitUntil(() => stateOf(pid) === "Z", "the lock holder to exit and stay unreaped", 10_000);
    expect(readOwner(file)?.pid).toBe(pid);
    expect(otherOwner(file)).toBeNull();
    const lock = OwnerLock.acquire(file, "x");
    expect(lock.tookOverFrom?.pid).toBe(pid);
    lock.release();
  });

  needsProc.test("a lock written before a reboot, or by an earlier process with the same pid, is stale", () => {
    const file = lockFile();
    // pid 1 runs, but not the process that wrote these locks.
    writeFileSync(file, JSON.stringify({ ...selfOwner(), pid: 1, bootId: "00000000-0000-0000-0000-000000000000" }));
    expect(otherOwner(file)).toBeNull();
    writeFileSync(file, JSON.stringify({ ...selfOwner(), pid: 1, startTime: 123456789 }));
    expect(otherOwner(file)).toBeNull();
    // The same record with pid 1's real start time is a live holder.
    const stat = readFileSync("/proc/1/stat", "utf8");
    const startTime = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    writeFileSync(file, JSON.stringify({ ...selfOwner(), pid: 1, startTime }));
    expect(otherOwner(file)?.pid).toBe(1);
  });

  test("an empty or bare-pid lock file (Apache Flume's, an older Flume TS) is read; an empty one is free", () => {
    const file = lockFile();
    writeFileSync(file, "");
    expect(readOwner(file)).toBeNull();
    expect(otherOwner(file)).toBeNull();
    writeFileSync(file, `${process.pid}\n`);
    expect(readOwner(file)).toEqual({ pid: process.pid });
  });

  needsProc.test("a POSIX lock held on in_use.lock (how Apache Flume holds its directories) is respected", async () => {
    const file = lockFile();
    writeFileSync(file, "");
    // Java's FileChannel.tryLock is an fcntl lock; python's lockf is the same call.
    const py = spawn("/usr/bin/python3", ["-c", `import fcntl,sys,time\nf=open(${JSON.stringify(file)},'r+')\nfcntl.lockf(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(30)`], { stdio: ["ignore", "pipe", "inherit"] });
    cleanups.push(() => py.kill("SIGKILL"));
    await new Promise<void>((resolve) => py.stdout.once("data", () => resolve()));
    expect(otherOwner(file)?.pid).toBe(py.pid as number);
    expect(() => OwnerLock.acquire(file, "directory /x of file channel c1")).toThrow(`directory /x of file channel c1 is in use by process ${py.pid}, which holds a lock on ${file} (a running Apache Flume?); stop it first`);
    py.kill("SIGKILL");
    await new Promise((resolve) => py.once("exit", resolve));
    expect(otherOwner(file)).toBeNull();
  });
});

