import { describe, expect, test } from "bun:test";
import { appendFileSync, copyFileSync, readFileSync, renameSync, statSync, truncateSync, writeFileSync, chmodSync, mkdirSync, rmSync, utimesSync, readdirSync, readlinkSync } from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { definition, TaildirSource } from "../../../src/components/sources/taildir.ts";
import { FileChannel } from "../../../src/components/channels/file/index.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import type { Channel } from "../../../src/core/channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { SourceRunner } from "../../../src/core/runners.ts";
import { TailFile } from "../../../src/components/sources/taildir/tail-file.ts";
import { FileGroupMatcher } from "../../../src/components/sources/taildir/matcher.ts";
import { InodeFinder } from "../../../src/components/sources/taildir/inodes.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";
import { cleanupsAfterEach, tempDir, ROOT, waitBound, waitUntil } from "../../support/helpers.ts";
import { bodies, build, context, drain, numbered, recordBatchBytes, wire } from "../../support/components.ts";
import { drain as drainFileChannel, options } from "../../support/file-channel.ts";
import { needsLoopExt4, needsRootToSwitchUser, needsProc, needsStrace } from "../../support/requires.ts";
import { esc, indexOf, traced } from "../../support/strace.ts";
import { NOBODY, runnerForNobody } from "../../support/other-user.ts";

const cleanups = cleanupsAfterEach();

function setup(extra: Record<string, string> = {}) {
  const t = tempDir("flume-taildir-");
  cleanups.push(t.cleanup);
  const logs = path.join(t.dir, "logs");
  require("node:fs").mkdirSync(logs);
  const raw = {
    filegroups: "g1",
    "filegroups.g1": `${logs}/app\\.log`,
    positionFile: path.join(t.dir, "pos", "taildir_position.json"),
    batchSize: "7",
    ...extra,
  };
  const make = () => {
    const ctx = context("r1");
    const src = build(definition, raw, ctx);
    const channel = wire(src);
    return { src, channel, ctx };
  };
  return { dir: t.dir, logs, raw, make, positionFile: raw.positionFile };
}

/** A temp directory (removed after the test) with an empty logs/ in it. */
function logsDir(prefix: string): { t: { dir: string }; logs: string } {
  const t = tempDir(prefix);
  cleanups.push(t.cleanup);
  const logs = path.join(t.dir, "logs");
  mkdirSync(logs);
  return { t, logs };
}

/** Calls process() until the source has nothing more to read right now. */
async function pump(src: TaildirSource): Promise<void> {
  for (let i = 0; i < 10000; i++) if ((await src.process()) === "BACKOFF") return;
}

