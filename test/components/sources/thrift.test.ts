import { describe, expect, test } from "bun:test";
import net from "node:net";
import { createEvent } from "../../../src/core/event.ts";
import { encodeAppendBatch } from "../../../src/rpc/thrift/messages.ts";
import { ThriftRpcClient } from "../../../src/rpc/thrift/client.ts";
import { asyncCleanupsAfterEach, tempDir, waitBound } from "../../support/helpers.ts";
import { needsOpenssl, needsThrift } from "../../support/requires.ts";
import { drain, memoryChannel, rawExchange, texts, until } from "../../support/rpc.ts";
import { bodyPattern, generatedPython, pythonClient, startThriftSource, warnings, type PyCall } from "../../support/thrift/harness.ts";
import { certificateAuthority, pkcs12, selfSignedCert, signedCert } from "../../support/tls.ts";

const cleanups = asyncCleanupsAfterEach();
const python = generatedPython();

async function source(props: Record<string, string> = {}, channel = memoryChannel()) {
  const s = await startThriftSource(props, channel);
  cleanups.push(() => s.source.stop());
  return s;
}

/** The calls every protocol case makes: headers with non-ASCII text, an empty body, a 1 MiB body. */
const CALLS: PyCall[] = [
  { method: "append", event: { headers: { host: "edge-01", "città": "Zürich ☃", emoji: "🚀" }, body: "first ✓" } },
  {
    method: "appendBatch",
    events: [
      { headers: {}, body: "" },
      { headers: { big: "yes" }, body_size: 1 << 20 },
      { headers: { n: "3" }, body: "third" },
    ],
  },
  { method: "appendBatch", events: [] },
];

const needsThriftAndOpenssl = needsThrift.and(needsOpenssl);

