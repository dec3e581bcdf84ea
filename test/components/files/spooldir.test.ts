import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { definition, SpoolDirectorySource } from "../../../src/components/sources/spooldir.ts";
import type { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { bodies, build, context, drain, numbered, until, wire } from "../../support/components.ts";

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
    expect(props).toMatchObject({ fileSuffix: ".COMPLETED", deletePolicy: "never", trackingPolicy: "rename", trackerDir: ".flumespool", consumeOrder: "oldest", pollDelay: 500, batchSize: 100, "deserializer.maxLineLength": 2048, decodeErrorPolicy: "FAIL", fileHeaderKey: "file", basenameHeaderKey: "basename" });
  });
});

describe("spooldir in a child process", () => {
  for (const durable of [false, true]) {
    test(`SIGKILL in the middle of files, then restart: nothing lost${durable ? "; with a durable channel nothing repeated either" : ""}`, async () => {
      const { spawn } = await import("node:child_process");
      const s = setup({ batchSize: "25" });
      const output = path.join(s.dir, "delivered.txt");
      writeFileSync(output, "");
      const children: import("node:child_process").ChildProcess[] = [];
      cleanups.push(() => {
        for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
      });
      const runner = path.join(import.meta.dir, "spooldir-runner.ts");
      const start = async () => {
        const child = spawn(process.execPath, [runner, JSON.stringify(s.raw), output, durable ? "1" : "0"], { stdio: ["pipe", "pipe", "inherit"] });
        children.push(child);
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        await until(() => out.includes("READY"), "runner start");
        return { child, exited: new Promise<void>((r) => child.on("exit", () => r())), out: () => out };
      };
      const delivered = () => (existsSync(output) ? readFileSync(output, "utf8").split("\n").filter((l) => l !== "" && !l.startsWith("#POS ")) : []);
      const expected: string[] = [];
      for (let f = 0; f < 4; f++) {
        const text = numbered(`F${f}`, 0, 4000);
        writeFileSync(path.join(s.spool, `f${f}.log`), text);
        utimesSync(path.join(s.spool, `f${f}.log`), new Date(), new Date(1_000_000 + f * 1000));
        expected.push(...text.trim().split("\n"));
      }
      for (let kill = 0; kill < 4; kill++) {
        const r = await start();
        const before = delivered().length;
        await until(() => delivered().length >= before + 1500, "progress");
        r.child.kill("SIGKILL");
        await r.exited;
      }
      const r = await start();
      await until(() => ls(s.spool).filter((n) => n.endsWith(".COMPLETED")).length === 4, "all files completed", 15000);
      r.child.kill("SIGTERM");
      await r.exited;
      const lines = delivered();
      const unique = new Set(lines);
      expect(expected.filter((l) => !unique.has(l))).toEqual([]);
      if (durable) expect(lines.length).toBe(expected.length);
      expect(r.out()).toContain("STOPPED");
    }, 30000);
  }
});
