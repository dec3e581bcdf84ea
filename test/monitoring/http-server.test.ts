import { describe, expect, test } from "bun:test";
import { writeFileSync, readFileSync, readdirSync } from "node:fs";
import { spawnSync } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { cleanupsAfterEach, freePort, startAgentCli, tempConf, tempDirFor, FIXTURES, runCli, sleep, waitUntil } from "../support/helpers.ts";
import { needsProc, needsPromtool } from "../support/requires.ts";
import { VERSION, FLUME_COMPAT } from "../../src/version.ts";

const METRICS = path.join(FIXTURES, "metrics");

async function getJson(port: number, p: string): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: res.status, body: await res.text(), type: res.headers.get("content-type") };
}

const cleanups = cleanupsAfterEach();

/** Checks Prometheus text exposition 0.0.4 rules; returns the families with their TYPE. */
function checkExposition(text: string): Map<string, string> {
  const types = new Map<string, string>();
  const seenSeries = new Set<string>();
  const sampled = new Set<string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const t = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (t) {
      expect(types.has(t[1])).toBe(false); // one TYPE per family
      expect(sampled.has(t[1])).toBe(false); // TYPE before the family's samples
      types.set(t[1], t[2]);
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (\S+)$/.exec(line);
    expect(m).not.toBeNull();
    if (!m) continue;
    expect(Number.isNaN(Number(m[3])) && m[3] !== "NaN").toBe(false);
    expect(types.has(m[1])).toBe(true);
    const series = m[1] + (m[2] ?? "");
    expect(seenSeries.has(series)).toBe(false);
    seenSeries.add(series);
    sampled.add(m[1]);
  }
  expect([...types].filter(([name, type]) => type === "counter" && !name.endsWith("_total"))).toEqual([]);
  return types;
}

