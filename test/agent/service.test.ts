import { describe, expect, test } from "bun:test";
import net from "node:net";
import path from "node:path";
import { readFileSync, writeFileSync } from "node:fs";
import type { Channel } from "../../src/core/channel.ts";
import { EventDeliveryException } from "../../src/core/errors.ts";
import type { LifecycleState } from "../../src/core/lifecycle.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import type { DeliveryFailure, Sink, Status } from "../../src/core/sink.ts";
import { type ComponentContext, defineComponent } from "../../src/components/component.ts";
import { BaseSink } from "../../src/components/sinks/base.ts";
import { bodyText } from "../../src/core/event.ts";
import * as registry from "../../src/components/registry.ts";
import { AgentService, ConfigRejectedError, EXIT, type ReloadOutcome, ServiceStartError, startAgentService } from "../../src/agent/service.ts";
import { parseAgentConfig } from "../support/agent.ts";
import { asyncCleanupsAfterEach, canConnect, fetchMetrics, freePort, listenLocal, netcatConf, sendLines, tempDirFor, waitUntil, waitUntilListening } from "../support/helpers.ts";

const cleanups = asyncCleanupsAfterEach();

/** A sink that starts, then fails every batch (as one whose far end is down): what /ready lists under `failing`. */
class RefusingSink implements Sink {
  readonly name: string;
  private state: LifecycleState = "IDLE";
  private channel: Channel | null = null;
  private since: number | null = null;

  constructor(ctx: ComponentContext) {
    this.name = ctx.name;
  }
  setChannel(channel: Channel): void {
    this.channel = channel;
  }
  getChannel(): Channel {
    return this.channel!;
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
  start(): void {
    this.state = "START";
  }
  stop(): void {
    this.state = "STOP";
  }
  async process(): Promise<Status> {
    this.since ??= Date.now();
    throw new EventDeliveryException(`sink ${this.name}: the far end refuses every batch`);
  }
  deliveryFailure(): DeliveryFailure | null {
    return this.since === null ? null : { error: `sink ${this.name}: the far end refuses every batch`, since: this.since };
  }
}
registry.registerComponent(defineComponent({ kind: "sink", type: "refusing", doc: "Test sink: starts, then fails every batch.", props: {}, create: (_, ctx) => new RefusingSink(ctx) }));

/** A sink whose start waits until released (as one whose peer does not answer), then keeps what it takes. */
class HeldSink extends BaseSink {
  static release: () => void = () => {};
  static readonly taken: string[] = [];
  protected readonly takeLoop = this.newTakeLoop({
    batchSize: 100,
    deliver: (events) => {
      for (const e of events) HeldSink.taken.push(bodyText(e));
    },
  });

