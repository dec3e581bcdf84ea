import { describe, expect, test } from "bun:test";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import { bodyText, createEvent } from "../../src/core/event.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { dumpEvent } from "../../src/components/sinks/logger.ts";
import { NullSink } from "../../src/components/sinks/null.ts";
import { SeqSource } from "../../src/components/sources/seq.ts";

const ctx = (name: string) => ({ name, agentName: "a1", clock: systemClock, logger: silentLogger });

async function drain(channel: MemoryChannel): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const tx = channel.getTransaction();
    tx.begin();
    let n = 0;
    for (let e = tx.take(); e !== null; e = n < channel.getTransactionCapacity() ? tx.take() : null) (out.push(bodyText(e)), n++);
    await tx.commit();
    tx.close();
    if (n === 0) return out;
  }
}

describe("seq source", () => {
  test("bodies count up from 0 across batches and digit roll-overs, then it backs off", async () => {
    const channel = new MemoryChannel("c1", { capacity: 2000, transactionCapacity: 1000 });
    const source = new SeqSource(ctx("r1"), { batchSize: 7, totalEvents: 1005 });
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
    source.start();
    let statuses = 0;
    while ((await source.process()) === "READY") statuses++;
    expect(statuses).toBe(143); // 143 full batches of 7, then the last 4 return BACKOFF
    expect(await source.process()).toBe("BACKOFF");
    const bodies = await drain(channel);
    expect(bodies).toEqual(Array.from({ length: 1005 }, (_, i) => String(i)));
    expect(source.counter.values.EventAcceptedCount).toBe(1005);
    expect(source.counter.values.AppendBatchAcceptedCount).toBe(144);
  });

  test("a full channel counts ChannelWriteFail and the same numbers are sent again", async () => {
    const channel = new MemoryChannel("c1", { capacity: 10, transactionCapacity: 10, keepAlive: 0 });
    const source = new SeqSource(ctx("r1"), { batchSize: 10, totalEvents: 30 });
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
    expect(await source.process()).toBe("READY");
    expect(await source.process()).toBe("BACKOFF");
    expect(source.counter.values.ChannelWriteFail).toBe(1);
    expect(await drain(channel)).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
    expect(await source.process()).toBe("READY");
    expect(await drain(channel)).toEqual(Array.from({ length: 10 }, (_, i) => String(10 + i)));
  });
});

describe("null sink", () => {
  test("takes batches and discards them; an empty channel means BACKOFF", async () => {
    const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 20 });
    const tx = channel.getTransaction();
    tx.begin();
    for (let i = 0; i < 15; i++) tx.put(createEvent(String(i)));
    await tx.commit();
    tx.close();
    const sink = new NullSink(ctx("k1"), 10);
    sink.setChannel(channel);
    expect(await sink.process()).toBe("READY");
    expect(await sink.process()).toBe("BACKOFF");
    expect(sink.eventCount).toBe(15);
    expect(channel.counter.values.EventTakeAttemptCount).toBe(16);
    expect(channel.size).toBe(0);
  });
});

describe("logger sink format", () => {
  test("matches Flume's EventHelper.dumpEvent: Java map headers, hex dump of at most maxBytesToLog", () => {
    expect(dumpEvent(createEvent("Hello world!\r"), 16)).toBe("{ headers:{} body: 48 65 6C 6C 6F 20 77 6F 72 6C 64 21 0D          Hello world!. }");
    expect(dumpEvent(createEvent("0123456789abcdefXYZ", { a: "1", b: "2" }), 16)).toBe(
      "{ headers:{a=1, b=2} body: 30 31 32 33 34 35 36 37 38 39 61 62 63 64 65 66 0123456789abcdef }",
    );
    expect(dumpEvent(createEvent("0123456789abcdefXYZ"), 100)).toBe(
      "{ headers:{} body: 30 31 32 33 34 35 36 37 38 39 61 62 63 64 65 66 0123456789abcdef\n00000010 58 59 5A                                        XYZ }",
    );
    expect(dumpEvent(createEvent(""), 16)).toBe("{ headers:{} body: }");
  });
});

describe("netcat source, bad input", () => {
  test("invalid UTF-8 passes through as bytes; an abrupt disconnect mid-line is logged with the peer; other clients keep being served", async () => {
    const net = await import("node:net");
    const { MemoryLogger } = await import("../../src/core/logger.ts");
    const { NetcatSource } = await import("../../src/components/sources/netcat.ts");
    const logger = new MemoryLogger();
    const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 100 });
    const source = new NetcatSource({ name: "r1", agentName: "a1", clock: systemClock, logger }, { bind: "127.0.0.1", port: 0, maxLineLength: 512, ackEveryEvent: true });
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
    await source.start();
    try {
      const send = (bytes: Uint8Array, close: "end" | "destroy", expectAnswer: boolean) =>
        new Promise<{ answer: string; local: number }>((resolve) => {
          const s = net.connect(source.port, "127.0.0.1");
          let answer = "";
          let local = 0;
          s.on("connect", () => {
            local = s.localPort ?? 0;
            s.write(bytes);
            if (!expectAnswer) setTimeout(() => (close === "destroy" ? s.destroy() : s.end()), 50);
          });
          s.on("data", (d) => {
            answer += d;
            if (expectAnswer) s.end();
          });
          s.on("close", () => resolve({ answer, local }));
          s.on("error", () => {});
        });
      const bad = await send(new Uint8Array([0xc3, 0x28, 0xff, 0x0a]), "end", true);
      expect(bad.answer).toBe("OK\n");
      const cut = await send(new TextEncoder().encode("half a li"), "destroy", false);
      for (let i = 0; i < 50 && !logger.lines.some((l) => l.message.includes(`:${cut.local} closed with 9 bytes`)); i++) await new Promise((r) => setTimeout(r, 10));
      expect(logger.lines.some((l) => l.level === "warn" && l.message.includes(`127.0.0.1:${cut.local} closed with 9 bytes after the last newline`))).toBe(true);
      const good = await send(new TextEncoder().encode("still here\n"), "end", true);
      expect(good.answer).toBe("OK\n");
      const bodies = await drain(channel);
      expect(bodies.length).toBe(2);
      expect(bodies[1]).toBe("still here");
      expect(source.counter.values.EventAcceptedCount).toBe(2);
    } finally {
      await source.stop();
    }
  });
});
