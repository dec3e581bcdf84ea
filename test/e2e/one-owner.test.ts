// Two agents on one data directory: the second refuses to start as a whole, naming the first.
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, fileChannelLines, freePort, runCli, startAgentCli, tempDir } from "../support/helpers.ts";
import { seqConf } from "../support/agent.ts";

const cleanups = cleanupsAfterEach();

describe("one owner per data directory", () => {
  test("a second agent on the first one's file channel directories starts nothing and exits 1 naming the first", async () => {
    const t = tempDir("flume-owner-");
    cleanups.push(t.cleanup);
    const conf = path.join(t.dir, "agent.conf");
    writeFileSync(conf, seqConf(0, { channel: `${fileChannelLines(t.dir)}\na1.channels.c1.minimumRequiredSpace = 1048576` }));
    const first = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--metrics-port", String(await freePort()), "--metrics-bind", "127.0.0.1"]);
    const second = runCli(["run", "-f", conf, "--quiet"], { timeout: 15_000 });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`agent a1 not started: directory ${path.join(t.dir, "ckpt")} of channel c1 is in use by process ${first.child.pid}`);
    expect(second.stderr).not.toMatch(/agent a1 started/);
    first.child.kill("SIGTERM");
    expect(await first.exited()).toBe(0);
  });
});

/** Agent a1: source r1 (its lines) -> memory c1 -> null k1. */
function sourceConf(source: string): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
${source}
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
`;
}

describe("one owner per TAILDIR position file and spooldir tracker directory", () => {
  const cases = [
    {
      what: "TAILDIR position file",
      conf: (dir: string) =>
        sourceConf(`a1.sources.r1.type = TAILDIR
a1.sources.r1.filegroups = g1
a1.sources.r1.filegroups.g1 = ${path.join(dir, "logs")}/.*\\.log
a1.sources.r1.positionFile = ${path.join(dir, "pos", "taildir_position.json")}`),
      held: (dir: string) => `positionFile ${path.join(dir, "pos", "taildir_position.json")} of source r1 is in use by process`,
    },
    {
      what: "spooldir tracker directory",
      conf: (dir: string) =>
        sourceConf(`a1.sources.r1.type = spooldir
a1.sources.r1.spoolDir = ${path.join(dir, "logs")}`),
      held: (dir: string) => `tracker directory ${path.join(dir, "logs", ".flumespool")} of source r1 is in use by process`,
    },
  ];
  for (const c of cases) {
    test(`a second agent on the first one's ${c.what} starts nothing and exits 1 naming the first; once the first stopped it starts`, async () => {
      const t = tempDir("flume-owner-src-");
      cleanups.push(t.cleanup);
      mkdirSync(path.join(t.dir, "logs"));
      writeFileSync(path.join(t.dir, "logs", "a.log"), "a1\n");
      const conf = path.join(t.dir, "agent.conf");
      writeFileSync(conf, c.conf(t.dir));
      const first = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet"]);
      const second = runCli(["run", "-f", conf, "--quiet"], { timeout: 15_000 });
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`agent a1 not started: ${c.held(t.dir)} ${first.child.pid} (flume-ts`);
      expect(second.stderr).not.toMatch(/agent a1 started/);
      first.child.kill("SIGTERM");
      expect(await first.exited()).toBe(0);
      // The lock goes with the agent: the same configuration starts now.
      const third = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet"]);
      third.child.kill("SIGTERM");
      expect(await third.exited()).toBe(0);
    });
  }

  test("an agent SIGKILLed leaves its lock behind; the next agent takes it over (the holder is dead)", async () => {
    const t = tempDir("flume-owner-src-");
    cleanups.push(t.cleanup);
    mkdirSync(path.join(t.dir, "logs"));
    const conf = path.join(t.dir, "agent.conf");
    writeFileSync(conf, cases[0].conf(t.dir));
    const first = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet"]);
    first.child.kill("SIGKILL");
    await first.exited();
    const second = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet"]);
    expect(second.stderr + second.stdout).toContain(`took over ${path.join(t.dir, "pos", "taildir_position.json.lock")} from process ${first.child.pid}`);
    second.child.kill("SIGTERM");
    expect(await second.exited()).toBe(0);
  });
});
