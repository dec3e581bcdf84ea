import { describe, expect, test } from "bun:test";
import net from "node:net";
import { constants, deflateSync } from "node:zlib";
import { parseConfig } from "../../src/config/schema.ts";
import { definition as avroSource } from "../../src/components/sources/avro.ts";
import type { Event } from "../../src/core/event.ts";
import { AvroWriter } from "../../src/rpc/binary.ts";
import { writeEventArray, writeHandshakeRequest } from "../../src/rpc/messages.ts";
import { PROTOCOL_HASH } from "../../src/rpc/protocol.ts";
import { AvroRpcServer } from "../../src/rpc/server.ts";
import type { CompressionType } from "../../src/rpc/transport.ts";
import { until } from "../support/rpc.ts";
import { asyncCleanupsAfterEach } from "../support/helpers.ts";

const cleanups = asyncCleanupsAfterEach();

const MAX_FRAME = 256 * 1024;
const BODY = 200 * 1024;
const CALLS = 100;
/** The default limit, plus one socket read (Bun reads up to 512 KiB at a time) that may land before the pause. */
const BOUND = MAX_FRAME + 1024 * 1024 + 512 * 1024 + 64 * 1024;

/** appendBatch calls of one 200 KB event each (all zeros: 20 MB that deflate to about 20 KB). */
function calls(): Buffer {
  const frames: Buffer[] = [];
  for (let serial = 1; serial <= CALLS; serial++) {
    const w = new AvroWriter(BODY + 256);
    w.int32(serial);
    w.int32(1);
    const at = w.int32(0);
    if (serial === 1) writeHandshakeRequest(w, { clientHash: PROTOCOL_HASH, clientProtocol: null, serverHash: PROTOCOL_HASH, meta: null });
    w.bytesMap(undefined);
    w.string("appendBatch");
    writeEventArray(w, [{ headers: {}, body: new Uint8Array(BODY) }]);
    w.patchInt32(at, w.pos - at - 4);
    frames.push(w.finish());
  }
  return Buffer.concat(frames);
}

async function floodWhileChannelIsStuck(compression: CompressionType) {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const received: Event[] = [];
  const handler = {
    appendBatch: async (events: Event[]) => {
      await gate;
      received.push(...events);
      return "OK" as const;
    },
    append: async () => "OK" as const,
  };
  const server = new AvroRpcServer(handler, { bind: "127.0.0.1", port: 0, compression, limits: { maxFrameBytes: MAX_FRAME, maxBuffers: 16 } });
  const port = await server.listen();
  cleanups.push(() => server.close());
  const raw = calls();
  const bytes = compression === "deflate" ? deflateSync(raw, { flush: constants.Z_SYNC_FLUSH }) : raw;
  const client = net.connect(port, "127.0.0.1");
  client.on("error", () => {});
  cleanups.push(() => client.destroy());
  await new Promise((res) => client.once("connect", res));
  client.write(bytes);
  // Wait until the server has stopped taking bytes from this client.
  let last = -1;
  for (let still = 0; still < 5; ) {
    await new Promise((res) => setTimeout(res, 50));
    const now = server.bufferedBytes;
    still = now === last ? still + 1 : 0;
    last = now;
  }
  const peak = server.peakBufferedBytes;
  open();
  await until(() => received.length === CALLS, 10000);
  return { peak, received, sent: bytes.length };
}

describe("avro source, bytes buffered per connection", () => {
  test("a deflate bomb (20 KB that inflate to 20 MB) is not inflated beyond max-frame-size + 1 MiB while the channel is stuck; every call is served once it moves", async () => {
    const { peak, received, sent } = await floodWhileChannelIsStuck("deflate");
    expect(sent).toBeLessThan(100 * 1024);
    expect(peak).toBeGreaterThanOrEqual(MAX_FRAME / 2);
    expect(peak).toBeLessThanOrEqual(BOUND);
    expect(received.every((e) => e.body.length === BODY)).toBe(true);
  }, 20000);

  test("the same bound holds without compression (the frame-count limit alone allowed 16 frames of max-frame-size)", async () => {
    const { peak, received } = await floodWhileChannelIsStuck("none");
    expect(peak).toBeLessThanOrEqual(BOUND);
    expect(received.length).toBe(CALLS);
  }, 20000);

  test("max-buffered-bytes is configurable, and smaller than max-frame-size is a configuration error", () => {
    const ok = parseConfig(avroSource.schema, { bind: "127.0.0.1", port: "0", "max-frame-size": "1048576", "max-buffered-bytes": "2097152" });
    expect(ok.errors).toEqual([]);
    expect(avroSource.validate?.(ok.config) ?? []).toEqual([]);
    const bad = parseConfig(avroSource.schema, { bind: "127.0.0.1", port: "0", "max-frame-size": "1048576", "max-buffered-bytes": "65536" });
    const errors = [...bad.errors, ...(avroSource.validate?.(bad.config) ?? [])];
    expect(errors.map((e) => e.key)).toEqual(["max-buffered-bytes"]);
  });
});
