import { afterEach, describe, expect, test } from "bun:test";
import net from "node:net";
import { definition as httpSource, type HttpSource } from "../../../src/components/sources/http.ts";
import { parseConfig } from "../../../src/config/schema.ts";
import { rig, takeAll, text, until } from "./harness.ts";

const started: HttpSource[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) await s.stop();
});

async function start(raw: Record<string, string> = {}) {
  const r = rig(httpSource, { bind: "127.0.0.1", port: "0", ...raw });
  await r.source.start();
  started.push(r.source);
  return { ...r, url: `http://127.0.0.1:${r.source.port}/` };
}

/** Opens a connection and sends the start of a request that it never finishes. */
function slowClient(port: number, first: string): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(first);
      resolve({ socket, closed: new Promise<void>((r) => socket.once("close", () => r())) });
    });
    socket.on("error", () => {});
  });
}

describe("http source under slow clients", () => {
  test("a client that never finishes its headers (slowloris) is disconnected after ServerConnector.idleTimeout, naming the peer; others are served", async () => {
    const { source, url, channel, logger } = await start({ "ServerConnector.idleTimeout": "300" });
    const headers = await slowClient(source.port, "POST / HTTP/1.1\r\nHost: x\r\n");
    const silent = await slowClient(source.port, "");
    const trickle = setInterval(() => headers.socket.writable && headers.socket.write("X-Slow: 1\r\n"), 50);
    try {
      await headers.closed;
      await silent.closed;
    } finally {
      clearInterval(trickle);
    }
    expect(logger.lines.some((l) => /idle.*127\.0\.0\.1:\d+|127\.0\.0\.1:\d+.*idle/.test(l.message))).toBe(true);
    const res = await fetch(url, { method: "POST", body: JSON.stringify([{ body: "after" }]) });
    expect(res.status).toBe(200);
    expect((await takeAll(channel)).map(text)).toEqual(["after"]);
    // The setting is Jetty's and now has an effect, so it is not reported as ignored.
    expect(logger.lines.some((l) => /ignored: .*ServerConnector\.idleTimeout/.test(l.message))).toBe(false);
  });

  test("without ServerConnector.idleTimeout a half-sent request is still bounded by Jetty's default of 30 s", () => {
    const r = rig(httpSource, { bind: "127.0.0.1", port: "0" });
    expect(r.source.options.idleTimeout).toBe(30000);
    const { config } = parseConfig(httpSource.schema, { port: "0", "ServerConnector.idleTimeout": "soon" });
    expect(httpSource.validate?.(config)).toEqual([{ key: "ServerConnector.idleTimeout", message: expect.stringContaining('"soon"') }]);
  });
});

describe("http source stopping with a request in flight", () => {
  test("stop() lets the request finish: 200 only for committed events, and the keep-alive connection is closed at once", async () => {
    const r = rig(httpSource, { bind: "127.0.0.1", port: "0" }, { capacity: 2, transactionCapacity: 2, keepAlive: 2 });
    await r.source.start();
    const url = `http://127.0.0.1:${r.source.port}/`;
    const body = JSON.stringify([{ body: "a" }, { body: "b" }]);
    expect((await fetch(url, { method: "POST", body })).status).toBe(200);
    // The channel is full: this request waits for room (keepAlive) while the source stops.
    const inFlight = fetch(url, { method: "POST", body: JSON.stringify([{ body: "c" }, { body: "d" }]) });
    await until(() => r.source.counter.get("AppendBatchReceivedCount") === 2, 5000, "the second request");
    const stopped = r.source.stop();
    const drained = (await takeAll(r.channel)).map(text);
    const res = await inFlight;
    await stopped;
    expect(res.status).toBe(200);
    expect(res.headers.get("connection")).toBe("close");
    expect([...drained, ...(await takeAll(r.channel)).map(text)]).toEqual(["a", "b", "c", "d"]);
  });
});
