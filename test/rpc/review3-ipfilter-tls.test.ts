import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import tls from "node:tls";
import { createEvent } from "../../src/core/event.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { asyncCleanupsAfterEach, tempDir, FIXTURES } from "../support/helpers.ts";
import { drain, selfSignedCert, startSource, texts, until } from "../support/rpc.ts";

const AVRO_RPC = path.join(FIXTURES, "avro-rpc");
const fixture = (name: string) => readFileSync(path.join(AVRO_RPC, name));

const cleanups = asyncCleanupsAfterEach();

/**
 * A TCP relay on 127.0.0.1 in front of the source that counts the bytes the source sends back.
 * A TLS server that starts its handshake answers the ClientHello with a ServerHello, so zero
 * bytes back means no TLS work was done for that client.
 */
async function countingRelay(target: number) {
  const stats = { bytesFromServer: 0 };
  const relay = net.createServer((client) => {
    const upstream = net.connect(target, "127.0.0.1");
    upstream.on("data", (d: Buffer) => {
      stats.bytesFromServer += d.length;
      client.write(d);
    });
    client.on("data", (d: Buffer) => upstream.write(d));
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", closeBoth);
    upstream.on("close", closeBoth);
    client.on("error", () => {});
    upstream.on("error", () => {});
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => relay.close(() => resolve())));
  return { port: (relay.address() as net.AddressInfo).port, stats };
}

async function tlsSource(rules: string) {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const { cert, key } = selfSignedCert(tmp.dir);
  const s = await startSource({ ssl: "true", keystore: cert, "keystore-key": key, "keystore-type": "PEM", ipFilter: "true", ipFilterRules: rules });
  cleanups.push(() => s.source.stop());
  return s;
}

describe("avro source with ssl and ipFilter", () => {
  test("a denied client is closed on the TCP connection, before any TLS handshake, and the log names it", async () => {
    const s = await tlsSource("deny:ip:127.0.0.1");
    const relay = await countingRelay(s.port);
    let secured = false;
    const closed = await new Promise<string>((resolve) => {
      const socket = tls.connect({ host: "127.0.0.1", port: relay.port, rejectUnauthorized: false });
      socket.on("secureConnect", () => {
        secured = true;
      });
      socket.on("error", (err) => resolve(err.message));
      socket.on("close", () => resolve("closed"));
    });
    expect(closed).not.toBe("");
    expect(secured).toBe(false);
    // The source never answered the ClientHello.
    expect(relay.stats.bytesFromServer).toBe(0);
    await until(() => s.logger.lines.some((l) => /127\.0\.0\.1:\d+ refused by ipFilterRules/.test(l.message)));
    expect(s.logger.lines.some((l) => /TLS handshake/.test(l.message))).toBe(false);
    expect(s.source.counter.values.AppendBatchReceivedCount).toBe(0);
  });

  test("an allowed client gets its TLS handshake and delivers events through the same relay", async () => {
    const s = await tlsSource("allow:ip:127.0.0.1,deny:ip:*");
    const relay = await countingRelay(s.port);
    const client = await AvroRpcClient.connect({ host: "127.0.0.1", port: relay.port, tls: { rejectUnauthorized: false } });
    await client.appendBatch([createEvent("through-tls"), createEvent("and-filter")]);
    client.close();
    expect(texts(await drain(s.channel))).toEqual(["through-tls", "and-filter"]);
    expect(relay.stats.bytesFromServer).toBeGreaterThan(0);
  });

  test("with deflate too, an allowed client is served and a denied one gets no bytes", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const props = { ssl: "true", keystore: cert, "keystore-key": key, "keystore-type": "PEM", "compression-type": "deflate", ipFilter: "true" };
    const allowed = await startSource({ ...props, ipFilterRules: "allow:name:localhost" });
    cleanups.push(() => allowed.source.stop());
    const c = await AvroRpcClient.connect({ host: "127.0.0.1", port: allowed.port, compression: "deflate", tls: { rejectUnauthorized: false } });
    await c.appendBatch([createEvent("deflated")]);
    c.close();
    expect(texts(await drain(allowed.channel))).toEqual(["deflated"]);

    const denied = await startSource({ ...props, ipFilterRules: "deny:name:localhost" });
    cleanups.push(() => denied.source.stop());
    const relay = await countingRelay(denied.port);
    const err = await AvroRpcClient.connect({ host: "127.0.0.1", port: relay.port, compression: "deflate", tls: { rejectUnauthorized: false }, connectTimeout: 3000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(relay.stats.bytesFromServer).toBe(0);
  });

  test("an allowed TLS client that half-closes after its requests still gets every answer", async () => {
    const s = await tlsSource("allow:ip:127.*");
    const answer = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      // allowHalfOpen is honoured by tls.connect but missing from its option type.
      const options: tls.ConnectionOptions & { allowHalfOpen: boolean } = { host: "127.0.0.1", port: s.port, rejectUnauthorized: false, allowHalfOpen: true };
      const socket = tls.connect(options);
      socket.on("secureConnect", () => socket.end(fixture("avro-client-plain.c2s.bin")));
      socket.on("data", (d: Buffer) => chunks.push(d));
      socket.on("close", () => resolve(Buffer.concat(chunks)));
      socket.on("error", reject);
    });
    expect(answer.toString("hex")).toBe(fixture("avro-client-plain.s2c.bin").toString("hex"));
    expect((await drain(s.channel)).length).toBeGreaterThan(0);
  });

  test("stopping the source drops a client still in its TLS handshake instead of waiting for it", async () => {
    const s = await tlsSource("allow:ip:127.*");
    const raw = net.connect(s.port, "127.0.0.1");
    raw.on("error", () => {});
    const closed = new Promise<void>((resolve) => raw.on("close", () => resolve()));
    await new Promise<void>((resolve) => raw.on("connect", () => resolve()));
    await Bun.sleep(50); // let the filter admit it into the handshake
    await s.source.stop();
    await closed;
    expect(raw.destroyed).toBe(true);
  });
});
