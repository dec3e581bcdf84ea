import { describe, expect, test } from "bun:test";
import https from "node:https";
import net from "node:net";
import { definition as httpSource, type HttpSource } from "../../../src/components/sources/http.ts";
import { tempDir, waitUntil } from "../../support/helpers.ts";
import { selfSignedCert } from "../../support/tls.ts";
import { collect, rig, stoppedAfterEach, takeAll, text, until } from "../../support/network.ts";
import { needsOpenssl } from "../../support/requires.ts";

const started = stoppedAfterEach<HttpSource>();

async function start(raw: Record<string, string> = {}, channel?: { capacity: number; transactionCapacity: number; keepAlive: number }) {
  const r = rig(httpSource, { bind: "127.0.0.1", port: "0", ...raw }, channel);
  await r.source.start();
  started.push(r.source);
  return { ...r, url: `http://127.0.0.1:${r.source.port}/` };
}

describe("http source, JSON handler", () => {
  test("200 after commit: Flume's event array arrives with headers and bodies", async () => {
    const { url, channel, source } = await start();
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify([
        { headers: { timestamp: "434324343", host: "random_host.example.com" }, body: "random_body" },
        { headers: { namenode: "nn" }, body: "really_random_body" },
      ]),
    });
    expect(res.status).toBe(200);
    const events = await takeAll(channel);
    expect(events.map(text)).toEqual(["random_body", "really_random_body"]);
    expect(events[0].headers).toEqual({ timestamp: "434324343", host: "random_host.example.com" });
    expect(source.counter.get("AppendBatchAcceptedCount")).toBe(1);
    expect(source.counter.get("EventAcceptedCount")).toBe(2);
  });

  test("the charset of Content-Type decodes the request and encodes the bodies (UTF-16 as Java: BOM, big-endian)", async () => {
    const { url, channel } = await start();
    const json = JSON.stringify([{ headers: { k: "é" }, body: "héllo" }]);
    const utf16 = Buffer.from(json, "utf16le").swap16();
    const res = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json; charset=UTF-16" }, body: utf16 });
    expect(res.status).toBe(200);
    const [e] = await takeAll(channel);
    expect(e.headers.k).toBe("é");
    expect([...e.body]).toEqual([0xfe, 0xff, ...Buffer.from("héllo", "utf16le").swap16()]);
  });

  test("400 with the reason for malformed JSON, a non-array, a wrong charset; nothing reaches the channel", async () => {
    const { url, channel, source, logger } = await start();
    const cases: [string, string, RegExp][] = [
      ["application/json", "[{\"body\": ", /invalid JSON Syntax/],
      ["application/json", '{"body":"x"}', /JSON array/],
      ["application/json", '[{"headers":{"a":{"b":1}},"body":"x"}]', /header "a"/],
      ["application/json; charset=ISO-8859-1", "[]", /Unsupported character set/],
    ];
    const invalidUtf8 = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: new Uint8Array([0x5b, 0xff, 0xfe, 0x5d]) });
    expect(invalidUtf8.status).toBe(400);
    expect(await invalidUtf8.text()).toMatch(/not valid UTF-8/);
    for (const [type, body, reason] of cases) {
      const res = await fetch(url, { method: "POST", headers: { "Content-Type": type }, body });
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(reason);
    }
    expect((await takeAll(channel)).length).toBe(0);
    expect(source.counter.get("EventReadFail")).toBe(5);
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("bad request from 127.0.0.1:"))).toBe(true);
  });

  test("413 over maxBodySize, and the source keeps serving", async () => {
    const { url, channel } = await start({ maxBodySize: "1000" });
    const big = JSON.stringify([{ body: "x".repeat(2000) }]);
    const res = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: big });
    expect(res.status).toBe(413);
    const ok = await fetch(url, { method: "POST", body: JSON.stringify([{ body: "small" }]) });
    expect(ok.status).toBe(200);
    expect((await takeAll(channel)).map(text)).toEqual(["small"]);
  });

  test("413 also for a chunked body without Content-Length", async () => {
    const { source } = await start({ maxBodySize: "100" });
    const status = await new Promise<string>((resolve) => {
      const s = net.connect(source.port, "127.0.0.1", () => {
        s.write("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
        s.write(`c8\r\n${"y".repeat(200)}\r\n`);
      });
      let data = "";
      s.on("data", (d) => {
        data += d;
        if (data.includes("\r\n")) {
          resolve(data.split("\r\n")[0]);
          s.destroy();
        }
      });
      s.on("error", () => resolve(data.split("\r\n")[0]));
    });
    expect(status).toBe("HTTP/1.1 413 Payload Too Large");
  });

  test("503 with Retry-After when the channel is full; every event that got 200 is in the channel, none of the refused", async () => {
    const { url, channel, source } = await start({ retryAfter: "7" }, { capacity: 10, transactionCapacity: 10, keepAlive: 0 });
    const accepted: string[] = [];
    let refused = 0;
    for (let i = 0; i < 8; i++) {
      const bodies = [`r${i}a`, `r${i}b`, `r${i}c`];
      const res = await fetch(url, { method: "POST", body: JSON.stringify(bodies.map((body) => ({ body }))) });
      if (res.status === 200) accepted.push(...bodies);
      else {
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBe("7");
        expect(await res.text()).toMatch(/Channel might be full/);
        refused++;
      }
    }
    expect(refused).toBe(5);
    expect((await collect(channel, accepted.length)).map(text)).toEqual(accepted);
    expect(source.counter.get("ChannelWriteFail")).toBe(5);
    // With room again, the source accepts again.
    expect((await fetch(url, { method: "POST", body: '[{"body":"again"}]' })).status).toBe(200);
  });

  test("concurrent clients against a draining full channel: the events in the channel are exactly those answered 200", async () => {
    const { url, channel } = await start({}, { capacity: 20, transactionCapacity: 20, keepAlive: 0 });
    const drained: string[] = [];
    let draining = true;
    const drainer = (async () => {
      while (draining) {
        drained.push(...(await takeAll(channel)).map(text));
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const results = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const bodies = [`c${i}-0`, `c${i}-1`, `c${i}-2`, `c${i}-3`];
        const res = await fetch(url, { method: "POST", body: JSON.stringify(bodies.map((body) => ({ body }))) });
        expect([200, 503]).toContain(res.status);
        return res.status === 200 ? bodies : [];
      }),
    );
    draining = false;
    await drainer;
    drained.push(...(await takeAll(channel)).map(text));
    const accepted = results.flat();
    expect(accepted.length).toBeGreaterThan(0);
    expect(drained.sort()).toEqual(accepted.sort());
  });

  test("500 when something other than the channel fails", async () => {
    const r = rig(httpSource, { bind: "127.0.0.1", port: "0" });
    const broken = { name: "boom", intercept: () => null, interceptAll: () => { throw new Error("interceptor exploded"); } };
    r.source.getChannelProcessor().interceptors.interceptors.push(broken);
    await r.source.start();
    started.push(r.source);
    const res = await fetch(`http://127.0.0.1:${r.source.port}/`, { method: "POST", body: '[{"body":"x"}]' });
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/interceptor exploded/);
    expect(r.source.counter.get("GenericProcessingFail")).toBe(1);
  });

  test("a client that disconnects mid-body is logged with its address; nothing is written; others are served", async () => {
    const { url, source, channel, logger } = await start();
    await new Promise<void>((resolve) => {
      const s = net.connect(source.port, "127.0.0.1", () => {
        s.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n[{"body":"trunc', () => setTimeout(() => {
          s.resetAndDestroy();
          resolve();
        }, 20));
      });
    });
    await waitUntil(() => logger.lines.some((l) => l.level === "warn" && l.message.includes("127.0.0.1:")), "a warning naming the client", 5000);
    expect((await fetch(url, { method: "POST", body: '[{"body":"ok"}]' })).status).toBe(200);
    expect((await takeAll(channel)).map(text)).toEqual(["ok"]);
  });

  test("405 for methods other than POST/GET; garbage on the socket does not stop the server", async () => {
    const { url, source, channel } = await start();
    expect((await fetch(url, { method: "PUT", body: "[]" })).status).toBe(405);
    await new Promise<void>((resolve) => {
      const s = net.connect(source.port, "127.0.0.1", () => s.write("\x00\x01garbage\r\n\r\n"));
      s.on("data", () => s.destroy());
      s.on("close", () => resolve());
      s.on("error", () => resolve());
    });
    expect((await fetch(url, { method: "POST", body: '[{"body":"after"}]' })).status).toBe(200);
    expect((await takeAll(channel)).map(text)).toEqual(["after"]);
  });
});

