/**
 * Every TLS source (avro, http, syslogtcp, multiport_syslogtcp) from its registry definition,
 * with a CA, a server certificate, a client certificate it signed and a self-signed one made
 * by openssl: protocol versions with openssl s_client, and client-auth required and optional
 * with real clients (our AvroRpcClient, node https, node tls).
 */
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import net from "node:net";
import path from "node:path";
import tls, { type ConnectionOptions } from "node:tls";
import type { ComponentDefinition } from "../../src/components/component.ts";
import { definition as avroSource } from "../../src/components/sources/avro.ts";
import { definition as httpSource } from "../../src/components/sources/http.ts";
import { definition as multiportSource } from "../../src/components/sources/multiport-syslog-tcp.ts";
import { definition as syslogTcpSource } from "../../src/components/sources/syslog-tcp.ts";
import { createEvent } from "../../src/core/event.ts";
import type { Source } from "../../src/core/source.ts";
import { clientTlsFromProperties } from "../../src/net/tls.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { freePort, sleep, startCli, tempDir, waitBound } from "../support/helpers.ts";
import { collect, type Rig, rig, stoppedAfterEach, takeAll, text, until } from "../support/network.ts";
import { needsOpenssl } from "../support/requires.ts";
import { makePki, type Pki, sClient } from "../support/tls.ts";

const tmp = tempDir("flume-tls-sources-");
afterAll(tmp.cleanup);
let made: Pki | undefined;
const pki = () => (made ??= makePki(tmp.dir));
// Made before the tests where openssl is there: four RSA keys take a second or more.
beforeAll(() => void (needsOpenssl.holds && pki()), 30000);
const started = stoppedAfterEach<Source>();
const agents = stoppedAfterEach<{ stop(): Promise<void> }>();

/** What a client saw: served (the server accepted its events; undefined for syslog, which never answers), and the local port the server names it by. */
interface Attempt {
  served?: boolean;
  localPort?: number;
  error?: string;
}

type Credentials = "none" | "trusted" | "self-signed";

interface TlsSource {
  type: string;
  def: ComponentDefinition<Source>;
  /** Properties for a source on an ephemeral port (ssl and client-auth added). */
  props: Record<string, string>;
  port(source: Source): number;
  /** Sends one event with the body over TLS with the client options. */
  send(port: number, client: ConnectionOptions, body: string): Promise<Attempt>;
}

/** A node tls client that writes one syslog line and half-closes; served once the server closes after reading it. */
function sendSyslog(port: number, client: ConnectionOptions, body: string): Promise<Attempt> {
  return new Promise((resolve) => {
    const attempt: Attempt = {};
    const s = tls.connect({ host: "127.0.0.1", port, ...client }, () => {
      attempt.localPort = s.localPort;
      s.end(`<13>Jan  2 03:04:05 host ${body}\n`);
    });
    s.on("connect", () => (attempt.localPort ??= s.localPort));
    s.on("error", (err) => (attempt.error = err.message));
    // The syslog source never answers: whether the line arrived is seen in the channel.
    s.on("close", () => resolve(attempt));
    setTimeout(() => s.destroy(), 3000);
  });
}

const SOURCES: TlsSource[] = [
  {
    type: "avro",
    def: avroSource as ComponentDefinition<Source>,
    props: { bind: "127.0.0.1", port: "0" },
    port: (s) => (s as unknown as { port: number }).port,
    async send(port, client, body) {
      try {
        const c = await AvroRpcClient.connect({ host: "127.0.0.1", port, tls: client, connectTimeout: 3000, requestTimeout: 3000 });
        try {
          await c.appendBatch([createEvent(body)]);
        } finally {
          c.close();
        }
        return { served: true };
      } catch (err) {
        return { served: false, error: (err as Error).message };
      }
    },
  },
  {
    type: "http",
    def: httpSource as ComponentDefinition<Source>,
    props: { bind: "127.0.0.1", port: "0" },
    port: (s) => (s as unknown as { port: number }).port,
    send(port, client, body) {
      return new Promise((resolve) => {
        const attempt: Attempt = { served: false };
        const req = https.request({ host: "127.0.0.1", port, method: "POST", path: "/", agent: false, headers: { "Content-Type": "application/json" }, ...client }, (res) => {
          res.resume();
          res.on("end", () => resolve({ ...attempt, served: res.statusCode === 200, error: res.statusCode === 200 ? undefined : `HTTP ${res.statusCode}` }));
        });
        req.on("socket", (s) => s.on("connect", () => (attempt.localPort = s.localPort)));
        req.on("error", (err) => resolve({ ...attempt, error: err.message }));
        req.setTimeout(3000, () => req.destroy(new Error("timed out")));
        req.end(JSON.stringify([{ headers: {}, body }]));
      });
    },
  },
  {
    type: "syslogtcp",
    def: syslogTcpSource as ComponentDefinition<Source>,
    props: { host: "127.0.0.1", port: "0" },
    port: (s) => (s as unknown as { port: number }).port,
    send: sendSyslog,
  },
  {
    type: "multiport_syslogtcp",
    def: multiportSource as ComponentDefinition<Source>,
    props: { host: "127.0.0.1", ports: "0 0" },
    // The second of its two ports: each listener must be secured alike.
    port: (s) => (s as unknown as { ports: number[] }).ports[1],
    send: sendSyslog,
  },
];