  override async start(): Promise<void> {
    await new Promise<void>((r) => (HeldSink.release = r));
    super.start();
  }
}
registry.registerComponent(defineComponent({ kind: "sink", type: "held", doc: "Test sink: its start waits until released.", props: {}, create: (_, ctx) => new HeldSink(ctx) }));

/** A service started from a config text, stopped at once after the test if still running. */
async function started(text: string, o: Parameters<typeof startAgentService>[1] = {}): Promise<AgentService> {
  const service = await startAgentService(text, { drainTimeoutMs: 200, ...o });
  cleanups.push(() => service.stopNow());
  return service;
}

/** The bodies the logger sink wrote to this log. */
function logged(log: MemoryLogger): string[] {
  return log.lines.filter((l) => l.message.startsWith("Event: ")).map((l) => l.message);
}

const withR2 = (port: number, port2: number) =>
  netcatConf(port, { sink: "logger" }).replace("a1.sources = r1", "a1.sources = r1 r2") +
  `a1.sources.r2.type = netcat\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\n`;

/** A temp file holding netcat r1 on port into a logger sink, and a second free port for a reload to add. */
async function confFile(): Promise<{ file: string; port: number; port2: number }> {
  const dir = tempDirFor(cleanups);
  const [port, port2] = [await freePort(), await freePort()];
  const file = path.join(dir, "a.conf");
  writeFileSync(file, netcatConf(port, { sink: "logger" }));
  return { file, port, port2 };
}

/** An avro sink k1 towards 127.0.0.1:port, where nothing may listen yet. */
const toAvro = (port: number, avroPort: number) =>
  netcatConf(port, { sink: "avro" }) + `a1.sinks.k1.hostname = 127.0.0.1\na1.sinks.k1.port = ${avroPort}\na1.sinks.k1.connect-timeout = 500\n`;

describe("agent service, in-process", () => {
  test("started from a config text, it takes lines from a real netcat client to the sink, and stops with exit 0 and its port closed", async () => {
    const port = await freePort();
    const log = new MemoryLogger();
    const seen: string[] = [];
    const service = new AgentService(parseAgentConfig(netcatConf(port, { sink: "logger" })), { logger: log, drainTimeoutMs: 200 });
    for (const e of ["started", "ready", "stopping", "stopped"] as const) service.on(e, () => seen.push(e));
    cleanups.push(() => service.stopNow());
    await service.start();
    expect(seen).toEqual(["started", "ready"]);
    expect(await sendLines(port, "Hello world!\nsecond line\n")).toBe("OK\nOK\n");
    await waitUntil(() => logged(log).length === 2, "two events logged");
    expect(logged(log)[0]).toContain("Hello world!");
    expect(logged(log)[1]).toContain("second line");
    expect(await service.stop()).toBe(EXIT.ok);
    expect(seen).toEqual(["started", "ready", "stopping", "stopped"]);
    expect(await canConnect(port)).toBe(false);
    expect(log.lines.some((l) => l.message === "agent a1 stopped")).toBe(true);
  });

  test("startAgentService refuses a text with errors, naming file:line, and starts nothing", async () => {
    const port = await freePort();
    const text = netcatConf(port).replace("a1.sinks.k1.type = null", "a1.sinks.k1.type = nul");
    const err = await startAgentService(text, { file: "/etc/flume/a.conf" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigRejectedError);
    expect((err as Error).message).toMatch(/\/etc\/flume\/a\.conf:9: .*unknown sink type "nul"/);
    expect((err as Error).message).toContain("nul");
    expect(await canConnect(port)).toBe(false);
  });

  test("reload() applies the saved file at once: a new source listens, the running one keeps serving", async () => {
    const { file, port, port2 } = await confFile();
    const log = new MemoryLogger();
    const service = await started(readFileSync(file, "utf8"), { file, logger: log });
    const outcomes: ReloadOutcome[] = [];
    service.on("reloaded", (r) => outcomes.push(r));
    writeFileSync(file, withR2(port, port2));
    expect(await service.reload()).toBe(true);
    expect(outcomes.length).toBe(1);
    expect(outcomes[0].started).toEqual(["source r2"]);
    expect(outcomes[0].stopped).toEqual([]);
    expect(outcomes[0].kept).toContain("source r1");
    expect(await sendLines(port2, "via r2\n")).toBe("OK\n");
    expect(await sendLines(port, "via r1\n")).toBe("OK\n");
    await waitUntil(() => logged(log).length === 2, "both events logged");

    // A broken save keeps the running configuration.
    writeFileSync(file, withR2(port, port2).replace("a1.sinks.k1.type = logger", "a1.sinks.k1.type = nosuchsink"));
    expect(await service.reload()).toBe(true);
    expect(outcomes.length).toBe(1);
    expect(log.lines.some((l) => l.level === "error" && l.message.includes("keeping the running configuration"))).toBe(true);
    expect(await sendLines(port2, "still\n")).toBe("OK\n");
    expect(await service.stop()).toBe(EXIT.ok);
  });

  test("with a poll interval a save is picked up without reload(); without a file reload() has nothing to read", async () => {
    const { file, port, port2 } = await confFile();
    const polled = await started(readFileSync(file, "utf8"), { file, pollIntervalSec: 0.05 });
    const reloaded = new Promise<ReloadOutcome>((resolve) => polled.once("reloaded", resolve));
    writeFileSync(file, withR2(port, port2));
    expect((await reloaded).started).toEqual(["source r2"]);
    expect(await waitUntilListening(port2)).toBe(true);
    await polled.stop();

    const unwatched = await started(netcatConf(await freePort()));
    expect(await unwatched.reload()).toBe(false);
  });

  test("stop() drains: events held while the next hop was down are delivered before it ends, exit 0", async () => {
    const [port, avroPort] = [await freePort(), await freePort()];
    const sender = await started(toAvro(port, avroPort), { drainTimeoutMs: 30_000 });
    expect(await sendLines(port, "one\ntwo\nthree\n")).toBe("OK\nOK\nOK\n");
    const log = new MemoryLogger();
    // The receiving agent, an avro source into a logger sink, comes up only once the drain has begun.
    sender.once("stopping", () => {
      const receiver = `b.sources = r1\nb.channels = c1\nb.sinks = k1\nb.sources.r1.type = avro\nb.sources.r1.bind = 127.0.0.1\nb.sources.r1.port = ${avroPort}\nb.sources.r1.channels = c1\nb.channels.c1.type = memory\nb.sinks.k1.type = logger\nb.sinks.k1.channel = c1\n`;
      void started(receiver, { logger: log });
    });
    expect(await sender.stop()).toBe(EXIT.ok);
    await waitUntil(() => logged(log).length === 3, "the three events logged by the receiver");
    expect(logged(log)[0]).toMatch(/ one }$/);
    expect(logged(log)[1]).toMatch(/ two }$/);
    expect(logged(log)[2]).toMatch(/ three }$/);
  });

