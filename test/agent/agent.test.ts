import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import net from "node:net";
import { Agent } from "../../src/agent/agent.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { type ComponentContext, defineComponent } from "../../src/components/component.ts";
import * as registry from "../../src/components/registry.ts";
import { BaseSink } from "../../src/components/sinks/base.ts";
import { BaseSource } from "../../src/components/sources/base.ts";
import { createEvent } from "../../src/core/event.ts";
import { canConnect, cleanupsAfterEach, fileChannelLines, freePort, listenLocal, netcatConf, sleep, tempDir, tempDirFor, waitUntil } from "../support/helpers.ts";
import { parseAgentConfig, seqConf } from "../support/agent.ts";
import { needsOpenssl } from "../support/requires.ts";
import { selfSignedCert } from "../support/tls.ts";

const cleanups = cleanupsAfterEach();

const parse = (text: string) => parseAgentConfig(text, "agent.conf");

function fileChannelConf(port: number, dir: string, extra = ""): string {
  return netcatConf(port, { channel: `${fileChannelLines(dir)}
${extra}` });
}

describe("agent lifecycle under an operator's hands", () => {
  test("stop() called while start() is still running leaves nothing running (SIGTERM during startup)", async () => {
    const dir = tempDirFor(cleanups);
    const port = await freePort();
    const agent = new Agent("a1", { drainTimeout: 200 });
    await Promise.all([agent.start(parse(fileChannelConf(port, dir))), agent.stop()]);
    // The netcat port is closed and the file channel released its directory lock.
    expect(await canConnect(port)).toBe(false);
    expect(existsSync(path.join(dir, "ckpt", "in_use.lock"))).toBe(false);
  });

  test("stop() called while a reload is applying leaves none of the new components running (SIGTERM during reload)", async () => {
    const dir = tempDirFor(cleanups);
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
    const dir = tempDirFor(cleanups);
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
    // A 503 before the downstream accepts puts the sink to sleep 5 s (Flume's sleep after a
    // failed process()), which a drain respects: the drain outlasts it.
    const agent = new Agent("a1", { drainTimeout: 8000 });
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
    await waitUntil(() => c1.counter.values.ChannelSize >= 20, "20 events in c1", 2000);
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
    await waitUntil(() => c1.counter.values.ChannelSize >= 10, "10 events in c1", 2000);
    await agent.stop();
    const failures = logger.lines.filter((l) => l.level === "error" && l.message.includes("Unable to deliver"));
    // Bounded drain: the events are reported as lost, after a handful of attempts, not one every 20 ms.
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("still held 10 events"))).toBe(true);
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.length).toBeLessThanOrEqual(3);
  });

  test("a sink group that cannot start (one sink's directory is unusable) does not leak its other sink's connection", async () => {
    const dir = tempDirFor(cleanups);
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
    await waitUntil(() => openConnections() === 0, "the connections closed", 1000);
    expect(openConnections()).toBe(0);
    await downstream.stop();
  });
});

// Sources and sinks list their channels in another order than a1.channels does.
const CONF = `a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 10
a1.sources.r1.channels = c2
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = 10
a1.sources.r2.channels = c1
a1.channels.c1.type = memory
a1.channels.c2.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c2
a1.sinks.k2.type = null
a1.sinks.k2.channel = c1
`;

describe("reload keeps what did not change", () => {
  test("an unchanged source or sink keeps running whatever order its channels are declared in", async () => {
    const agent = new Agent("a1", { drainTimeout: 200 });
    await agent.start(parse(CONF));
    const r1 = agent.components.sources.get("r1")!.source;
    const r = await agent.reload(parse(`${CONF}a1.channels.c1.capacity = 200\n`));
    await agent.stop();
    expect(r.started).toEqual([]);
    expect(r.stopped).toEqual([]);
    expect(agent.components.sources.get("r1")!.source).toBe(r1);
    expect(r.kept.sort()).toEqual(["channel c1", "channel c2", "sink runner k1", "sink runner k2", "source r1", "source r2"]);
  });
});

