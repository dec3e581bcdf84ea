import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import zlib from "node:zlib";
import { createEvent, type Event } from "../../src/core/event.ts";
import { AvroReader } from "../../src/rpc/binary.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { RpcStatusError } from "../../src/rpc/errors.ts";
import { encodeFrame, FrameDecoder, joinBuffers, type Frame } from "../../src/rpc/frame.ts";
import { readEventArray, readHandshakeRequest } from "../../src/rpc/messages.ts";
import { PROTOCOL_TEXT } from "../../src/rpc/protocol.ts";
import { FramedTransport } from "../../src/rpc/transport.ts";
import { listenLocal, FIXTURES } from "../support/helpers.ts";

const AVRO_RPC = path.join(FIXTURES, "avro-rpc");
const fixture = (name: string) => readFileSync(path.join(AVRO_RPC, name));
const inflate = (b: Buffer) => zlib.inflateSync(b, { finishFlush: zlib.constants.Z_SYNC_FLUSH });

function frames(bytes: Buffer): Frame[] {
  return new FrameDecoder().push(bytes);
}

/** A client frame decoded to what it means: serial, handshake fields, message, events. */
function decodeClientFrame(frame: Frame, withHandshake: boolean) {
  const r = new AvroReader(joinBuffers(frame.buffers));
  const hs = withHandshake ? readHandshakeRequest(r) : null;
  const meta = r.bytesMap();
  const name = r.string();
  const events = readEventArray(r).map((e) => ({ headers: e.headers, body: Buffer.from(e.body).toString() }));
  return {
    serial: frame.serial,
    handshake: hs && {
      clientHash: hs.clientHash.toString("hex"),
      clientProtocol: hs.clientProtocol,
      serverHash: hs.serverHash.toString("hex"),
      meta: hs.meta && [...hs.meta.keys()],
    },
    meta: [...meta.keys()],
    name,
    events,
  };
}

const decodeStream = (bytes: Buffer) => frames(bytes).map((f, i) => decodeClientFrame(f, i === 0));

let closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers) c();
  closers = [];
});

/**
 * A stand-in server that answers the n-th request frame with the n-th recorded response frame
 * (serial rewritten) and records every byte the client sent.
 */
async function replayServer(responses: Frame[], compression: "none" | "deflate" = "none") {
  const received: Buffer[] = [];
  const server = net.createServer((socket) => {
    let n = 0;
    socket.on("data", (c: Buffer) => received.push(c));
    const transport = new FramedTransport(socket, { compression }, {
      onFrames: (fs) => {
        for (const f of fs) {
          const r = responses[Math.min(n++, responses.length - 1)];
          transport.send(encodeFrame(f.serial, r.buffers));
        }
      },
      onError: () => {},
      onClose: () => {},
    });
  });
  const port = await listenLocal(server);
  closers.push(() => server.close());
  return { port, sent: () => Buffer.concat(received) };
}

const lines = readFileSync(path.join(AVRO_RPC, "avro-client-input.txt"), "utf8").split("\n").filter((l) => l !== "");
// Java's HashMap happened to order these headers origin, host.
const cliEvents = (): Event[] => lines.map((l) => createEvent(l, { origin: "fixture", host: "edge-01" }));

async function sendInBatches(port: number, events: Event[], batch: number, compression: "none" | "deflate" = "none") {
  const client = await AvroRpcClient.connect({ host: "127.0.0.1", port, compression });
  for (let i = 0; i < events.length; i += batch) await client.appendBatch(events.slice(i, i + batch));
  client.close();
}

describe("our Avro RPC client sends what Flume 1.11's client sends", () => {
  test("avro-client input as appendBatch of 5 then 2: same bytes as flume-ng avro-client", async () => {
    const { port, sent } = await replayServer(frames(fixture("avro-client-plain.s2c.bin")));
    await sendInBatches(port, cliEvents(), 5);
    const recorded = fixture("avro-client-plain.c2s.bin");
    expect(decodeStream(sent())).toEqual(decodeStream(recorded));
    expect(sent().toString("hex")).toBe(recorded.toString("hex"));
  });

  test("seq bodies 0..9 in batches of 5: same bytes as Flume's avro sink", async () => {
    const { port, sent } = await replayServer(frames(fixture("avro-sink-seq.s2c.bin")));
    const events = Array.from({ length: 10 }, (_, i) => createEvent(String(i)));
    await sendInBatches(port, events, 5);
    expect(sent().toString("hex")).toBe(fixture("avro-sink-seq.c2s.bin").toString("hex"));
  });

  test("deflate: inflated client stream decodes to the recorded client's frames", async () => {
    const responses = frames(inflate(fixture("avro-client-deflate.s2c.bin")));
    const { port, sent } = await replayServer(responses, "deflate");
    await sendInBatches(port, cliEvents(), 5, "deflate");
    const ours = sent();
    expect(ours.subarray(0, 2).toString("hex")).toBe("789c");
    expect(decodeStream(inflate(ours))).toEqual(decodeStream(inflate(fixture("avro-client-deflate.c2s.bin"))));
  });

  test("FAILED from the channel-full server surfaces as RpcStatusError with status FAILED", async () => {
    const { port, sent } = await replayServer(frames(fixture("channel-full.s2c.bin")));
    const client = await AvroRpcClient.connect({ host: "127.0.0.1", port });
    const err = await client.appendBatch(cliEvents().slice(0, 5)).catch((e: unknown) => e);
    client.close();
    expect(err).toBeInstanceOf(RpcStatusError);
    expect((err as RpcStatusError).status).toBe("FAILED");
    expect(decodeStream(sent())).toEqual(decodeStream(fixture("channel-full.c2s.bin")));
  });

  test("after match=NONE the client resends the same call with its protocol text", async () => {
    const none = frames(fixture("unknown-client-hash.s2c.bin"))[0];
    const ok = frames(fixture("avro-client-plain.s2c.bin"))[0];
    const { port, sent } = await replayServer([none, ok]);
    await sendInBatches(port, cliEvents().slice(0, 2), 2);
    const fs = frames(sent());
    expect(fs).toHaveLength(2);
    const first = decodeClientFrame(fs[0], true);
    const second = decodeClientFrame(fs[1], true);
    expect(first.handshake?.clientProtocol).toBeNull();
    expect(second.handshake?.clientProtocol).toBe(PROTOCOL_TEXT);
    expect(second.serial).toBe(2);
    expect(second.events).toEqual(first.events);
  });
});
