import { describe, expect, test } from "bun:test";
import { appendFileSync, copyFileSync, readFileSync, renameSync, statSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { definition, TaildirSource } from "../../../src/components/sources/taildir.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { bodies, build, context, drain, numbered, until, wire } from "../../support/components.ts";

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

/** Calls process() until the source has nothing more to read right now. */
async function pump(src: TaildirSource): Promise<void> {
  for (let i = 0; i < 10000; i++) if ((await src.process()) === "BACKOFF") return;
}

describe("TAILDIR", () => {
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

  test("positions advance only after the commit: a full channel makes the batch wait, nothing is lost", async () => {
    const s = setup({ batchSize: "10" });
    const file = path.join(s.logs, "app.log");
    writeFileSync(file, numbered("x", 0, 100));
    const ctx = context("r1");
    const src = build(definition, s.raw, ctx);
    const channel = wire(src, { capacity: 25, transactionCapacity: 10, keepAlive: 0 });
    await src.start();
    const got: string[] = [];
    for (let round = 0; round < 100 && got.length < 100; round++) {
      await src.process();
      got.push(...bodies(await drain(channel, 15, 10)));
    }
    expect(got).toEqual(numbered("x", 0, 100).trim().split("\n"));
    expect(src.counter.get("ChannelWriteFail")).toBeGreaterThan(0);
    expect(src.counter.get("EventAcceptedCount")).toBe(100);
    await src.stop();
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
});

describe("TAILDIR in a child process", () => {
  for (const [first, durable] of [["rename", false], ["copytruncate", false], ["rename", true], ["copytruncate", true]] as const) test(`SIGKILL during writes and rotations (${first} first), then restart: no line lost${durable ? "; with a durable channel none repeated" : ""}`, async () => {
    const { spawn } = await import("node:child_process");
    const s = setup({ "filegroups.g1": "" });
    s.raw["filegroups.g1"] = `${s.logs}/app\\.log`;
    const output = path.join(s.dir, "delivered.txt");
    writeFileSync(output, "");
    const runner = path.join(import.meta.dir, "taildir-runner.ts");
    const children: import("node:child_process").ChildProcess[] = [];
    cleanups.push(() => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    });
    const startRunner = async () => {
      const child = spawn(process.execPath, [runner, JSON.stringify({ ...s.raw, batchSize: "50" }), output, durable ? "durable" : "memory"], { stdio: ["pipe", "pipe", "inherit"] });
      children.push(child);
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      await until(() => out.includes("READY"), "runner start");
      const exited = new Promise<void>((r) => child.on("exit", () => r()));
      return { child, exited, output: () => out };
    };
    const file = path.join(s.logs, "app.log");
    let n = 0;
    const write = (k: number) => {
      appendFileSync(file, numbered("K", n, n + k));
      n += k;
    };
    const delivered = () => {
      try {
        return readFileSync(output, "utf8").split("\n").filter((l) => l !== "" && !l.startsWith("#POS "));
      } catch {
        return [];
      }
    };
    for (let round = 0; round < 4; round++) {
      const r = await startRunner();
      write(500);
      await until(() => delivered().length >= n - 300, "some lines delivered");
      write(700); // the kill lands while these are being read
      r.child.kill("SIGKILL");
      await r.exited;
      write(50);
      if (round % 2 === (first === "rename" ? 0 : 1)) renameSync(file, `${file}.${round}`);
      else {
        copyFileSync(file, `${file}.${round}`);
        truncateSync(file, 0);
      }
      write(60);
    }
    const r = await startRunner();
    write(10);
    await until(() => new Set(delivered()).size >= n, "every line delivered", 15000);
    r.child.kill("SIGTERM");
    await r.exited;
    const lines = delivered();
    const unique = new Set(lines);
    if (process.env.DEBUG_TAILDIR) console.log(`delivered ${lines.length} lines, ${lines.length - unique.size} repeated, of ${n}`);
    const missing = numbered("K", 0, n).trim().split("\n").filter((l) => !unique.has(l));
    expect(missing).toEqual([]);
    expect(unique.size).toBe(n);
    if (durable) expect(lines.length).toBe(n);
    expect(r.output()).toContain("STOPPED");
  }, 30000);
});