describe("reload report", () => {
  test("a new source whose port is taken is reported as not started (and retried), not as started", async () => {
    const blocker = net.createServer();
    const taken = await listenLocal(blocker);
    const agent = new Agent("a1", { drainTimeout: 200 });
    try {
      await agent.start(parse(CONF));
      const r = await agent.reload(
        parse(`${CONF.replace("a1.sources = r1 r2", "a1.sources = r1 r2 r3")}a1.sources.r3.type = netcat
a1.sources.r3.bind = 127.0.0.1
a1.sources.r3.port = ${taken}
a1.sources.r3.channels = c1
`),
      );
      expect(r.started).toHaveLength(1);
      expect(r.started[0]).toMatch(/^source r3 \(not started, retrying: .*EADDRINUSE/);
    } finally {
      await agent.stop();
      blocker.close();
    }
  });
});

describe("drain on stop", () => {
  test("a sink whose downstream answers 503 (BACKOFF) keeps its backoff during the drain instead of being retried every 20 ms", async () => {
    let requests = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        requests++;
        res.writeHead(503).end();
      });
    });
    const endpoint = `http://127.0.0.1:${await listenLocal(server)}/`;
    cleanups.push(() => server.close());
    const logger = new MemoryLogger();
    // 5 s: the sink's next try comes within its backoff (1, 2, then 4 s) even on a loaded machine.
    const agent = new Agent("a1", { drainTimeout: 5000, logger });
    await agent.start(
      parse(seqConf(10, { sink: `a1.sinks.k1.type = http
a1.sinks.k1.endpoint = ${endpoint}` })),
    );
    const c1 = agent.components.channels.get("c1")!.channel;
    await waitUntil(() => c1.counter.values.ChannelSize >= 10 && requests > 0, "10 events in c1 and a request", 2000);
    expect(requests).toBeGreaterThan(0);
    const before = requests;
    await agent.stop();
    const duringDrain = requests - before;
    // The sink's own backoff (1 s, 2 s, ...): a handful of tries, not one every 20 ms (~250).
    expect(duringDrain).toBeGreaterThan(0);
    expect(duringDrain).toBeLessThanOrEqual(3);
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("still held 10 events"))).toBe(true);
  }, 30_000); // the stop waits out the 5 s drain

  test("the drain still ends as soon as the sinks emptied the channel", async () => {
    let accepting = false;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(accepting ? 200 : 503).end());
    });
    const endpoint = `http://127.0.0.1:${await listenLocal(server)}/`;
    cleanups.push(() => server.close());
    const logger = new MemoryLogger();
    // A long drain timeout: the stop must not wait it out once the channel is empty.
    const agent = new Agent("a1", { drainTimeout: 60_000, logger });
    await agent.start(
      parse(seqConf(10, { sink: `a1.sinks.k1.type = http
a1.sinks.k1.endpoint = ${endpoint}
a1.sinks.k1.rollback.200 = false
a1.sinks.k1.backoff.200 = false` })),
    );
    const c1 = agent.components.channels.get("c1")!.channel;
    await waitUntil(() => c1.counter.values.ChannelSize >= 10, "10 events in c1", 2000);
    accepting = true;
    const outcome = await Promise.race([agent.stop().then(() => "stopped"), sleep(4000).then(() => "still draining")]);
    expect(outcome).toBe("stopped");
    expect(c1.counter.values.ChannelSize).toBe(0);
    expect(logger.lines.some((l) => l.message.includes("still held"))).toBe(false);
  });
});

/** A sink whose start waits on a peer that never answers, until the agent stops and gives it up (abortStart). */
class NeverStartingSink extends BaseSink {
  private fail: ((err: Error) => void) | null = null;
  protected readonly takeLoop = this.newTakeLoop({ batchSize: 100, deliver: () => {} });
  override start(): Promise<void> {
    return new Promise((_, reject) => (this.fail = reject));
  }
  abortStart(): void {
    this.fail?.(new Error(`${this.name}: given up while it started`));
  }
}
registry.registerComponent(defineComponent({ kind: "sink", type: "never-starting", doc: "Test sink: its start waits until given up.", props: {}, create: (_, ctx) => new NeverStartingSink(ctx) }));

describe("drain on stop, when a sink never started", () => {
  test("the stop does not sit out the drain for a channel no started sink reads (its sink's start waits on a peer), and says why its events were not drained", async () => {
    const logger = new MemoryLogger();
    const agent = new Agent("a1", { drainTimeout: 60_000, logger });
    // The start waits for the sink's first start; the seq source fills c1 meanwhile.
    const starting = agent.start(parse(seqConf(10, { sink: "a1.sinks.k1.type = never-starting" }))).catch(() => {});
    await waitUntil(() => agent.components.channels.get("c1")?.channel.counter.values.ChannelSize === 10, "10 events in c1", 10_000);
    const outcome = await Promise.race([agent.stop().then(() => "stopped"), sleep(10_000).then(() => "still draining")]);
    expect(outcome).toBe("stopped");
    await starting;
    expect(logger.lines.filter((l) => l.level === "warn").map((l) => l.message)).toContain("channel c1 still held 10 events; no sink reading it had started, so nothing drained it; a memory channel loses them");
    expect(agent.lostAtStop).toBe(10);
  }, 30_000);
});

