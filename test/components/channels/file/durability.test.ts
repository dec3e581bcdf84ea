import { describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync, readSync, rmSync, statSync, statfsSync, truncateSync, writeFileSync, writeSync, readdirSync } from "node:fs";
import path from "node:path";
import { ChannelException } from "../../../../src/core/errors.ts";
import { createEvent, type Event } from "../../../../src/core/event.ts";
import { FileChannel } from "../../../../src/components/channels/file/index.ts";
import { cleanupsAfterEach, ROOT, runCli, tempDir } from "../../../support/helpers.ts";
import { dataEnd, drain, openChannel, options, putAll, range, segmentFiles, takeSome, tempDirsAfterEach } from "../../../support/file-channel.ts";

const cleanups = cleanupsAfterEach();

const temp = tempDirsAfterEach();
const OPENER = path.join(ROOT, "test", "support", "runners", "open-file-channel.ts");

describe("file channel lock", () => {
  test("a second process on the same directories gets a clear error and changes nothing", async () => {
    const dir = temp();
    const { ch } = await openChannel(dir);
    await putAll(ch, range(0, 5));
    const r = spawnSync(process.execPath, [OPENER, dir, "try"], { encoding: "utf8", timeout: 10000 });
    expect(r.status).toBe(3);
    expect(r.stdout).toContain(`is in use by process ${process.pid}`);
    expect(r.stdout).toContain("in_use.lock");
    expect(await drain(ch)).toEqual(range(0, 5));
    await ch.stop();
  });

  test("the lock of a process killed with SIGKILL is stale and taken over", async () => {
    const dir = temp();
    const child = await runnerReady(dir, ["hold"], "open");
    const blocked = new FileChannel("c1", options(dir));
    const err = await blocked.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain(`in use by process ${child.pid}`);
    expect(blocked.counter.snapshot()).toMatchObject({ Open: "false", Unhealthy: "1" });

    child.kill("SIGKILL");
    await new Promise((r) => child.on("exit", r));
    const { ch } = await openChannel(dir);
    expect(ch.getLifecycleState()).toBe("START");
    await ch.stop();
  });
});

/** Starts the runner in a mode and waits for the line it prints when ready. */
async function runnerReady(dir: string, args: string[], ready: string) {
  const child = spawn(process.execPath, [OPENER, dir, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  cleanups.push(() => child.kill("SIGKILL")); // a failed assertion must not leave it running
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes(ready)) resolve();
    });
    child.on("exit", () => reject(new Error(`runner exited early: ${out}`)));
  });
  return child;
}

describe("file channel space written ahead of the data", () => {
  test("a process killed with zeros written ahead in its data file restarts with nothing cut and every event; a clean stop trims them", async () => {
    const dir = temp();
    const child = await runnerReady(dir, ["put", "1000"], "put");
    const [seg] = segmentFiles(dir);
    const end = dataEnd(seg);
    expect(statSync(seg).size).toBeGreaterThan(end); // durable appends land on space written before
    child.kill("SIGKILL");
    await new Promise((r) => child.on("exit", r));

    const inspect = runCli(["channel", "inspect", path.join(dir, "data"), "--verify"]);
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toContain("status: OK");
    expect(inspect.stdout).not.toContain("torn");
    expect(inspect.stdout).toContain("pending events: 1000");

    const b = await openChannel(dir);
    expect(b.logger.lines.filter((l) => l.level === "warn" && !l.message.includes("in_use.lock"))).toEqual([]);
    expect(await drain(b.ch)).toEqual(range(0, 1000));
    await putAll(b.ch, ["after"]);
    await b.ch.stop();
    expect(statSync(seg).size).toBe(dataEnd(seg));
    const c = await openChannel(dir);
    expect(await drain(c.ch)).toEqual(["after"]);
    await c.ch.stop();
  });
});

