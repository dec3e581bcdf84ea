// Two agents on one data directory: the second refuses to start as a whole, naming the first.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
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