/** A source that hands its buffered batch to the channel when it stops (as a tailer flushes). */
class FlushOnStopSource extends BaseSource {
  readonly kind = "event-driven";
  static flushErrors: string[] = [];
  constructor(
    ctx: ComponentContext,
    private readonly batchSize: number,
  ) {
    super(ctx);
  }
  start(): void {
    this.state = "START";
  }
  async stop(): Promise<void> {
    const batch = Array.from({ length: this.batchSize }, (_, i) => createEvent(`last ${i}`));
    try {
      await this.getChannelProcessor().processEventBatch(batch);
    } catch (err) {
      FlushOnStopSource.flushErrors.push((err as Error).message);
    }
    this.state = "STOP";
  }
}

const flushSource = defineComponent({
  kind: "source",
  type: "flush-on-stop",
  doc: "Test source: writes one batch when it stops.",
  props: { batchSize: { type: "int", default: 1, min: 1, roles: ["batchSize"], doc: "Events written at stop" } },
  create: (config, ctx) => new FlushOnStopSource(ctx, config.batchSize),
});
registry.registerComponent(flushSource);

const BASE = seqConf(0, { channel: `a1.channels.c1.type = memory
a1.channels.c1.capacity = 100
a1.channels.c1.transactionCapacity = 100` });

describe("reload resizing a memory channel", () => {
  needsOpenssl.test("a reload that fails to build a later component leaves the channel's capacity as it was", async () => {
    const agent = new Agent("a1", { drainTimeout: 200 });
    await agent.start(parse(BASE));
    const c1 = agent.components.channels.get("c1")!.channel;
    expect(c1.counter.values.ChannelCapacity).toBe(100);
    // r2's certificate is there when the file is validated (which opens it), gone when the
    // reload builds it: its create() throws after c1 was handled.
    const { dir, cleanup } = tempDir();
    selfSignedCert(dir, "r2");
    const broken = `${BASE.replace("a1.sources = r1", "a1.sources = r1 r2").replace("capacity = 100\n", "capacity = 200\n")}a1.sources.r2.type = http
a1.sources.r2.bind = 127.0.0.1
a1.sources.r2.port = 0
a1.sources.r2.ssl = true
a1.sources.r2.ssl-certificate = ${path.join(dir, "r2.crt.pem")}
a1.sources.r2.ssl-key = ${path.join(dir, "r2.key.pem")}
a1.sources.r2.channels = c1
`;
    const brokenConfig = parse(broken);
    cleanup();
    await expect(agent.reload(brokenConfig)).rejects.toThrow(/r2\.crt\.pem/);
    // The old configuration keeps running, with its channel as configured.
    expect(c1.counter.values.ChannelCapacity).toBe(100);
    // A later good reload still applies the resize (the failed one did not mark it as done).
    await agent.reload(parse(BASE.replace("capacity = 100\n", "capacity = 200\n")));
    expect(agent.components.channels.get("c1")!.channel).toBe(c1);
    expect(c1.counter.values.ChannelCapacity).toBe(200);
    await agent.stop();
  });

  test("a smaller transactionCapacity applies only after the old source (with its bigger batch) stopped", async () => {
    FlushOnStopSource.flushErrors = [];
    const conf = (batch: number, tc: number) => `a1.sources = r1
a1.channels = c1
a1.sources.r1.type = flush-on-stop
a1.sources.r1.batchSize = ${batch}
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.channels.c1.capacity = 100
a1.channels.c1.transactionCapacity = ${tc}
`;
    const agent = new Agent("a1", { drainTimeout: 200 });
    await agent.start(parse(conf(50, 100)));
    const c1 = agent.components.channels.get("c1")!.channel;
    // The operator lowers both the batch and the transaction capacity.
    await agent.reload(parse(conf(10, 10)));
    expect(agent.components.channels.get("c1")!.channel).toBe(c1);
    // The old source's last batch of 50 went in under the old transactionCapacity.
    expect(FlushOnStopSource.flushErrors).toEqual([]);
    expect(c1.counter.values.ChannelSize).toBe(50);
    await agent.stop();
    // The new source's batch of 10 fits the new transactionCapacity too.
    expect(FlushOnStopSource.flushErrors).toEqual([]);
  });
});
