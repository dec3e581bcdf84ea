import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync, chmodSync, renameSync } from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { definition, SpoolDirectorySource } from "../../../src/components/sources/spooldir.ts";
import { lookupComponent } from "../../../src/components/registry.ts";
import type { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { FileChannel } from "../../../src/components/channels/file/index.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import type { Channel } from "../../../src/core/channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { cleanupsAfterEach, tempDir, ROOT } from "../../support/helpers.ts";
import { bodies, build, context, drain, numbered, until, wire, recordBatchBytes } from "../../support/components.ts";
import { drain as drainFileChannel, options } from "../../support/file-channel.ts";
import { needsRootToSwitchUser, needsStrace } from "../../support/requires.ts";
import { esc, indexOf, traced, tracedCalls } from "../../support/strace.ts";
import { NOBODY, runnerForNobody } from "../../support/other-user.ts";
import { DirectoryWatcher } from "../../../src/io/dir-watch.ts";
import { META_FILE } from "../../../src/components/sources/spooldir/tracker.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";

const cleanups = cleanupsAfterEach();

function setup(extra: Record<string, string> = {}) {
  const t = tempDir("flume-spool-");
  cleanups.push(t.cleanup);
  const spool = path.join(t.dir, "spool");
  mkdirSync(spool);
  const raw = { spoolDir: spool, pollDelay: "20", batchSize: "10", ...extra };
  const make = (channelOpts?: Parameters<typeof wire>[1]) => {
    const ctx = context("r1");
    const src = build(definition, raw, ctx) as SpoolDirectorySource;
    const channel = wire(src, channelOpts);
    return { src, channel, ctx };
  };
  return { dir: t.dir, spool, raw, make };
}

const ls = (dir: string) => readdirSync(dir).filter((n) => !n.startsWith(".")).sort();

async function collectUntil(channel: MemoryChannel, cond: () => boolean, what: string): Promise<string[]> {
  const out: string[] = [];
  await until(async () => {
    out.push(...bodies(await drain(channel)));
    return cond();
  }, what);
  out.push(...bodies(await drain(channel)));
  return out;
}

describe("spooldir", () => {
  test("reads files oldest first with file and basename headers, renames them .COMPLETED after the commit", async () => {
    const s = setup({ fileHeader: "true", basenameHeader: "true", basenameHeaderKey: "bn" });
    const a = path.join(s.spool, "a.log");
    const b = path.join(s.spool, "b.log");
    writeFileSync(b, "b1\nb2\n");
    writeFileSync(a, "a1\r\na2\na3-no-newline");
    utimesSync(a, new Date(1000_000), new Date(1000_000));
    writeFileSync(path.join(s.spool, ".hidden"), "x\n");
    const { src, channel } = s.make();
    const events: ReturnType<typeof bodies> = [];
    await src.start();
    const got = await collectUntil(channel, () => ls(s.spool).filter((n) => n.endsWith(".COMPLETED")).length === 2, "both files completed");
    events.push(...got);
    await src.stop();
    expect(events).toEqual(["a1\r", "a2", "a3-no-newline", "b1", "b2"]);
    expect(ls(s.spool)).toEqual(["a.log.COMPLETED", "b.log.COMPLETED"]);
    expect(src.counter.get("EventAcceptedCount")).toBe(5);
  });

  test("consumeOrder youngest reads the newest file first", async () => {
    const s = setup({ consumeOrder: "youngest" });
    for (const [name, t] of [["old.log", 1_000_000], ["new.log", 3_000_000], ["mid.log", 2_000_000]] as const) {
      writeFileSync(path.join(s.spool, name), `${name}\n`);
      utimesSync(path.join(s.spool, name), new Date(t), new Date(t));
    }
    const { src, channel } = s.make();
    await src.start();
    const got = await collectUntil(channel, () => ls(s.spool).filter((n) => n.endsWith(".COMPLETED")).length === 3, "all completed");
    await src.stop();
    expect(got).toEqual(["new.log", "mid.log", "old.log"]);
  });

  test("headers carry the absolute path and basename", async () => {
    const s = setup({ fileHeader: "true", basenameHeader: "true" });
    writeFileSync(path.join(s.spool, "h.txt"), "line\n");
    const { src, channel } = s.make();
    await src.start();
    await until(() => existsSync(path.join(s.spool, "h.txt.COMPLETED")), "completed");
    const events = await drain(channel);
    await src.stop();
    expect(events[0].headers).toEqual({ file: path.join(s.spool, "h.txt"), basename: "h.txt" });
  });

  test("graceful stop in the middle of a file, then restart: every line exactly once", async () => {
    const s = setup();
    const file = path.join(s.spool, "big.log");
    writeFileSync(file, numbered("S", 0, 1000));
    const delivered: string[] = [];
    for (let round = 0; round < 3; round++) {
      // A small channel that is never drained while the source runs: the source stalls mid-file.
      const { src, channel } = s.make({ capacity: 100, transactionCapacity: 10, keepAlive: 0 });
      await src.start();
      await until(() => channel.size === 100, "channel filled");
      await src.stop();
      delivered.push(...bodies(await drain(channel, Number.MAX_SAFE_INTEGER, 10)));
    }
    const { src, channel } = s.make();
    await src.start();
    delivered.push(...(await collectUntil(channel, () => existsSync(`${file}.COMPLETED`), "file completed")));
    await src.stop();
    expect(delivered).toEqual(numbered("S", 0, 1000).trim().split("\n"));
  });

  test("a file modified after pickup is set aside with a clear error; the others are read", async () => {
    const s = setup();
    const file = path.join(s.spool, "changing.log");
    writeFileSync(file, numbered("M", 0, 200));
    const first = s.make({ capacity: 50, transactionCapacity: 10, keepAlive: 0 });
    await first.src.start();
    await until(() => first.channel.size === 50, "channel filled");
    await first.src.stop();
    appendFileSync(file, "appended later\n");
    writeFileSync(path.join(s.spool, "other.log"), "o1\no2\n");
    const { src, channel, ctx } = s.make();
    await src.start();
    const got = await collectUntil(channel, () => existsSync(path.join(s.spool, "other.log.COMPLETED")), "other file completed");
    await src.stop();
    expect(got).toEqual(["o1", "o2"]);
    expect(existsSync(file)).toBe(true);
    expect(existsSync(`${file}.COMPLETED`)).toBe(false);
    const error = ctx.logger.lines.find((l) => l.level === "error")?.message ?? "";
    expect(error).toContain(`File has been modified since being read: ${file}`);
    expect(error).toContain("set aside");
    expect(readFileSync(path.join(s.spool, ".flumespool", "changing.log.FAILED"), "utf8")).toContain("modified");
  });

  test("a reused name is set aside before anything is read from it", async () => {
    const s = setup();
    writeFileSync(path.join(s.spool, "x.log.COMPLETED"), "old\n");
    writeFileSync(path.join(s.spool, "x.log"), "new\n");
    writeFileSync(path.join(s.spool, "y.log"), "y\n");
    const { src, channel, ctx } = s.make();
    await src.start();
    const got = await collectUntil(channel, () => existsSync(path.join(s.spool, "y.log.COMPLETED")), "y completed");
    await src.stop();
    expect(got).toEqual(["y"]);
    expect(ctx.logger.lines.some((l) => l.level === "error" && l.message.includes("File name has been re-used"))).toBe(true);
    expect(readFileSync(path.join(s.spool, "x.log"), "utf8")).toBe("new\n");
  });

  test("undecodable input: FAIL delivers the lines before it and sets the file aside naming the byte; REPLACE substitutes", async () => {
    const s = setup();
    const bad = Buffer.concat([Buffer.from("ok1\nok2\n"), Buffer.from([0x66, 0xff, 0x0a]), Buffer.from("after\n")]);
    writeFileSync(path.join(s.spool, "bad.log"), bad);
    writeFileSync(path.join(s.spool, "good.log"), "g\n");
    utimesSync(path.join(s.spool, "good.log"), new Date(), new Date(Date.now() + 10000));
    const { src, channel, ctx } = s.make();
    await src.start();
    const got = await collectUntil(channel, () => existsSync(path.join(s.spool, "good.log.COMPLETED")), "good completed");
    await src.stop();
    expect(got).toEqual(["ok1", "ok2", "g"]);
    expect(ctx.logger.lines.find((l) => l.level === "error")?.message).toContain("undecodable input at byte 8");

    const r = setup({ decodeErrorPolicy: "REPLACE" });
    writeFileSync(path.join(r.spool, "bad.log"), bad);
    const rr = r.make();
    await rr.src.start();
    const replaced = await collectUntil(rr.channel, () => existsSync(path.join(r.spool, "bad.log.COMPLETED")), "completed");
    await rr.src.stop();
    expect(replaced).toEqual(["ok1", "ok2", "f\uFFFD", "after"]);
  });

  test("BLOB deserializer, deletePolicy immediate, tracker_dir tracking, long lines split", async () => {
    const s = setup({ deserializer: "BLOB", "deserializer.maxBlobLength": "4", deletePolicy: "immediate" });
    writeFileSync(path.join(s.spool, "blob.bin"), "0123456789");
    const a = s.make();
    await a.src.start();
    const blobs = await collectUntil(a.channel, () => !existsSync(path.join(s.spool, "blob.bin")), "deleted");
    await a.src.stop();
    expect(blobs).toEqual(["0123", "4567", "89"]);

    const t = setup({ trackingPolicy: "tracker_dir", "deserializer.maxLineLength": "3" });
    writeFileSync(path.join(t.spool, "t.log"), "abcdefg\nhi\n");
    const b = t.make();
    await b.src.start();
    const lines = await collectUntil(b.channel, () => existsSync(path.join(t.spool, ".flumespool", "t.log.COMPLETED")), "tracked");
    await new Promise((r) => setTimeout(r, 100)); // a few more polls: it must not be read again
    lines.push(...bodies(await drain(b.channel)));
    await b.src.stop();
    expect(lines).toEqual(["abc", "def", "g", "hi"]);
    expect(existsSync(path.join(t.spool, "t.log"))).toBe(true);
  });

  test("the old bufferMaxLineLength still bounds LINE's lines; deserializer.maxLineLength wins over it", async () => {
    for (const [props, want] of [[{ bufferMaxLineLength: "3" }, ["abc", "def", "g"]], [{ bufferMaxLineLength: "3", "deserializer.maxLineLength": "5" }, ["abcde", "fg"]]] as const) {
      const s = setup({ ...props, deletePolicy: "immediate" });
      writeFileSync(path.join(s.spool, "t.log"), "abcdefg\n");
      const a = s.make();
      await a.src.start();
      const lines = await collectUntil(a.channel, () => !existsSync(path.join(s.spool, "t.log")), "deleted");
      await a.src.stop();
      expect(lines).toEqual([...want]);
    }
  });

  test("an empty file gives one empty event, as Flume", async () => {
    const s = setup();
    writeFileSync(path.join(s.spool, "empty.log"), "");
    const { src, channel } = s.make();
    await src.start();
    const got = await collectUntil(channel, () => existsSync(path.join(s.spool, "empty.log.COMPLETED")), "completed");
    await src.stop();
    expect(got).toEqual([""]);
  });

  test("schema: Flume's names and defaults", () => {
    const props = Object.fromEntries(definition.schema.props.map((p) => [p.key, p.default]));
    expect(props).toMatchObject({ fileSuffix: ".COMPLETED", deletePolicy: "never", trackingPolicy: "rename", trackerDir: ".flumespool", consumeOrder: "oldest", pollDelay: 500, batchSize: 100, deserializer: "LINE", decodeErrorPolicy: "FAIL", fileHeaderKey: "file", basenameHeaderKey: "basename" });
    // The deserializers are parts in the registry, their settings under deserializer.
    expect(lookupComponent("deserializer", "LINE")?.parse({}).options).toEqual({ maxLineLength: 2048, outputCharset: "UTF-8" });
    expect(lookupComponent("deserializer", "org.apache.flume.sink.solr.morphline.BlobDeserializer$Builder")?.parse({}).options).toEqual({ maxBlobLength: 100000000 });
  });

  test("BLOB: a file far larger than maxBlobLength is read one piece per transaction, so memory stays bounded by maxBlobLength, and arrives whole", async () => {
    const t = tempDir("flume-spool-blob-");
    cleanups.push(t.cleanup);
    const spool = path.join(t.dir, "spool");
    mkdirSync(spool);
    const content = Buffer.alloc(200 * 1024, "z");
    writeFileSync(path.join(spool, "big.bin"), content);
    const src = build(definition, { spoolDir: spool, pollDelay: "20", batchSize: "100", deserializer: "BLOB", "deserializer.maxBlobLength": "10000" }, context("r1")) as SpoolDirectorySource;
    const channel = wire(src);
    const batchBytes = recordBatchBytes(src);
    await src.start();
    await until(() => existsSync(path.join(spool, "big.bin.COMPLETED")), "file completed");
    await src.stop();
    const got = Buffer.concat((await drain(channel)).map((e) => e.body));
    expect(got.equals(content)).toBe(true);
    expect(Math.max(...batchBytes)).toBeLessThanOrEqual(10000);
  });

  test("an empty fileSuffix is a configuration error (every file would count as completed and nothing would be read)", () => {
    const t = tempDir("flume-spool-suffix-");
    cleanups.push(t.cleanup);
    expect(() => build(definition, { spoolDir: t.dir, fileSuffix: "" }, context("r1"))).toThrow("fileSuffix");
  });
});

describe("spooldir with a file channel", () => {
  test("a new file under the name of the last completed one is read after a restart (not set aside as reused)", async () => {
    const t = tempDir("flume-spool-restart-");
    cleanups.push(t.cleanup);
    const spool = path.join(t.dir, "spool");
    mkdirSync(spool);
    const raw = { spoolDir: spool, pollDelay: "20", batchSize: "10", deletePolicy: "immediate" };
    const file = path.join(spool, "current.log");

    const run = async (until_: () => boolean) => {
      const channel = new FileChannel("c1", options(t.dir));
      await channel.start();
      const ctx = context("r1");
      const src = build(definition, raw, ctx) as SpoolDirectorySource;
      src.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel as Channel])));
      await src.start();
      await until(until_, "file consumed");
      await src.stop();
      const got = await drainFileChannel(channel);
      await channel.stop();
      return { got, ctx };
    };

    writeFileSync(file, "a1\na2\n");
    const first = await run(() => !existsSync(file));
    expect(first.got).toEqual(["a1", "a2"]);

    // The application drops the next file under the same name while the agent is down.
    writeFileSync(file, "b1\nb2\nb3\n");
    const second = await run(() => !existsSync(file) || existsSync(path.join(spool, ".flumespool", "current.log.FAILED")));
    expect(second.ctx.logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual([]);
    expect(second.got).toEqual(["b1", "b2", "b3"]);
  });
});