describe("file channel low disk", () => {
  test("below minimumRequiredSpace puts fail with ChannelException, takes keep working, puts resume when it is lowered", async () => {
    const dir = temp();
    const a = await openChannel(dir);
    await putAll(a.ch, range(0, 10));
    await a.ch.stop();

    const st = statfsSync(dir);
    const free = Number(st.bavail) * Number(st.bsize);
    const { ch } = await openChannel(dir, { minimumRequiredSpace: free + 1024 ** 4 });
    const err = await putAll(ch, ["refused"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain("below minimumRequiredSpace");
    // Backpressure reaches the source at put() now, not only at commit.
    const tx = ch.getTransaction();
    tx.begin();
    expect(() => tx.put(createEvent("x"))).toThrow(ChannelException);
    await tx.rollback();
    tx.close();
    expect((await takeSome(ch, 4)).length).toBe(4);
    expect(Number(ch.counter.snapshot().EventPutErrorCount)).toBeGreaterThan(0);

    ch.setMinimumRequiredSpace(1024 * 1024);
    await putAll(ch, ["accepted"]);
    expect(await drain(ch)).toEqual([...range(4, 6), "accepted"]);
    await ch.stop();
  });
});

describe("file channel damage", () => {
  test("a torn last record is cut off with a log line; earlier transactions survive", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 100));
    await putAll(a.ch, range(100, 100));
    await a.ch.stop();
    const [seg] = segmentFiles(dir);
    truncateSync(seg, statSync(seg).size - 37); // as if the process died inside the last write

    const b = await openChannel(dir);
    expect(b.logger.lines.some((l) => l.level === "warn" && l.message.includes("cutting off") && l.message.includes(seg))).toBe(true);
    expect(await drain(b.ch)).toEqual(range(0, 100));
    await putAll(b.ch, ["after"]);
    await b.ch.stop();
    const c = await openChannel(dir);
    expect(await drain(c.ch)).toEqual(["after"]);
    await c.ch.stop();
  });

  test("a flipped byte in the middle of a data file stops the channel with an error naming file and offset", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 100));
    await putAll(a.ch, range(100, 100));
    await a.ch.stop();
    const [seg] = segmentFiles(dir);
    const fd = openSync(seg, "r+");
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, 500);
    b[0] ^= 0x40;
    writeSync(fd, b, 0, 1, 500);
    closeSync(fd);

    const ch = new FileChannel("c1", options(dir));
    const err = await ch.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain(seg);
    expect((err as Error).message).toMatch(/at offset 16\b/); // the first record, which holds byte 500
    expect(ch.counter.snapshot()).toMatchObject({ Open: "false", Unhealthy: "1" });
    const tx = ch.getTransaction();
    tx.begin();
    expect(() => tx.take()).toThrow(/failed to start/);

    const inspect = runCli(["channel", "inspect", path.join(dir, "data"), "--verify"]);
    expect(inspect.code).toBe(1);
    expect(inspect.stdout).toContain("DAMAGED at offset 16");
    expect(inspect.stdout).toContain("status: DAMAGED");
  });

  /** Ten events committed and checkpointed (a restart does not re-read the log), the last one's last byte changed. */
  async function tenWithLastDamaged(dir: string): Promise<void> {
    const a = await openChannel(dir);
    await putAll(a.ch, range(0, 10));
    await a.ch.stop();
    const [seg] = segmentFiles(dir);
    const fd = openSync(seg, "r+");
    writeSync(fd, Buffer.from("X"), 0, 1, statSync(seg).size - 33); // before the 32-byte COMMIT record
    closeSync(fd);
  }

  test("a damaged event behind the checkpoint fails its take with an error naming file and offset", async () => {
    const dir = temp();
    await tenWithLastDamaged(dir);

    const { ch } = await openChannel(dir);
    expect((await takeSome(ch, 9)).length).toBe(9);
    const tx = ch.getTransaction();
    tx.begin();
    expect(() => tx.take()).toThrow(/checksum mismatch in the event at .*log-1 offset \d+/);
    await tx.rollback();
    tx.close();
    expect(ch.counter.snapshot().EventTakeErrorCount).toBe("1");
    await ch.stop();
  });

  test("a batch take (as a sink's) that meets a damaged event fails naming file and offset, keeps the events before it and rolls back whole", async () => {
    const dir = temp();
    await tenWithLastDamaged(dir);
    const { ch } = await openChannel(dir, { capacity: 10 });
    const tx = ch.getTransaction();
    tx.begin();
    const out: Event[] = [];
    expect(() => tx.takeInto(out, 100)).toThrow(/checksum mismatch in the event at .*log-1 offset \d+/);
    expect(out.map((e) => new TextDecoder().decode(e.body))).toEqual(range(0, 9));
    await tx.rollback();
    tx.close();
    // As ten take() calls, the tenth failing.
    expect(ch.counter.snapshot()).toMatchObject({ EventTakeAttemptCount: "10", EventTakeErrorCount: "1", EventTakeSuccessCount: "0", ChannelSize: "10" });
    // The channel is full again: the nine taken before the damage were counted back exactly.
    expect(await putAll(ch, ["one too many"]).catch((e: unknown) => e)).toBeInstanceOf(ChannelException);
    expect((await takeSome(ch, 9)).map((e) => new TextDecoder().decode(e.body))).toEqual(range(0, 9));
    await ch.stop();
  });

  test("inspect prints segments, pending events and checksum status; a torn tail is not damage", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 30));
    await takeSome(a.ch, 10);
    await a.ch.stop();
    const [seg] = segmentFiles(dir);
    const running = await openChannel(dir);
    const busy = runCli(["channel", "inspect", path.join(dir, "data")]);
    expect(busy.stdout).toContain(`in_use.lock held by process ${process.pid}`);
    await running.ch.stop();
    const ok = runCli(["channel", "inspect", path.join(dir, "data"), "--checkpointDir", path.join(dir, "checkpoint"), "--verify"]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/log-1\s+\d+\s+4\s+2\s+30\s+10\s+ok/);
    expect(ok.stdout).toContain("pending events: 20");
    expect(ok.stdout).toContain("status: OK");

    truncateSync(seg, statSync(seg).size - 3);
    const torn = runCli(["channel", "inspect", path.join(dir, "data"), "--verify"]);
    expect(torn.code).toBe(0);
    expect(torn.stdout).toContain("torn tail at offset");
    expect(torn.stdout).toContain("pending events: 30"); // the torn take transaction does not count
  });

  test("an unreadable checkpoint falls back to the backup checkpoint, then to a full replay", async () => {
    const dir = temp();
    const backup = path.join(dir, "backup");
    const a = await openChannel(dir, { useDualCheckpoints: true, backupCheckpointDir: backup });
    await putAll(a.ch, range(0, 20));
    await takeSome(a.ch, 5);
    await a.ch.stop();
    writeFileSync(path.join(dir, "checkpoint", "checkpoint"), "garbage");

    const b = await openChannel(dir, { useDualCheckpoints: true, backupCheckpointDir: backup });
    expect(b.logger.lines.some((l) => l.level === "warn" && l.message.includes("ignoring unreadable checkpoint"))).toBe(false);
    expect(b.ch.size).toBe(15);
    await b.ch.stop();

    writeFileSync(path.join(dir, "checkpoint", "checkpoint"), "garbage");
    writeFileSync(path.join(backup, "checkpoint"), "garbage");
    const c = await openChannel(dir, { useDualCheckpoints: true, backupCheckpointDir: backup });
    expect(c.logger.lines.some((l) => l.level === "warn" && l.message.includes("ignoring unreadable checkpoint"))).toBe(true);
    expect(await drain(c.ch)).toEqual(range(5, 15));
    await c.ch.stop();
  });

  test("a checkpoint that refers to a deleted data file stops the channel with the file's name", async () => {
    const dir = temp();
    const a = await openChannel(dir);
    await putAll(a.ch, range(0, 10));
    await a.ch.stop();
    const [seg] = segmentFiles(dir);
    rmSync(seg);
    const ch = new FileChannel("c1", options(dir));
    const err = await ch.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain("log-1");
    expect((err as Error).message).toContain("missing");
  });

  test("after the data files of a drained channel are removed, new segments still replay after a crash", async () => {
    const dir = temp();
    const a = await openChannel(dir, { maxFileSize: 2048 });
    for (let i = 0; i < 10; i++) await putAll(a.ch, range(i * 20, 20));
    await drain(a.ch);
    await a.ch.stop();
    for (const f of segmentFiles(dir)) rmSync(f);
    const b = await openChannel(dir, { checkpointOnClose: false });
    await putAll(b.ch, ["kept"]);
    await b.ch.stop();
    const c = await openChannel(dir);
    expect(await drain(c.ch)).toEqual(["kept"]);
    await c.ch.stop();
  });
});

function dataFiles(dataDir: string): string[] {
  return readdirSync(dataDir).filter((n) => !n.startsWith(".") && !n.endsWith(".lock")).map((n) => path.join(dataDir, n));
}

describe("file channel data deleted while running", () => {
  test("when its data directory is deleted while running, puts fail with a ChannelException naming the data file instead of being acknowledged", async () => {
    const t = tempDir("flume-fc-deldir-");
    cleanups.push(t.cleanup);
    const dataDir = path.join(t.dir, "data");
    const { ch } = await openChannel(t.dir, { checkpointOnClose: false });
    await putAll(ch, range(0, 10));
    const [segment] = dataFiles(dataDir);
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

  test("when its current data file is deleted while running, puts fail with a ChannelException naming it", async () => {
    const t = tempDir("flume-fc-delfile-");
    cleanups.push(t.cleanup);
    const dataDir = path.join(t.dir, "data");
    const { ch } = await openChannel(t.dir, { checkpointOnClose: false, fsyncPerTransaction: false });
    await putAll(ch, range(0, 10));
    const [segment] = dataFiles(dataDir);
    rmSync(segment);
    const err = await putAll(ch, range(10, 5)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain(segment);
    await ch.stop();
  });
});
