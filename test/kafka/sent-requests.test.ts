/**
 * Our Produce requests' copies, as the client library's connection writes them, freed once the
 * broker answered: the buffer noted must be exactly the frame the connection wrote for our
 * payload (checked against what a server read from a real library connection), and nothing
 * else is ever noted.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { loadKafka } from "../../src/kafka/client.ts";
import { encodeProduceRequest } from "../../src/kafka/record-batch.ts";
import { isFrameOf, sendNoted, type SocketLike } from "../../src/kafka/sent-requests.ts";

interface LibraryConnection {
  socket: SocketLike;
  connect(host: string, port: number): Promise<void>;
  send(apiKey: number, apiVersion: number, payload: () => unknown, parser: () => unknown, requestTags: boolean, responseTags: boolean, callback: (error: Error | null) => void): void;
  close(): Promise<void>;
}

let server: net.Server;
let received = Buffer.alloc(0);
let port = 0;

beforeAll(async () => {
  server = net.createServer((s) => s.on("data", (d: Buffer) => (received = Buffer.concat([received, d]))));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(() => server.close());

/** A Produce v9 body of `n` records of 100 bytes, in the parts our encoder makes. */
function produceParts(n: number, tag: number): Buffer[] {
  return encodeProduceRequest(9, -1, 30_000, Array.from({ length: n }, (_, i) => ({ topic: "t", partition: 0, value: Buffer.alloc(100, (tag + i) % 256) })));
}

describe("the connection's copy of a request, noted and freed", () => {
  test("the buffer noted is the frame the library's connection wrote for our payload; freed, the bytes the server read stay whole", async () => {
    const kafka = await loadKafka();
    const Connection = (kafka as unknown as { Connection: new (clientId: string) => LibraryConnection }).Connection;
    const connection = new Connection("noted-test");
    await connection.connect("127.0.0.1", port);
    try {
      received = Buffer.alloc(0);
      const parts = produceParts(1000, 1);
      const payload = () => {
        const writer = kafka.Writer.create();
        for (const p of parts) writer.append(p);
        return writer;
      };
      const free = sendNoted(connection.socket, () => parts, () => connection.send(0, 9, payload, () => null, true, true, () => {}));
      expect(free).not.toBeNull();
      const size = parts.reduce((n, p) => n + p.length, 0);
      // The frame: size prefix, header, then our body as it is.
      for (let i = 0; i < 200 && received.length < size; i++) await Bun.sleep(10);
      expect(received.readUInt32BE(0)).toBe(received.length - 4);
      expect(received.subarray(received.length - size).equals(Buffer.concat(parts))).toBe(true);
      const copy = Buffer.from(received);
      free!();
      expect(received.equals(copy)).toBe(true);
    } finally {
      await connection.close();
    }
  });

  test("a frame that is not the request of these parts is not noted, and a send within another notes nothing of its own", () => {
    const parts = produceParts(10, 2);
    const frame = (body: Buffer[]) => {
      const b = Buffer.concat([Buffer.alloc(4), Buffer.from("header"), ...body]);
      b.writeUInt32BE(b.length - 4, 0);
      return b;
    };
    expect(isFrameOf(frame(parts), parts)).toBe(true);
    expect(isFrameOf(frame(produceParts(10, 3)), parts)).toBe(false);
    const cut = frame(parts);
    cut.writeUInt32BE(cut.length, 0);
    expect(isFrameOf(cut, parts)).toBe(false);
    const writes: Uint8Array[] = [];
    const socket: SocketLike = { write: (chunk) => writes.push(chunk) > 0 };
    let inner: (() => void) | null = () => {};
    const outer = sendNoted(socket, () => parts, () => {
      inner = sendNoted(socket, () => parts, () => socket.write(frame(parts)));
    });
    expect(inner).toBeNull();
    expect(outer).not.toBeNull();
    expect(writes.length).toBe(1);
    // Written later (the connection held it behind other requests): not noted.
    expect(sendNoted(socket, () => parts, () => {})).toBeNull();
    const noted = sendNoted(socket, () => parts, () => socket.write(frame(parts)));
    expect(noted).not.toBeNull();
  });
});
