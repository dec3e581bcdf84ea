import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ROOT, cleanupsAfterEach, freePort, netcatConf, runCli, sendLines, sleep, startAgentCli, tempDir } from "../support/helpers.ts";

const FIXTURES = path.join(ROOT, "test", "fixtures", "metrics");


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
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const conf = path.join(dir, "a.conf");
    writeFileSync(conf, agentConf(port));
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
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const conf = path.join(dir, "a.conf");
    writeFileSync(conf, agentConf(port, "a1.sources.r1.max-line-length = 10\n"));
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet"]);
    const answer = await sendLines(port, "short\nthis line is far too long\n");
    expect(answer).toBe("OK\nFAILED: Event exceeds the maximum length (10 chars, including newline)\n");
    expect(agent.stderr).toMatch(/client 127\.0\.0\.1:\d+ sent a line over max-line-length 10/);
    expect(await sendLines(port, "again\n")).toBe("OK\n");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });

  test("refuses to start on validation errors and prints file:line", () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const conf = path.join(dir, "bad.conf");
    writeFileSync(conf, agentConf(44444).replace("type = memory", "type = memroy"));
    const r = runCli(["run", "-f", conf, "-n", "a1"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${conf}:8`);
    expect(r.stderr).toContain("memory");
    expect(r.stderr).toContain("not starting");
  });

  test("usage errors exit 2", () => {
    expect(runCli(["run"]).code).toBe(2);
    expect(runCli(["run", "-f", "x.conf", "--bogus"]).code).toBe(2);
    const port = runCli(["run", "-f", "conf/flume.conf", "--metrics-port", "70000"]);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain("metrics port must be a whole number from 0 to 65535");
  });

  test("flume-ng spellings: agent, --conf, --conf-file, --name, -D, --no-reload-conf", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const conf = path.join(dir, "ng.conf");
    writeFileSync(conf, agentConf(port).replace(`port = ${port}`, "port = ${sys:nc.port}"));
    const agent = await startAgentCli(cleanups, ["agent", "--conf", dir, "--conf-file", conf, "--name", "a1", `-Dnc.port=${port}`, "--no-reload-conf", "--quiet"]);
    expect(agent.stderr).toContain("ignored");
    expect(await sendLines(port, "x\n")).toBe("OK\n");
    agent.child.kill("SIGINT");
    expect(await agent.exited()).toBe(0);
  });

  test("--lenient drops a broken component as Flume does, with a warning, and runs the rest", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const conf = path.join(dir, "lenient.conf");
    writeFileSync(
      conf,
      agentConf(port).replace("a1.sinks = k1", "a1.sinks = k1 k2") + "a1.sinks.k2.type = nosuchsink\na1.sinks.k2.channel = c1\n",
    );
    expect(runCli(["run", "-f", conf]).code).toBe(1);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--lenient", "--quiet"]);
    expect(agent.stderr).toContain("dropping sink k2");
    expect(await sendLines(port, "x\n")).toBe("OK\n");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("monitoring", () => {
  test("/metrics has the same keys and counter names as Flume's for seq -> memory -> null", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const conf = path.join(dir, "seq.conf");
    writeFileSync(
      conf,
      `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 50000
a1.sources.r1.batchSize = 1000
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.channels.c1.capacity = 100000
a1.channels.c1.transactionCapacity = 1000
a1.sinks.k1.type = null
a1.sinks.k1.batchSize = 1000
a1.sinks.k1.channel = c1
`,
    );
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "-Dflume.monitoring.type=http", `-Dflume.monitoring.port=${port}`, "--quiet"], /metrics on/);
    let m: Record<string, Record<string, string>> = {};
    for (let i = 0; i < 200; i++) {
      m = JSON.parse((await getJson(port, "/metrics")).body);
      if (m["CHANNEL.c1"]?.EventTakeSuccessCount === "50000") break;
      await sleep(25);
    }
    const fixture = JSON.parse(readFileSync(path.join(FIXTURES, "flume-seq-memory-null.json"), "utf8"));
    expect(Object.keys(m).sort()).toEqual(Object.keys(fixture).sort());
    for (const key of Object.keys(fixture)) expect(Object.keys(m[key]).sort()).toEqual(Object.keys(fixture[key]).sort());
    for (const group of Object.values(m)) for (const v of Object.values(group)) expect(typeof v).toBe("string");
    expect(m["CHANNEL.c1"]).toMatchObject({
      Type: "CHANNEL",
      ChannelCapacity: "100000",
      ChannelSize: "0",
      ChannelFillPercentage: "0.0",
      EventPutAttemptCount: "50000",
      EventPutSuccessCount: "50000",
      EventTakeSuccessCount: "50000",
      StopTime: "0",
    });
    expect(m["SOURCE.r1"]).toMatchObject({ Type: "SOURCE", EventAcceptedCount: "50000", AppendBatchAcceptedCount: "50", EventReceivedCount: "0" });
    expect(Number(m["SOURCE.r1"].StartTime)).toBeGreaterThan(1.7e12);

    const index = await getJson(port, "/");
    expect(index.status).toBe(200);
    expect(index.body).toContain('href="./metrics"');
    expect((await getJson(port, "/nope")).status).toBe(404);
    const prom = await getJson(port, "/prometheus");
    expect(prom.status).toBe(200);
    expect(prom.body).toContain('flume_channel_event_take_success_count_total{component="c1"} 50000');
    expect(prom.body).toContain('flume_source_event_accepted_count_total{component="r1"} 50000');
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("reload and shutdown", () => {
  test("a new component appears on reload; a broken file keeps the old agent; a memory channel keeps its events", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
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
    expect(await agent.exited()).toBe(0);
  });

  test("SIGTERM: sources stop, sinks drain the channel before exit, nothing committed is lost", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
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

describe("monitoring, avro -> memory -> file_roll", () => {
  test("/metrics after flume avro-client sent 7 events in 5 + 2 matches Flume's keys and counts", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const mport = await freePort();
    const roll = path.join(dir, "roll");
    const conf = path.join(dir, "avro.conf");
    // The fixture's configuration, with our port and directory.
    const fixtureConf = readFileSync(path.join(FIXTURES, "flume-avro-memory-fileroll.conf"), "utf8");
    writeFileSync(conf, fixtureConf.replace("41414", String(port)).replace("/var/tmp/roll", roll));
    const { mkdirSync, readdirSync } = await import("node:fs");
    mkdirSync(roll);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--metrics-port", String(mport), "--quiet"]);
    const input = path.join(ROOT, "test", "fixtures", "avro-rpc", "avro-client-input.txt");
    const sent = runCli(["avro-client", "-H", "127.0.0.1", "-p", String(port), "-F", input]);
    expect(sent.code).toBe(0);
    let m: Record<string, Record<string, string>> = {};
    for (let i = 0; i < 200; i++) {
      m = JSON.parse((await getJson(mport, "/metrics")).body);
      if (m["SINK.k1"]?.EventDrainSuccessCount === "7") break;
      await sleep(25);
    }
    const fixture = JSON.parse(readFileSync(path.join(FIXTURES, "flume-avro-memory-fileroll.json"), "utf8"));
    expect(Object.keys(m).sort()).toEqual(Object.keys(fixture).sort());
    for (const key of Object.keys(fixture)) expect(Object.keys(m[key]).sort()).toEqual(Object.keys(fixture[key]).sort());
    expect(m["SOURCE.r1"]).toMatchObject({ AppendBatchReceivedCount: "2", AppendBatchAcceptedCount: "2", EventReceivedCount: "7", EventAcceptedCount: "7" });
    expect(m["CHANNEL.c1"]).toMatchObject({ EventPutSuccessCount: "7", EventTakeSuccessCount: "7", ChannelSize: "0", ChannelCapacity: "10000" });
    expect(m["SINK.k1"]).toMatchObject({ EventDrainSuccessCount: "7", ConnectionCreatedCount: "1" });
    const written = readdirSync(roll).map((f) => readFileSync(path.join(roll, f), "utf8")).join("");
    expect(written).toBe(readFileSync(input, "utf8"));
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("stats line", () => {
  test("a one-line report per interval with events in/out per second and channel fill; --quiet turns it off", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const conf = path.join(dir, "stats.conf");
    writeFileSync(
      conf,
      "a1.sources = r1\na1.channels = c1\na1.sources.r1.type = seq\na1.sources.r1.totalEvents = 500\na1.sources.r1.batchSize = 100\na1.sources.r1.channels = c1\na1.channels.c1.type = memory\na1.channels.c1.capacity = 1000\n",
    );
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--stats-interval", "0.3"], /stats: r1 in \d+\/s \| c1 out 0\/s fill 50\.0% \(500\/1000\)/);
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
    const quiet = await startAgentCli(cleanups, ["run", "-f", conf, "--stats-interval", "0.3", "--quiet"]);
    await sleep(700);
    expect(quiet.stderr).not.toContain("stats:");
    quiet.child.kill("SIGTERM");
    expect(await quiet.exited()).toBe(0);
  });
});
