import { componentContext } from "../../src/components/component.ts";
import { afterEach, describe, expect, test } from "bun:test";
import net from "node:net";
import type { ComponentDefinition } from "../../src/components/component.ts";
import { definition as httpSource } from "../../src/components/sources/http.ts";
import { definition as netcat } from "../../src/components/sources/netcat.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import type { Source } from "../../src/core/source.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";

const stops: (() => unknown)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

/** A source on a channel that holds one event (and refuses at once when full), with time that moves only when told. */
async function startFull<T extends Source & { port: number }>(def: ComponentDefinition<T>, raw: Record<string, string>) {
  const { options: config, errors } = def.parse(raw);
  if (errors.length) throw new Error(JSON.stringify(errors));
  const logger = new MemoryLogger();
  const clock = new VirtualClock(Date.now());
  const source = def.create(config, componentContext("r1", { agentName: "a1", clock, logger }));
  const channel = new MemoryChannel("c1", { capacity: 1, transactionCapacity: 1, keepAlive: 0 });
  channel.start();
  const processor = new ChannelProcessor(new ReplicatingChannelSelector([channel]));
  processor.initialize();
  source.setChannelProcessor(processor);
  await source.start();
  stops.push(() => source.stop());
  return { source, logger, clock };
}

const warned = (logger: MemoryLogger, pattern: RegExp) => logger.lines.filter((l) => (l.level === "warn" || l.level === "error") && pattern.test(l.message)).map((l) => l.message);

describe("a full channel does not flood the log", () => {
  test("netcat source: one warning, then one summary line with the count per interval; ChannelWriteFail counts every batch", async () => {
    const { source, logger, clock } = await startFull(netcat, { bind: "127.0.0.1", port: "0" });
    const client = net.connect(source.port, "127.0.0.1");
    stops.push(() => client.destroy());
    await new Promise((res) => client.once("connect", res));
    let answers = "";
    client.on("data", (d) => (answers += d));
    const send = async (line: string, n: number) => {
      client.write(`${line}\n`);
      while (answers.split("\n").length - 1 < n) await new Promise((res) => setTimeout(res, 2));
    };
    await send("fills the channel", 1);
    for (let i = 0; i < 30; i++) await send(`refused ${i}`, i + 2);
    expect(answers.split("\n").filter((l) => l.startsWith("FAILED")).length).toBe(30);
    expect(source.counter.values.ChannelWriteFail).toBe(30);
    const refused = /netcat source r1: .*(error processing|refused)/;
    expect(warned(logger, refused).length).toBe(1);
    await clock.advance(10_000);
    const after = warned(logger, refused);
    expect(after.length).toBe(2);
    expect(after[1]).toContain("29");
    // No more failures: no more lines; the next failure is logged at once.
    await clock.advance(30_000);
    expect(warned(logger, refused).length).toBe(2);
    await send("refused again", 32);
    expect(warned(logger, refused).length).toBe(3);
  });

  test("http source: one warning, then one summary line with the count per interval; every request still gets its 503", async () => {
    const { source, logger, clock } = await startFull(httpSource, { bind: "127.0.0.1", port: "0" });
    const post = (body: string) => fetch(`http://127.0.0.1:${source.port}/`, { method: "POST", body, headers: { Connection: "close" } }).then((r) => r.status);
    expect(await post(JSON.stringify([{ body: "fills the channel" }]))).toBe(200);
    for (let i = 0; i < 30; i++) expect(await post(JSON.stringify([{ body: `refused ${i}` }]))).toBe(503);
    expect(source.counter.values.ChannelWriteFail).toBe(30);
    const refused = /http source r1: channel refused/;
    expect(warned(logger, refused).length).toBe(1);
    await clock.advance(10_000);
    const after = warned(logger, refused);
    expect(after.length).toBe(2);
    expect(after[1]).toContain("29");
    await clock.advance(30_000);
    expect(warned(logger, refused).length).toBe(2);
    expect(await post(JSON.stringify([{ body: "refused again" }]))).toBe(503);
    expect(warned(logger, refused).length).toBe(3);
  });
});