describe("spooldir and files it may not read or that come back", () => {
  needsRootToSwitchUser.test("a file it may not read gets one error naming it, and the other files are still read", () => {
    const t = tempDir("flume-spool-perm-");
    cleanups.push(t.cleanup);
    const spool = path.join(t.dir, "spool");
    mkdirSync(spool);
    const locked = path.join(spool, "locked.log");
    // The unreadable file is the oldest, so it is chosen first.
    writeFileSync(locked, "secret\n", { mode: 0o000 });
    utimesSync(locked, new Date(1_000_000), new Date(1_000_000));
    writeFileSync(path.join(spool, "first.log"), "f1\n");
    writeFileSync(path.join(spool, "last.log"), "l1\n");
    utimesSync(path.join(spool, "last.log"), new Date(Date.now() + 60_000), new Date(Date.now() + 60_000));
    chmodSync(t.dir, 0o777);
    chmodSync(spool, 0o777);
    // File permissions do not bind root: run the source as nobody.
    const runner = runnerForNobody(path.join(ROOT, "test", "support", "runners", "spooldir.ts"), t.dir);
    const r = spawnSync(runner.command, [...runner.args, "poll", t.dir], { uid: NOBODY, gid: NOBODY, cwd: t.dir, encoding: "utf8" });
    expect({ error: r.error?.message, status: r.status, signal: r.signal, stderr: r.stderr }).toEqual({ error: undefined, status: 0, signal: null, stderr: "" });
    const out = JSON.parse(r.stdout) as { lines: string[]; errors: string[] };
    expect(out.lines).toEqual(["f1", "l1"]);
    expect(out.errors.filter((e) => e.includes(locked)).length).toBe(1);
  }, 60_000);

  test("trackingPolicy tracker_dir: a new file under a completed file's name gets an error naming it (it was ignored silently, its lines never delivered)", async () => {
    const t = tempDir("flume-spool-tracker-");
    cleanups.push(t.cleanup);
    const spool = path.join(t.dir, "spool");
    mkdirSync(spool);
    const file = path.join(spool, "x.log");
    const completed = path.join(spool, ".flumespool", "x.log.COMPLETED");
    const failed = path.join(spool, ".flumespool", "x.log.FAILED");
    writeFileSync(file, "old1\n");
    const ctx = context("r1");
    const src = build(definition, { spoolDir: spool, pollDelay: "20", trackingPolicy: "tracker_dir" }, ctx) as SpoolDirectorySource;
    const channel = wire(src);
    await src.start();
    await until(() => existsSync(completed), "x.log completed");
    // The application replaces x.log with a new file of the same name.
    writeFileSync(`${file}.tmp`, "new1\nnew2\n");
    renameSync(`${file}.tmp`, file);
    writeFileSync(path.join(spool, "y.log"), "y1\n");
    await until(() => existsSync(path.join(spool, ".flumespool", "y.log.COMPLETED")) && existsSync(failed), "y.log completed and x.log set aside", 3000);
    await src.stop();
    expect((await drain(channel)).map((e) => new TextDecoder().decode(e.body))).toEqual(["old1", "y1"]);
    expect(ctx.logger.lines.some((l) => l.level === "error" && l.message.includes("re-used") && l.message.includes(file))).toBe(true);
  });
});

