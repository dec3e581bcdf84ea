import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { canConnect, cleanupsAfterEach, freePort, netcatConf, sleep, startAgentCli, tempDir } from "../support/helpers.ts";

const cleanups = cleanupsAfterEach();

describe("flume run --lenient and reload", () => {
  test("a reload under --lenient drops the broken components again instead of refusing every change", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const [port, port2] = [await freePort(), await freePort()];
    const conf = path.join(dir, "lenient.conf");
    // k2 is broken from the start: --lenient drops it and runs the rest.
    const base = netcatConf(port).replace("a1.sinks = k1", "a1.sinks = k1 k2") + "a1.sinks.k2.type = nosuchsink\na1.sinks.k2.channel = c1\n";
    writeFileSync(conf, base);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--lenient", "--poll-interval", "0.2", "--quiet"]);
    await sleep(50);
    // The operator adds a source; k2 is still broken.
    writeFileSync(conf, base.replace("a1.sources = r1", "a1.sources = r1 r2") + `a1.sources.r2.type = netcat\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\n`);
    await agent.waitFor(/reloaded|keeping the running configuration/);
    expect(agent.stderr).toMatch(/reloaded/);
    expect(await canConnect(port2)).toBe(true);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });

  test("a reload reports the new file's warnings (an unknown property, with its line), not only its errors", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const conf = path.join(dir, "warn.conf");
    const base = netcatConf(port);
    writeFileSync(conf, base);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--poll-interval", "0.2", "--quiet"]);
    await sleep(50);
    writeFileSync(conf, base + "a1.channels.c1.capacty = 500\n");
    await agent.waitFor(/reloaded/);
    expect(agent.stderr).toContain(`${conf}:11`);
    expect(agent.stderr).toContain("capacty");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});
