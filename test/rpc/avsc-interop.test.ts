import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import avro from "avsc";
import { createEvent } from "../../src/core/event.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { drain, startSource, texts } from "../support/rpc.ts";
import { asyncCleanupsAfterEach, FIXTURES } from "../support/helpers.ts";

// avsc is an independent Avro IPC implementation with Netty-framed stateful channels; it
// hashes its own rendering of the protocol, so the handshake takes the CLIENT/NONE paths.
const AVRO_RPC = path.join(FIXTURES, "avro-rpc");
const service = () => avro.Service.forProtocol(JSON.parse(readFileSync(path.join(AVRO_RPC, "AvroSourceProtocol.server.json"), "utf8")));

const cleanups = asyncCleanupsAfterEach();

interface AvscClient {
  emitMessage(name: string, req: unknown, opts: object, cb: (err: unknown, res: unknown) => void): void;
}

describe("interoperability with avsc's Avro IPC", () => {
  test("an avsc client sends appendBatch and append to our avro source", async () => {
    const { source, channel, port } = await startSource();
    cleanups.push(() => source.stop());
    const socket = net.connect(port, "127.0.0.1");
    socket.setNoDelay(true);
    cleanups.push(() => socket.destroy());
    const client = service().createClient({ buffering: true, transport: socket }) as unknown as AvscClient;
    const call = (name: string, req: unknown) => new Promise((resolve, reject) => client.emitMessage(name, req, {}, (err, res) => (err ? reject(err) : resolve(res))));
    expect(await call("appendBatch", { events: [{ headers: { a: "b" }, body: Buffer.from("from avsc 1") }, { headers: {}, body: Buffer.from("from avsc 2") }] })).toBe("OK");
    expect(await call("append", { event: { headers: { c: "d" }, body: Buffer.from("from avsc 3") } })).toBe("OK");
    const got = await drain(channel);
    expect(texts(got)).toEqual(["from avsc 1", "from avsc 2", "from avsc 3"]);
    expect(got[0].headers).toEqual({ a: "b" });
  });

  test("our client sends to an avsc server", async () => {
    const got: { headers: Record<string, string>; body: string }[] = [];
    const server = service()
      .createServer()
      .onMessage("appendBatch", (req: { events: { headers: Record<string, string>; body: Buffer }[] }, cb: (err: unknown, res: string) => void) => {
        for (const e of req.events) got.push({ headers: e.headers, body: e.body.toString() });
        cb(null, got.length > 2 ? "FAILED" : "OK");
      });
    const ns = net.createServer((s) => {
      s.setNoDelay(true);
      server.createChannel(s);
    });
    await new Promise<void>((r) => ns.listen(0, "127.0.0.1", () => r()));
    cleanups.push(() => ns.close());
    const c = await AvroRpcClient.connect({ host: "127.0.0.1", port: (ns.address() as net.AddressInfo).port });
    cleanups.push(() => c.close());
    await c.appendBatch([createEvent("one"), createEvent("two", { h: "v" })]);
    await expect(c.appendBatch([createEvent("three")])).rejects.toThrow(/Status FAILED/);
    expect(got).toEqual([
      { headers: {}, body: "one" },
      { headers: { h: "v" }, body: "two" },
      { headers: {}, body: "three" },
    ]);
  });
});