describe("TAILDIR", () => {
  test("a file of many MiB (read ahead into one reused buffer) arrives whole, in order and unchanged, read chunks and their boundaries included; lines appended later follow", async () => {
    const s = setup({ batchSize: "1000" });
    const file = path.join(s.logs, "app.log");
    const line = (i: number) => `line ${i} ${"abcdefghij".repeat(i % 29)}`;
    const lines: string[] = [];
    let text = "";
    for (let i = 0; text.length < 9.5 * 1024 * 1024; i++) {
      lines.push(line(i));
      text += `${line(i)}\n`;
    }
    writeFileSync(file, text);
    const { src, channel } = s.make();
    await src.start();
    await pump(src);
    // Drained only once the whole file was read: a body that pointed into a buffer read into
    // again would have changed by now.
    const events = await drain(channel);
    expect(events.length).toBe(lines.length);
    const got = bodies(events);
    // The first body that differs, with its index (a diff of every line would drown it).
    const first = got.findIndex((b, i) => b !== lines[i]);
    expect(first === -1 ? "every body as written" : `${first}: ${got[first]}`).toBe("every body as written");
    appendFileSync(file, "after-1\nafter-2\n");
    await pump(src);
    expect(bodies(await drain(channel))).toEqual(["after-1", "after-2"]);
    await src.stop();
    expect(JSON.parse(readFileSync(s.positionFile, "utf8"))[0].pos).toBe(statSync(file).size);
  });

  test("a source stopped in the middle of a big file, with its next chunk being read ahead, resumes after a restart: every line once, in order", async () => {
    const s = setup({ batchSize: "100" });
    const file = path.join(s.logs, "app.log");
    const lines = Array.from({ length: 90_000 }, (_, i) => `entry ${i} ${"0123456789".repeat(i % 13)}`);
    writeFileSync(file, `${lines.join("\n")}\n`);
    const first = s.make();
    await first.src.start();
    // One call commits at most 256 batches of 100: the file (about 7 MiB) is far from read.
    expect(await first.src.process()).toBe("READY");
    const before = bodies(await drain(first.channel));
    expect(before.length).toBe(25_600);
    await first.src.stop();
    const second = s.make();
    await second.src.start();
    await pump(second.src);
    expect([...before, ...bodies(await drain(second.channel))]).toEqual(lines);
    await second.src.stop();
  });

  test("maxBatchCount parks a big file between calls, with its next chunk read ahead: the read resumes where the batches ended, every line once", async () => {
    const s = setup({ batchSize: "100", maxBatchCount: "3" });
    const file = path.join(s.logs, "app.log");
    const lines = Array.from({ length: 60_000 }, (_, i) => `entry ${i} ${"0123456789".repeat(i % 13)}`);
    writeFileSync(file, `${lines.join("\n")}\n`);
    const { src, channel } = s.make();
    await src.start();
    let calls = 0;
    for (; calls < 10_000; calls++) if ((await src.process()) === "BACKOFF") break;
    expect(calls).toBeGreaterThanOrEqual(200); // 300 batches at 3 per call
    expect(bodies(await drain(channel))).toEqual(lines);
    await src.stop();
  });

  test("tails matching files with group headers, file and byte offset headers; keeps an unfinished line", async () => {
    const s = setup({ "headers.g1.topic": "app", fileHeader: "true", byteOffsetHeader: "true" });
    const file = path.join(s.logs, "app.log");
    writeFileSync(file, "first\r\nsecond\nthird-without-newline");
    writeFileSync(path.join(s.logs, "other.log"), "not matched\n");
    const { src, channel } = s.make();
    await src.start();
    await pump(src);
    let events = await drain(channel);
    expect(bodies(events)).toEqual(["first", "second"]);
    expect(events[0].headers).toEqual({ topic: "app", byteoffset: "0", file });
    expect(events[1].headers.byteoffset).toBe("7");
    appendFileSync(file, "-done\nfourth\n");
    await pump(src);
    events = await drain(channel);
    expect(bodies(events)).toEqual(["third-without-newline-done", "fourth"]);
    await src.stop();
    const pos = JSON.parse(readFileSync(s.positionFile, "utf8"));
    expect(pos).toEqual([{ inode: statSync(file).ino, pos: statSync(file).size, file }]);
    expect(readFileSync(s.positionFile, "utf8")).toBe(`[{"inode":${statSync(file).ino},"pos":${statSync(file).size},"file":"${file}"}]`);
  });

  test("positions advance only after the commit: a full channel makes the batch wait inside process(), nothing is lost", async () => {
    const s = setup({ batchSize: "10" });
    const file = path.join(s.logs, "app.log");
    writeFileSync(file, numbered("x", 0, 100));
    const ctx = context("r1");
    const src = build(definition, s.raw, ctx);
    const channel = wire(src, { capacity: 25, transactionCapacity: 10, keepAlive: 0 });
    await src.start();
    const got: string[] = [];
    // A slow consumer: 15 events every 20 ms, while process() retries what the channel refused.
    let reading = true;
    const consumer = (async () => {
      while (reading) {
        got.push(...bodies(await drain(channel, 15, 10)));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    for (let round = 0; round < 100 && got.length + channel.size < 100; round++) await src.process();
    reading = false;
    await consumer;
    got.push(...bodies(await drain(channel, 100, 10)));
    expect(got).toEqual(numbered("x", 0, 100).trim().split("\n"));
    expect(src.counter.get("ChannelWriteFail")).toBeGreaterThan(0);
    expect(src.counter.get("EventAcceptedCount")).toBe(100);
    await src.stop();
    expect(JSON.parse(readFileSync(s.positionFile, "utf8"))[0].pos).toBe(statSync(file).size);
  });

  test("stop() ends a process() that waits on a full channel; the lines not taken are read again after a restart", async () => {
    const s = setup({ batchSize: "10" });
    const file = path.join(s.logs, "app.log");
    writeFileSync(file, numbered("x", 0, 30));
    const src = build(definition, s.raw, context("r1"));
    const channel = wire(src, { capacity: 10, transactionCapacity: 10, keepAlive: 0 });
    const runner = new SourceRunner(src);
    await runner.start();
    await waitUntil(() => src.counter.get("ChannelWriteFail") > 0, "a refused batch");
    const t0 = Date.now();
    await runner.stop();
    // Without the interrupt it waits for room that never comes.
    expect(Date.now() - t0).toBeLessThan(waitBound(2000));
    expect(bodies(await drain(channel, 100, 10))).toEqual(numbered("x", 0, 10).trim().split("\n"));
    const again = build(definition, s.raw, context("r1"));
    const channel2 = wire(again, { capacity: 100, transactionCapacity: 10, keepAlive: 0 });
    await again.start();
    await pump(again);
    expect(bodies(await drain(channel2, 100, 10))).toEqual(numbered("x", 10, 30).trim().split("\n"));
    await again.stop();
  });

  for (const pattern of ["app\\.log", "app\\.log.*"]) test(`graceful restarts across rename and copytruncate rotations deliver every line exactly once (pattern ${pattern})`, async () => {
    const s = setup({ "filegroups.g1": "" });
    s.raw["filegroups.g1"] = `${s.logs}/${pattern}`;
    const file = path.join(s.logs, "app.log");
    const delivered: string[] = [];
    let n = 0;
    const write = (k: number) => {
      appendFileSync(file, numbered("L", n, n + k));
      n += k;
    };
    for (let round = 0; round < 6; round++) {
      const { src, channel } = s.make();
      await src.start();
      write(13);
      await pump(src);
      delivered.push(...bodies(await drain(channel)));
      write(9); // written, maybe not read, before the stop
      if (round % 2 === 0) await pump(src);
      delivered.push(...bodies(await drain(channel)));
      await src.stop();
      // While the source is down: more lines, then a rotation, then more lines.
      write(5);
      if (round % 2 === 0) {
        renameSync(file, `${file}.${round}`);
      } else {
        copyFileSync(file, `${file}.${round}`);
        truncateSync(file, 0);
      }
      write(4);
    }
    const { src, channel } = s.make();
    await src.start();
    await pump(src);
    delivered.push(...bodies(await drain(channel)));
    await src.stop();
    expect(delivered.length).toBe(n);
    const sortNum = (a: string[]) => a.slice().sort((x, y) => Number(x.slice(2)) - Number(y.slice(2)));
    expect(sortNum(delivered)).toEqual(numbered("L", 0, n).trim().split("\n"));
  });

  for (const pattern of ["app\\.log.*", "app\\.log"]) {
    test(`rotation while running (pattern ${pattern}): renamed files are drained, copytruncate copies continue, no repeats`, async () => {
      const s = setup();
      const raw = { ...s.raw, "filegroups.g1": `${s.logs}/${pattern}` };
      const ctx = context("r1");
      const src = build(definition, raw, ctx);
      const channel = wire(src);
      await src.start();
      const file = path.join(s.logs, "app.log");
      let n = 0;
      const write = (k: number) => {
        appendFileSync(file, numbered("R", n, n + k));
        n += k;
      };
      write(20);
      await pump(src);
      write(6);
      renameSync(file, `${file}.1`);
      write(3);
      await pump(src);
      write(8);
      copyFileSync(file, `${file}.2`);
      truncateSync(file, 0);
      write(5); // grows back past the old position before the next poll
      await pump(src);
      write(4);
      copyFileSync(file, `${file}.3`);
      await pump(src); // sees the copy before the truncation
      write(2);
      await pump(src);
      truncateSync(file, 0);
      write(3);
      await pump(src);
      await pump(src);
      const delivered = bodies(await drain(channel));
      await src.stop();
      if (process.env.DEBUG_TAILDIR) console.log(ctx.logger.lines.map((l) => l.message).join("\n"));
      expect(delivered.slice().sort()).toEqual(numbered("R", 0, n).trim().split("\n").sort());
      expect(delivered.length).toBe(n);
    });
  }

  test("idleTimeout: a rotated-away file is drained (its unfinished last line too) and dropped; an idle file is closed and reopened on growth", async () => {
    const s = setup({ idleTimeout: "50" });
    const file = path.join(s.logs, "app.log");
    writeFileSync(file, "a\nunfinished");
    const { src, channel, ctx } = s.make();
    await src.start();
    await pump(src);
    expect(bodies(await drain(channel))).toEqual(["a"]);
    renameSync(file, `${file}.1`);
    writeFileSync(file, "b\n");
    await pump(src);
    expect(bodies(await drain(channel))).toEqual(["b"]);
    await new Promise((r) => setTimeout(r, 80));
    await pump(src);
    expect(bodies(await drain(channel))).toEqual(["unfinished"]);
    expect(src.positions().map((p) => p.file)).toEqual([file]);
    expect(ctx.logger.lines.some((l) => l.message.includes("(idle)"))).toBe(true);
    appendFileSync(file, "c\n");
    await pump(src);
    expect(bodies(await drain(channel))).toEqual(["c"]);
    await src.stop();
  });

  test("a long line is emitted in pieces of maxLineLength bytes", async () => {
    const s = setup({ maxLineLength: "10" });
    writeFileSync(path.join(s.logs, "app.log"), `${"a".repeat(25)}\nshort\n`);
    const { src, channel, ctx } = s.make();
    await src.start();
    await pump(src);
    expect(bodies(await drain(channel))).toEqual(["a".repeat(10), "a".repeat(10), "a".repeat(5), "short"]);
    expect(ctx.logger.lines.some((l) => l.level === "warn" && l.message.includes("maxLineLength"))).toBe(true);
    await src.stop();
  });

  test("schema: Flume's names and defaults", () => {
    const props = Object.fromEntries(definition.schema.props.map((p) => [p.key, p.default]));
    expect(props).toMatchObject({ idleTimeout: 120000, writePosInterval: 3000, batchSize: 100, skipToEnd: false, fileHeaderKey: "file", cachePatternMatching: true });
    expect(definition.schema.aliases).toContain("org.apache.flume.source.taildir.TaildirSource");
  });

  test("a batch holds at most about maxLineLength bytes (twice at worst), and the rest of the file follows without a backoff", async () => {
    const t = tempDir("flume-taildir-bytes-");
    cleanups.push(t.cleanup);
    const logs = path.join(t.dir, "logs");
    mkdirSync(logs);
    const line = "y".repeat(900);
    writeFileSync(path.join(logs, "a.log"), `${line}\n`.repeat(40));
    const src = build(definition, { filegroups: "g1", "filegroups.g1": `${logs}/a\\.log`, positionFile: path.join(t.dir, "pos.json"), maxLineLength: "1000", batchSize: "100" }, context("r1")) as TaildirSource;
    const channel = wire(src);
    const batchBytes = recordBatchBytes(src);
    await src.start();
    await src.process(); // one poll reads everything there is
    const got = (await drain(channel)).map((e) => new TextDecoder().decode(e.body));
    await src.stop();
    expect(got).toEqual(Array.from({ length: 40 }, () => line));
    expect(Math.max(...batchBytes)).toBeLessThanOrEqual(2000);
  });
});

describe("TAILDIR reads of a file smaller than a big one (256 KiB reads cut into 64 KiB copies)", () => {
  test("every line arrives once and in order, across the cuts, a park between batches and a batch given back; bodies read earlier stay intact", async () => {
    const t = tempDir("flume-taildir-cuts-");
    cleanups.push(t.cleanup);
    const file = path.join(t.dir, "app.log");
    // Lengths 1..299 so lines straddle the 64 KiB cuts and the 256 KiB reads at varied places.
    const lines = Array.from({ length: 7000 }, (_, i) => `${i}:`.padEnd(1 + ((i * 37) % 299), String.fromCharCode(97 + (i % 26))));
    writeFileSync(file, lines.join("\n") + "\n");
    const size = statSync(file).size;
    expect(size).toBeGreaterThan(3 * 256 * 1024);
    const tf = new TailFile({ path: file, inode: statSync(file).ino, group: "g1", headers: {}, pos: 0, maxLineLength: 1 << 20, onOverlong: () => {} }, 0);
    tf.grew(size, 0);
    const kept: Uint8Array[] = [];
    for (let n = 0; ; n++) {
      const batch = await tf.readBatch(97, null, null, false);
      if (batch === null) break;
      if (n % 11 === 5) {
        tf.rewindTo(tf.pos); // not committed: read again
        continue;
      }
      tf.committed(batch, 0);
      for (const e of batch.events) kept.push(e.body);
      if (n % 7 === 3) tf.park(); // another file's turn: what was read ahead is dropped
    }
    await tf.close();
    expect(tf.pos).toBe(size);
    const got = kept.map((b) => new TextDecoder().decode(b));
    expect(got.length).toBe(lines.length);
    expect(got).toEqual(lines);
  });
});

const RUNNER = path.join(ROOT, "test", "support", "runners", "taildir.ts");

describe("TAILDIR with a file channel", () => {
  needsLoopExt4.test("a deleted file's position is dropped from the channel too, so a new file that reuses its inode is read from its start after a restart", async () => {
    const t = tempDir("flume-taildir-inode-");
    cleanups.push(t.cleanup);
    // The logs on a small ext4 of their own (it hands a freed inode to the next new file), so
    // the channel's and position files do not take the inode first.
    const img = path.join(t.dir, "logs.img");
    const logs = path.join(t.dir, "logs");
    mkdirSync(logs);
    writeFileSync(img, "");
    truncateSync(img, 16 * 1024 * 1024);
    const mkfs = spawnSync("mkfs.ext4", ["-q", img], { encoding: "utf8" });
    expect({ mkfs: mkfs.status, stderr: mkfs.stderr }).toEqual({ mkfs: 0, stderr: "" });
    const mount = spawnSync("mount", ["-o", "loop", img, logs], { encoding: "utf8" });
    expect({ mount: mount.status, stderr: mount.stderr }).toEqual({ mount: 0, stderr: "" });
    cleanups.push(() => spawnSync("umount", ["-l", logs]));
    const file = path.join(logs, "app.log");
    const raw = { filegroups: "g1", "filegroups.g1": `${logs}/app\\.log`, positionFile: path.join(t.dir, "pos.json"), idleTimeout: "10" };
    const open = async () => {
      const channel = new FileChannel("c1", options(t.dir));
      await channel.start();
      const src = build(definition, raw, context("r1")) as TaildirSource;
      src.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel as Channel])));
      await src.start();
      return { channel, src };
    };

    writeFileSync(file, "a1\na2\n");
    const inode = statSync(file).ino;
    const first = await open();
    await pump(first.src);
    expect(await drainFileChannel(first.channel)).toEqual(["a1", "a2"]);
    rmSync(file);
    // Seen gone, then idle and drained: the deleted file is let go.
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 30));
      await pump(first.src);
    }
    expect(first.src.positions()).toEqual([]);
    await first.src.stop();
    await first.channel.stop();

    // ext4 and others hand a freed inode to the next new file: make that happen.
    let reused = false;
    for (let i = 0; i < 50 && !reused; i++) {
      writeFileSync(file, "b1\nb2\nb3\n");
      reused = statSync(file).ino === inode;
      if (!reused) rmSync(file);
    }
    expect(reused).toBe(true);
    const second = await open();
    await pump(second.src);
    expect(await drainFileChannel(second.channel)).toEqual(["b1", "b2", "b3"]);
    await second.src.stop();
    await second.channel.stop();
  });
});

