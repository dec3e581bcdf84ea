import { describe, expect, test } from "bun:test";
import http from "node:http";
import { Agent } from "../../src/agent/agent.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { cleanupsAfterEach, listenLocal, sleep } from "../support/helpers.ts";
import { parseAgentConfig, seqConf } from "../support/agent.ts";

const cleanups = cleanupsAfterEach();

const parse = (text: string) => parseAgentConfig(text, "review2.conf");

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
    const agent = new Agent("a1", { drainTimeout: 1000, logger });
    await agent.start(
      parse(seqConf(10, { sink: `a1.sinks.k1.type = http
a1.sinks.k1.endpoint = ${endpoint}` })),
    );
    const c1 = agent.components.channels.get("c1")!.channel;
    for (let i = 0; i < 200 && (c1.counter.values.ChannelSize < 10 || requests === 0); i++) await sleep(10);
    expect(requests).toBeGreaterThan(0);
    const before = requests;
    await agent.stop();
    const duringDrain = requests - before;
    // One immediate try, then the sink's own backoff (1 s and growing): a handful, not ~50.
    expect(duringDrain).toBeGreaterThan(0);
    expect(duringDrain).toBeLessThanOrEqual(3);
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("still held 10 events"))).toBe(true);
  });

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
    for (let i = 0; i < 200 && c1.counter.values.ChannelSize < 10; i++) await sleep(10);
    accepting = true;
    const outcome = await Promise.race([agent.stop().then(() => "stopped"), sleep(4000).then(() => "still draining")]);
    expect(outcome).toBe("stopped");
    expect(c1.counter.values.ChannelSize).toBe(0);
    expect(logger.lines.some((l) => l.message.includes("still held"))).toBe(false);
  });
});
