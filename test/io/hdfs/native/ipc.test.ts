// Hadoop IPC framing against a NameNode stand-in on a real socket: what the client sends is
// parsed field by field, and answers (success, RemoteException, a dropped connection) come back.
import { afterEach, describe, expect, test } from "bun:test";
import { type Server, type Socket, createServer } from "node:net";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { IpcConnection, IpcError, RemoteError } from "../../../../src/io/hdfs/native/ipc.ts";
import { NameNode } from "../../../../src/io/hdfs/native/namenode.ts";
import { type Fields, Msg, decode, delimited, field } from "../../../../src/io/hdfs/native/proto.ts";
import { waitUntil } from "../../../support/helpers.ts";

interface Call {
  header: Fields;
  request?: Fields;
  method?: string;
  protocol?: string;
  body: Fields;
}

/** A server that reads the preamble, then frames of varint-delimited messages. */
function standIn(answer: (c: Call, s: Socket) => void): Promise<{ server: Server; port: number; preambles: Buffer[]; calls: Call[] }> {
  const preambles: Buffer[] = [];
  const calls: Call[] = [];
  const server = createServer((s) => {
    let buf = Buffer.alloc(0);
    let greeted = false;
    s.on("data", (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (!greeted) {
        if (buf.length < 7) return;
        preambles.push(buf.subarray(0, 7));
        buf = buf.subarray(7);
        greeted = true;
      }
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const r = new BinaryReader(buf.subarray(4, 4 + buf.readUInt32BE(0)));
        buf = buf.subarray(4 + buf.readUInt32BE(0));
        const header = decode(r.bytes());
        const second = decode(r.bytes());
        if (r.pos >= r.len) {
          // The connection context: callId -3, no request header.
          calls.push({ header, body: second });
          continue;
        }
        const call: Call = { header, request: second, method: field.str(second, 1), protocol: field.str(second, 2), body: decode(r.bytes()) };
        calls.push(call);
        answer(call, s);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as { port: number }).port, preambles, calls })));
}

/** An answer frame: RpcResponseHeaderProto (callId, status, exception) and the response. */
function reply(s: Socket, callId: number, response?: Uint8Array, error?: [string, string]): void {
  const h = new Msg().uint(1, callId).uint(2, error ? 1 : 0);
  if (error) h.str(4, error[0]).str(5, error[1]);
  s.write(IpcConnection.frame(response ? delimited(h.finish(), response) : delimited(h.finish())));
}

