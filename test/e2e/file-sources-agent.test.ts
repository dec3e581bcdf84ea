import { describe, expect, test } from "bun:test";
import { appendFileSync, copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, startCli, tempDir } from "../support/helpers.ts";
import { numbered, until } from "../support/components.ts";

const cleanups = cleanupsAfterEach();

const readAll = (dir: string) =>
  readdirSync(dir)
    .sort()
    .map((n) => readFileSync(path.join(dir, n), "utf8"))
    .join("")
    .split("\n")
    .filter((l) => l !== "");

describe("flume run with file components", () => {
  test("TAILDIR and spooldir -> memory -> file_roll; a restart delivers the rest exactly once", async () => {
    const t = tempDir("flume-files-agent-");
    cleanups.push(t.cleanup);
    const logs = path.join(t.dir, "logs");
    const spool = path.join(t.dir, "spool");
    const out = path.join(t.dir, "out");
    for (const d of [logs, spool, out]) mkdirSync(d);
    const conf = path.join(t.dir, "flume.conf");
    writeFileSync(
      conf,
      [
        "a1.sources = r1 r2",
        "a1.channels = c1",
        "a1.sinks = k1",
        "a1.sources.r1.type = TAILDIR",
        "a1.sources.r1.filegroups = f1",
        `a1.sources.r1.filegroups.f1 = ${logs}/.*\\.log`,
        `a1.sources.r1.positionFile = ${t.dir}/taildir_position.json`,
        "a1.sources.r1.backoffSleepIncrement = 20",
        "a1.sources.r1.maxBackoffSleep = 100",
        "a1.sources.r1.channels = c1",
        "a1.sources.r2.type = spooldir",
        `a1.sources.r2.spoolDir = ${spool}`,
        "a1.sources.r2.pollDelay = 50",
        "a1.sources.r2.channels = c1",
        "a1.channels.c1.type = memory",
        "a1.channels.c1.capacity = 10000",
        "a1.channels.c1.transactionCapacity = 1000",
        "a1.sinks.k1.type = file_roll",
        `a1.sinks.k1.sink.directory = ${out}`,
        "a1.sinks.k1.sink.rollInterval = 0",
        "a1.sinks.k1.channel = c1",
        "",
      ].join("\n"),
    );
    const run = () => {
      const agent = startCli(["run", "-f", conf, "-n", "a1", "--no-reload-conf", "-q"]);
      cleanups.push(() => agent.child.kill("SIGKILL"));
      return agent;
    };
    appendFileSync(path.join(logs, "app.log"), numbered("T", 0, 300));
    writeFileSync(path.join(spool, "batch1.txt"), numbered("S", 0, 200));
    let agent = run();
    await until(() => readAll(out).length >= 500, "first lines in file_roll output", 15000);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
    appendFileSync(path.join(logs, "app.log"), numbered("T", 300, 400));
    writeFileSync(path.join(spool, "batch2.txt"), numbered("S", 200, 250));
    agent = run();
    await until(() => readAll(out).length >= 650, "the rest after the restart", 15000);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
    const lines = readAll(out);
    expect(lines.filter((l) => l.startsWith("T-"))).toEqual(numbered("T", 0, 400).trim().split("\n"));
    expect(lines.filter((l) => l.startsWith("S-"))).toEqual(numbered("S", 0, 250).trim().split("\n"));
    expect(readdirSync(spool).sort()).toEqual([".flumespool", "batch1.txt.COMPLETED", "batch2.txt.COMPLETED"]);
  }, 90_000);

  test("TAILDIR -> file channel -> file_roll: SIGKILL of the agent during writes and rotations loses no line", async () => {
    const t = tempDir("flume-files-agent-kill-");
    cleanups.push(t.cleanup);
    const logs = path.join(t.dir, "logs");
    const out = path.join(t.dir, "out");
    for (const d of [logs, out]) mkdirSync(d);
    const conf = path.join(t.dir, "flume.conf");
    writeFileSync(
      conf,
      [
        "a1.sources = r1",
        "a1.channels = c1",
        "a1.sinks = k1",
        "a1.sources.r1.type = TAILDIR",
        "a1.sources.r1.filegroups = f1",
        `a1.sources.r1.filegroups.f1 = ${logs}/app\\.log`,
        `a1.sources.r1.positionFile = ${t.dir}/taildir_position.json`,
        "a1.sources.r1.batchSize = 50",
        "a1.sources.r1.backoffSleepIncrement = 20",
        "a1.sources.r1.maxBackoffSleep = 100",
        "a1.sources.r1.channels = c1",
        "a1.channels.c1.type = file",
        `a1.channels.c1.checkpointDir = ${t.dir}/checkpoint`,
        `a1.channels.c1.dataDirs = ${t.dir}/data`,
        "a1.channels.c1.minimumRequiredSpace = 1048576",
        "a1.sinks.k1.type = file_roll",
        `a1.sinks.k1.sink.directory = ${out}`,
        "a1.sinks.k1.sink.rollInterval = 0",
        "a1.sinks.k1.channel = c1",
        "",
      ].join("\n"),
    );
    const file = path.join(logs, "app.log");
    let n = 0;
    const write = (k: number) => {
      appendFileSync(file, numbered("Z", n, n + k));
      n += k;
    };
    for (let round = 0; round < 3; round++) {
      const agent = startCli(["run", "-f", conf, "-n", "a1", "--no-reload-conf", "-q"]);
      cleanups.push(() => agent.child.kill("SIGKILL"));
      write(400);
      const before = n;
      await until(() => new Set(readAll(out)).size >= before - 200, "progress", 15000);
      write(300);
      agent.child.kill("SIGKILL");
      await agent.exited();
      write(20);
      if (round % 2 === 0) renameSync(file, `${file}.${round}`);
      else {
        copyFileSync(file, `${file}.${round}`);
        truncateSync(file, 0);
      }
      write(30);
    }
    const agent = startCli(["run", "-f", conf, "-n", "a1", "--no-reload-conf", "-q"]);
    cleanups.push(() => agent.child.kill("SIGKILL"));
    await until(() => new Set(readAll(out)).size >= n, "every line", 20000);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
    const unique = new Set(readAll(out));
    expect(numbered("Z", 0, n).trim().split("\n").filter((l) => !unique.has(l))).toEqual([]);
  }, 60000);
});
