// `flume run` hands memory back to the system right after the start and once no event has moved
// for --release-memory seconds after a burst (src/agent/idle-release.ts,
// src/agent/process-memory.ts): a child process of the CLI, real sockets. After the releases
// (the start's code pages unmapped; then a full collection, compiled code dropped, the binary's
// code pages paged out) the agent must go on accepting and delivering events as before.
import { describe, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, freePort, netcatConf, sendLines, startAgentCli, tempDir } from "../support/helpers.ts";
import { needsProc } from "../support/requires.ts";

const cleanups = cleanupsAfterEach();

describe("flume run --release-memory", () => {
  needsProc.test("an agent returns memory to the system at its start and when quiet, then delivers the lines that arrive after it as before", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const port = await freePort();
    const file = path.join(tmp.dir, "a1.conf");
    writeFileSync(file, netcatConf(port, { sink: "logger" }));
    const agent = await startAgentCli(cleanups, ["run", "-f", file, "-n", "a1", "--release-memory", "1", "--log-level", "debug", "--quiet", "--no-reload-conf"]);
    await agent.waitFor(/started: returned unused memory to the system in \d+ ms, RSS [\d.]+ -> [\d.]+ MB \(code pages of the binary unmapped, kept in the page cache\)/);
    await agent.waitFor(/no events for 1 s: returned unused memory to the system in \d+ ms, RSS [\d.]+ -> [\d.]+ MB \(code pages of the binary paged out\)/);
    // The logger sink shows a body's first 16 bytes.
    // Its code comes back from the binary at the first event: on a busy disk that can take a
    // while, and this test is about the answer, not its speed.
    const answer = await sendLines(port, "late line 1\nlate line 2\n", 2000, 2);
    expect(answer).toBe("OK\nOK\n");
    await agent.waitFor(/late line 2/);
    expect(agent.stderr + agent.stdout).toContain("late line 1");
  }, 90_000);

  needsProc.test("--release-memory 0 never releases", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const port = await freePort();
    const file = path.join(tmp.dir, "a1.conf");
    writeFileSync(file, netcatConf(port));
    const agent = await startAgentCli(cleanups, ["run", "-f", file, "-n", "a1", "--release-memory", "0", "--log-level", "debug", "--quiet", "--no-reload-conf"]);
    await Bun.sleep(2500);
    expect(agent.stderr + agent.stdout).not.toContain("returned unused memory");
  }, 90_000);
});