  test("a memory channel still holding events when the drain ends: exit 3, and how many were lost", async () => {
    const [port, deadPort] = [await freePort(), await freePort()];
    const log = new MemoryLogger();
    const service = await started(toAvro(port, deadPort), { logger: log, drainTimeoutMs: 200 });
    const codes: number[] = [];
    service.on("stopped", (c) => codes.push(c));
    expect(await sendLines(port, "a\nb\n")).toBe("OK\nOK\n");
    expect(await service.stop()).toBe(EXIT.eventsLost);
    expect(codes).toEqual([3]);
    expect(service.agent.lostAtStop).toBe(2);
    expect(log.lines.some((l) => l.level === "error" && l.message.includes("2 accepted events left in memory channels were lost (exit 3)"))).toBe(true);
  });

  test("stopNow() during a long drain ends it at once", async () => {
    const [port, deadPort] = [await freePort(), await freePort()];
    const service = await started(toAvro(port, deadPort), { drainTimeoutMs: 60_000 });
    expect(await sendLines(port, "a\n")).toBe("OK\n");
    const code = service.stop();
    // The source closes first; then the sink drains, towards a port where nothing listens.
    await waitUntil(async () => !(await canConnect(port)), "the netcat source closed");
    expect(await service.stopNow()).toBe(EXIT.eventsLost);
    expect(await code).toBe(EXIT.eventsLost);
  });

  test("fail-fast: a source that cannot start in time ends the service with exit 1", async () => {
    const blocker = net.createServer();
    const taken = await listenLocal(blocker);
    cleanups.push(() => new Promise<void>((r) => blocker.close(() => r())));
    const reasons: string[] = [];
    const service = await started(netcatConf(taken), { failFastSec: 0.3 });
    service.on("stopping", (r) => reasons.push(r));
    expect(await service.exited).toBe(EXIT.notStarted);
    expect(reasons).toEqual(["--fail-fast"]);
  });

  test("fail-fast counts only components that did not start: a started sink failing its batches is listed under /ready's failing, the service is ready once the rest started, and is not ended", async () => {
    const blocker = net.createServer();
    const taken = await listenLocal(blocker);
    let blocked = true;
    cleanups.push(() => (blocked ? new Promise<void>((r) => blocker.close(() => r())) : undefined));
    const metricsPort = await freePort();
    const log = new MemoryLogger();
    const failFastSec = 8;
    const t0 = Date.now();
    const events: string[] = [];
    const service = new AgentService(parseAgentConfig(netcatConf(taken, { sink: "refusing" })), { logger: log, drainTimeoutMs: 200, failFastSec, metrics: { port: metricsPort, bind: "127.0.0.1" } });
    for (const e of ["ready", "stopping"] as const) service.on(e, () => events.push(e));
    cleanups.push(() => service.stopNow());
    await service.start();
    type Ready = { ready: boolean; notStarted: { kind: string; name: string; state: string }[]; failing: { kind: string; name: string; state: string; error: string; since: string }[] };
    const ready = async (): Promise<{ status: number; body: Ready }> => {
      const r = await fetch(`http://127.0.0.1:${metricsPort}/ready`);
      return { status: r.status, body: (await r.json()) as Ready };
    };
    // r1 cannot listen, k1 started and fails its batches: each in its own list.
    await waitUntil(async () => (await ready()).body.failing.length > 0, "/ready listing the failing sink", 10_000, 50);
    const both = await ready();
    expect(both.status).toBe(503);
    expect(both.body.notStarted.map((c) => `${c.kind} ${c.name}`)).toEqual(["source r1"]);
    expect(both.body.failing).toEqual([{ kind: "sink", name: "k1", state: "FAILING", error: "sink k1: the far end refuses every batch", since: expect.any(String) }]);
    expect(Date.parse(both.body.failing[0].since)).toBeGreaterThanOrEqual(t0);
    expect(events).toEqual([]);

    // r1 starts on the supervisor's next retry: every component started, the sink still failing.
    await new Promise<void>((r) => blocker.close(() => r()));
    blocked = false;
    await waitUntil(() => events.includes("ready"), "the service ready once every component started", 15_000, 50);
    expect(log.lines.some((l) => /^agent a1: every component has started; sink k1 failing since \S+: sink k1: the far end refuses every batch$/.test(l.message))).toBe(true);
    const after = await ready();
    expect(after.status).toBe(503);
    expect(after.body.notStarted).toEqual([]);
    expect(after.body.failing.map((c) => c.name)).toEqual(["k1"]);
    // Past the fail-fast deadline: the service runs on.
    await waitUntil(() => Date.now() - t0 > (failFastSec + 1) * 1000, "past the fail-fast deadline", (failFastSec + 5) * 1000, 100);
    expect(events).toEqual(["ready"]);
    expect(log.lines.some((l) => l.message.includes("--fail-fast"))).toBe(false);
  }, 30_000);

