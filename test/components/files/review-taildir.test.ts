import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { FileChannel } from "../../../src/components/channels/file/index.ts";
import { definition, TaildirSource } from "../../../src/components/sources/taildir.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import type { Channel } from "../../../src/core/channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { drain, options } from "../../support/file-channel.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { build, context, drain as drainMemory, recordBatchBytes, wire as wireMemory } from "../../support/components.ts";

const cleanups = cleanupsAfterEach();

async function pump(src: TaildirSource): Promise<void> {
  for (let i = 0; i < 1000; i++) if ((await src.process()) === "BACKOFF") return;
}

test("TAILDIR with a file channel: a deleted file's position is dropped from the channel too, so a new file that reuses its inode is read from its start after a restart", async () => {
  const t = tempDir("flume-review-taildir-");
  cleanups.push(t.cleanup);
  // The logs on a small ext4 of their own (it hands a freed inode to the next new file), so
  // the channel's and position files do not take the inode first. Needs root (mount).
  const img = path.join(t.dir, "logs.img");
  const logs = path.join(t.dir, "logs");
  mkdirSync(logs);
  writeFileSync(img, "");
  truncateSync(img, 16 * 1024 * 1024);
  const mounted = spawnSync("mkfs.ext4", ["-q", img]).status === 0 && spawnSync("mount", ["-o", "loop", img, logs]).status === 0;
  if (!mounted) return;
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
  expect(await drain(first.channel)).toEqual(["a1", "a2"]);
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
  expect(await drain(second.channel)).toEqual(["b1", "b2", "b3"]);
  await second.src.stop();
  await second.channel.stop();
});

test("TAILDIR: a matched file it may not read gets an error naming it, and the other files are still read", () => {
  const t = tempDir("flume-review-taildir-perm-");
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
  const r = spawnSync(process.execPath, [path.join(import.meta.dir, "review-taildir-runner.ts"), t.dir], { uid: 65534, gid: 65534, cwd: t.dir, encoding: "utf8" });
  if (r.error || (r.status !== 0 && /EPERM|setuid|setgid/i.test(r.stderr ?? ""))) return; // not root: cannot switch user
  expect(r.status).toBe(0);
  const out = JSON.parse(r.stdout) as { lines: string[]; errors: string[] };
  expect(out.lines.sort()).toEqual(["a1", "c1"]);
  expect(out.errors.some((e) => e.includes(b))).toBe(true);
});

test("TAILDIR: a second source on the same positionFile (both left at the default, say) is refused at start with an error naming the first", async () => {
  const t = tempDir("flume-review-taildir-pos-");
  cleanups.push(t.cleanup);
  const logs = path.join(t.dir, "logs");
  mkdirSync(logs);
  const raw = { filegroups: "g1", "filegroups.g1": `${logs}/a\\.log`, positionFile: path.join(t.dir, "pos.json") };
  const first = build(definition, raw, context("r1")) as TaildirSource;
  wireMemory(first);
  const second = build(definition, { ...raw, "filegroups.g1": `${logs}/b\\.log` }, context("r2")) as TaildirSource;
  wireMemory(second);
  await first.start();
  // Each would overwrite the other's positions: after a restart one re-reads (or with skipToEnd skips) its files.
  await expect(second.start()).rejects.toThrow(/positionFile.*r1/);
  await first.stop();
  // Once the first source stopped, the file is free again.
  await second.start();
  await second.stop();
});

test("TAILDIR: a batch holds at most about maxLineLength bytes (twice at worst), and the rest of the file follows without a backoff", async () => {
  const t = tempDir("flume-review-taildir-bytes-");
  cleanups.push(t.cleanup);
  const logs = path.join(t.dir, "logs");
  mkdirSync(logs);
  const line = "y".repeat(900);
  writeFileSync(path.join(logs, "a.log"), `${line}\n`.repeat(40));
  const src = build(definition, { filegroups: "g1", "filegroups.g1": `${logs}/a\\.log`, positionFile: path.join(t.dir, "pos.json"), maxLineLength: "1000", batchSize: "100" }, context("r1")) as TaildirSource;
  const channel = wireMemory(src);
  const batchBytes = recordBatchBytes(src);
  await src.start();
  await src.process(); // one poll reads everything there is
  const got = (await drainMemory(channel)).map((e) => new TextDecoder().decode(e.body));
  await src.stop();
  expect(got).toEqual(Array.from({ length: 40 }, () => line));
  expect(Math.max(...batchBytes)).toBeLessThanOrEqual(2000);
});
