import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { AvroReader, AvroWriter } from "../../src/rpc/binary.ts";
import { FrameDecoder } from "../../src/rpc/frame.ts";
import { readHandshakeResponse, writeHandshakeRequest, type HandshakeMatch } from "../../src/rpc/messages.ts";
import { PROTOCOL_HASH, PROTOCOL_TEXT } from "../../src/rpc/protocol.ts";
import { AvroRpcServer } from "../../src/rpc/server.ts";
import { asyncCleanupsAfterEach } from "../support/helpers.ts";

const cleanups = asyncCleanupsAfterEach();

/** One handshake-only call on a fresh connection; resolves with the server's match. */
function handshake(port: number, clientHash: Buffer, clientProtocol: string | null): Promise<HandshakeMatch> {
  const w = new AvroWriter(PROTOCOL_TEXT.length + 128);
  w.int32(1);
  w.int32(1);
  const at = w.int32(0);
  writeHandshakeRequest(w, { clientHash, clientProtocol, serverHash: PROTOCOL_HASH, meta: null });
  w.bytesMap(undefined);
  w.string("");
  w.patchInt32(at, w.pos - at - 4);
  const request = w.finish();
  return new Promise((resolve, reject) => {
    const decoder = new FrameDecoder();
    const socket = net.connect(port, "127.0.0.1", () => socket.write(request));
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      const [frame] = decoder.push(chunk);
      if (!frame) return;
      socket.destroy();
      resolve(readHandshakeResponse(new AvroReader(Buffer.concat(frame.buffers))).match);
    });
  });
}

describe("avro source, protocols announced by clients", () => {
  test("the cache of client protocols keeps at most 64 entries (least recently used dropped); recent and local protocols still match", async () => {
    const handler = { appendBatch: async () => "OK" as const, append: async () => "OK" as const };
    const server = new AvroRpcServer(handler, { bind: "127.0.0.1", port: 0 });
    const port = await server.listen();
    cleanups.push(() => server.close());
    const hashes: Buffer[] = [];
    for (let i = 0; i < 100; i++) {
      const hash = randomBytes(16);
      hashes.push(hash);
      expect(await handshake(port, hash, PROTOCOL_TEXT)).toBe("BOTH");
    }
    expect(server.protocols.size).toBeLessThanOrEqual(65);
    // The most recent client is remembered: a hash-only handshake matches.
    expect(await handshake(port, hashes[99], null)).toBe("BOTH");
    // The oldest was dropped: the client is asked for its protocol (NONE), as Avro does for an unknown hash.
    expect(await handshake(port, hashes[0], null)).toBe("NONE");
    // Flume's own protocol is always known.
    expect(await handshake(port, PROTOCOL_HASH, null)).toBe("BOTH");
  });
});
