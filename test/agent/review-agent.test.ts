import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { Agent } from "../../src/agent/agent.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { canConnect, cleanupsAfterEach, fileChannelLines, freePort, listenLocal, netcatConf, sleep, tempDir } from "../support/helpers.ts";
import { parseAgentConfig, seqConf } from "../support/agent.ts";

const cleanups = cleanupsAfterEach();

const parse = (text: string) => parseAgentConfig(text, "review.conf");

function fileChannelConf(port: number, dir: string, extra = ""): string {
  return netcatConf(port, { channel: `${fileChannelLines(dir)}
${extra}` });
}

describe("agent lifecycle under an operator's hands", () => {
  test("stop() called while start() is still running leaves nothing running (SIGTERM during startup)", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const port = await freePort();
    const agent = new Agent("a1", { drainTimeout: 200 });
    await Promise.all([agent.start(parse(fileChannelConf(port, dir))), agent.stop()]);
    // The netcat port is closed and the file channel released its directory lock.
    expect(await canConnect(port)).toBe(false);
    expect(existsSync(path.join(dir, "ckpt", "in_use.lock"))).toBe(false);
  });

  test("stop() called while a reload is applying leaves none of the new components running (SIGTERM during reload)", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const [port1, port2] = [await freePort(), await freePort()];
    const agent = new Agent("a1", { drainTimeout: 200 });
    await agent.start(parse(fileChannelConf(port1, dir)));
    expect(await canConnect(port1)).toBe(true);
    // The new source listens elsewhere; stop arrives while the reload runs.
    await Promise.all([agent.reload(parse(fileChannelConf(port2, dir))).catch(() => {}), new Promise((r) => setTimeout(r, 0)).then(() => agent.stop())]);
    expect(await canConnect(port1)).toBe(false);
    expect(await canConnect(port2)).toBe(false);
    expect(existsSync(path.join(dir, "ckpt", "in_use.lock"))).toBe(false);
  });

  test("a reload that replaces a memory channel lets its sink drain it first (events are not silently dropped)", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    // The downstream answers 503 (the sink rolls back and backs off) until it is told to accept.
    let accepting = false;
    const received: string[] = [];
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        if (!accepting) return void res.writeHead(503).end();
        received.push(body);
        res.writeHead(200).end();
      });
    });
    const endpoint = `http://127.0.0.1:${await listenLocal(server)}/`;
    cleanups.push(() => server.close());
    const sink = `a1.sinks = k1
a1.sinks.k1.type = http
a1.sinks.k1.endpoint = ${endpoint}
a1.sinks.k1.rollback.200 = false
a1.sinks.k1.backoff.200 = false
a1.sinks.k1.channel = c1
`;
    const agent = new Agent("a1", { drainTimeout: 3000 });
    await agent.start(
      parse(`a1.sources = r1
a1.channels = c1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 20
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
${sink}`),
    );
    const c1 = agent.components.channels.get("c1")!.channel;
    for (let i = 0; i < 200 && c1.counter.values.ChannelSize < 20; i++) await sleep(10);
    expect(c1.counter.values.ChannelSize).toBe(20);
    // The operator makes c1 durable; the downstream is healthy again.
    accepting = true;
    await agent.reload(
      parse(`a1.channels = c1
${fileChannelLines(dir)}
${sink}`),
    );
    await agent.stop();
    expect(received.length).toBe(20);
  });

  test("the drain on stop does not hammer a sink that keeps failing (its error sleep is respected, the log is not flooded)", async () => {
    const deadPort = await freePort(); // nothing listens there
    const logger = new MemoryLogger();
    const agent = new Agent("a1", { drainTimeout: 1000, logger });
    await agent.start(
      parse(seqConf(10, { sink: `a1.sinks.k1.type = avro
a1.sinks.k1.hostname = 127.0.0.1
a1.sinks.k1.port = ${deadPort}` })),
    );
    const c1 = agent.components.channels.get("c1")!.channel;
    for (let i = 0; i < 200 && c1.counter.values.ChannelSize < 10; i++) await sleep(10);
    await agent.stop();
    const failures = logger.lines.filter((l) => l.level === "error" && l.message.includes("Unable to deliver"));
    // Bounded drain: the events are reported as lost, after a handful of attempts, not one every 20 ms.
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("still held 10 events"))).toBe(true);
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.length).toBeLessThanOrEqual(3);
  });

  test("a sink group that cannot start (one sink's directory is unusable) does not leak its other sink's connection", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const avroPort = await freePort();
    // The downstream agent: an avro source whose counters show the open connections.
    const downstream = new Agent("a1", { drainTimeout: 200 });
    await downstream.start(
      parse(`a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = avro
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${avroPort}
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
`),
    );
    const openConnections = () => downstream.components.sources.get("r1")!.source.counter.values.OpenConnectionCount;
    const notADir = path.join(dir, "file");
    writeFileSync(notADir, "x");
    const agent = new Agent("a1", { drainTimeout: 200 });
    await agent.start(
      parse(`a1.sources = r1
a1.channels = c1
a1.sinks = k1 k2
a1.sinkgroups = g1
a1.sinkgroups.g1.sinks = k1 k2
a1.sinkgroups.g1.processor.type = failover
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 1
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = avro
a1.sinks.k1.hostname = 127.0.0.1
a1.sinks.k1.port = ${avroPort}
a1.sinks.k1.channel = c1
a1.sinks.k2.type = file_roll
a1.sinks.k2.sink.directory = ${path.join(notADir, "out")}
a1.sinks.k2.channel = c1
`),
    );
    // The group's start failed on k2 after k1 had connected.
    const k1 = agent.components.runners.get("group:g1")!.sinks[0];
    expect(k1.counter!.values.ConnectionCreatedCount).toBe(1);
    await agent.stop();
    for (let i = 0; i < 100 && openConnections() > 0; i++) await sleep(10);
    expect(openConnections()).toBe(0);
    await downstream.stop();
  });
});
