import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { definition, RollingFileSink } from "../../../src/components/sinks/file-roll.ts";
import { createEvent } from "../../../src/core/event.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { build, context } from "../../support/components.ts";

const cleanups = cleanupsAfterEach();

async function put(channel: MemoryChannel, bodies: string[]): Promise<void> {
  const tx = channel.getTransaction();
  tx.begin();
  for (const b of bodies) tx.put(createEvent(b, {}));
  await tx.commit();
  tx.close();
}

test("file_roll: the directory removed while a file is open: later batches go to a new file in the recreated directory, none into the deleted file", async () => {
  const t = tempDir("flume-review-fileroll-");
  cleanups.push(t.cleanup);
  const dir = path.join(t.dir, "out");
  const sink = build(definition, { "sink.directory": dir, "sink.rollInterval": "0" }, context("k1")) as RollingFileSink;
  const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 100 });
  channel.start();
  sink.setChannel(channel);
  await sink.start();
  await put(channel, ["a", "b"]);
  await sink.process();
  rmSync(dir, { recursive: true });

  await put(channel, ["c", "d"]);
  // The sink may fail a batch (it goes back to the channel) but must recover on its own.
  for (let i = 0; i < 3 && channel.size > 0; i++) await sink.process().catch(() => "error");
  await sink.stop();
  expect(channel.size).toBe(0);
  const written = readdirSync(dir).map((n) => readFileSync(path.join(dir, n), "utf8"));
  expect(written.join("")).toBe("c\nd\n");
});

/** A real full disk: a small tmpfs (mounting needs root; elsewhere the test is skipped). */
function smallDisk(): string | null {
  const t = tempDir("flume-review-fileroll-full-");
  const mnt = path.join(t.dir, "disk");
  mkdirSync(mnt);
  if (process.platform !== "linux" || spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt]).status !== 0) {
    t.cleanup();
    return null;
  }
  cleanups.push(() => {
    spawnSync("umount", ["-l", mnt]);
    t.cleanup();
  });
  return mnt;
}

test("file_roll: a batch that hits a full disk leaves no part of itself in the file; it is written once, whole, when space returns", async () => {
  const mnt = smallDisk();
  if (!mnt) return;
  const dir = path.join(mnt, "out");
  const sink = build(definition, { "sink.directory": dir, "sink.rollInterval": "0", "sink.batchSize": "1000" }, context("k1")) as RollingFileSink;
  const channel = new MemoryChannel("c1", { capacity: 10000, transactionCapacity: 1000 });
  channel.start();
  sink.setChannel(channel);
  await sink.start();
  await put(channel, ["first"]);
  await sink.process();
  const filler = path.join(mnt, "filler");
  writeFileSync(filler, Buffer.alloc(1024 * 1024 - 64 * 1024));
  const lines = Array.from({ length: 1000 }, (_, i) => `line-${i}`.padEnd(199, "x"));
  await put(channel, lines);
  await expect(sink.process()).rejects.toThrow("ENOSPC");
  expect(channel.size).toBe(1000);
  rmSync(filler);
  await sink.process();
  await sink.stop();
  const all = readdirSync(dir)
    .sort()
    .map((n) => readFileSync(path.join(dir, n), "utf8"))
    .join("");
  expect(all).toBe(`first\n${lines.join("\n")}\n`);
});

test("file_roll: two sinks on one directory started in the same millisecond (or a restart within the same second with ROLLTIME) never write into each other's file", async () => {
  const t = tempDir("flume-review-fileroll-names-");
  cleanups.push(t.cleanup);
  const clock = new VirtualClock(1_700_000_000_000);
  const make = (name: string, extra: Record<string, string> = {}) => {
    const ctx = context(name);
    ctx.clock = clock;
    const sink = build(definition, { "sink.directory": t.dir, "sink.rollInterval": "0", ...extra }, ctx) as RollingFileSink;
    const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 100 });
    channel.start();
    sink.setChannel(channel);
    return { sink, channel };
  };
  const a = make("k1");
  const b = make("k2");
  await a.sink.start();
  await b.sink.start();
  await put(a.channel, ["from-a-1", "from-a-2"]);
  await put(b.channel, ["b"]);
  await a.sink.process();
  await b.sink.process();
  await a.sink.stop();
  await b.sink.stop();

  for (const run of ["r1", "r2"]) {
    const r = make("k3", { "sink.pathManager": "ROLLTIME" });
    await r.sink.start();
    await put(r.channel, [run]);
    await r.sink.process();
    await r.sink.stop();
  }
  const all = readdirSync(t.dir)
    .flatMap((n) => readFileSync(path.join(t.dir, n), "utf8").split("\n"))
    .filter((l) => l !== "")
    .sort();
  expect(all).toEqual(["b", "from-a-1", "from-a-2", "r1", "r2"]);
});