  test("a metrics server that cannot listen: the start rejects before any component starts (the source never listens), exit 1", async () => {
    const blocker = net.createServer();
    const taken = await listenLocal(blocker);
    cleanups.push(() => new Promise<void>((r) => blocker.close(() => r())));
    const port = await freePort();
    const err = await startAgentService(netcatConf(port), { metrics: { port: taken, bind: "127.0.0.1" }, drainTimeoutMs: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceStartError);
    expect((err as ServiceStartError).exitCode).toBe(EXIT.notStarted);
    expect(await canConnect(port)).toBe(false);
  });

  test("metrics are served while it runs and the server closes with the stop", async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const service = await started(netcatConf(port), { metrics: { port: metricsPort, bind: "127.0.0.1" } });
    expect(await sendLines(port, "x\n")).toBe("OK\n");
    await waitUntil(async () => (await fetchMetrics(metricsPort))["SOURCE.r1"]?.EventAcceptedCount === "1", "r1 counted one event");
    expect(await service.stop()).toBe(EXIT.ok);
    expect(await canConnect(metricsPort)).toBe(false);
  });

  test("a sink whose start is held by its peer: /health and /ready answer meanwhile (the sink runner STARTING), the source already accepts, and its events are delivered once the sink starts", async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const service = new AgentService(parseAgentConfig(netcatConf(port, { sink: "held" })), { drainTimeoutMs: 200, metrics: { port: metricsPort, bind: "127.0.0.1" } });
    cleanups.push(() => service.stopNow());
    const ready: string[] = [];
    service.on("ready", () => ready.push("ready"));
    const starting = service.start();
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${metricsPort}/health`).catch(() => null))?.status === 200, "/health answering during the start", 10_000, 50);
    type Ready = { ready: boolean; notStarted: { kind: string; name: string; state: string }[] };
    const r = await fetch(`http://127.0.0.1:${metricsPort}/ready`);
    expect(r.status).toBe(503);
    const body = (await r.json()) as Ready;
    expect(body.ready).toBe(false);
    expect(body.notStarted).toContainEqual({ kind: "sink runner", name: "k1", state: "STARTING" });
    await waitUntilListening(port);
    expect(await sendLines(port, "early\n")).toBe("OK\n");
    expect(HeldSink.taken).toEqual([]);
    expect(ready).toEqual([]);

    HeldSink.release();
    await starting;
    await waitUntil(() => HeldSink.taken.includes("early"), "the line accepted during the start delivered", 10_000, 20);
    await waitUntil(() => ready.length === 1, "the service ready", 10_000, 20);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/ready`)).status).toBe(200);
    expect(await service.stop()).toBe(EXIT.ok);
  });

  test("a stop() before start() leaves nothing started", async () => {
    const port = await freePort();
    const service = new AgentService(parseAgentConfig(netcatConf(port)));
    expect(await service.stop()).toBe(EXIT.ok);
    await service.start();
    expect(await canConnect(port)).toBe(false);
  });
});