describe("TAILDIR and files it may not read or share", () => {
  needsRootToSwitchUser.test("a matched file it may not read gets an error naming it, and the other files are still read", () => {
    const t = tempDir("flume-taildir-perm-");
    cleanups.push(t.cleanup);
    const logs = path.join(t.dir, "logs");
    mkdirSync(logs);
    const a = path.join(logs, "a.log");
    const b = path.join(logs, "b.log");
    const c = path.join(logs, "c.log");
    // The unreadable file is the oldest, so it comes first.
    writeFileSync(b, "secret\n", { mode: 0o000 });
    writeFileSync(a, "a1\n");
    writeFileSync(c, "c1\n");
    utimesSync(b, new Date(1_000_000), new Date(1_000_000));
    chmodSync(t.dir, 0o777);
    chmodSync(logs, 0o777);
    // File permissions do not bind root: run the source as nobody.
    const runner = runnerForNobody(RUNNER, t.dir);
    const r = spawnSync(runner.command, [...runner.args, "poll", t.dir], { uid: NOBODY, gid: NOBODY, cwd: t.dir, encoding: "utf8" });
    expect({ error: r.error?.message, status: r.status, stderr: r.stderr }).toEqual({ error: undefined, status: 0, stderr: "" });
    const out = JSON.parse(r.stdout) as { lines: string[]; errors: string[] };
    expect(out.lines.sort()).toEqual(["a1", "c1"]);
    expect(out.errors.some((e) => e.includes(b))).toBe(true);
  }, 60_000);

  test("a second source on the same positionFile (both left at the default, say) is refused at start with an error naming the first", async () => {
    const t = tempDir("flume-taildir-pos-");
    cleanups.push(t.cleanup);
    const logs = path.join(t.dir, "logs");
    mkdirSync(logs);
    const raw = { filegroups: "g1", "filegroups.g1": `${logs}/a\\.log`, positionFile: path.join(t.dir, "pos.json") };
    const first = build(definition, raw, context("r1")) as TaildirSource;
    wire(first);
    const second = build(definition, { ...raw, "filegroups.g1": `${logs}/b\\.log` }, context("r2")) as TaildirSource;
    wire(second);
    await first.start();
    // Each would overwrite the other's positions: after a restart one re-reads (or with skipToEnd skips) its files.
    await expect(second.start()).rejects.toThrow(/positionFile.*r1/);
    await first.stop();
    // Once the first source stopped, the file is free again.
    await second.start();
    await second.stop();
  });
});

