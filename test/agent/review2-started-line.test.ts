import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { cleanupsAfterEach, listenLocal, startAgentCli, tempDir } from "../support/helpers.ts";

const cleanups = cleanupsAfterEach();

describe("flume run: the started line", () => {
  test("a source whose start failed (port in use) is listed as retrying, not among the started sources", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const blocker = net.createServer();
    const taken = await listenLocal(blocker);
    cleanups.push(() => blocker.close());
    const conf = path.join(dir, "a.conf");
    writeFileSync(
      conf,
      `a1.sources = r1 r2
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 1
a1.sources.r1.channels = c1
a1.sources.r2.type = netcat
a1.sources.r2.bind = 127.0.0.1
a1.sources.r2.port = ${taken}
a1.sources.r2.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
`,
    );
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--no-reload-conf", "--drain-timeout", "200"]);
    const out = agent.stdout + agent.stderr;
    const line = out.split("\n").find((l) => l.includes("agent a1 started"))!;
    expect(line).toContain("sources [r1]");
    expect(line).toMatch(/not started yet, retrying: r2 \(.*EADDRINUSE/);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});