/** The client's TLS options as Flume properties would give them, with the chosen client certificate. */
function clientOptions(credentials: Credentials): ConnectionOptions {
  const id = credentials === "trusted" ? pki().client : credentials === "self-signed" ? pki().rogue : null;
  const opts = clientTlsFromProperties({ ssl: "true", truststore: pki().ca.cert, ...(id ? { keystore: id.cert, "keystore-key": id.key } : {}) });
  if (!opts) throw new Error("ssl is on");
  return opts;
}

async function startSource(kind: TlsSource, extra: Record<string, string>): Promise<Rig<Source> & { port: number }> {
  const r = rig(kind.def, { ...kind.props, ssl: "true", keystore: pki().server.cert, "keystore-key": pki().server.key, ...extra });
  await r.source.start();
  started.push(r.source);
  return { ...r, port: kind.port(r.source) };
}

/** The channel holds exactly the event with this body (and the syslog header around it stripped). */
async function arrived(r: Rig<Source>, body: string): Promise<void> {
  const events = await collect(r.channel, 1);
  expect(events.map(text)).toEqual([body]);
}

/** The attempt was refused: nothing reached the channel and a warning names the client (its address and port where the client knows it). */
async function refused(r: Rig<Source>, attempt: Attempt, why: RegExp): Promise<void> {
  expect(attempt.served).not.toBe(true);
  const peer = attempt.localPort ? `127.0.0.1:${attempt.localPort}` : "127.0.0.1:";
  const line = () => r.logger.lines.find((l) => l.level === "warn" && l.message.includes(peer) && why.test(l.message));
  await until(() => line() !== undefined, 5000, `a warning naming ${peer} matching ${why}; got ${JSON.stringify(r.logger.lines.map((l) => l.message))}`);
  expect(await takeAll(r.channel)).toEqual([]);
}

const NO_CERT = /certificate|handshake/i;
const UNTRUSTED = /self.signed|not trusted|certificate/i;

for (const kind of SOURCES) {
  describe(`${kind.type} source over TLS`, () => {
    needsOpenssl.test("openssl s_client -tls1 gets a protocol version alert; -tls1_2 connects", async () => {
      const r = await startSource(kind, {});
      const old = await sClient(r.port, ["-tls1"]);
      expect(old.connected).toBe(false);
      expect(old.output).toContain("alert protocol version");
      const current = await sClient(r.port, ["-tls1_2", "-CAfile", pki().ca.cert]);
      expect(current).toMatchObject({ connected: true, protocol: "TLSv1.2" });
      expect(current.output).toContain("Verify return code: 0 (ok)");
    });

    needsOpenssl.test("stop() drops a client still in its TLS handshake instead of waiting for the handshake timeout", async () => {
      const r = await startSource(kind, {});
      const silent = net.connect(r.port, "127.0.0.1");
      const closed = new Promise<void>((resolve) => silent.on("close", () => resolve()));
      silent.on("error", () => {});
      await new Promise<void>((resolve) => silent.on("connect", () => resolve()));
      await sleep(50);
      const began = Date.now();
      await r.source.stop();
      await closed;
      // The default handshake timeout is two minutes.
      expect(Date.now() - began).toBeLessThan(waitBound(2000));
    });

    describe("client-auth = required", () => {
      needsOpenssl.test("a client without a certificate is refused, and the log names it", async () => {
        const r = await startSource(kind, { "client-auth": "required", truststore: pki().ca.cert });
        await refused(r, await kind.send(r.port, clientOptions("none"), "anonymous"), NO_CERT);
      });

      needsOpenssl.test("a client with a certificate the truststore's CA signed is served: its event arrives", async () => {
        const r = await startSource(kind, { "client-auth": "required", truststore: pki().ca.cert });
        const attempt = await kind.send(r.port, clientOptions("trusted"), "from a trusted client");
        expect(attempt.served).not.toBe(false);
        await arrived(r, "from a trusted client");
      });

      needsOpenssl.test("a client with a self-signed certificate is refused, and the log names it", async () => {
        const r = await startSource(kind, { "client-auth": "required", truststore: pki().ca.cert });
        await refused(r, await kind.send(r.port, clientOptions("self-signed"), "rogue"), UNTRUSTED);
      });
    });

    describe("client-auth = optional", () => {
      needsOpenssl.test("a client without a certificate is served", async () => {
        const r = await startSource(kind, { "client-auth": "optional", truststore: pki().ca.cert });
        await kind.send(r.port, clientOptions("none"), "anonymous but welcome");
        await arrived(r, "anonymous but welcome");
      });

      needsOpenssl.test("a client with an untrusted certificate is refused, and the log names it", async () => {
        const r = await startSource(kind, { "client-auth": "optional", truststore: pki().ca.cert });
        await refused(r, await kind.send(r.port, clientOptions("self-signed"), "rogue"), UNTRUSTED);
      });

      needsOpenssl.test("a client with a trusted certificate is served", async () => {
        const r = await startSource(kind, { "client-auth": "optional", truststore: pki().ca.cert });
        await kind.send(r.port, clientOptions("trusted"), "trusted and optional");
        await arrived(r, "trusted and optional");
      });
    });
  });
}