/** Descriptors of this process open on `file` (Linux /proc). */
function openDescriptors(file: string): number {
  let n = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
    } catch {
      // Closed since the listing.
    }
  }
  return n;
}

describe("TAILDIR file descriptors", () => {
  needsProc.test("fingerprinting a file while the file is let go leaves no descriptor open on it", async () => {
    const t = tempDir("flume-taildir-fd-");
    cleanups.push(t.cleanup);
    const file = path.join(t.dir, "app.log");
    writeFileSync(file, "a1\na2\n");
    const { ino } = statSync(file);
    const tf = new TailFile({ path: file, inode: ino, group: "g1", headers: {}, pos: 6, maxLineLength: 1024, onOverlong: () => {} }, 0);
    // Fingerprinting reads the head and tail of the file (not in memory after a restart) ...
    const fingerprint = tf.loadFingerprint();
    // ... while the poll lets the file go (rotated away and drained, or deleted).
    await tf.close();
    await fingerprint;
    expect(tf.isOpen).toBe(false);
    expect(openDescriptors(file)).toBe(0);
  });

  needsProc.test("two reads that open a closed file at once share one descriptor", async () => {
    const t = tempDir("flume-taildir-fd2-");
    cleanups.push(t.cleanup);
    const file = path.join(t.dir, "app.log");
    writeFileSync(file, "a1\na2\n");
    const { ino } = statSync(file);
    const tf = new TailFile({ path: file, inode: ino, group: "g1", headers: {}, pos: 6, maxLineLength: 1024, onOverlong: () => {} }, 0);
    await Promise.all([tf.readAt(0, 2), tf.readAt(3, 2)]);
    await tf.close();
    expect(openDescriptors(file)).toBe(0);
  });

  needsProc.test("a file that was let go is not opened again to fingerprint it", async () => {
    const t = tempDir("flume-taildir-fd3-");
    cleanups.push(t.cleanup);
    const file = path.join(t.dir, "app.log");
    writeFileSync(file, "a1\na2\n");
    const { ino } = statSync(file);
    const tf = new TailFile({ path: file, inode: ino, group: "g1", headers: {}, pos: 6, maxLineLength: 1024, onOverlong: () => {} }, 0);
    await tf.readAt(0, 2);
    // Let go between the two reads of a fingerprint (head, then tail).
    await tf.release();
    expect(await tf.loadFingerprint()).toBeNull();
    expect(openDescriptors(file)).toBe(0);
  });
});

