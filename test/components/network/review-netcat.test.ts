import { afterEach, describe, expect, test } from "bun:test";
import net from "node:net";
import { definition as netcat, type NetcatSource } from "../../../src/components/sources/netcat.ts";
import { rig, takeAll, text, until } from "./harness.ts";

const started: NetcatSource[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) await s.stop();
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

describe("netcat source, clients that half-close", () => {
  test("a client that half-closes after its lines still gets an OK for each committed line", async () => {
    const r = rig(netcat, { bind: "127.0.0.1", port: "0" });
    const processor = r.source.getChannelProcessor();
    const original = processor.processEventBatch.bind(processor);
    // A channel that takes a moment to commit, as a file channel does.
    processor.processEventBatch = async (events) => {
      await new Promise((res) => setTimeout(res, 50));
      return original(events);
    };
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
});
