import { describe, expect, test } from "bun:test";
import net from "node:net";
import { hostname } from "node:os";
import dgram from "node:dgram";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import tls from "node:tls";
import type { ServerTls } from "../../../src/net/tls.ts";
import { definition as multiport } from "../../../src/components/sources/multiport-syslog-tcp.ts";
import { definition as syslogTcp } from "../../../src/components/sources/syslog-tcp.ts";
import { definition as syslogUdp } from "../../../src/components/sources/syslog-udp.ts";
import type { Source } from "../../../src/core/source.ts";
import { tempDir } from "../../support/helpers.ts";
import { selfSignedCert } from "../../support/tls.ts";
import { collect, rig, runLogger, stoppedAfterEach, text, until } from "../../support/network.ts";
import { needsLogger, needsOpenssl } from "../../support/requires.ts";

const started = stoppedAfterEach<Source>();

async function startTcp(raw: Record<string, string> = {}) {
  const r = rig(syslogTcp, { host: "127.0.0.1", port: "0", ...raw });
  await r.source.start();
  started.push(r.source);
  return r;
}

function send(port: number, data: string | Uint8Array, opts: { end?: boolean } = {}): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(data, () => {
        if (opts.end !== false) s.end();
        resolve(s);
      });
    });
    s.on("error", reject);
  });
}

const SHORT = hostname().split(".")[0];

describe("syslogtcp with the real logger command", () => {
  needsLogger.test("logger --tcp --rfc3164 arrives with Facility, Severity, timestamp and host", async () => {
    const { source, channel } = await startTcp();
    const before = Date.now();
    const r = await runLogger(["--tcp", "--rfc3164", "-n", "127.0.0.1", "-P", String(source.port), "-p", "local3.warning", "-t", "myapp", "hello from rfc3164"]);
    expect(r.code).toBe(0);
    const [e] = await collect(channel, 1);
    expect(e.headers.Facility).toBe("19");
    expect(e.headers.Severity).toBe("4");
    expect(e.headers.host).toBe(SHORT);
    // RFC 3164 stamps have whole seconds and no year.
    const ts = Number(e.headers.timestamp);
    expect(Math.abs(ts - before)).toBeLessThan(5000);
    expect(text(e)).toBe("myapp: hello from rfc3164");
    expect(e.headers["flume.syslog.status"]).toBeUndefined();
    expect(source.counter.get("EventAcceptedCount")).toBe(1);
  });

  needsLogger.test("logger --tcp --rfc5424 arrives with headers and the message after the hostname as body", async () => {
    const { source, channel } = await startTcp();
    const before = Date.now();
    const r = await runLogger(["--tcp", "--rfc5424", "-n", "127.0.0.1", "-P", String(source.port), "-p", "auth.err", "-t", "app5424", "hello from rfc5424"]);
    expect(r.code).toBe(0);
    const [e] = await collect(channel, 1);
    expect(e.headers.Facility).toBe("4");
    expect(e.headers.Severity).toBe("3");
    expect(e.headers.version).toBe("1");
    expect(e.headers.host).toBe(hostname());
    const ts = Number(e.headers.timestamp);
    expect(ts).toBeGreaterThanOrEqual(before - 1000);
    expect(ts).toBeLessThanOrEqual(Date.now() + 1000);
    expect(text(e)).toMatch(/^app5424 \S+ - \[timeQuality[^\]]*\] hello from rfc5424$/);
  });

  needsLogger.test("logger --octet-count frames (RFC 6587) several messages on one connection", async () => {
    const { source, channel } = await startTcp();
    const { dir, cleanup } = tempDir();
    try {
      const file = path.join(dir, "messages.txt");
      writeFileSync(file, "first message\nsecond, with trailing space \nthird\n");
      const r = await runLogger(["--tcp", "--octet-count", "--rfc5424", "-n", "127.0.0.1", "-P", String(source.port), "-t", "oc", "-f", file]);
      expect(r.code).toBe(0);
      const events = await collect(channel, 3);
      expect(events.map((e) => text(e).replace(/^oc \S+ - \[[^\]]*\] /, ""))).toEqual(["first message", "second, with trailing space ", "third"]);
      expect(events.every((e) => e.headers.Severity === "5" && e.headers.version === "1")).toBe(true);
      expect(source.counter.get("OpenConnectionCount")).toBeLessThanOrEqual(1);
    } finally {
      cleanup();
    }
  });

  needsOpenssl.test("over TLS with a PEM certificate and key", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const { cert, key } = selfSignedCert(dir);
      const { source, channel, logger } = await startTcp({ ssl: "true", "ssl-certificate": cert, "ssl-key": key });
      await new Promise<void>((resolve, reject) => {
        const s = tls.connect({ host: "127.0.0.1", port: source.port, ca: readFileSync(cert) }, () => s.end("<13>Jan  2 03:04:05 host over tls\n", () => resolve()));
        s.on("error", reject);
      });
      const [e] = await collect(channel, 1);
      expect(text(e)).toBe("over tls");
      // A plain-text client is refused with a log line naming it; the source keeps serving.
      await send(source.port, "<13>Jan  2 03:04:05 host plain\n").catch(() => undefined);
      await until(() => logger.lines.some((l) => l.message.includes("TLS") && l.message.includes("127.0.0.1")), 5000, "TLS warning");
    } finally {
      cleanup();
    }
  });

  needsLogger.test("keepFields=all keeps the whole message; clientIPHeader and clientHostnameHeader are set", async () => {
    const { source, channel } = await startTcp({ keepFields: "all", clientIPHeader: "clientIp", clientHostnameHeader: "clientName" });
    await runLogger(["--tcp", "--rfc3164", "-n", "127.0.0.1", "-P", String(source.port), "-t", "k", "kept"]);
    const [e] = await collect(channel, 1);
    expect(text(e)).toMatch(/^<13>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ k: kept$/);
    expect(e.headers.clientIp).toBe("127.0.0.1");
    expect(e.headers.clientName).toMatch(/^(localhost|127\.0\.0\.1|.+)$/);
    expect(e.headers.clientName.length).toBeGreaterThan(0);
  });

  test("keepFields=hostname puts the hostname back in front of the body", async () => {
    const { source, channel } = await startTcp({ keepFields: "hostname" });
    await send(source.port, "<14>Mar  4 05:06:07 web01 app: hi\n");
    const [e] = await collect(channel, 1);
    expect(text(e)).toBe("web01 app: hi");
    expect(e.headers.host).toBe("web01");
  });
});