describe("TAILDIR state files on disk", () => {
  needsStrace.test("the position and state files reach the disk before they replace the old ones, and the rename is made durable (fsync of the directory)", () => {
    const t = tempDir("flume-taildir-fsync-");
    cleanups.push(t.cleanup);
    const lines = traced(t.dir, path.join(ROOT, "test", "support", "runners", "taildir.ts"), "positions", t.dir);
    const state = path.join(t.dir, "state");
    for (const name of ["pos.json", "pos.json.state"]) {
      const tmp = path.join(state, `${name}.tmp`);
      const synced = indexOf(lines, new RegExp(`^\\d+ +f(data)?sync\\(\\d+<${esc(tmp)}>\\)`));
      const renamed = indexOf(lines, new RegExp(`rename(at2?)?\\(.*"${esc(tmp)}".*"${esc(path.join(state, name))}"`));
      expect({ name, synced: synced >= 0 }).toEqual({ name, synced: true });
      expect(renamed).toBeGreaterThan(synced);
      const dirSynced = indexOf(lines, new RegExp(`f(data)?sync\\(\\d+<${esc(state)}>\\)`), renamed);
      expect({ name, dirSyncedAfterRename: dirSynced > renamed }).toEqual({ name, dirSyncedAfterRename: true });
    }
  });
});

