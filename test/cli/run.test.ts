import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync, statSync, utimesSync } from "node:fs";
import path from "node:path";
import net from "node:net";
import { parseRunArgs, runAgent } from "../../src/cli/run.ts";
import type { ComponentDefinition } from "../../src/components/component.ts";
import * as registry from "../../src/components/registry.ts";
import { seqConf } from "../support/agent.ts";
import { copyFixture, fingerprint } from "../support/flume-file-channel.ts";
import { CLI, cleanupsAfterEach, freePort, netcatConf, runCli, sendLines, sleep, startAgentCli, tempConf, tempDir, tempDirFor, canConnect, fileChannelLines, waitBound, waitUntilListening, listenLocal } from "../support/helpers.ts";

async function getJson(port: number, p: string): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: res.status, body: await res.text(), type: res.headers.get("content-type") };
}

const cleanups = cleanupsAfterEach();

function agentConf(port: number, extra = ""): string {
  return netcatConf(port, { sink: "logger" }) + extra;
}

describe("flume run", () => {
  test("netcat -> memory -> logger: lines sent over TCP are acknowledged and logged as Flume does", async () => {
    const port = await freePort();
    const { conf } = tempConf(cleanups, agentConf(port), "a.conf");
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "-n", "a1", "--quiet"]);
    const answer = await sendLines(port, "Hello world!\r\nsecond line\n");
    expect(answer).toBe("OK\nOK\n");
    await agent.waitFor(/body: 73 65 63 6F 6E 64/);
    expect(agent.stderr).toContain("Event: { headers:{} body: 48 65 6C 6C 6F 20 77 6F 72 6C 64 21 0D          Hello world!. }");
    expect(agent.stderr).toContain("Event: { headers:{} body: 73 65 63 6F 6E 64 20 6C 69 6E 65                Hello".replace("Hello", "second line"));
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
    expect(agent.stderr).toContain("agent a1 stopped");
  });

  test("a line over max-line-length gets Flume's FAILED answer; the agent keeps serving", async () => {
    const port = await freePort();
    const { conf } = tempConf(cleanups, agentConf(port, "a1.sources.r1.max-line-length = 10\n"), "a.conf");
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet"]);
    const answer = await sendLines(port, "short\nthis line is far too long\n");
    expect(answer).toBe("OK\nFAILED: Event exceeds the maximum length (10 chars, including newline)\n");
    expect(agent.stderr).toMatch(/client 127\.0\.0\.1:\d+ sent a line over max-line-length 10/);
    expect(await sendLines(port, "again\n")).toBe("OK\n");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });

  test("refuses to start on validation errors and prints file:line", () => {
    const { conf } = tempConf(cleanups, agentConf(44444).replace("type = memory", "type = memroy"), "bad.conf");
    const r = runCli(["run", "-f", conf, "-n", "a1"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${conf}:8`);
    expect(r.stderr).toContain("memory");
    expect(r.stderr).toContain("not starting");
  });

  test("--strict refuses to start on a warning (a misspelt property), naming file:line; without it the agent starts", async () => {
    const port = await freePort();
    const { conf } = tempConf(cleanups, agentConf(port, "a1.channels.c1.capcity = 10\n"), "typo.conf");
    const r = runCli(["run", "-f", conf, "--strict", "--quiet"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${conf}:11: error: channel c1: capcity: is not a property of channel type memory`);
    expect(r.stderr).toContain("1 warning(s) in");
    expect(r.stderr).toContain("not starting");
    expect(await canConnect(port)).toBe(false);
    expect(runCli(["run", "-f", conf, "--strict", "--lenient"]).code).toBe(2);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet"]);
    expect(agent.stderr).toMatch(/capcity: is not a property of channel type memory/);
    expect(await sendLines(port, "x\n")).toBe("OK\n");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });

  test("usage errors exit 2", () => {
    expect(runCli(["run"]).code).toBe(2);
    expect(runCli(["run", "-f", "x.conf", "--bogus"]).code).toBe(2);
    const port = runCli(["run", "-f", "conf/flume.conf", "--metrics-port", "70000"]);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain('flume run: --metrics-port needs a port number from 0 to 65535, got "70000"');
  });

  test("flume-ng spellings: agent, --conf, --conf-file, --name, -D, --no-reload-conf", async () => {
    const port = await freePort();
    const { conf, dir } = tempConf(cleanups, agentConf(port).replace(`port = ${port}`, "port = ${sys:nc.port}"), "ng.conf");
    const agent = await startAgentCli(cleanups, ["agent", "--conf", dir, "--conf-file", conf, "--name", "a1", `-Dnc.port=${port}`, "--no-reload-conf", "--quiet"]);
    expect(agent.stderr).toContain("ignored");
    expect(await sendLines(port, "x\n")).toBe("OK\n");
    agent.child.kill("SIGINT");
    expect(await agent.exited()).toBe(0);
  });

  test("--lenient drops a broken component as Flume does, with a warning, and runs the rest", async () => {
    const port = await freePort();
    const { conf } = tempConf(cleanups, agentConf(port).replace("a1.sinks = k1", "a1.sinks = k1 k2") + "a1.sinks.k2.type = nosuchsink\na1.sinks.k2.channel = c1\n", "lenient.conf");
    expect(runCli(["run", "-f", conf]).code).toBe(1);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--lenient", "--quiet"]);
    expect(agent.stderr).toContain("dropping sink k2");
    expect(await sendLines(port, "x\n")).toBe("OK\n");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("reload and shutdown", () => {
  test("a new component appears on reload; a broken file keeps the old agent; a memory channel keeps its events", async () => {
    const dir = tempDirFor(cleanups);
    const port = await freePort();
    const port2 = await freePort();
    const mport = await freePort();
    const conf = path.join(dir, "reload.conf");
    // No sink drains c1, so its events stay in the channel across the reload.
    const base = `a1.sources = r1
a1.channels = c1
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
`;
    writeFileSync(conf, base);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--poll-interval", "0.2", "--metrics-port", String(mport), "--metrics-bind", "127.0.0.1", "--quiet"]);
    expect(await sendLines(port, "one\ntwo\n")).toBe("OK\nOK\n");

    await sleep(50);
    writeFileSync(conf, base.replace("a1.sources = r1", "a1.sources = r1 r2") + `a1.sources.r2.type = netcat\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\na1.channels.c1.capacity = 200\n`);
    await agent.waitFor(/reloaded/);
    expect(await sendLines(port2, "three\n")).toBe("OK\n");
    const m = JSON.parse((await getJson(mport, "/metrics")).body);
    expect(m["CHANNEL.c1"].ChannelSize).toBe("3");
    expect(m["CHANNEL.c1"].ChannelCapacity).toBe("200");
    expect(agent.stderr).toMatch(/kept \[[^\]]*source r1/);

    await sleep(50);
    writeFileSync(conf, base + "a1.channels.c1.capacity = lots\n");
    await agent.waitFor(/has 1 error\(s\); keeping the running configuration/);
    expect(agent.stderr).toContain(`${conf}:8`);
    expect(await sendLines(port2, "four\n")).toBe("OK\n");
    agent.child.kill("SIGTERM");
    // No sink drained c1: its 4 events are lost with the memory channel, and the exit code says so.
    expect(await agent.exited()).toBe(3);
    expect(agent.stderr).toMatch(/4 accepted events left in memory channels were lost \(exit 3\)/);
  });

  test("SIGTERM: sources stop, sinks drain the channel before exit, nothing committed is lost", async () => {
    const dir = tempDirFor(cleanups);
    const port = await freePort();
    const out = path.join(dir, "out");
    const conf = path.join(dir, "drain.conf");
    // A slow sink (one event per transaction, logger) behind a fast source: the channel has a backlog at SIGTERM.
    writeFileSync(conf, agentConf(port));
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--drain-timeout", "10000"]);
    const lines = Array.from({ length: 300 }, (_, i) => `line-${i}`);
    const answer = await sendLines(port, lines.join("\n") + "\n", 5000, 300);
    expect(answer.split("\n").filter((l) => l === "OK").length).toBe(300);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
    const logged = agent.stderr.split("\n").filter((l) => l.includes("Event: { headers:{} body:"));
    expect(logged.length).toBe(300);
    expect(agent.stderr).not.toContain("loses them");
    void out;
  });
});

describe("flume run: signals and reload timing", () => {
  test("a SIGTERM that arrives while the agent is starting stops it gracefully (exit 0, port closed)", async () => {
    const dir = tempDirFor(cleanups);
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
    const dir = tempDirFor(cleanups);
    const [port, port2] = [await freePort(), await freePort()];
    const file = path.join(dir, "a.conf");
    const base = netcatConf(port);
    writeFileSync(file, base);
    const { options } = parseRunArgs(["-f", file, "--quiet", "--poll-interval", "0.1", "--drain-timeout", "200"]);
    const code = runAgent(options);
    // runAgent is inside the agent's start now: the operator saves a new version of the file.
    writeFileSync(file, base.replace("a1.sources = r1", "a1.sources = r1 r2") + `a1.sources.r2.type = netcat\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\n`);
    const up = await waitUntilListening(port2);
    process.emit("SIGTERM");
    expect(await code).toBe(0);
    expect(up).toBe(true);
  });
});

// A netcat source whose first create() fails, as one whose resource is briefly unavailable.
const netcat = registry.lookupComponent("source", "netcat")!;
let flakyCreates = 0;
registry.registerComponent({
  ...netcat,
  schema: { ...netcat.schema, type: "flaky-netcat", aliases: [] },
  create(config, ctx) {
    if (flakyCreates++ === 0) throw new Error("resource temporarily unavailable");
    return netcat.create(config, ctx);
  },
} as ComponentDefinition<unknown>);

const base = (port: number) => netcatConf(port);

const withR2 = (port: number, port2: number, type = "netcat") =>
  base(port).replace("a1.sources = r1", "a1.sources = r1 r2") +
  `a1.sources.r2.type = ${type}\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\n`;

describe("flume run: reload detection", () => {
  test("a save that leaves the file's mtime unchanged is still reloaded (content is compared)", async () => {
    const dir = tempDirFor(cleanups);
    const [port, port2] = [await freePort(), await freePort()];
    const file = path.join(dir, "a.conf");
    // Whole seconds, so the timestamp can be set back exactly.
    const tick = Math.floor(Date.now() / 1000);
    writeFileSync(file, base(port));
    utimesSync(file, tick, tick);
    const { options } = parseRunArgs(["-f", file, "--quiet", "--poll-interval", "0.05", "--drain-timeout", "200"]);
    const code = runAgent(options);
    expect(await waitUntilListening(port)).toBe(true);
    // A second save within the same mtime tick: the timestamp reads as before.
    const { mtimeMs } = statSync(file);
    writeFileSync(file, withR2(port, port2));
    utimesSync(file, tick, tick);
    expect(statSync(file).mtimeMs).toBe(mtimeMs);
    const up = await waitUntilListening(port2);
    process.emit("SIGTERM");
    expect(await code).toBe(0);
    expect(up).toBe(true);
  });

  test("a reload whose build failed is tried again on the next poll without the file changing", async () => {
    const dir = tempDirFor(cleanups);
    const [port, port2] = [await freePort(), await freePort()];
    const file = path.join(dir, "a.conf");
    writeFileSync(file, base(port));
    const { options } = parseRunArgs(["-f", file, "--quiet", "--poll-interval", "0.05", "--drain-timeout", "200"]);
    const code = runAgent(options);
    expect(await waitUntilListening(port)).toBe(true);
    flakyCreates = 0;
    writeFileSync(file, withR2(port, port2, "flaky-netcat"));
    const up = await waitUntilListening(port2);
    process.emit("SIGTERM");
    expect(await code).toBe(0);
    // The first build failed, the retry built r2.
    expect(flakyCreates).toBeGreaterThanOrEqual(2);
    expect(up).toBe(true);
  });
});

describe("flume run: the started line", () => {
  test("a source whose start failed (port in use) is listed as retrying, not among the started sources", async () => {
    const dir = tempDirFor(cleanups);
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
    expect(line).toMatch(/agent a1 started 3 of 4 components; source r2 not started: .*EADDRINUSE.*, retrying \(backing off up to every 3 s\)$/);
    expect(out).not.toMatch(/agent a1 started: /);
    // Once the port is free the supervisor's retry starts r2, and the log says everything runs.
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
    await agent.waitFor(/agent a1: every component has started/, 10_000);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("flume run --lenient and reload", () => {
  test("a reload under --lenient drops the broken components again instead of refusing every change", async () => {
    const dir = tempDirFor(cleanups);
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
    const dir = tempDirFor(cleanups);
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

describe("flume run on an Apache Flume file channel", () => {
  test("on Flume's directories it prints one line naming the migrate command and exits 1 instead of retrying", () => {
    const t = tempDir("flume-run-flume-dirs-");
    cleanups.push(t.cleanup);
    const f = { dir: t.dir, ...copyFixture("pending-clean", t.dir) };
    const before = fingerprint(f.root);
    const conf = path.join(f.dir, "a1.conf");
    writeFileSync(conf, seqConf(1, { channel: `a1.channels.c1.type = file\na1.channels.c1.checkpointDir = ${f.checkpointDir}\na1.channels.c1.dataDirs = ${f.dataDir}` }));
    const r = runCli(["run", "-f", conf, "-n", "a1", "--no-reload-conf", "--quiet"], { timeout: 15000 });
    const out = r.stdout + r.stderr;
    expect(r.signal).toBeNull(); // it exited by itself, well before the timeout
    expect(r.code).toBe(1);
    const lines = out.split("\n").filter((l) => l.trim() !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`agent a1 failed to start: file channel c1: ${f.dataDir} holds an Apache Flume file channel (log-1, log-1.meta)`);
    expect(lines[0]).toContain(`flume channel migrate --from-flume --checkpointDir ${f.checkpointDir} --dataDirs ${f.dataDir} --to-checkpointDir NEW_CHECKPOINT_DIR --to-dataDirs NEW_DATA_DIR`);
    expect(out).not.toContain("[r1]"); // the source never started to fail on the channel
    expect(out).not.toContain("retrying");
    expect(out).not.toContain("bad magic");
    expect(fingerprint(f.root)).toEqual(before);
  });
});

describe("flume run in production: signals, exit codes, logs", () => {
  function netcatAgentConf(dir: string, port: number, extra = "") {
    const conf = path.join(dir, "agent.conf");
    writeFileSync(conf, netcatConf(port) + extra);
    return conf;
  }

  test("SIGHUP reloads the configuration at once, even with --no-reload-conf", async () => {
    const dir = tempDirFor(cleanups);
    const port = await freePort();
    const port2 = await freePort();
    const conf = netcatAgentConf(dir, port);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--no-reload-conf"]);
    writeFileSync(conf, netcatConf(port).replace("a1.sources = r1", "a1.sources = r1 r2") + `a1.sources.r2.type = netcat\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\n`);
    agent.child.kill("SIGHUP");
    await agent.waitFor(/reloaded .*started \[source r2\]/);
    expect(await sendLines(port2, "hi\n")).toBe("OK\n");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });

  test("--strict: a reload whose file has a warning keeps the running configuration", async () => {
    const dir = tempDirFor(cleanups);
    const port = await freePort();
    const port2 = await freePort();
    const conf = netcatAgentConf(dir, port);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--no-reload-conf", "--strict"]);
    writeFileSync(conf, netcatConf(port).replace("a1.sources = r1", "a1.sources = r1 r2") + `a1.sources.r2.type = netcat\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\na1.channels.c1.capcity = 10\n`);
    agent.child.kill("SIGHUP");
    await agent.waitFor(/changed but has 1 error\(s\) \(warnings count under --strict\); keeping the running configuration/);
    expect(agent.stderr).toMatch(/capcity: is not a property of channel type memory/);
    expect(await canConnect(port2)).toBe(false);
    expect(await sendLines(port, "x\n")).toBe("OK\n");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });

  /** An agent whose drain could never finish (its sink's destination is down), holding the lines sent. */
  async function agentThatCannotDrain(lines: string[]) {
    const port = await freePort();
    const dead = await freePort();
    const { conf } = tempConf(cleanups, netcatConf(port, { sink: `avro\na1.sinks.k1.hostname = 127.0.0.1\na1.sinks.k1.port = ${dead}` }));
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--drain-timeout", "60000"], /agent a1 started/);
    expect(await sendLines(port, lines.map((l) => `${l}\n`).join(""))).toBe("OK\n".repeat(lines.length));
    return agent;
  }

  test("a second SIGTERM during the drain stops at once and says what it leaves; a memory channel left holding events exits 3", async () => {
    const agent = await agentThatCannotDrain(["a", "b"]);
    agent.child.kill("SIGTERM");
    await agent.waitFor(/SIGTERM received: stopping agent a1/);
    expect(agent.stderr).toContain("send SIGTERM again to stop at once");
    await sleep(200);
    const t0 = Date.now();
    agent.child.kill("SIGTERM");
    const code = await agent.exited();
    // Well within the 60 s drain it would otherwise wait for.
    expect(Date.now() - t0).toBeLessThan(waitBound(10_000));
    expect(code).toBe(3);
    expect(agent.stderr).toContain("SIGTERM received again: stopping at once");
    expect(agent.stderr).toMatch(/channel c1 still held 2 events when the drain was cut short; a memory channel loses them/);
    expect(agent.stderr).toMatch(/2 accepted events left in memory channels were lost \(exit 3\)/);
  });

  test("Ctrl-C (SIGINT) during the drain: the agent says to press Ctrl-C again, and a second one stops at once", async () => {
    const agent = await agentThatCannotDrain(["a"]);
    agent.child.kill("SIGINT");
    await agent.waitFor(/SIGINT received: stopping agent a1/);
    expect(agent.stderr).toContain("press Ctrl-C again (or send SIGTERM) to stop at once");
    expect(agent.stderr).not.toContain("send SIGTERM again");
    await sleep(200);
    agent.child.kill("SIGINT");
    expect(await agent.exited()).toBe(3);
    expect(agent.stderr).toContain("SIGINT received again: stopping at once");
  });

  test("--fail-fast=SECONDS exits 1 when a component has not started in time; without it the agent keeps retrying", async () => {
    const dir = tempDirFor(cleanups);
    const blocker = net.createServer();
    const taken = await listenLocal(blocker);
    cleanups.push(() => blocker.close());
    const conf = netcatAgentConf(dir, taken);
    const r = runCli(["run", "-f", conf, "--quiet", "--fail-fast=1"], { timeout: 15_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/source r1 not started after 1 s \(--fail-fast\); stopping \(exit 1\)/);
    expect(runCli(["run", "-f", conf, "--fail-fast=soon"]).code).toBe(2);
  });

  test("--log-format json writes one JSON object a line with time, level, component and message", async () => {
    const dir = tempDirFor(cleanups);
    const port = await freePort();
    const conf = netcatAgentConf(dir, port);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--log-format", "json", "-n", "a1"], /agent a1 started/);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
    const lines = agent.stderr.trim().split("\n");
    expect(lines.length).toBeGreaterThan(2);
    for (const l of lines) {
      const o = JSON.parse(l) as Record<string, string>;
      expect(Object.keys(o)).toEqual(expect.arrayContaining(["time", "level", "message"]));
      expect(o.agent).toBe("a1");
    }
    expect(lines.some((l) => JSON.parse(l).component === "r1")).toBe(true);
  });

  test("text lines carry a timestamp and level, no blank lines; --log-level and -Dflume.root.logger are honoured", async () => {
    const dir = tempDirFor(cleanups);
    const blocker = net.createServer();
    const taken = await listenLocal(blocker);
    cleanups.push(() => blocker.close());
    const conf = netcatAgentConf(dir, taken);
    // The supervisor logs each start retry at debug level; the failure itself is a warning.
    const debug = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "-Dflume.root.logger=DEBUG,console"], /agent a1 started/);
    await debug.waitFor(/ DEBUG /, 10_000);
    debug.child.kill("SIGTERM");
    await debug.exited();
    const lines = debug.stderr.split("\n").filter((l) => l !== "");
    expect(debug.stderr).not.toMatch(/\n\n/);
    for (const l of lines) expect(l).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN |INFO |DEBUG|TRACE) /);
    const warnOnly = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--log-level", "warn"], /agent a1 started/);
    warnOnly.child.kill("SIGTERM");
    await warnOnly.exited();
    expect(warnOnly.stderr).not.toMatch(/ INFO /);
    expect(runCli(["run", "-f", conf, "-Dflume.root.logger=LOUD,console"]).code).toBe(2);
  });
});

describe("a reader that stops reading", () => {
  test("flume describe | head -1 ends quietly with exit 0 (no EPIPE trace)", () => {
    const r = spawnSync("bash", ["-c", `"${process.execPath}" "${CLI}" describe | head -1; echo "status \${PIPESTATUS[0]}" >&2`], { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
    expect(r.stdout.split("\n")[0]).toBe("Sources:");
    expect(r.stderr).toBe("status 0\n");
  });
});