/** An fsync of the meta file (or of its temporary copy before the rename into place). */
const metaSync = (tracker: string) => new RegExp(`f(data)?sync\\(\\d+<${esc(path.join(tracker, ".flumespool-main.meta.json"))}(\\.tmp)?>\\)`);

describe("spooling directory state on disk", () => {
  needsStrace.test("with a durable channel, the meta file with the file's last position is on disk before the file is marked done, and the rename to .COMPLETED is made durable", () => {
    const t = tempDir("flume-spool-fsync-");
    cleanups.push(t.cleanup);
    const lines = traced(t.dir, path.join(ROOT, "test", "support", "runners", "spooldir.ts"), "complete", t.dir, "durable");
    const tracker = path.join(t.dir, "tracker");
    const spool = path.join(t.dir, "spool");
    const completed = indexOf(lines, new RegExp(`rename(at2?)?\\(.*"${esc(path.join(spool, "in.log"))}".*"${esc(path.join(spool, "in.log.COMPLETED"))}"`));
    expect(completed).toBeGreaterThan(0);
    // The meta file (renamed into place per batch) was synced, and its directory, before the completion.
    const metaSynced = indexOf(lines, metaSync(tracker));
    expect(lines[metaSynced]).toMatch(metaSync(tracker));
    expect(metaSynced).toBeLessThan(completed);
    const trackerSynced = indexOf(lines, new RegExp(`f(data)?sync\\(\\d+<${esc(tracker)}>\\)`), metaSynced);
    expect(trackerSynced).toBeGreaterThan(metaSynced);
    expect(trackerSynced).toBeLessThan(completed);
    const spoolSynced = indexOf(lines, new RegExp(`f(data)?sync\\(\\d+<${esc(spool)}>\\)`), completed);
    expect(spoolSynced).toBeGreaterThan(completed);
  });

  needsStrace.test("with a memory channel, completing a file flushes nothing (as in Flume): no fsync stalls the application writing into the spool or the next file's pickup", () => {
    const t = tempDir("flume-spool-fsync-");
    cleanups.push(t.cleanup);
    const lines = traced(t.dir, path.join(ROOT, "test", "support", "runners", "spooldir.ts"), "complete", t.dir);
    const spool = path.join(t.dir, "spool");
    const completed = indexOf(lines, new RegExp(`rename(at2?)?\\(.*"${esc(path.join(spool, "in.log"))}".*"${esc(path.join(spool, "in.log.COMPLETED"))}"`));
    expect(completed).toBeGreaterThan(0);
    expect(lines.filter((l) => /f(data)?sync\(/.test(l) && l.includes(t.dir))).toEqual([]);
  });
});

describe("spooldir idle", () => {
  needsStrace.test("an idle source lists the spool at each poll but does not look for the meta file it removed", () => {
    const t = tempDir("flume-spool-idle-");
    cleanups.push(t.cleanup);
    const lines = tracedCalls(t.dir, "openat,rename,renameat,renameat2", path.join(ROOT, "test", "support", "runners", "spooldir.ts"), "complete-then-idle", t.dir);
    const spool = path.join(t.dir, "spool");
    const completed = indexOf(lines, new RegExp(`rename(at2?)?\\(.*"${esc(path.join(spool, "in.log.COMPLETED"))}"`));
    expect(completed).toBeGreaterThan(0);
    const meta = path.join(t.dir, "tracker", META_FILE);
    // While the file was read, its position went into the meta file (renamed into place)...
    expect(lines.slice(0, completed).some((l) => /rename/.test(l) && l.includes(`"${meta}"`))).toBe(true);
    const after = lines.slice(completed + 1);
    // ...then a second of polls every 20 ms listed the spool again and again...
    expect(after.filter((l) => l.includes(`"${spool}"`) && l.includes("O_DIRECTORY")).length).toBeGreaterThan(10);
    // ...and the meta file, removed with the completion, was not opened once.
    expect(after.filter((l) => l.includes(meta))).toEqual([]);
  });
});

/** `files` one-line files in the spool, oldest first by name, and outside it a file older than all of them (returned). */
function backlogAndLateFile(s: { spool: string; dir: string }, files: number): string {
  for (let i = 0; i < files; i++) {
    const f = path.join(s.spool, `f${String(i).padStart(4, "0")}.log`);
    writeFileSync(f, `f${i}\n`);
    utimesSync(f, new Date(2_000_000_000 + i * 1000), new Date(2_000_000_000 + i * 1000));
  }
  const late = path.join(s.dir, "late.log");
  writeFileSync(late, "late\n");
  utimesSync(late, new Date(1_000_000), new Date(1_000_000));
  return late;
}

/** Takes events until the first arrives, then moves `late` into the spool; the lines taken. */
async function firstLinesThenMoveIn(channel: MemoryChannel, late: string, spool: string): Promise<string[]> {
  const got: string[] = [];
  await until(async () => {
    got.push(...bodies(await drain(channel)));
    return got.length > 0;
  }, "the first file read");
  renameSync(late, path.join(spool, "late.log"));
  return got;
}

describe("spooldir with a backlog", () => {
  const listings = () => {
    const proto = SpoolDirectorySource.prototype as unknown as { candidates: (...a: unknown[]) => Promise<unknown> };
    const original = proto.candidates;
    const count = { n: 0, restore: () => (proto.candidates = original) };
    proto.candidates = function (this: unknown, ...a: unknown[]) {
      count.n++;
      return original.apply(this, a);
    };
    return count;
  };

  test("300 files are read from one listing of the spool, not one listing per file, oldest first", async () => {
    // pollDelay 60 s: no listing falls due by time during the test.
    const s = setup({ pollDelay: "60000", batchSize: "100" });
    const files = 300;
    for (let i = 0; i < files; i++) {
      const f = path.join(s.spool, `f${String(i).padStart(3, "0")}.log`);
      writeFileSync(f, numbered(`f${i}`, 0, 3));
      utimesSync(f, new Date(1_000_000 + i * 1000), new Date(1_000_000 + i * 1000));
    }
    const count = listings();
    const { src, channel } = s.make();
    try {
      await src.start();
      const got = await collectUntil(channel, () => ls(s.spool).filter((n) => n.endsWith(".COMPLETED")).length === files, "every file completed");
      expect(got).toEqual(Array.from({ length: files }, (_, i) => numbered(`f${i}`, 0, 3).trim().split("\n")).flat());
      // The start's listing, and at most one when the queue ran out.
      expect(count.n).toBeLessThanOrEqual(2);
    } finally {
      count.restore();
      await src.stop();
    }
  });

  test("a file moved in while a backlog is read joins the queue in consumeOrder: an older one is read next, not after the backlog", async () => {
    const s = setup({ pollDelay: "60000", batchSize: "100" });
    const files = 600;
    const late = backlogAndLateFile(s, files);
    const { src, channel } = s.make();
    try {
      await src.start();
      const got = await firstLinesThenMoveIn(channel, late, s.spool);
      const rest = await collectUntil(channel, () => ls(s.spool).filter((n) => n.endsWith(".COMPLETED")).length === files + 1, "every file completed");
      got.push(...rest);
      expect(got.length).toBe(files + 1);
      expect(new Set(got).size).toBe(files + 1);
      // Read once its event came: long before the backlog's last half.
      expect(got.indexOf("late")).toBeLessThan(files / 2);
    } finally {
      await src.stop();
    }
  });

  test("where no file-system events come, a file moved in during a backlog is found by the next listing once pollDelay has passed, not after the backlog", async () => {
    const start = DirectoryWatcher.prototype.start;
    DirectoryWatcher.prototype.start = function (this: DirectoryWatcher) {
      this.failure = "no events on this file system (the test's)";
      return false;
    };
    const s = setup({ pollDelay: "50", batchSize: "100" });
    const files = 300;
    const late = backlogAndLateFile(s, files);
    // The source's clock moves only when the test says: no listing falls due before the move.
    const clock = new VirtualClock(1_000_000);
    const ctx = { ...context("r1"), clock };
    const src = build(definition, s.raw, ctx) as SpoolDirectorySource;
    const channel = wire(src);
    try {
      await src.start();
      expect(ctx.logger.lines.some((l) => l.level === "warn" && l.message.includes("no file-system events"))).toBe(true);
      const got = await firstLinesThenMoveIn(channel, late, s.spool);
      const movedAt = got.length;
      await clock.advance(60);
      got.push(...(await collectUntil(channel, () => ls(s.spool).filter((n) => n.endsWith(".COMPLETED")).length === files + 1, "every file completed")));
      expect(new Set(got).size).toBe(files + 1);
      // Read at the first file taken after pollDelay: the backlog was listed again.
      expect(got.indexOf("late")).toBeGreaterThanOrEqual(movedAt);
      expect(got.indexOf("late")).toBeLessThan(files / 2);
    } finally {
      DirectoryWatcher.prototype.start = start;
      await src.stop();
    }
  });
});