describe("TAILDIR and copies (copytruncate)", () => {
  function copySetup() {
    const t = tempDir("flume-taildir-copy-");
    cleanups.push(t.cleanup);
    const logs = path.join(t.dir, "logs");
    mkdirSync(logs);
    const raw = { filegroups: "g1", "filegroups.g1": `${logs}/app\\.log.*`, positionFile: path.join(t.dir, "pos", "p.json"), batchSize: "10" };
    const ctx = context("r1");
    const src = build(definition, raw, ctx) as TaildirSource;
    const channel = wire(src);
    return { logs, src, channel, ctx, file: path.join(logs, "app.log") };
  }

  /** app.log with lines c-0..c-299, all read; then app.log.1 half written (a copy begun) and seen by the source; returns the rest of the copy's writing. */
  async function halfCopied(s: ReturnType<typeof copySetup>): Promise<() => void> {
    writeFileSync(s.file, numbered("c", 0, 300));
    await s.src.start();
    await pump(s.src);
    const copy = `${s.file}.1`;
    const whole = readFileSync(s.file);
    writeFileSync(copy, whole.subarray(0, Math.floor(whole.length / 2)));
    await pump(s.src); // a shadow of app.log, waiting
    return () => appendFileSync(copy, whole.subarray(Math.floor(whole.length / 2)));
  }

  /** app.log truncated and written again (c-300..c-319) right after the next look stat'ed it; two pumps; every line delivered. */
  async function truncatedDuringLook(s: ReturnType<typeof copySetup>): Promise<string[]> {
    const match = FileGroupMatcher.prototype.match;
    FileGroupMatcher.prototype.match = async function (this: FileGroupMatcher, now: number) {
      const found = await match.call(this, now);
      FileGroupMatcher.prototype.match = match;
      truncateSync(s.file, 0);
      appendFileSync(s.file, numbered("c", 300, 320));
      return found;
    };
    try {
      await pump(s.src);
      await pump(s.src);
    } finally {
      FileGroupMatcher.prototype.match = match;
    }
    const got = bodies(await drain(s.channel, 1000));
    await s.src.stop();
    return got;
  }

  test("a copy seen while it is still being written waits for the original's truncation, then continues where the original was: nothing twice", async () => {
    const s = copySetup();
    const finishCopy = await halfCopied(s);
    finishCopy();
    await pump(s.src);
    truncateSync(s.file, 0);
    appendFileSync(s.file, numbered("c", 300, 320));
    await pump(s.src);
    await pump(s.src);
    const got = bodies(await drain(s.channel, 1000));
    await s.src.stop();
    expect(got).toEqual(numbered("c", 0, 320).trim().split("\n"));
  });

  test("a copy first seen after its original was truncated and written again (the look stat'ed the original before the truncation) continues where the original was: nothing twice", async () => {
    const s = copySetup();
    writeFileSync(s.file, numbered("c", 0, 300));
    await s.src.start();
    await pump(s.src);
    copyFileSync(s.file, `${s.file}.1`);
    // logrotate truncates right after the copy: here between the look's stat of app.log and the
    // source's first read of the copy.
    expect(await truncatedDuringLook(s)).toEqual(numbered("c", 0, 320).trim().split("\n"));
    // The truncation is not reported as losing lines: the copy holds them.
    expect(s.ctx.logger.lines.filter((l) => l.message.includes("were lost")).map((l) => l.message)).toEqual([]);
  });

  test("a copy seen half written, whose original is truncated and written again before a look sees the truncation, continues where the original was: nothing twice", async () => {
    const s = copySetup();
    const finishCopy = await halfCopied(s);
    finishCopy();
    // Truncated between the look's stat of app.log and its check of the grown copy.
    expect(await truncatedDuringLook(s)).toEqual(numbered("c", 0, 320).trim().split("\n"));
  });

  test("a new file that only starts like the tailed one (a common header) is read in full once it differs", async () => {
    const s = copySetup();
    const header = "# app log, format 2\n";
    writeFileSync(s.file, header + numbered("a", 0, 50));
    await s.src.start();
    await pump(s.src);
    const other = `${s.file}.other`;
    writeFileSync(other, header);
    await pump(s.src); // looks like the start of a copy
    appendFileSync(other, numbered("b", 0, 5));
    await pump(s.src);
    await pump(s.src);
    const got = bodies(await drain(s.channel, 1000));
    await s.src.stop();
    expect(got.filter((l) => l.startsWith("b-"))).toEqual(numbered("b", 0, 5).trim().split("\n"));
    expect(got.filter((l) => l === header.trim())).toHaveLength(2);
  });
});