describe("thrift source with python3-thrift clients", () => {
  for (const protocol of ["compact", "binary"]) {
    needsThrift.test(`${protocol} protocol, framed: append and appendBatch are answered OK and every event arrives intact`, async () => {
      const props: Record<string, string> = protocol === "compact" ? {} : { protocol };
      const { source: src, channel, port } = await source(props);
      const results = await pythonClient(python.dir, port, protocol, CALLS);
      expect(results).toEqual([{ status: "OK" }, { status: "OK" }, { status: "OK" }]);
      const got = await drain(channel);
      expect(got).toHaveLength(4);
      expect(got[0].headers).toEqual({ host: "edge-01", "città": "Zürich ☃", emoji: "🚀" });
      expect(texts(got)[0]).toBe("first ✓");
      expect(got[1].body.length).toBe(0);
      expect(got[1].headers).toEqual({});
      expect(Buffer.from(got[2].body).equals(bodyPattern(1 << 20))).toBe(true);
      expect(got[3]).toMatchObject({ headers: { n: "3" } });
      expect(texts([got[3]])).toEqual(["third"]);
      expect(src.counter.values).toMatchObject({
        AppendReceivedCount: 1,
        AppendAcceptedCount: 1,
        AppendBatchReceivedCount: 2,
        AppendBatchAcceptedCount: 2,
        EventReceivedCount: 4,
        EventAcceptedCount: 4,
        ChannelWriteFail: 0,
      });
    });
  }

  needsThriftAndOpenssl.test(`over TLS (certificate made with openssl; the client verifies it)`, async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    const { channel, port, logger } = await source({ ssl: "true", keystore: cert, "keystore-key": key, protocol: "binary" });
    const results = await pythonClient(python.dir, port, "binary", CALLS.slice(0, 2), { ca: cert });
    expect(results).toEqual([{ status: "OK" }, { status: "OK" }]);
    expect(await drain(channel)).toHaveLength(4);
    // A plain-TCP client is refused at the TLS layer, with the peer named.
    const plain = await pythonClient(python.dir, port, "binary", CALLS.slice(0, 1));
    expect(plain[0].error).toBeDefined();
    await until(() => warnings(logger).some((m) => /TLS handshake with 127\.0\.0\.1:\d+ failed/.test(m)));
  });

  needsThrift.test(`a full channel: appendBatch is answered FAILED, ChannelWriteFail counts it, and the retry succeeds once there is room`, async () => {
    const channel = memoryChannel("c1", { capacity: 3, transactionCapacity: 3, keepAlive: 0 });
    const { source: src, port, logger } = await source({}, channel);
    const batch = (p: string) => ({ method: "appendBatch" as const, events: [0, 1].map((i) => ({ body: `${p}${i}` })) });
    const results = await pythonClient(python.dir, port, "compact", [batch("a"), batch("b")]);
    expect(results).toEqual([{ status: "OK" }, { status: "FAILED" }]);
    expect(src.counter.values).toMatchObject({ AppendBatchReceivedCount: 2, AppendBatchAcceptedCount: 1, ChannelWriteFail: 1, EventAcceptedCount: 2 });
    expect(warnings(logger).some((m) => /channel refused 2 events from 127\.0\.0\.1:\d+/.test(m))).toBe(true);
    expect(texts(await drain(channel))).toEqual(["a0", "a1"]);
    expect(await pythonClient(python.dir, port, "compact", [batch("b")])).toEqual([{ status: "OK" }]);
    expect(texts(await drain(channel))).toEqual(["b0", "b1"]);
  });

  needsThrift.test(`fields and arguments from a newer IDL revision are skipped (forward compatibility), in both protocols`, async () => {
    for (const protocol of ["compact", "binary"]) {
      const { channel, port } = await source({ protocol });
      const extra = {
        timestamp: 1796038752343,
        weight: 0.5,
        urgent: true,
        origin: { host: "h1", offsets: [1, -2, 2 ** 40], tags: { 7: ["x", "y"] } },
        hops: [{ host: "a" }, { host: "b", offsets: [3] }],
        priority: -3,
        shard: 300,
      };
      const results = await pythonClient(python.dir, port, protocol, [
        { method: "appendBatch", events: [{ headers: { k: "v" }, body: "new client", extra }, { body: "plain" }], args: ["trace-1"] },
        { method: "append", event: { body: "single", extra: { origin: { host: "h2" } } }, args: ["trace-2"] },
      ], { module: "flume_thrift_extended" });
      expect(results).toEqual([{ status: "OK" }, { status: "OK" }]);
      const got = await drain(channel);
      expect(texts(got)).toEqual(["new client", "plain", "single"]);
      expect(got[0].headers).toEqual({ k: "v" });
    }
  });

  needsThrift.test(`an unknown method gets a TApplicationException UNKNOWN_METHOD and the connection keeps serving`, async () => {
    const { channel, port } = await source();
    const results = await pythonClient(python.dir, port, "compact", [{ method: "raw", name: "appendBatchV2" }, { method: "append", event: { body: "after" } }]);
    expect(results).toEqual([{ exception: { type: 1, message: "Invalid method name: 'appendBatchV2'" } }, { status: "OK" }]);
    expect(texts(await drain(channel))).toEqual(["after"]);
  });

  needsThrift.test(`a client speaking the other protocol is disconnected with an error naming it and the fix`, async () => {
    const { port, logger } = await source({ protocol: "compact" });
    const results = await pythonClient(python.dir, port, "binary", [{ method: "append", event: { body: "x" } }]);
    expect(results[0].error).toBeDefined();
    await until(() => warnings(logger).some((m) => m.includes("the client speaks the binary protocol; set protocol = binary")));
    expect(warnings(logger).join("\n")).toMatch(/closing connection from 127\.0\.0\.1:\d+/);
  });
});

