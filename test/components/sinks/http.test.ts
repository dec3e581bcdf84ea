import { componentContext } from "../../../src/components/component.ts";
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import http from "node:http";
import { definition as httpSink, type HttpSink } from "../../../src/components/sinks/http.ts";
import * as registry from "../../../src/components/registry.ts";
import { validateConfigText } from "../../../src/config/validate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { putBatch } from "../../../src/core/channel-processor.ts";
import { EventDeliveryException } from "../../../src/core/errors.ts";
import { createEvent } from "../../../src/core/event.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { takeAll, text } from "../../support/network.ts";

interface Received {
  body: string;
  contentType?: string;
  accept?: string;
}

/** A collector that answers each POST with the next status of `statuses` (the last repeats). */
let server: http.Server;
let received: Received[];
let statuses: number[];
let hang = false;
let port = 0;

beforeEach(async () => {
  received = [];
  statuses = [200];
  hang = false;
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", () => {
      received.push({ body: Buffer.concat(chunks).toString(), contentType: req.headers["content-type"], accept: req.headers.accept });
      if (hang) return;
      const status = statuses.length > 1 ? (statuses.shift() as number) : statuses[0];
      res.writeHead(status, { "Content-Type": "text/plain" });
      res.end(`status ${status}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as { port: number }).port;
});

const sinks: HttpSink[] = [];
afterEach(async () => {
  for (const s of sinks.splice(0)) await s.stop();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

async function sinkWith(raw: Record<string, string>, bodies: string[] = ["e1"]) {
  const { options: config, errors } = httpSink.parse({ endpoint: `http://127.0.0.1:${port}/events`, ...raw });
  const all = [...errors, ...(httpSink.validate?.(config) ?? [])];
  if (all.length) throw new Error(all.map((e) => `${e.key}: ${e.message}`).join("; "));
  const logger = new MemoryLogger();
  const sink = httpSink.create(config, componentContext("k1", { agentName: "a1", clock: systemClock, logger }));
  const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 100 });
  channel.start();
  await putBatch(channel, bodies.map((b) => createEvent(b, { h: "v" })));
  sink.setChannel(channel);
  await sink.start();
  sinks.push(sink);
  return { sink, channel, logger };
}

/** The User Guide's example policy. */
const GUIDE = { "backoff.200": "false", "rollback.200": "false", "backoff.4XX": "false", "rollback.4XX": "false", "incrementMetrics.200": "true" };

