import { describe, expect, test } from "bun:test";
import net from "node:net";
import { definition as netcat, type NetcatSource } from "../../../src/components/sources/netcat.ts";
import { slowCommits } from "../../support/helpers.ts";
import { rig, stoppedAfterEach, takeAll, text, until } from "../../support/network.ts";

const started = stoppedAfterEach<NetcatSource>();

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
    const serverSide = [...(r.source as unknown as { sockets: Set<net.Socket> }).sockets];
    // 15 MB of OKs were owed; the kernel's socket buffers hold a few MB, the source's own buffer little.
    expect(serverSide[0].writableLength).toBeLessThan(1024 * 1024);
    expect(last).toBeLessThan(lines);
    // Once the client reads, everything goes through.
    let answered = 0;
    client.on("data", (d: Buffer) => (answered += d.length));
    client.resume();
    await until(() => answered === lines * "OK\n".length, 10000, "every OK");
    expect(r.source.counter.get("EventAcceptedCount")).toBe(lines);
    client.destroy();
  }, 20000);
});
