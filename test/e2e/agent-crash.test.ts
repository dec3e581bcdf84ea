import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import type { Event } from "../../src/core/event.ts";
import { AvroRpcServer } from "../../src/rpc/server.ts";
import { freePort, startCli, tempDir } from "../support/helpers.ts";
import { drain, openChannel, rng } from "../support/file-channel.ts";

const SEED = Number(process.env.FLUME_CRASH_SEED ?? 7);
const CYCLES = 8;


/**
 * Sends numbered lines to the agent's netcat source, at most `window` unanswered, counting the
 * "OK" answers: the n-th OK acknowledges the n-th line (netcat answers after the commit).
 */
function pump(port: number, prefix: string): { acked(): number; stop(): void } {
  const socket = net.connect(port, "127.0.0.1");
  let sent = 0;
  let acked = 0;
  let stopped = false;
  const window = 200;
  const fill = () => {
    if (stopped) return;
    let chunk = "";
    while (sent - acked < window) chunk += `${prefix}${sent++}\n`;
    if (chunk) socket.write(chunk);
  };
  let partial = "";
  socket.on("connect", fill);
  socket.on("data", (d) => {
    partial += d.toString("utf8");
    const lines = partial.split("\n");
    partial = lines.pop() ?? "";
    for (const l of lines) if (l === "OK") acked++;
    fill();
  });
  socket.on("error", () => {});
  return {
    acked: () => acked,
    stop: () => {
      stopped = true;
      socket.destroy();
    },
  };
}

test(`flume run: netcat -> file channel -> avro sink, SIGKILLed ${CYCLES} times (seed ${SEED}): every acknowledged line arrives`, async () => {
  const { dir, cleanup } = tempDir("flume-fc-agent-");
  const received = new Set<string>();
  const decoder = new TextDecoder();
  const record = (e: Event) => received.add(decoder.decode(e.body));
  const server = new AvroRpcServer(
    {
      appendBatch: async (events) => {
        for (const e of events) record(e);
        return "OK";
      },
      append: async (event) => {
        record(event);
        return "OK";
      },
    },
    { bind: "127.0.0.1", port: 0 },
  );
  const sinkPort = await server.listen();
  try {
    const random = rng(SEED);
    const acked: { prefix: string; count: number }[] = [];
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const sourcePort = await freePort();
      const conf = path.join(dir, "agent.conf");
      writeFileSync(
        conf,
        [
          "a1.sources = r1",
          "a1.channels = c1",
          "a1.sinks = k1",
          "a1.sources.r1.type = netcat",
          "a1.sources.r1.bind = 127.0.0.1",
          `a1.sources.r1.port = ${sourcePort}`,
          "a1.sources.r1.channels = c1",
          "a1.channels.c1.type = file",
          `a1.channels.c1.checkpointDir = ${path.join(dir, "checkpoint")}`,
          `a1.channels.c1.dataDirs = ${path.join(dir, "data")}`,
          "a1.channels.c1.checkpointInterval = 1000",
          "a1.channels.c1.maxFileSize = 65536",
          "a1.channels.c1.minimumRequiredSpace = 1048576",
          "a1.sinks.k1.type = avro",
          "a1.sinks.k1.hostname = 127.0.0.1",
          `a1.sinks.k1.port = ${sinkPort}`,
          "a1.sinks.k1.batch-size = 50",
          "a1.sinks.k1.channel = c1",
          "",
        ].join("\n"),
      );
      const agent = startCli(["run", "-f", conf, "-n", "a1", "--no-reload-conf", "--quiet"]);
      await agent.waitFor(/agent a1 started/);
      const prefix = `c${cycle}-`;
      const client = pump(sourcePort, prefix);
      await new Promise((r) => setTimeout(r, 100 + Math.floor(random() * 300)));
      const count = client.acked();
      agent.child.kill("SIGKILL");
      await agent.exited();
      client.stop();
      acked.push({ prefix, count });
    }
    const { ch } = await openChannel(dir);
    const remaining = new Set(await drain(ch));
    await ch.stop();
    const missing: string[] = [];
    let total = 0;
    for (const { prefix, count } of acked) {
      for (let i = 0; i < count; i++) {
        total++;
        const line = `${prefix}${i}`;
        if (!received.has(line) && !remaining.has(line)) missing.push(line);
      }
    }
    if (process.env.FLUME_CRASH_DEBUG) console.log({ acked: total, received: received.size, remaining: remaining.size });
    expect(total).toBeGreaterThan(100);
    expect(received.size).toBeGreaterThan(0);
    expect(missing.slice(0, 20)).toEqual([]);
  } finally {
    await server.close();
    cleanup();
  }
}, 90_000);
