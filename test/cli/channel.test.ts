import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, fileChannelLines, freePort, netcatConf, runCli, startAgentCli, tempDir, waitUntil } from "../support/helpers.ts";

const tmp = tempDir("flume-cli-channel-");
afterAll(() => tmp.cleanup());

describe("flume channel inspect: clear messages and exit codes", () => {
  test("unknown option exits 2", () => {
    const r = runCli(["channel", "inspect", tmp.dir, "--bogus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('flume channel inspect: unknown option "--bogus"');
  });

  test("no directory given exits 2 with a message naming what is missing", () => {
    const r = runCli(["channel", "inspect"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("flume channel inspect: missing the data directory");
    const e = runCli(["channel", "inspect", ""]);
    expect(e.code).toBe(2);
    expect(e.stderr).toContain("missing the data directory");
  });

  test("a file given as the data directory is a clear error, not a stack trace", () => {
    const file = path.join(tmp.dir, "not-a-dir.txt");
    writeFileSync(file, "x");
    const r = runCli(["channel", "inspect", file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`flume channel inspect: not a directory: ${file}`);
    expect(r.stderr).not.toContain("ENOTDIR");
  });

  test("a missing --checkpointDir is reported, not silently used", () => {
    const missing = path.join(tmp.dir, "no-checkpoint");
    const r = runCli(["channel", "inspect", tmp.dir, "--checkpointDir", missing]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`no such directory: ${missing}`);
  });

  test("an empty directory is reported as holding no data, exit 0", () => {
    const empty = path.join(tmp.dir, "empty");
    mkdirSync(empty);
    const r = runCli(["channel", "inspect", empty]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("no data files");
  });
});

describe("flume channel inspect: the lock holder and what is not a data directory", () => {
  const cleanups = cleanupsAfterEach();

  /** A file channel agent (an idle netcat source, so nothing changes while it is inspected). */
  async function fileChannelAgent(dir: string) {
    const conf = path.join(dir, "a.conf");
    writeFileSync(conf, netcatConf(await freePort(), { channel: fileChannelLines(dir) }));
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "-n", "a1"]);
    return { conf, agent };
  }

  test("a live agent is named as the holder; after kill -9 the lock is called stale, as the next run (which takes it over) sees it", async () => {
    const t = tempDir("flume-cli-inspect-lock-");
    cleanups.push(t.cleanup);
    const { conf, agent } = await fileChannelAgent(t.dir);
    const pid = agent.child.pid ?? -1;
    const data = path.join(t.dir, "data");
    const args = ["channel", "inspect", data, "--checkpointDir", path.join(t.dir, "ckpt")];
    const live = runCli(args);
    expect(live.code).toBe(0);
    expect(live.stdout).toContain(`lock: ${path.join(data, "in_use.lock")} held by process ${pid}`);
    expect(live.stdout).toContain("which is running");

    agent.child.kill("SIGKILL");
    await agent.exited();
    const dead = runCli(args);
    expect(dead.code).toBe(0);
    expect(dead.stdout).not.toContain(`held by process ${pid}`);
    expect(dead.stdout).toContain(`lock: ${path.join(data, "in_use.lock")} left by process ${pid}`);
    expect(dead.stdout).toContain("no longer running (stale: the next start takes it over)");

    const again = await startAgentCli(cleanups, ["run", "-f", conf, "-n", "a1"]);
    await again.waitFor(new RegExp(`took over ${path.join(data, "in_use.lock").replace(/[.\\/]/g, "\\$&")} from process ${pid}, which is no longer running`));
    expect(runCli(args).stdout).toContain(`held by process ${again.child.pid}`);
  }, 120_000);

  test("pointed at the checkpoint directory it says so and exits 1 (not 'status: OK')", async () => {
    const t = tempDir("flume-cli-inspect-ckpt-");
    cleanups.push(t.cleanup);
    const { agent } = await fileChannelAgent(t.dir);
    const ckpt = path.join(t.dir, "ckpt");
    await waitUntil(() => existsSync(path.join(ckpt, "checkpoint")), "the first checkpoint", 30_000);
    agent.child.kill("SIGTERM");
    await agent.exited();
    const r = runCli(["channel", "inspect", ckpt]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`flume channel inspect: ${ckpt} is a checkpoint directory (it holds checkpoint), not a data directory`);
    expect(r.stdout).not.toContain("status: OK");
  }, 120_000);

  test("a directory holding other files is not a data directory: exit 1 naming what it holds", () => {
    const t = tempDir("flume-cli-inspect-other-");
    cleanups.push(t.cleanup);
    writeFileSync(path.join(t.dir, "notes.txt"), "x");
    const r = runCli(["channel", "inspect", t.dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${t.dir} is not a file channel data directory: it holds no data files (log-<id>) but notes.txt`);
  });
});