describe("monitoring endpoints of a running agent", () => {
  test("/prometheus is valid 0.0.4 text; OpenConnectionCount (it goes down) is a gauge; HEAD and a query string work", async () => {
    const port = await freePort();
    const mport = await freePort();
    const { conf } = tempConf(cleanups, `a1.sources = r1 r2
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.channels = c1
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = 10
a1.sources.r2.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = logger
a1.sinks.k1.channel = c1
`);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--metrics-port", String(mport), "--metrics-bind", "127.0.0.1", "--quiet"]);
    const client = net.connect(port, "127.0.0.1");
    cleanups.push(() => client.destroy());
    await new Promise<void>((resolve) => client.once("connect", () => resolve()));
    // wait until the agent counted the open connection
    for (let i = 0; i < 200; i++) {
      const m = (await (await fetch(`http://127.0.0.1:${mport}/metrics`)).json()) as Record<string, Record<string, string>>;
      if (m["SOURCE.r1"]?.OpenConnectionCount === "1") break;
      await new Promise((r) => setTimeout(r, 25));
    }

    const res = await fetch(`http://127.0.0.1:${mport}/prometheus`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("version=0.0.4");
    const text = await res.text();
    const types = checkExposition(text);
    expect(types.get("flume_source_open_connections")).toBe("gauge");
    expect(text).toContain('flume_source_open_connections{agent="a1",component="r1",type="netcat"} 1');
    expect(types.get("flume_channel_event_put_successes_total")).toBe("counter");
    expect(types.get("flume_channel_size")).toBe("gauge");
    expect(text).toMatch(/^flume_channel_fill_ratio\{agent="a1",component="c1",type="memory"\} 0(\.\d+)?$/m);
    expect(text).toMatch(/^flume_source_start_time_seconds\{agent="a1",component="r2",type="seq"\} 1\d{9}(\.\d+)?$/m);

    // Prometheus's default scrape path: /metrics answers its text when the scraper asks for it.
    for (const accept of ["text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"]) {
      const scraped = await fetch(`http://127.0.0.1:${mport}/metrics`, { headers: { Accept: accept } });
      expect(scraped.headers.get("content-type")).toContain("version=0.0.4");
      expect(await scraped.text()).toContain("# HELP flume_channel_size ");
    }

    const head = await fetch(`http://127.0.0.1:${mport}/metrics`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toContain("application/json");
    expect(await head.text()).toBe("");
    const headProm = await fetch(`http://127.0.0.1:${mport}/prometheus`, { method: "HEAD" });
    expect(headProm.status).toBe(200);
    expect(await headProm.text()).toBe("");

    const q = await fetch(`http://127.0.0.1:${mport}/metrics?pretty=1`);
    expect(q.status).toBe(200);
    const json = (await q.json()) as Record<string, Record<string, string>>;
    expect(Object.keys(json)).toEqual(expect.arrayContaining(["CHANNEL.c1", "SOURCE.r1", "SOURCE.r2"]));
    for (const group of Object.values(json)) for (const v of Object.values(group)) expect(typeof v).toBe("string");
    expect((await fetch(`http://127.0.0.1:${mport}/prometheus?x=1`)).status).toBe(200);

    client.destroy();
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("monitoring", () => {
  test("/metrics has the same keys and counter names as Flume's for seq -> memory -> null", async () => {
    const port = await freePort();
    const { conf } = tempConf(cleanups, `a1.sources = r1
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
`, "seq.conf");
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "-Dflume.monitoring.type=http", `-Dflume.monitoring.port=${port}`, "--quiet"], /metrics on/);
    let m: Record<string, Record<string, string>> = {};
    for (let i = 0; i < 200; i++) {
      m = JSON.parse((await getJson(port, "/metrics")).body);
      if (m["CHANNEL.c1"]?.EventTakeSuccessCount === "50000") break;
      await sleep(25);
    }
    const fixture = JSON.parse(readFileSync(path.join(METRICS, "flume-seq-memory-null.json"), "utf8"));
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
    expect(prom.body).toContain('flume_channel_event_take_successes_total{agent="a1",component="c1",type="memory"} 50000');
    expect(prom.body).toContain('flume_source_events_accepted_total{agent="a1",component="r1",type="seq"} 50000');
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("monitoring, avro -> memory -> file_roll", () => {
  test("/metrics after flume avro-client sent 7 events in 5 + 2 matches Flume's keys and counts", async () => {
    const dir = tempDirFor(cleanups);
    const port = await freePort();
    const mport = await freePort();
    const roll = path.join(dir, "roll");
    const conf = path.join(dir, "avro.conf");
    // The fixture's configuration, with our port and directory.
    const fixtureConf = readFileSync(path.join(METRICS, "flume-avro-memory-fileroll.conf"), "utf8");
    writeFileSync(conf, fixtureConf.replace("41414", String(port)).replace("/var/tmp/roll", roll));
    const { mkdirSync, readdirSync } = await import("node:fs");
    mkdirSync(roll);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--metrics-port", String(mport), "--quiet"]);
    const input = path.join(FIXTURES, "avro-rpc", "avro-client-input.txt");
    const sent = runCli(["avro-client", "-H", "127.0.0.1", "-p", String(port), "-F", input]);
    expect(sent.code).toBe(0);
    let m: Record<string, Record<string, string>> = {};
    for (let i = 0; i < 200; i++) {
      m = JSON.parse((await getJson(mport, "/metrics")).body);
      if (m["SINK.k1"]?.EventDrainSuccessCount === "7") break;
      await sleep(25);
    }
    const fixture = JSON.parse(readFileSync(path.join(METRICS, "flume-avro-memory-fileroll.json"), "utf8"));
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

/** The value of the one sample of `name` (no labels, or the labels given) in Prometheus text. */
function sample(text: string, name: string, labels = ""): number {
  const m = new RegExp(`^${name}${labels.replace(/[{}]/g, "\\$&")} (\\S+)$`, "m").exec(text);
  expect(m).not.toBeNull();
  return Number(m?.[1]);
}

describe("process series", () => {
  needsProc.test("the process_* series describe the agent's own process as /proc shows it; flume_build_info says what runs", async () => {
    const mport = await freePort();
    const { conf } = tempConf(cleanups, "a1.sources = r1\na1.channels = c1\na1.sinks = k1\na1.sources.r1.type = seq\na1.sources.r1.totalEvents = 100000\na1.sources.r1.channels = c1\na1.channels.c1.type = memory\na1.sinks.k1.type = null\na1.sinks.k1.channel = c1\n");
    const spawnedAt = Date.now() / 1000;
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--metrics-port", String(mport), "--metrics-bind", "127.0.0.1", "--quiet"]);
    const pid = agent.child.pid as number;
    const text = await (await fetch(`http://127.0.0.1:${mport}/prometheus`)).text();
    const types = checkExposition(text);
    expect(Object.fromEntries(["process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds", "flume_build_info"].map((n) => [n, types.get(n)]))).toEqual({
      process_cpu_seconds_total: "counter",
      process_resident_memory_bytes: "gauge",
      process_virtual_memory_bytes: "gauge",
      process_open_fds: "gauge",
      process_max_fds: "gauge",
      process_start_time_seconds: "gauge",
      flume_build_info: "gauge",
    });
    // The agent's process as the kernel shows it, right after the scrape.
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) * 1024;
    const vsize = Number(/^VmSize:\s+(\d+) kB/m.exec(status)?.[1]) * 1024;
    const fds = readdirSync(`/proc/${pid}/fd`).length;
    const softLimit = Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"))?.[1]);
    const resident = sample(text, "process_resident_memory_bytes");
    expect(resident).toBeGreaterThan(rss / 2);
    expect(resident).toBeLessThan(rss * 2);
    expect(sample(text, "process_virtual_memory_bytes")).toBeGreaterThan(vsize / 2);
    expect(sample(text, "process_virtual_memory_bytes")).toBeLessThan(vsize * 2);
    expect(Math.abs(sample(text, "process_open_fds") - fds)).toBeLessThanOrEqual(4);
    expect(sample(text, "process_max_fds")).toBe(softLimit);
    // The seq source generated events: the process has spent CPU time.
    expect(sample(text, "process_cpu_seconds_total")).toBeGreaterThan(0.01);
    const started = sample(text, "process_start_time_seconds");
    expect(started).toBeGreaterThan(spawnedAt - 1);
    expect(started).toBeLessThan(Date.now() / 1000);
    expect(text).toMatch(new RegExp(`^flume_build_info\\{version="${VERSION}",flume_version="${FLUME_COMPAT}",runtime="bun",runtime_version="${Bun.version}"\\} 1$`, "m"));
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("Prometheus's own checks", () => {
  needsPromtool.test("promtool check metrics finds nothing to report in /metrics of an agent with memory and file channels, a TLS-less avro source and sinks", async () => {
    const port = await freePort();
    const mport = await freePort();
    const dir = tempDirFor(cleanups);
    const conf = path.join(dir, "agent.conf");
    writeFileSync(conf, `a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = avro
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.channels = c1
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = 100
a1.sources.r2.channels = c2
a1.channels.c1.type = memory
a1.channels.c2.type = file
a1.channels.c2.checkpointDir = ${dir}/ckpt
a1.channels.c2.dataDirs = ${dir}/data
a1.channels.c2.minimumRequiredSpace = 1048576
a1.sinks.k1.type = logger
a1.sinks.k1.channel = c1
a1.sinks.k2.type = null
a1.sinks.k2.channel = c2
`);
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--metrics-port", String(mport), "--metrics-bind", "127.0.0.1", "--quiet"], /metrics on/);
    const text = await (await fetch(`http://127.0.0.1:${mport}/metrics`, { headers: { Accept: "text/plain;version=0.0.4" } })).text();
    // promtool checks the process and build series too.
    for (const name of ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds", "flume_build_info"]) expect(text).toContain(`# TYPE ${name} `);
    const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    expect({ status: r.status, out: r.stdout + r.stderr }).toEqual({ status: 0, out: "" });
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});

describe("health and readiness", () => {
  test("/health answers 200; /ready is 200 once every component runs, 503 naming a source that cannot bind and why", async () => {
    const dir = tempDirFor(cleanups);
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => busy.close());
    const taken = (busy.address() as net.AddressInfo).port;
    const mport = await freePort();
    const conf = path.join(dir, "agent.conf");
    writeFileSync(
      conf,
      `a1.sources = r1 r2
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${taken}
a1.sources.r1.channels = c1
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = 1
a1.sources.r2.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
`,
    );
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--metrics-port", String(mport), "--metrics-bind", "127.0.0.1", "--quiet"], /metrics on/);
    const health = await fetch(`http://127.0.0.1:${mport}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok", agent: "a1" });
    // Every configured component, running or not, counters or not (what `flume top` lists).
    const listed = await fetch(`http://127.0.0.1:${mport}/components`);
    expect(listed.status).toBe(200);
    expect(await listed.json()).toEqual({
      agent: "a1",
      components: [
        { kind: "source", name: "r1", type: "netcat" },
        { kind: "source", name: "r2", type: "seq" },
        { kind: "channel", name: "c1", type: "memory" },
        { kind: "sink", name: "k1", type: "null" },
      ],
    });
    const notReady = await fetch(`http://127.0.0.1:${mport}/ready`);
    expect(notReady.status).toBe(503);
    const body = (await notReady.json()) as { ready: boolean; notStarted: { kind: string; name: string; error?: string }[]; failing: unknown[] };
    expect(body.ready).toBe(false);
    expect(body.notStarted.map((c) => `${c.kind} ${c.name}`)).toEqual(["source r1"]);
    expect(body.notStarted[0].error).toMatch(/EADDRINUSE|in use/i);
    // A source that did not start is no sink failing its sends.
    expect(body.failing).toEqual([]);
    // Free the port: the supervisor's retry starts the source, and the agent becomes ready.
    await new Promise<void>((resolve) => busy.close(() => resolve()));
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${mport}/ready`)).status === 200, "/ready to answer 200", 10_000, 100);
    expect(await (await fetch(`http://127.0.0.1:${mport}/ready`)).json()).toEqual({ ready: true, agent: "a1", notStarted: [], failing: [] });
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});