describe("syslogtcp with client-auth = required, openssl s_client as the client", () => {
  needsOpenssl.test("s_client -tls1_2 with the CA-signed certificate delivers its line; without one the handshake fails", async () => {
    const r = await startSource(SOURCES[2], { "client-auth": "required", truststore: pki().ca.cert });
    const withCert = await sClient(r.port, ["-tls1_2", "-CAfile", pki().ca.cert, "-cert", pki().client.cert, "-key", pki().client.key], "<13>Jan  2 03:04:05 host via s_client\n");
    expect(withCert.connected).toBe(true);
    await arrived(r, "via s_client");
    const without = await sClient(r.port, ["-tls1_2", "-CAfile", pki().ca.cert], "<13>Jan  2 03:04:05 host no cert\n");
    expect(without.connected).toBe(false);
    expect(without.output).toMatch(/alert handshake failure|alert certificate required/);
    await until(() => r.logger.lines.some((l) => l.level === "warn" && /TLS handshake with 127\.0\.0\.1:\d+ failed/.test(l.message)), 5000, "the refusal logged");
    expect(await takeAll(r.channel)).toEqual([]);
  });
});

describe("flume run: the four TLS sources from one properties file, client-auth = required", () => {
  needsOpenssl.test("s_client -tls1 is refused on every port; CA-signed clients deliver to file_roll; an anonymous client is refused and logged by address", async () => {
    const ports = { avro: await freePort(), http: await freePort(), sys: await freePort(), multi: await freePort() };
    const out = path.join(tmp.dir, "rolled");
    const tlsLines = (name: string) =>
      [`ssl = true`, `keystore = ${pki().server.cert}`, `keystore-key = ${pki().server.key}`, `client-auth = required`, `truststore = ${pki().ca.cert}`].map((l) => `a1.sources.${name}.${l}`).join("\n");
    const conf = `a1.sources = av web sys multi
a1.channels = c1
a1.sinks = k1
a1.sources.av.type = avro
a1.sources.av.bind = 127.0.0.1
a1.sources.av.port = ${ports.avro}
a1.sources.av.channels = c1
${tlsLines("av")}
a1.sources.web.type = http
a1.sources.web.bind = 127.0.0.1
a1.sources.web.port = ${ports.http}
a1.sources.web.channels = c1
${tlsLines("web")}
a1.sources.sys.type = syslogtcp
a1.sources.sys.host = 127.0.0.1
a1.sources.sys.port = ${ports.sys}
a1.sources.sys.channels = c1
${tlsLines("sys")}
a1.sources.multi.type = multiport_syslogtcp
a1.sources.multi.host = 127.0.0.1
a1.sources.multi.ports = ${ports.multi}
a1.sources.multi.channels = c1
${tlsLines("multi")}
a1.channels.c1.type = memory
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${out}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.batchSize = 1
`;
    const file = path.join(tmp.dir, "tls-agent.conf");
    writeFileSync(file, conf);
    mkdirSync(out, { recursive: true });
    const agent = startCli(["run", "-f", file, "-n", "a1", "--no-reload-conf"]);
    agents.push({
      stop: async () => {
        agent.child.kill("SIGTERM");
        await agent.exited();
      },
    });
    await agent.waitFor(/agent a1 started/);
    for (const port of Object.values(ports)) {
      const old = await sClient(port, ["-tls1"]);
      expect(old.connected).toBe(false);
      expect(old.output).toContain("alert protocol version");
      expect((await sClient(port, ["-tls1_2", "-CAfile", pki().ca.cert, "-cert", pki().client.cert, "-key", pki().client.key])).connected).toBe(true);
    }
    const trusted = clientOptions("trusted");
    expect((await SOURCES[0].send(ports.avro, trusted, "via avro")).served).toBe(true);
    expect((await SOURCES[1].send(ports.http, trusted, "via http")).served).toBe(true);
    await SOURCES[2].send(ports.sys, trusted, "via syslogtcp");
    await SOURCES[3].send(ports.multi, trusted, "via multiport");
    const anonymous = await SOURCES[2].send(ports.sys, clientOptions("none"), "anonymous");
    const rolled = () => readdirSync(out).map((f) => readFileSync(path.join(out, f), "utf8")).join("");
    await until(() => rolled().split("\n").filter(Boolean).length >= 4, 10000, `4 events in ${out}; agent said ${agent.stdout}${agent.stderr}`);
    expect(rolled().split("\n").filter(Boolean).sort()).toEqual(["via avro", "via http", "via multiport", "via syslogtcp"]);
    await until(() => (agent.stdout + agent.stderr).includes(`TLS handshake with 127.0.0.1:${anonymous.localPort} failed`), 5000, "the refusal in the agent's log");
  }, { timeout: 30000 });
});