describe("syslogtcp framing and bad input", () => {
  test("newline and octet-counted messages mixed in one stream, split across writes", async () => {
    const { source, channel } = await startTcp();
    const a = "<13>1 2024-01-02T03:04:05.678Z h1 app - - - one";
    const b = "<13>1 2024-01-02T03:04:06Z h2 app - - - two\nwith a newline inside";
    const stream = `${a}\n${Buffer.byteLength(b)} ${b}<13>Jan  2 03:04:05 h3 three\r\n`;
    const s = await send(source.port, stream.slice(0, 50), { end: false });
    await new Promise((r) => setTimeout(r, 20));
    s.end(stream.slice(50));
    const events = await collect(channel, 3);
    expect(events.map((e) => e.headers.host)).toEqual(["h1", "h2", "h3"]);
    expect(events[0].headers.timestamp).toBe(String(Date.UTC(2024, 0, 2, 3, 4, 5, 678)));
    expect(text(events[0])).toBe("app - - - one");
    expect(text(events[1])).toBe("app - - - two\nwith a newline inside");
    expect(text(events[2])).toBe("three");
  });

  test("a message over eventSize becomes an Incomplete event then Invalid pieces; nothing lost; log names the peer", async () => {
    const { source, channel, logger } = await startTcp({ eventSize: "40" });
    const long = `<13>Jan  2 03:04:05 host ${"x".repeat(70)}`;
    await send(source.port, `${long}\n<13>Jan  2 03:04:05 host after\n`);
    const events = await collect(channel, 4);
    expect(events[0].headers["flume.syslog.status"]).toBe("Incomplete");
    expect(events[0].headers.Facility).toBe("1");
    expect(events[1].headers["flume.syslog.status"]).toBe("Invalid");
    expect(events[2].headers["flume.syslog.status"]).toBe("Invalid");
    // The Incomplete piece is parsed (its header is in the headers); the pieces after it are raw.
    expect(Buffer.concat(events.slice(0, 3).map((e) => e.body)).toString()).toBe("x".repeat(70));
    expect(events[0].headers.host).toBe("host");
    expect(text(events[3])).toBe("after");
    expect(events[3].headers["flume.syslog.status"]).toBeUndefined();
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("eventSize 40") && l.message.includes("127.0.0.1:"))).toBe(true);
  });

  test("every kind of message in megabyte writes arrives intact after the source gave the reads back", async () => {
    // Reads this large are released as soon as their events are made (src/net/tcp-server.ts):
    // an event still pointing into one would arrive empty or changed.
    const { source, channel } = await startTcp({ eventSize: "300", batchSize: "500" });
    const kinds = (i: number): { wire: string; body: string; host?: string } => {
      switch (i % 5) {
        case 0:
          return { wire: `<134>May  6 07:08:09 web-${i % 7} nginx: GET /${i}\n`, body: `nginx: GET /${i}`, host: `web-${i % 7}` };
        case 1: {
          const m = `<13>1 2024-01-02T03:04:05Z db-${i % 3} app - - - five ${i}\nsecond line`;
          return { wire: `${Buffer.byteLength(m)} ${m}`, body: `app - - - five ${i}\nsecond line`, host: `db-${i % 3}` };
        }
        case 2:
          return { wire: `<13>1 2024-01-02T03:04:05.123Z h${i} app - - - plain ${i}\n`, body: `app - - - plain ${i}`, host: `h${i}` };
        case 3:
          return { wire: `not syslog at all ${i}\n`, body: `not syslog at all ${i}` };
        default:
          return { wire: `<14>Jan  2 03:04:05 naïve-${i} ünïcode ${i}\n`, body: `<14>Jan  2 03:04:05 naïve-${i} ünïcode ${i}` };
      }
    };
    const N = 25000;
    const want = Array.from({ length: N }, (_, i) => kinds(i));
    const long = `<13>Jan  2 03:04:05 big ${"y".repeat(700)}\n`;
    const wire = Buffer.from(want.map((k) => k.wire).join("") + long);
    expect(wire.length).toBeGreaterThan(1_000_000);
    await send(source.port, wire);
    // The long message comes as an Incomplete event and Invalid pieces (eventSize 300).
    const events = await collect(channel, N + 3, 15000);
    for (let i = 0; i < N; i++) {
      expect(text(events[i])).toBe(want[i].body);
      // A message whose header does not parse has no host header: its whole text is the body.
      expect<string | undefined>(events[i].headers.host).toBe(want[i].host);
    }
    expect(Buffer.concat(events.slice(N).map((e) => e.body)).toString()).toBe("y".repeat(700));
  });

  needsLogger.test("garbage and invalid UTF-8 become Invalid events with a log line naming the peer; other clients keep being served", async () => {
    const { source, channel, logger } = await startTcp();
    const bad = Buffer.concat([Buffer.from("<13>Jan  2 03:04:05 host "), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from("\n")]);
    await send(source.port, Buffer.concat([Buffer.from("not syslog at all\n"), bad]));
    const events = await collect(channel, 2);
    expect(events[0].headers["flume.syslog.status"]).toBe("Invalid");
    expect(text(events[0])).toBe("not syslog at all");
    expect(events[1].headers["flume.syslog.status"]).toBe("Invalid");
    expect(Buffer.from(events[1].body).equals(bad.subarray(0, bad.length - 1))).toBe(true);
    expect(logger.lines.filter((l) => l.level === "warn" && /Invalid .*127\.0\.0\.1:\d+|127\.0\.0\.1:\d+ is Invalid/.test(l.message)).length).toBeGreaterThan(0);
    await runLogger(["--tcp", "--rfc3164", "-n", "127.0.0.1", "-P", String(source.port), "still served"]);
    const [ok] = await collect(channel, 1);
    expect(text(ok)).toMatch(/still served$/);
    expect(source.counter.get("EventReadFail")).toBe(2);
  });

  test("an abrupt disconnect mid-message is logged with the peer and the source keeps serving", async () => {
    const { source, channel, logger } = await startTcp();
    const s = await send(source.port, "<13>Jan  2 03:04:05 host complete\n<13>Jan  2 03:04:05 host cut in the mid", { end: false });
    await collect(channel, 1);
    s.resetAndDestroy();
    await until(() => source.counter.get("OpenConnectionCount") === 0);
    await send(source.port, "<13>Jan  2 03:04:05 host next\n");
    const [e] = await collect(channel, 1);
    expect(text(e)).toBe("next");
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("127.0.0.1:"))).toBe(true);
  });

  test("a full channel pauses the client instead of dropping; everything arrives once there is room", async () => {
    const r = rig(syslogTcp, { host: "127.0.0.1", port: "0" }, { capacity: 5, transactionCapacity: 5, keepAlive: 0 });
    await r.source.start();
    started.push(r.source);
    const lines = Array.from({ length: 20 }, (_, i) => `<13>Jan  2 03:04:05 host m${i}\n`).join("");
    await send(r.source.port, lines);
    await until(() => r.source.counter.get("ChannelWriteFail") > 0, 5000, "a refused batch");
    const got = [];
    while (got.length < 20) got.push(...(await collect(r.channel, 1)));
    expect(got.map(text)).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    expect(r.logger.lines.some((l) => l.message.includes("pausing this input"))).toBe(true);
  });
});