/** The call id field (sint32): zigzag-decoded. */
const callIdOf = (h: Fields) => {
  const v = Number(field.big(h, 3));
  return (v >>> 1) ^ -(v & 1);
};

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe("Hadoop IPC client", () => {
  test("sends 'hrpc' 9 0 0, the connection context (user, proxy user, protocol) as call -3, then each call's three delimited messages", async () => {
    const nn = await standIn((c, s) => reply(s, callIdOf(c.header), new Msg().bool(1, true).finish()));
    servers.push(nn.server);
    const client = new NameNode({ host: "127.0.0.1", port: nn.port, user: "flume", proxyUser: "alice", timeoutMs: 5000 });
    expect(await client.rename("/a", "/b")).toBe(true);
    expect(await client.mkdirs("/d")).toBe(true);
    client.close();
    expect([...nn.preambles[0]]).toEqual([0x68, 0x72, 0x70, 0x63, 9, 0, 0]);
    const [context, rename, mkdirs] = nn.calls;
    expect(callIdOf(context.header)).toBe(-3);
    const user = field.msg(context.body, 2) as Fields;
    expect({ effective: field.str(user, 1), real: field.str(user, 2), protocol: field.str(context.body, 3) }).toEqual({ effective: "alice", real: "flume", protocol: "org.apache.hadoop.hdfs.protocol.ClientProtocol" });
    // RPC_PROTOCOL_BUFFER, RPC_FINAL_PACKET, a 16-byte client id, the same on every call.
    expect({ kind: field.num(rename.header, 1), op: field.num(rename.header, 2), id: callIdOf(rename.header), clientId: field.bytes(rename.header, 4)?.length }).toEqual({ kind: 2, op: 0, id: 0, clientId: 16 });
    expect(field.bytes(mkdirs.header, 4)).toEqual(field.bytes(rename.header, 4));
    expect(callIdOf(mkdirs.header)).toBe(1);
    expect({ method: rename.method, protocol: rename.protocol, version: field.num(rename.request as Fields, 3) }).toEqual({ method: "rename", protocol: "org.apache.hadoop.hdfs.protocol.ClientProtocol", version: 1 });
    expect({ src: field.str(rename.body, 1), dst: field.str(rename.body, 2) }).toEqual({ src: "/a", dst: "/b" });
    expect({ src: field.str(mkdirs.body, 1), perm: field.num(field.msg(mkdirs.body, 2) as Fields, 1), parents: field.bool(mkdirs.body, 3) }).toEqual({ src: "/d", perm: 0o755, parents: true });
  });

  test("calls answered out of order reach their callers; an exception comes back as a RemoteError with Hadoop's class and message", async () => {
    const held: Call[] = [];
    const nn = await standIn((c, s) => {
      held.push(c);
      if (held.length < 2) return;
      // Answer the second call first, then fail the first one.
      reply(s, callIdOf(held[1].header), new Msg().bool(1, false).finish());
      reply(s, callIdOf(held[0].header), undefined, ["org.apache.hadoop.security.AccessControlException", "Permission denied: user=flume, access=WRITE"]);
    });
    servers.push(nn.server);
    const client = new NameNode({ host: "127.0.0.1", port: nn.port, user: "flume", timeoutMs: 5000 });
    const first = client.delete("/x", false).catch((e: unknown) => e);
    const second = client.delete("/y", false);
    expect(await second).toBe(false);
    const err = (await first) as RemoteError;
    expect(err).toBeInstanceOf(RemoteError);
    expect({ cls: err.className, short: err.shortName, message: err.message }).toEqual({
      cls: "org.apache.hadoop.security.AccessControlException",
      short: "AccessControlException",
      message: "Permission denied: user=flume, access=WRITE",
    });
    client.close();
  });

  test("a dropped connection fails the pending call with the address; the next call connects again", async () => {
    let n = 0;
    const nn = await standIn((c, s) => {
      if (++n === 1) s.destroy();
      else reply(s, callIdOf(c.header), new Msg().bool(1, true).finish());
    });
    servers.push(nn.server);
    const client = new NameNode({ host: "127.0.0.1", port: nn.port, user: "flume", timeoutMs: 5000 });
    const err = await client.rename("/a", "/b").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpcError);
    expect((err as Error).message).toContain(`127.0.0.1:${nn.port}`);
    expect(await client.rename("/a", "/b")).toBe(true);
    expect(nn.preambles).toHaveLength(2);
    client.close();
  });

  test("no answer within the timeout: the call fails naming the method", async () => {
    const nn = await standIn(() => {});
    servers.push(nn.server);
    const client = new NameNode({ host: "127.0.0.1", port: nn.port, user: "flume", timeoutMs: 300 });
    await expect(client.renewLease("c1")).rejects.toThrow(/no answer to renewLease within 300 ms/);
    client.close();
  });

  test("abort fails the call under way at once with its reason, and every later call without connecting again", async () => {
    const nn = await standIn(() => {});
    servers.push(nn.server);
    const client = new NameNode({ host: "127.0.0.1", port: nn.port, user: "flume", timeoutMs: 300_000 });
    const pending = client.renewLease("c1").catch((e: unknown) => e);
    await waitUntil(() => nn.calls.length === 2, "the call to reach the NameNode", 10_000, 10);
    client.ipc.abort("the sink stopped");
    const err = (await pending) as Error;
    expect(err).toBeInstanceOf(IpcError);
    expect(err.message).toBe(`127.0.0.1:${nn.port}: the sink stopped`);
    await expect(client.rename("/a", "/b")).rejects.toThrow(`127.0.0.1:${nn.port}: the sink stopped`);
    expect(nn.preambles).toHaveLength(1);
  });
});
