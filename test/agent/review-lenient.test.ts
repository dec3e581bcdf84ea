import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { freePort, sleep, startCli, tempDir } from "../helpers.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()?.();
});

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

describe("flume run --lenient and reload", () => {
  test("a reload under --lenient drops the broken components again instead of refusing every change", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const [port, port2] = [await freePort(), await freePort()];
    const conf = path.join(dir, "lenient.conf");
    // k2 is broken from the start: --lenient drops it and runs the rest.
    const base = `a1.sources = r1
a1.channels = c1
a1.sinks = k1 k2
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
a1.sinks.k2.type = nosuchsink
a1.sinks.k2.channel = c1
`;
    writeFileSync(conf, base);
    const agent = startCli(["run", "-f", conf, "--lenient", "--poll-interval", "0.2", "--quiet"]);
    cleanups.push(() => agent.child.kill("SIGKILL"));
    await agent.waitFor(/agent a1 started/);
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
    const base = `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
`;
    writeFileSync(conf, base);
    const agent = startCli(["run", "-f", conf, "--poll-interval", "0.2", "--quiet"]);
    cleanups.push(() => agent.child.kill("SIGKILL"));
    await agent.waitFor(/agent a1 started/);
    await sleep(50);
    writeFileSync(conf, base + "a1.channels.c1.capacty = 500\n");
    await agent.waitFor(/reloaded/);
    expect(agent.stderr).toContain(`${conf}:11`);
    expect(agent.stderr).toContain("capacty");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});