describe("custom formats (format.regex, format.search/replace, format.dateFormat)", () => {
  test("a site layout is parsed with its own regex and date pattern", async () => {
    const { source, channel } = await startTcp({
      "format.regex": "<(\\d+)>()(\\d{2}/\\d{2}/\\d{4}T\\d{2}\\.\\d{2}\\.\\d{2}) \\[(\\S+)\\] (.*)",
      "format.search": "T",
      "format.replace": " ",
      "format.dateFormat": "dd/MM/yyyy HH.mm.ss",
    });
    await send(source.port, "<30>24/12/2023T18.30.00 [edge-7] custom body\n<13>Jan  2 03:04:05 std standard\n");
    const [a, b] = await collect(channel, 2);
    expect(a.headers.host).toBe("edge-7");
    expect(a.headers.timestamp).toBe(String(new Date(2023, 11, 24, 18, 30, 0).getTime()));
    expect(a.headers.Facility).toBe("3");
    expect(text(a)).toBe("custom body");
    expect(b.headers.host).toBe("std");
  });
});

describe("multiport_syslogtcp", () => {
  needsLogger.test("listens on several ports; portHeader tells which; Priority/Version headers as Flume's SyslogParser", async () => {
    const r = rig(multiport, { host: "127.0.0.1", ports: "0 0", portHeader: "port", batchSize: "2" });
    await r.source.start();
    started.push(r.source);
    const [p1, p2] = r.source.ports;
    expect(p1).not.toBe(p2);
    await runLogger(["--tcp", "--rfc5424", "-n", "127.0.0.1", "-P", String(p1), "-p", "user.info", "on p1"]);
    await runLogger(["--tcp", "--rfc3164", "-n", "127.0.0.1", "-P", String(p2), "-p", "mail.crit", "on p2"]);
    const events = await collect(r.channel, 2);
    const byPort = new Map(events.map((e) => [e.headers.port, e]));
    const a = byPort.get(String(p1));
    const b = byPort.get(String(p2));
    expect(a?.headers.Priority).toBe("14");
    expect(a?.headers.Version).toBe("1");
    expect(a && text(a)).toMatch(/on p1$/);
    expect(b?.headers.Facility).toBe("2");
    expect(b?.headers.Severity).toBe("2");
    expect(b?.headers.host).toBe(SHORT);
  });

  test("batchSize splits a large read into several channel transactions", async () => {
    const r = rig(multiport, { host: "127.0.0.1", ports: "0", batchSize: "10" });
    await r.source.start();
    started.push(r.source);
    const lines = Array.from({ length: 35 }, (_, i) => `<13>Jan  2 03:04:05 host m${i}\n`).join("");
    await send(r.source.port, lines);
    const events = await collect(r.channel, 35);
    expect(events.length).toBe(35);
    expect(r.source.counter.get("AppendBatchAcceptedCount")).toBeGreaterThanOrEqual(4);
  });

  test("charset.port.<port> reads that port's messages as ISO-8859-1", async () => {
    const r = rig(multiport, { host: "127.0.0.1", ports: "0 0" });
    await r.source.start();
    started.push(r.source);
    const [p1, p2] = r.source.ports;
    await r.source.stop();
    started.pop();
    const r2 = rig(multiport, { host: "127.0.0.1", ports: `${p1} ${p2}`, [`charset.port.${p2}`]: "ISO-8859-1", portHeader: "port" });
    await r2.source.start();
    started.push(r2.source);
    const latin1 = Buffer.from("<13>Jan  2 03:04:05 host caf\xe9\n", "latin1");
    await send(p2, latin1);
    await send(p1, latin1);
    const events = await collect(r2.channel, 2);
    const onLatin = events.find((e) => e.headers.port === String(p2));
    const onUtf8 = events.find((e) => e.headers.port === String(p1));
    expect(onLatin?.headers.host).toBe("host");
    expect([...(onLatin?.body ?? [])]).toEqual([0x63, 0x61, 0x66, 0xe9]);
    expect(onUtf8?.headers["flume.syslog.status"]).toBe("Invalid");
  });

  test("an unparseable message is Invalid without Facility headers", async () => {
    const r = rig(multiport, { host: "127.0.0.1", ports: "0" });
    await r.source.start();
    started.push(r.source);
    await send(r.source.port, "<13>garbage\n");
    const [e] = await collect(r.channel, 1);
    expect(e.headers).toEqual({ "flume.syslog.status": "Invalid" });
    expect(text(e)).toBe("<13>garbage");
  });
});