describe("thrift source: client certificates (client-auth)", () => {
  /** A server key store (PKCS12, so its type comes from its content), a CA for clients, a client it signed and one from another CA. */
  function material() {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = selfSignedCert(tmp.dir);
    const clientsCa = certificateAuthority(tmp.dir, "clients-ca");
    return {
      server,
      props: { ssl: "true", keystore: pkcs12(tmp.dir, server, "server", "changeit"), "keystore-password": "changeit", truststore: clientsCa.cert },
      trusted: signedCert(tmp.dir, clientsCa, "edge-01"),
      stranger: signedCert(tmp.dir, certificateAuthority(tmp.dir, "other-ca"), "stranger"),
    };
  }
  const batchFrom = (who: string): PyCall[] => [{ method: "appendBatch", events: [{ headers: { who }, body: `from ${who}` }] }];
  const refusals = (logger: Parameters<typeof warnings>[0]) => warnings(logger).filter((m) => /(TLS handshake with|refused) 127\.0\.0\.1:\d+/.test(m));

  needsThriftAndOpenssl.test("required: a client without a certificate and one whose certificate another CA signed are refused, with the peer named; a client signed by the truststore's CA is served", async () => {
    const m = material();
    const { source: src, channel, port, logger } = await source({ ...m.props, "client-auth": "required" });
    const anonymous = await pythonClient(python.dir, port, "compact", batchFrom("anonymous"), { ca: m.server.cert });
    expect(anonymous).toHaveLength(1);
    expect(anonymous[0].error).toBeDefined();
    const stranger = await pythonClient(python.dir, port, "compact", batchFrom("stranger"), { ca: m.server.cert, ...m.stranger });
    expect(stranger[0].error).toBeDefined();
    await until(() => refusals(logger).length >= 2);
    // The TLS layer refuses both in the handshake (rejectUnauthorized); clientCertificateProblem covers runtimes that let one through.
    const [noCert, untrusted] = refusals(logger);
    expect(noCert).toMatch(/127\.0\.0\.1:\d+.*(PEER_DID_NOT_RETURN_A_CERTIFICATE|peer did not return a certificate|no client certificate)/i);
    expect(untrusted).toMatch(/127\.0\.0\.1:\d+.*(unable to verify|not trusted)/i);
    expect(await drain(channel)).toHaveLength(0);
    expect(src.counter.values.AppendBatchReceivedCount).toBe(0);

    const served = await pythonClient(python.dir, port, "compact", batchFrom("edge-01"), { ca: m.server.cert, ...m.trusted });
    expect(served).toEqual([{ status: "OK" }]);
    const got = await drain(channel);
    expect(texts(got)).toEqual(["from edge-01"]);
    expect(got[0].headers).toEqual({ who: "edge-01" });
  });

  needsThriftAndOpenssl.test("optional: a client without a certificate is served, one with an untrusted certificate is refused", async () => {
    const m = material();
    const { channel, port, logger } = await source({ ...m.props, "client-auth": "optional" });
    expect(await pythonClient(python.dir, port, "compact", batchFrom("anonymous"), { ca: m.server.cert })).toEqual([{ status: "OK" }]);
    const stranger = await pythonClient(python.dir, port, "compact", batchFrom("stranger"), { ca: m.server.cert, ...m.stranger });
    expect(stranger[0].error).toBeDefined();
    await until(() => refusals(logger).length >= 1);
    expect(refusals(logger)[0]).toMatch(/refused 127\.0\.0\.1:\d+: client certificate not trusted/);
    expect(texts(await drain(channel))).toEqual(["from anonymous"]);
  });

  needsOpenssl.test("client-auth without a truststore is a configuration error naming truststore", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { cert, key } = selfSignedCert(tmp.dir);
    await expect(startThriftSource({ ssl: "true", keystore: cert, "keystore-key": key, "client-auth": "required" })).rejects.toThrow('"key":"truststore","message":"is required when client-auth is required');
  });
});