describe("http source, BLOB handler", () => {
  test("the body is one event, query parameters are headers; mandatory parameters are checked", async () => {
    const { url, channel } = await start({ handler: "org.apache.flume.source.http.BLOBHandler", "handler.mandatoryParameters": "app" });
    const payload = Buffer.from([0, 1, 2, 250, 255]);
    const res = await fetch(`${url}?app=web&env=prod`, { method: "POST", body: payload });
    expect(res.status).toBe(200);
    const [e] = await takeAll(channel);
    expect(Buffer.from(e.body).equals(payload)).toBe(true);
    expect(e.headers).toEqual({ app: "web", env: "prod" });
    const missing = await fetch(url, { method: "POST", body: "x" });
    expect(missing.status).toBe(400);
    expect(await missing.text()).toMatch(/Please specify app parameter/);
  });

  test("handler.maxBlobLength bounds the body (413)", async () => {
    const { url } = await start({ handler: "BLOB", "handler.maxBlobLength": "10" });
    expect((await fetch(url, { method: "POST", body: "0123456789abc" })).status).toBe(413);
    expect((await fetch(url, { method: "POST", body: "0123456789" })).status).toBe(200);
  });

  test("an unknown handler is a configuration error", () => {
    expect(() => rig(httpSource, { port: "0", handler: "com.example.Nope" })).toThrow(/handler/);
  });
});