describe("syslogudp", () => {
  needsLogger.test("logger --udp in both formats arrives with Flume's headers", async () => {
    const r = rig(syslogUdp, { host: "127.0.0.1", port: "0", clientIPHeader: "ip" });
    await r.source.start();
    started.push(r.source);
    const port = String(r.source.port);
    await runLogger(["--udp", "--rfc3164", "-n", "127.0.0.1", "-P", port, "-p", "daemon.notice", "-t", "u1", "udp 3164"]);
    await runLogger(["--udp", "--rfc5424", "-n", "127.0.0.1", "-P", port, "-p", "local7.debug", "-t", "u2", "udp 5424"]);
    const events = await collect(r.channel, 2);
    const a = events.find((e) => text(e).endsWith("udp 3164"));
    const b = events.find((e) => text(e).endsWith("udp 5424"));
    expect(a?.headers.Facility).toBe("3");
    expect(a?.headers.Severity).toBe("5");
    expect(a?.headers.host).toBe(SHORT);
    expect(a?.headers.ip).toBe("127.0.0.1");
    expect(b?.headers.Facility).toBe("23");
    expect(b?.headers.Severity).toBe("7");
    expect(b?.headers.timestamp).toMatch(/^\d{13}$/);
  });

  test("garbage datagrams are Invalid and logged with the peer; the next datagram is served", async () => {
    const r = rig(syslogUdp, { host: "127.0.0.1", port: "0" });
    await r.source.start();
    started.push(r.source);
    const client = dgram.createSocket("udp4");
    await new Promise<void>((res) => client.send(Buffer.from([0xde, 0xad, 0xbe, 0xef]), r.source.port, "127.0.0.1", () => res()));
    await new Promise<void>((res) => client.send("<11>Jan  2 03:04:05 host fine", r.source.port, "127.0.0.1", () => res()));
    const events = await collect(r.channel, 2);
    client.close();
    expect(events[0].headers["flume.syslog.status"]).toBe("Invalid");
    expect(text(events[1])).toBe("fine");
    expect(r.logger.lines.some((l) => l.level === "warn" && l.message.includes("127.0.0.1:"))).toBe(true);
  });
});


/** Connects and never starts the TLS handshake; resolves once the server closed the connection. */
function silentClient(port: number): Promise<void> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.on("error", () => {});
    s.on("close", () => resolve());
  });
}

// The handshake timeout (Node's default: 120 s) is shortened here so the test is quick.
const QUICK = 200;

describe("syslogtcp over TLS, a client that never finishes the handshake", () => {
  needsOpenssl.test("the connection is closed when the handshake times out, naming the peer", async () => {
    const t = tempDir();
    const { cert, key } = selfSignedCert(t.dir);
    const r = rig(syslogTcp, { host: "127.0.0.1", port: "0", ssl: "true", "ssl-certificate": cert, "ssl-key": key });
    (r.source.options.tls as ServerTls).options.handshakeTimeout = QUICK;
    await r.source.start();
    try {
      await silentClient(r.source.port);
      expect(r.logger.lines.some((l) => /TLS handshake with 127\.0\.0\.1:\d+ failed/.test(l.message))).toBe(true);
    } finally {
      await r.source.stop();
      t.cleanup();
    }
  });
});
