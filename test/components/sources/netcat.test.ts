import { componentContext } from "../../../src/components/component.ts";
import { drain as drainAll } from "../../support/core.ts";
import { describe, expect, test } from "bun:test";
import net from "node:net";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { definition as netcat, type NetcatSource } from "../../../src/components/sources/netcat.ts";
import { slowCommits, waitUntil } from "../../support/helpers.ts";
import type { TcpServer } from "../../../src/net/tcp-server.ts";
import { rig, stoppedAfterEach, takeAll, text, until } from "../../support/network.ts";

const started = stoppedAfterEach<NetcatSource>();

/** Every event's body, in transactions as large as the channel allows. */
const drain = (channel: MemoryChannel) => drainAll(channel, channel.getTransactionCapacity());

describe("netcat source, bad input", () => {
  test("invalid UTF-8 passes through as bytes; an abrupt disconnect mid-line is logged with the peer; other clients keep being served", async () => {
    const net = await import("node:net");
    const { MemoryLogger } = await import("../../../src/core/logger.ts");
    const { NetcatSource } = await import("../../../src/components/sources/netcat.ts");
    const logger = new MemoryLogger();
    const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 100 });
    const source = new NetcatSource(componentContext("r1", { agentName: "a1", clock: systemClock, logger }), { bind: "127.0.0.1", port: 0, maxLineLength: 512, ackEveryEvent: true });
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
      await waitUntil(() => logger.lines.some((l) => l.message.includes(`:${cut.local} closed with 9 bytes`)), "the cut connection logged", 500);
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

/** Sends `data`, half-closes (like `printf ... | nc -N`), and returns what the server answered until it closed. */
function sendAndHalfClose(port: number, data: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = "";
    const client = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true }, () => {
      client.write(data);
      client.end();
    });
    client.on("data", (d) => (answer += d));
    client.on("error", reject);
    client.on("close", () => resolve(answer));
  });
}

describe("netcat source, clients that half-close or never read", () => {
  test("a client that half-closes after its lines still gets an OK for each committed line", async () => {
    const r = rig(netcat, { bind: "127.0.0.1", port: "0" });
    // A channel that takes a moment to commit, as a file channel does.
    slowCommits(r.source);
    await r.source.start();
    started.push(r.source);
    const answer = await sendAndHalfClose(r.source.port, "one\ntwo\nthree\n");
    expect((await takeAll(r.channel)).map(text)).toEqual(["one", "two", "three"]);
    expect(answer).toBe("OK\nOK\nOK\n");
  });

  test("after an overlong line is refused nothing more from that client is taken, and the connection closes when it half-closes", async () => {
    const r = rig(netcat, { bind: "127.0.0.1", port: "0", "max-line-length": "16" });
    await r.source.start();
    started.push(r.source);
    const answer = await sendAndHalfClose(r.source.port, "ok\n" + "x".repeat(40) + "\nlate1\nlate2\n");
    expect(answer).toBe("OK\nFAILED: Event exceeds the maximum length (16 chars, including newline)\n");
    expect((await takeAll(r.channel)).map(text)).toEqual(["ok"]);
    expect(r.logger.lines.some((l) => /127\.0\.0\.1:\d+ sent a line over max-line-length 16/.test(l.message))).toBe(true);
  });

  test("a half-close after an unterminated line closes the connection and says the bytes were not an event", async () => {
    const r = rig(netcat, { bind: "127.0.0.1", port: "0" });
    await r.source.start();
    started.push(r.source);
    const answer = await sendAndHalfClose(r.source.port, "whole\npartial");
    expect(answer).toBe("OK\n");
    expect((await takeAll(r.channel)).map(text)).toEqual(["whole"]);
    expect(r.logger.lines.some((l) => /127\.0\.0\.1:\d+ closed with 7 bytes after the last newline/.test(l.message))).toBe(true);
    await until(() => r.source.counter.get("OpenConnectionCount") === 0, 5000, "the server side to close");
  });

  test("a client that never reads its OKs is slowed down instead of the server buffering them without bound", async () => {
    const r = rig(netcat, { bind: "127.0.0.1", port: "0" }, { capacity: 10_000_000, transactionCapacity: 100_000 });
    await r.source.start();
    started.push(r.source);
    const lines = 5_000_000;
    const client = net.connect(r.source.port, "127.0.0.1");
    await new Promise((res) => client.once("connect", res));
    client.pause(); // reads nothing: its OKs pile up
    const chunk = Buffer.from("a\n".repeat(500_000));
    for (let i = 0; i < lines / 500_000; i++) client.write(chunk);
    // Wait until the source stops taking lines (or has taken them all).
    let last = -1;
    for (let still = 0; still < 3; ) {
      await new Promise((res) => setTimeout(res, 100));
      const now = r.source.counter.get("EventAcceptedCount");
      still = now === last ? still + 1 : 0;
      last = now;
    }
    const serverSide = [...(r.source as unknown as { server: TcpServer }).server.connections];
    // 15 MB of OKs were owed; the kernel's socket buffers hold a few MB, the source's own buffer little.
    expect(serverSide[0].pendingBytes).toBeLessThan(1024 * 1024);
    expect(last).toBeLessThan(lines);
    // Once the client reads, everything goes through.
    let answered = 0;
    client.on("data", (d: Buffer) => (answered += d.length));
    client.resume();
    await until(() => answered === lines * "OK\n".length, 10000, "every OK");
    expect(r.source.counter.get("EventAcceptedCount")).toBe(lines);
    client.destroy();
  }, 90_000);
});

describe("netcat source without acks", () => {
  test("a full channel pauses the client instead of dropping its lines: every line arrives, in order, once there is room", async () => {
    const r = rig(netcat, { bind: "127.0.0.1", port: "0", "ack-every-event": "false" }, { capacity: 5, transactionCapacity: 5, keepAlive: 0 });
    await r.source.start();
    started.push(r.source);
    const client = net.connect(r.source.port, "127.0.0.1");
    await new Promise((res) => client.once("connect", res));
    let answered = "";
    client.on("data", (d) => (answered += d));
    client.write(Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join(""));
    await until(() => r.source.counter.get("ChannelWriteFail") > 0, 5000, "a refused batch");
    const got: string[] = [];
    while (got.length < 40) {
      got.push(...(await takeAll(r.channel)).map(text));
      await new Promise((res) => setTimeout(res, 20));
    }
    expect(got).toEqual(Array.from({ length: 40 }, (_, i) => `line ${i}`));
    expect(answered).toBe("");
    expect(r.source.counter.get("EventAcceptedCount")).toBe(40);
    expect(r.logger.lines.some((l) => l.level === "warn" && /netcat source r1: channel refused 5 events from 127\.0\.0\.1:\d+/.test(l.message))).toBe(true);
    client.destroy();
  });
});