describe("http source over TLS", () => {
  needsOpenssl.test("PEM certificate and key: HTTPS requests are accepted", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const { cert, key } = selfSignedCert(dir);
      const { source, channel } = await start({ ssl: "true", "ssl-certificate": cert, "ssl-key": key });
      const ca = await Bun.file(cert).text();
      const status = await new Promise<number>((resolve, reject) => {
        const req = https.request({ host: "127.0.0.1", port: source.port, method: "POST", path: "/", ca }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end('[{"body":"secret"}]');
      });
      expect(status).toBe(200);
      expect((await takeAll(channel)).map(text)).toEqual(["secret"]);
    } finally {
      cleanup();
    }
  });

  test("ssl without certificate is a configuration error naming the keys", () => {
    expect(() => rig(httpSource, { port: "0", ssl: "true" })).toThrow(/keystore: is required when ssl is true/);
  });
});

describe("http source over TLS, stopping and silent clients", () => {
  needsOpenssl.test("stop() lets a TLS request in flight finish (200, Connection: close) and closes idle keep-alive TLS connections at once", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const { cert, key } = selfSignedCert(dir);
      const r = rig(httpSource, { bind: "127.0.0.1", port: "0", ssl: "true", keystore: cert, "keystore-key": key }, { capacity: 2, transactionCapacity: 2, keepAlive: 2 });
      await r.source.start();
      const url = `https://127.0.0.1:${r.source.port}/`;
      const tls = { ca: await Bun.file(cert).text() };
      expect((await fetch(url, { method: "POST", body: JSON.stringify([{ body: "a" }, { body: "b" }]), tls })).status).toBe(200);
      const inFlight = fetch(url, { method: "POST", body: JSON.stringify([{ body: "c" }, { body: "d" }]), tls });
      await until(() => r.source.counter.get("AppendBatchReceivedCount") === 2, 5000, "the second request");
      const stopped = r.source.stop();
      const drained = (await takeAll(r.channel)).map(text);
      const res = await inFlight;
      await stopped;
      // Stopped by the connections closing, not by the forced close after 5 s.
      expect(r.logger.lines.filter((l) => l.message.includes("still in flight"))).toEqual([]);
      expect(res.status).toBe(200);
      expect(res.headers.get("connection")).toBe("close");
      expect([...drained, ...(await takeAll(r.channel)).map(text)]).toEqual(["a", "b", "c", "d"]);
      expect(await new Promise((resolve) => net.connect(r.source.port, "127.0.0.1").on("error", () => resolve("refused")).on("connect", () => resolve("connected")))).toBe("refused");
    } finally {
      cleanup();
    }
  });

  needsOpenssl.test("a client that connects and never starts its handshake is dropped after the handshake timeout, and the log names it", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const { cert, key } = selfSignedCert(dir);
      const r = rig(httpSource, { bind: "127.0.0.1", port: "0", ssl: "true", keystore: cert, "keystore-key": key });
      const setup = r.source.tls as NonNullable<typeof r.source.tls>;
      setup.options.handshakeTimeout = 200;
      await r.source.start();
      started.push(r.source);
      const socket = net.connect(r.source.port, "127.0.0.1");
      const local = await new Promise<number>((resolve) => socket.on("connect", () => resolve(socket.localPort ?? 0)));
      await new Promise<void>((resolve) => socket.on("close", () => resolve()));
      expect(r.logger.lines.some((l) => l.level === "warn" && l.message.includes(`TLS handshake with 127.0.0.1:${local} failed`) && /timeout/i.test(l.message))).toBe(true);
    } finally {
      cleanup();
    }
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
    expect(r.logger.lines.filter((l) => l.message.includes("still in flight"))).toEqual([]);
    expect(res.status).toBe(200);
    expect(res.headers.get("connection")).toBe("close");
    expect([...drained, ...(await takeAll(r.channel)).map(text)]).toEqual(["a", "b", "c", "d"]);
  });

  test("a client that never sends the rest of its body holds stop() only until the forced close after 5 s, which the log names", async () => {
    const r = rig(httpSource, { bind: "127.0.0.1", port: "0" });
    await r.source.start();
    const client = net.connect(r.source.port, "127.0.0.1");
    const closed = new Promise<void>((resolve) => client.on("close", () => resolve()));
    // Expect: 100-continue: the server's "100 Continue" says the request reached the source.
    const continued = new Promise<void>((resolve) => client.once("data", () => resolve()));
    client.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n');
    await continued;
    client.write('[{"body":"never ends');
    await r.source.stop();
    await closed;
    expect(r.logger.lines.filter((l) => l.level === "warn" && l.message.includes("still in flight 5000 ms after stop"))).toHaveLength(1);
    expect((await takeAll(r.channel)).map(text)).toEqual([]);
  });
});
