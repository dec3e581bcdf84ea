import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { parseRunArgs, runAgent } from "../../src/cli/run.ts";
import { canConnect, cleanupsAfterEach, fileChannelLines, freePort, netcatConf, sleep, tempDir } from "../support/helpers.ts";

const cleanups = cleanupsAfterEach();

describe("flume run: signals and reload timing", () => {
  test("a SIGTERM that arrives while the agent is starting stops it gracefully (exit 0, port closed)", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const file = path.join(dir, "a.conf");
    writeFileSync(
      file,
      netcatConf(port, { channel: fileChannelLines(dir) }),
    );
    const { options } = parseRunArgs(["-f", file, "--quiet", "--no-reload-conf", "--drain-timeout", "200"]);
    const code = runAgent(options);
    // runAgent is now inside the agent's start: the signal comes during startup.
    process.emit("SIGTERM");
    // Before the fix nothing listened yet, so the signal was lost and runAgent never returned.
    const hung = new Promise<"hung">((r) => setTimeout(() => r("hung"), 4000));
    expect(await Promise.race([code, hung])).toBe(0);
    expect(await canConnect(port)).toBe(false);
    expect(process.listenerCount("SIGTERM")).toBe(0);
  });

  test("a change to the file made while the agent was starting is applied by the next poll (not taken as already loaded)", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const [port, port2] = [await freePort(), await freePort()];
    const file = path.join(dir, "a.conf");
    const base = netcatConf(port);
    writeFileSync(file, base);
    const { options } = parseRunArgs(["-f", file, "--quiet", "--poll-interval", "0.1", "--drain-timeout", "200"]);
    const code = runAgent(options);
    // runAgent is inside the agent's start now: the operator saves a new version of the file.
    writeFileSync(file, base.replace("a1.sources = r1", "a1.sources = r1 r2") + `a1.sources.r2.type = netcat\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\n`);
    let up = false;
    for (let i = 0; i < 100 && !up; i++) {
      await sleep(20);
      up = await canConnect(port2);
    }
    process.emit("SIGTERM");
    expect(await code).toBe(0);
    expect(up).toBe(true);
  });
});