describe("TAILDIR looks at its files while it reads a backlog", () => {
  test("a busy source spaces the looks no file-system event asked for by 20 times what the last one took, up to maxBackoffSleep; back from a sleep it looks at once; every line arrives once", async () => {
    const { t, logs } = logsDir("flume-taildir-looks-");
    const files = 40;
    const lines = 400;
    for (let f = 0; f < files; f++) writeFileSync(path.join(logs, `f${f}.log`), numbered(`f${f}`, 0, lines));
    const clock = new VirtualClock(1_000_000);
    const ctx = { ...context("r1"), clock };
    // batchSize 1: a process() call cuts 256 lines, so the backlog takes many calls.
    const src = build(definition, { filegroups: "g1", "filegroups.g1": `${logs}/.*\\.log`, positionFile: path.join(t.dir, "pos.json"), batchSize: "1" }, ctx) as TaildirSource;
    const channel = wire(src);
    // A look at every file takes 100 ms of the source's clock (as thousands of stats would).
    const match = FileGroupMatcher.prototype.match;
    const looks: number[] = [];
    FileGroupMatcher.prototype.match = async function (this: FileGroupMatcher, now: number) {
      looks.push(clock.now());
      await clock.advance(100);
      return match.call(this, now);
    };
    try {
      await src.start();
      let status = "READY";
      let calls = 0;
      for (; status === "READY" && calls < 1000; calls++) {
        await clock.advance(200); // the reading of a call's 256 lines
        status = await src.process();
      }
      expect(status).toBe("BACKOFF");
      expect(calls).toBeGreaterThan(50);
      // Looks while busy: none closer than 20 x 100 ms (every 500 ms before), none further apart than maxBackoffSleep.
      const busy = looks.slice(2); // the start's and the first process()'s
      const gaps = busy.slice(1).map((at, i) => at - busy[i]);
      expect(busy.length).toBeGreaterThan(3);
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(2000);
      expect(Math.max(...gaps)).toBeLessThanOrEqual(5000 + 300);
      // Back from a sleep, a poll is the fallback for changes that send no event: each one looks.
      for (let poll = 0; poll < 2; poll++) {
        const before = looks.length;
        await clock.advance(1000);
        expect(await src.process()).toBe("BACKOFF");
        expect(looks.length).toBe(before + 1);
      }
      const got = bodies(await drain(channel));
      expect(got.length).toBe(files * lines);
      expect(new Set(got).size).toBe(files * lines);
    } finally {
      FileGroupMatcher.prototype.match = match;
      await src.stop();
    }
  });
});

