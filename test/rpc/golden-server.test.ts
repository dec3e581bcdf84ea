import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import zlib from "node:zlib";
import type { Event } from "../../src/core/event.ts";
import type { RpcStatus } from "../../src/rpc/protocol.ts";
import { AvroRpcServer } from "../../src/rpc/server.ts";
import { FIXTURES, waitBound } from "../support/helpers.ts";

const AVRO_RPC = path.join(FIXTURES, "avro-rpc");
const fixture = (name: string) => readFileSync(path.join(AVRO_RPC, name));

let server: AvroRpcServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function startServer(status: RpcStatus, compression: "none" | "deflate" = "none") {
  const batches: Event[][] = [];
  server = new AvroRpcServer(
    {
      appendBatch: async (events) => {
        batches.push(events);
        return status;
      },
      append: async (event) => {
        batches.push([event]);
        return status;
      },
    },
    { bind: "127.0.0.1", port: 0, compression },
  );
  const port = await server.listen();
  return { port, batches };
}

/** Sends a recorded client stream and collects the answer until `until` says it is complete. */
function exchange(port: number, bytes: Buffer, until: (received: Buffer) => boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, "127.0.0.1", () => socket.write(bytes));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer; got ${Buffer.concat(chunks).toString("hex")}`));
    }, waitBound(3000));
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      const all = Buffer.concat(chunks);
      if (until(all)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(all);
      }
    });
    socket.on("error", reject);
  });
}

const bodies = (events: Event[]) => events.map((e) => Buffer.from(e.body).toString());

describe("our Avro RPC server answers recorded Flume 1.11 clients byte for byte", () => {
  test("flume-ng avro-client, plain: two appendBatch calls answered BOTH then OK", async () => {
    const { port, batches } = await startServer("OK");
    const expected = fixture("avro-client-plain.s2c.bin");
    const got = await exchange(port, fixture("avro-client-plain.c2s.bin"), (b) => b.length >= expected.length);
    expect(got.toString("hex")).toBe(expected.toString("hex"));
    expect(batches.map(bodies)).toEqual([
      ["line one", "line two", "line three", "line four", "line five"],
      ["line six", "line seven"],
    ]);
    expect(batches[0][0].headers).toEqual({ origin: "fixture", host: "edge-01" });
  });

  test("Flume avro sink: seq bodies 0..9 in two batches of 5", async () => {
    const { port, batches } = await startServer("OK");
    const expected = fixture("avro-sink-seq.s2c.bin");
    const got = await exchange(port, fixture("avro-sink-seq.c2s.bin"), (b) => b.length >= expected.length);
    expect(got.toString("hex")).toBe(expected.toString("hex"));
    expect(batches.flatMap(bodies)).toEqual(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    expect(batches[0][0].headers).toEqual({});
  });

  test("a batch the channel refuses is answered with Status FAILED and no error", async () => {
    const { port } = await startServer("FAILED");
    const expected = fixture("channel-full.s2c.bin");
    const got = await exchange(port, fixture("channel-full.c2s.bin"), (b) => b.length >= expected.length);
    expect(got.toString("hex")).toBe(expected.toString("hex"));
  });

  test("an unknown client hash without protocol text gets match=NONE, our protocol and hash, and no call", async () => {
    const { port, batches } = await startServer("OK");
    const expected = fixture("unknown-client-hash.s2c.bin");
    const got = await exchange(port, fixture("unknown-client-hash.c2s.bin"), (b) => b.length >= expected.length);
    expect(got.toString("hex")).toBe(expected.toString("hex"));
    expect(batches).toHaveLength(0);
  });

  test("deflate: one zlib stream per direction, sync-flushed; inflated answer equals Flume's", async () => {
    const { port, batches } = await startServer("OK", "deflate");
    const recorded = fixture("avro-client-deflate.s2c.bin");
    const expectedPlain = zlib.inflateSync(recorded, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    const inflate = (b: Buffer) => {
      try {
        return zlib.inflateSync(b, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
      } catch {
        return Buffer.alloc(0);
      }
    };
    const got = await exchange(port, fixture("avro-client-deflate.c2s.bin"), (b) => inflate(b).length >= expectedPlain.length);
    expect(inflate(got).toString("hex")).toBe(expectedPlain.toString("hex"));
    expect(got.subarray(0, 2).toString("hex")).toBe("789c");
    expect(batches.flatMap(bodies)).toHaveLength(7);
  });
});