describe("http sink", () => {
  test("posts the body with the configured Content-Type and Accept; 200 commits under the User Guide policy", async () => {
    const { sink, channel } = await sinkWith({ ...GUIDE, contentTypeHeader: "application/json", acceptHeader: "application/json" }, ['{"a":1}', '{"b":2}']);
    expect(await sink.process()).toBe("READY");
    expect(await sink.process()).toBe("READY");
    expect(received).toEqual([
      { body: '{"a":1}', contentType: "application/json", accept: "application/json" },
      { body: '{"b":2}', contentType: "application/json", accept: "application/json" },
    ]);
    expect(channel.size).toBe(0);
    expect(sink.counter.get("EventDrainAttemptCount")).toBe(2);
    expect(sink.counter.get("EventDrainSuccessCount")).toBe(2);
    expect(await sink.process()).toBe("BACKOFF");
    // Flume 1.11's HttpSink counts no batches: a full one and an empty poll leave them 0.
    expect(sink.counter.values).toMatchObject({ BatchEmptyCount: 0, BatchUnderflowCount: 0, BatchCompleteCount: 0 });
  });

  test("Flume's defaults roll back and back off on every status, even 200 (and say so at start)", async () => {
    const { sink, channel, logger } = await sinkWith({});
    expect(await sink.process()).toBe("BACKOFF");
    expect(received.map((r) => r.body)).toEqual(["e1"]);
    expect(received[0].contentType).toBe("text/plain");
    expect(received[0].accept).toBe("text/plain");
    expect(channel.size).toBe(1);
    expect(sink.counter.get("EventDrainSuccessCount")).toBe(0);
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("rollback.2XX"))).toBe(true);
  });

  test("4XX commits (drops) under the guide policy without backoff; 503 rolls back and backs off", async () => {
    statuses = [400, 503, 200];
    const { sink, channel } = await sinkWith(GUIDE, ["bad", "retry-me"]);
    expect(await sink.process()).toBe("READY");
    expect(channel.size).toBe(1);
    expect(await sink.process()).toBe("BACKOFF");
    expect(channel.size).toBe(1);
    expect(await sink.process()).toBe("READY");
    expect(channel.size).toBe(0);
    expect(received.map((r) => r.body)).toEqual(["bad", "retry-me", "retry-me"]);
    expect(sink.counter.get("EventDrainSuccessCount")).toBe(1);
  });

  test("the most specific rule wins: 503 over 50X over 5XX over the default", async () => {
    statuses = [500, 502, 503, 504, 302];
    const { sink, channel } = await sinkWith({ "rollback.5XX": "false", "rollback.50X": "true", "rollback.502": "false", "rollback.503": "false", "backoff.5xx": "false", "incrementMetrics.5XX": "true" }, ["a", "b", "c", "d", "e"]);
    const sizes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const status = await sink.process();
      sizes.push(channel.size);
      if (i < 4) expect(status).toBe("READY");
      else expect(status).toBe("BACKOFF");
    }
    // 500 -> 50X rolls back; 502 and 503 exact commit; 504 -> 50X rolls back; 302 -> default rollback.
    expect(sizes).toEqual([5, 4, 3, 3, 3]);
    expect(sink.counter.get("EventDrainSuccessCount")).toBe(4);
  });

  test("a request timeout rolls back and throws EventDeliveryException; the event is kept", async () => {
    hang = true;
    const { sink, channel } = await sinkWith({ ...GUIDE, requestTimeout: "200" });
    const err = await sink.process().catch((e) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect(String(err.message)).toMatch(/127\.0\.0\.1/);
    expect(channel.size).toBe(1);
    expect(sink.counter.get("EventWriteFail")).toBe(1);
    hang = false;
    expect(await sink.process()).toBe("READY");
    expect(channel.size).toBe(0);
  });

  test("a refused connection rolls back and throws; nothing is lost", async () => {
    const { sink, channel } = await sinkWith(GUIDE);
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    const err = await sink.process().catch((e) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect(String(err.message)).toMatch(/ECONNREFUSED|refused/i);
    expect((await takeAll(channel)).map(text)).toEqual(["e1"]);
    server = http.createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  });

  test("configuration errors name the key", () => {
    const errs = (raw: Record<string, string>) => {
      const { options: config, errors } = httpSink.parse(raw);
      return [...errors, ...(httpSink.validate?.(config) ?? [])].map((e) => e.key).join();
    };
    expect(errs({})).toContain("endpoint");
    expect(errs({ endpoint: "not a url" })).toContain("endpoint");
    expect(errs({ endpoint: "ftp://x/" })).toContain("endpoint");
    expect(errs({ endpoint: "http://x/", "backoff.6XX": "true" })).toContain("backoff.6XX");
    expect(errs({ endpoint: "http://x/", "rollback.200": "maybe" })).toContain("rollback.200");
    expect(errs({ endpoint: "http://x/", connectTimeout: "0" })).toContain("connectTimeout");
  });

  test("status overrides are typed groups: true or false, read by the schema and reported at their lines", () => {
    const { options, errors } = httpSink.parse({ endpoint: "http://x/", "rollback.2XX": " FALSE", "backoff.503": "true" });
    expect(errors).toEqual([]);
    expect([options.rollback, options.backoff]).toEqual([{ "2XX": false }, { "503": true }]);
    const conf = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = seq", "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", "a1.sinks.k1.type = http", "a1.sinks.k1.channel = c1", "a1.sinks.k1.endpoint = http://x/", "a1.sinks.k1.rollback.200 = maybe", "a1.sinks.k1.backoff.6XX = true", ""];
    const problems = validateConfigText(conf.join("\n"), "h.conf", {}, registry).problems.map((p) => `${p.file}:${p.line} ${p.component} ${p.key}: ${p.message}`);
    // A value that is no boolean is the schema's error; a code that is no status, the sink's own check.
    expect(problems).toEqual(['h.conf:10 sink k1 rollback.200: expected true or false, got "maybe"', "h.conf:11 sink k1 backoff.6XX: expected an HTTP status code (503) or pattern (50X, 5XX)"]);
  });
});
