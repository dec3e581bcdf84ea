import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, renameSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { FileChannel } from "../../../src/components/channels/file/index.ts";
import { definition, SpoolDirectorySource } from "../../../src/components/sources/spooldir.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import type { Channel } from "../../../src/core/channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { options } from "../../support/file-channel.ts";
import { drain } from "../../support/file-channel.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { build, context, drain as drainMemory, recordBatchBytes, until, wire } from "../../support/components.ts";

const cleanups = cleanupsAfterEach();

test("with a file channel, a new file under the name of the last completed one is read after a restart (not set aside as reused)", async () => {
  const t = tempDir("flume-review-spool-");
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
    const got = await drain(channel);
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

test("BLOB: a file far larger than maxBlobLength is read one piece per transaction, so memory stays bounded by maxBlobLength, and arrives whole", async () => {
  const t = tempDir("flume-review-spool-blob-");
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
  const got = Buffer.concat((await drainMemory(channel)).map((e) => e.body));
  expect(got.equals(content)).toBe(true);
  expect(Math.max(...batchBytes)).toBeLessThanOrEqual(10000);
});

test("spooldir: a file it may not read gets one error naming it, and the other files are still read", () => {
  const t = tempDir("flume-review-spool-perm-");
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
  const r = spawnSync(process.execPath, [path.join(import.meta.dir, "review-spooldir-runner.ts"), t.dir], { uid: 65534, gid: 65534, cwd: t.dir, encoding: "utf8" });
  if (r.error) return; // not root: cannot switch user
  expect({ status: r.status, signal: r.signal, stderr: r.stderr }).toEqual({ status: 0, signal: null, stderr: "" });
  const out = JSON.parse(r.stdout) as { lines: string[]; errors: string[] };
  expect(out.lines).toEqual(["f1", "l1"]);
  expect(out.errors.filter((e) => e.includes(locked)).length).toBe(1);
}, 10000);

test("spooldir trackingPolicy tracker_dir: a new file under a completed file's name gets an error naming it (it was ignored silently, its lines never delivered)", async () => {
  const t = tempDir("flume-review-spool-tracker-");
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
  expect((await drainMemory(channel)).map((e) => new TextDecoder().decode(e.body))).toEqual(["old1", "y1"]);
  expect(ctx.logger.lines.some((l) => l.level === "error" && l.message.includes("re-used") && l.message.includes(file))).toBe(true);
});

test("spooldir: an empty fileSuffix is a configuration error (every file would count as completed and nothing would be read)", () => {
  const t = tempDir("flume-review-spool-suffix-");
  cleanups.push(t.cleanup);
  expect(() => build(definition, { spoolDir: t.dir, fileSuffix: "" }, context("r1"))).toThrow("fileSuffix");
});