describe("thrift source: bad input from raw sockets", () => {
  const frameOf = (payload: Buffer) => Buffer.concat([int32(payload.length), payload]);
  function int32(n: number): Buffer {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return b;
  }

  test("garbage, an oversized frame and an unframed message each close only their connection, with an error naming the peer; a client on another connection is served throughout", async () => {
    const { channel, port, logger } = await source({ "max-frame-size": "4096" });
    const good = await ThriftRpcClient.connect({ host: "127.0.0.1", port, protocol: "compact" });
    cleanups.push(() => good.close());
    await good.appendBatch([createEvent("before")]);

    const garbage = await rawExchange(port, frameOf(Buffer.from("definitely not thrift at all")));
    expect(garbage.closedByServer).toBe(true);
    const oversized = await rawExchange(port, Buffer.concat([int32(5000), Buffer.alloc(100)]));
    expect(oversized.closedByServer).toBe(true);
    const http = await rawExchange(port, Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    expect(http.closedByServer).toBe(true);
    const unframed = await rawExchange(port, Buffer.from([0x82, 0x21, 0x00, 0x06, ...Buffer.from("append"), 0x00]));
    expect(unframed.closedByServer).toBe(true);
    const negative = await rawExchange(port, int32(-5));
    expect(negative.closedByServer).toBe(true);

    await good.appendBatch([createEvent("after")]);
    expect(texts(await drain(channel))).toEqual(["before", "after"]);
    const log = warnings(logger).join("\n");
    expect(log).toMatch(/closing connection from 127\.0\.0\.1:\d+: invalid compact message: protocol id 0x64/);
    expect(log).toMatch(/closing connection from 127\.0\.0\.1:\d+: frame of 5000 bytes exceeds max-frame-size \(4096 bytes\)/);
    expect(log).toMatch(/closing connection from 127\.0\.0\.1:\d+: invalid frame size .*an HTTP request/);
    expect(log).toMatch(/closing connection from 127\.0\.0\.1:\d+: invalid frame size .*an unframed TCompactProtocol message: the client must use the framed transport/);
    expect(log).toMatch(/invalid frame size -5/);
  });

  test("a well-framed call whose arguments cannot be decoded gets a PROTOCOL_ERROR answer and the connection stays usable", async () => {
    const { channel, port, logger } = await source();
    // A compact appendBatch call whose list claims 3 events and then ends.
    const frame = encodeAppendBatch("compact", 9, [createEvent("a"), createEvent("b"), createEvent("c")]);
    const cut = Buffer.from(frame.subarray(0, 20));
    cut.writeInt32BE(16, 0);
    const good = encodeAppendBatch("compact", 10, [createEvent("ok")]);
    const answers = await exchangeFrames(port, Buffer.concat([cut, good]), 2);
    // First answer: an EXCEPTION message (type 3 in the high bits of byte 1) carrying PROTOCOL_ERROR (7).
    expect(answers[0][1] >> 5).toBe(3);
    expect(answers[0].toString("latin1")).toContain("truncated compact message");
    expect(answers[1][1] >> 5).toBe(2); // REPLY
    expect(texts(await drain(channel))).toEqual(["ok"]);
    expect(warnings(logger).join("\n")).toMatch(/request from 127\.0\.0\.1:\d+ failed/);
  });

  test("pipelined calls on one connection are each one channel transaction and are answered in order", async () => {
    const { source: src, channel, port } = await source({ protocol: "binary" });
    const frames = [1, 2, 3, 4, 5].map((n) => encodeAppendBatch("binary", 100 + n, [createEvent(`p${n}a`), createEvent(`p${n}b`)]));
    const answers = await exchangeFrames(port, Buffer.concat(frames), 5);
    // Binary replies: version word, name "appendBatch", then the seqid.
    expect(answers.map((a) => a.readInt32BE(4 + 4 + 11))).toEqual([101, 102, 103, 104, 105]);
    expect(texts(await drain(channel))).toEqual(["p1a", "p1b", "p2a", "p2b", "p3a", "p3b", "p4a", "p4b", "p5a", "p5b"]);
    expect(src.counter.values.AppendBatchAcceptedCount).toBe(5);
  });
});

describe("thrift source: how Flume 1.11 reads its properties", () => {
  test("the source refuses protocols other than binary and compact, and kerberos", async () => {
    await expect(startThriftSource({ protocol: "json" })).rejects.toThrow('must be binary or compact (the only Thrift protocols Flume\'s thrift source and sink speak), got \\"json\\"');
    await expect(startThriftSource({ kerberos: "true", "agent-principal": "flume/h@R", "agent-keytab": "/k" })).rejects.toThrow("not supported by Flume TS");
    const s = await startThriftSource({ protocol: "Binary" });
    cleanups.push(() => s.source.stop());
    expect(s.source.protocol).toBe("compact");
    expect(warnings(s.logger).join("\n")).toContain("protocol = Binary selects the compact protocol");
  });
});

/** Writes bytes on one connection and resolves with the first n answer payloads (frame headers stripped). */
function exchangeFrames(port: number, bytes: Buffer, n: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0);
    const socket = net.connect(port, "127.0.0.1", () => socket.write(bytes));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`only ${data.length} bytes of answers`));
    }, waitBound(4000));
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const out: Buffer[] = [];
      let pos = 0;
      while (pos + 4 <= data.length && pos + 4 + data.readInt32BE(pos) <= data.length) {
        const len = data.readInt32BE(pos);
        out.push(data.subarray(pos + 4, pos + 4 + len));
        pos += 4 + len;
      }
      if (out.length >= n) {
        clearTimeout(timer);
        socket.destroy();
        resolve(out);
      }
    });
    socket.on("error", reject);
  });
}
