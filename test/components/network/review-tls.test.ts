import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import net from "node:net";
import path from "node:path";
import type { TlsOptions } from "node:tls";
import { definition as syslogTcp } from "../../../src/components/sources/syslog-tcp.ts";
import { tempDir } from "../../support/helpers.ts";
import { rig } from "../../support/network.ts";

const { dir, cleanup } = tempDir();
afterAll(cleanup);
const cert = path.join(dir, "cert.pem");
const key = path.join(dir, "key.pem");
execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });

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

describe("TLS sources and clients that never finish the handshake", () => {
  test("syslogtcp closes the connection when the handshake times out, naming the peer", async () => {
    const r = rig(syslogTcp, { host: "127.0.0.1", port: "0", ssl: "true", "ssl-certificate": cert, "ssl-key": key });
    (r.source.options.tls as TlsOptions).handshakeTimeout = QUICK;
    await r.source.start();
    try {
      await silentClient(r.source.port);
      expect(r.logger.lines.some((l) => /TLS handshake with 127\.0\.0\.1:\d+ failed/.test(l.message))).toBe(true);
    } finally {
      await r.source.stop();
    }
  });
});