describe("TAILDIR with many small files", () => {
  test("600 files of one line each are read without a backoff sleep per 256 files: one pump takes every line, each once", async () => {
    const { t, logs } = logsDir("flume-taildir-small-");
    const files = 600;
    for (let f = 0; f < files; f++) writeFileSync(path.join(logs, `f${f}.log`), `f${f}\n`);
    const src = build(definition, { filegroups: "g1", "filegroups.g1": `${logs}/.*\\.log`, positionFile: path.join(t.dir, "pos.json") }, context("r1")) as TaildirSource;
    const channel = wire(src);
    try {
      await src.start();
      let calls = 0;
      while (calls < 100 && (await src.process()) === "READY") calls++;
      // A process() call cuts at most 256 batches; the calls after the first go on at once.
      expect(calls).toBeGreaterThanOrEqual(2);
      const got = bodies(await drain(channel));
      expect(got.length).toBe(files);
      expect(new Set(got).size).toBe(files);
    } finally {
      await src.stop();
    }
  });
});

describe("TAILDIR letting go of many closed files at once", () => {
  test("200 idle (closed) files deleted together are found gone with one listing of their directory, not one each; the others stay tailed", async () => {
    const { t, logs } = logsDir("flume-taildir-cleanup-");
    for (let f = 0; f < 300; f++) writeFileSync(path.join(logs, `f${f}.log`), `f${f}\n`);
    const ctx = context("r1");
    const src = build(definition, { filegroups: "g1", "filegroups.g1": `${logs}/.*\\.log`, positionFile: path.join(t.dir, "pos.json"), idleTimeout: "100" }, ctx) as TaildirSource;
    const channel = wire(src);
    const list = InodeFinder.prototype.list;
    let listings = 0;
    InodeFinder.prototype.list = function (this: InodeFinder, dir: string) {
      listings++;
      return list.call(this, dir);
    };
    try {
      await src.start();
      await pump(src);
      expect(bodies(await drain(channel)).length).toBe(300);
      await new Promise((r) => setTimeout(r, 150));
      await pump(src); // closes the idle files
      expect(ctx.logger.lines.filter((l) => l.message.includes("(idle)")).length).toBe(300);
      for (let f = 0; f < 200; f++) rmSync(path.join(logs, `f${f}.log`));
      listings = 0;
      await pump(src);
      expect(listings).toBe(1);
      expect(src.positions().length).toBe(100);
      appendFileSync(path.join(logs, "f250.log"), "more\n");
      await pump(src);
      expect(bodies(await drain(channel))).toEqual(["more"]);
    } finally {
      InodeFinder.prototype.list = list;
      await src.stop();
    }
  });
});
