// The DataNode write pipeline against a DataNode stand-in on a real socket: OP_WRITE_BLOCK,
// packets (header, CRC32C per chunk, data), the partial chunk sent again, acks and refusals.
import { afterEach, describe, expect, test } from "bun:test";
import { type Server, type Socket, createServer } from "node:net";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { crc32c } from "../../../../src/io/crc32c.ts";
import { BlockPipeline, PipelineError, packet } from "../../../../src/io/hdfs/native/pipeline.ts";
import { type Fields, type LocatedBlock, Msg, decode, decodeDatanode, delimited, field } from "../../../../src/io/hdfs/native/proto.ts";

interface Packet {
  offset: number;
  seqno: number;
  last: boolean;
  sync: boolean;
  data: Buffer;
  sums: number[];
}

/** Parses one packet at the start of buf; null until it is whole. */
function parsePacket(buf: Buffer): [Packet, number] | null {
  if (buf.length < 6) return null;
  const plen = buf.readUInt32BE(0);
  const hlen = buf.readUInt16BE(4);
  const total = 6 + hlen + plen - 4;
  if (buf.length < total) return null;
  const h = new BinaryReader(buf.subarray(6, 6 + hlen));
  const p: Packet = { offset: 0, seqno: 0, last: false, sync: false, data: Buffer.alloc(0), sums: [] };
  let dataLen = 0;
  while (h.pos < h.len) {
    const [no] = h.tag();
    if (no === 1) p.offset = Number(h.sfixed64());
    else if (no === 2) p.seqno = Number(h.sfixed64());
    else if (no === 3) p.last = h.bool();
    else if (no === 4) dataLen = h.sfixed32();
    else if (no === 5) p.sync = h.bool();
  }
  const sumsLen = plen - 4 - dataLen;
  for (let i = 0; i < sumsLen; i += 4) p.sums.push(buf.readUInt32BE(6 + hlen + i));
  p.data = buf.subarray(6 + hlen + sumsLen, total);
  return [p, total];
}

/** An ack: seqno (sint64), one reply per DataNode. */
function ack(seqno: number, replies: number[]): Uint8Array {
  const m = new Msg();
  m.w.tag(1, 0).sint64(seqno);
  for (const r of replies) m.uint(2, r);
  return delimited(m.finish());
}

interface StandIn {
  server: Server;
  port: number;
  op: { version: number; code: number; body: Fields } | null;
  packets: Packet[];
}

/** A DataNode: answers the setup with `status`, then acks each packet with `replies(p)`. */
function dataNode(status: number, replies: (p: Packet) => number[] = () => [0]): Promise<StandIn> {
  const st: StandIn = { server: createServer(), port: 0, op: null, packets: [] };
  st.server.on("connection", (s: Socket) => {
    let buf = Buffer.alloc(0);
    s.on("data", (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (!st.op) {
        if (buf.length < 4) return;
        const r = new BinaryReader(buf.subarray(3));
        const body = r.bytes();
        st.op = { version: buf.readUInt16BE(0), code: buf[2], body: decode(body) };
        buf = buf.subarray(3 + r.pos);
        s.write(delimited(new Msg().uint(1, status).str(5, status === 0 ? undefined : "no space").finish()));
        if (status !== 0) s.end();
      }
      for (let p = parsePacket(buf); p; p = parsePacket(buf)) {
        st.packets.push(p[0]);
        buf = buf.subarray(p[1]);
        s.write(ack(p[0].seqno, replies(p[0])));
      }
    });
  });
  return new Promise((resolve) =>
    st.server.listen(0, "127.0.0.1", () => {
      st.port = (st.server.address() as { port: number }).port;
      resolve(st);
    }),
  );
}

function block(port: number, others = 0): LocatedBlock {
  const dn = (p: number) => new Msg().msg(1, new Msg().str(1, "127.0.0.1").str(2, "localhost").str(3, `uuid-${p}`).uint(4, p).uint(5, 9864).uint(6, 9867).finish()).finish();
  return {
    block: { poolId: "BP-1", blockId: 1073741825n, generationStamp: 1001n, numBytes: 0n },
    locs: [dn(port), ...Array.from({ length: others }, (_, i) => dn(port + 1 + i))].map(decodeDatanode),
    token: new Msg().bytes(1, new Uint8Array()).bytes(2, new Uint8Array()).str(3, "").str(4, "").finish(),
    storageTypes: [0n],
    storageIds: ["DS-1"],
  };
}

const opts = { clientName: "DFSClient_test", bytesPerChecksum: 512, packetData: 126 * 512, timeoutMs: 3000, sync: false };
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe("DataNode write pipeline", () => {
  test("packet layout: PLEN, HLEN, PacketHeaderProto, a big-endian CRC32C per 512-byte chunk, the data", () => {
    const data = Buffer.alloc(1300, 7);
    const [p, size] = parsePacket(packet(5n, 1024, data, false, true, 512)) as [Packet, number];
    expect(size).toBe(packet(5n, 1024, data, false, true, 512).length);
    expect({ offset: p.offset, seqno: p.seqno, last: p.last, sync: p.sync, len: p.data.length }).toEqual({ offset: 1024, seqno: 5, last: false, sync: true, len: 1300 });
    expect(p.sums).toEqual([crc32c(data, 0, 512), crc32c(data, 512, 1024), crc32c(data, 1024, 1300)]);
  });

  test("OP_WRITE_BLOCK (version 28, op 80) names the block, the client, the other DataNodes, PIPELINE_SETUP_CREATE and CRC32C/512", async () => {
    const dn = await dataNode(0);
    servers.push(dn.server);
    const p = await BlockPipeline.open(block(dn.port, 1), opts);
    p.abort();
    const op = dn.op as { version: number; code: number; body: Fields };
    expect({ version: op.version, code: op.code }).toEqual({ version: 28, code: 80 });
    const header = field.msg(op.body, 1) as Fields;
    const b = field.msg(field.msg(header, 1) as Fields, 1) as Fields;
    expect({ pool: field.str(b, 1), id: field.big(b, 2), gs: field.big(b, 3), client: field.str(header, 2) }).toEqual({ pool: "BP-1", id: 1073741825n, gs: 1001n, client: "DFSClient_test" });
    expect(field.msgs(op.body, 2).map((t) => field.num(field.msg(t, 1) as Fields, 4))).toEqual([dn.port + 1]);
    const sum = field.msg(op.body, 9) as Fields;
    expect({ stage: field.num(op.body, 4), size: field.num(op.body, 5), gs: field.big(op.body, 8), type: field.num(sum, 1), bpc: field.num(sum, 2) }).toEqual({ stage: 6, size: 2, gs: 1001n, type: 2, bpc: 512 });
  });

  test("hflush after a partial chunk: the next write starts at the chunk's start with its bytes again; end sends the last, empty packet", async () => {
    const dn = await dataNode(0);
    servers.push(dn.server);
    const p = await BlockPipeline.open(block(dn.port), opts);
    const first = Buffer.alloc(700, 1);
    p.write(first);
    await p.flush();
    const second = Buffer.alloc(100, 2);
    p.write(second);
    await p.flush();
    expect(p.bytes).toBe(800);
    await p.end();
    const shape = dn.packets.map((x) => ({ seqno: x.seqno, offset: x.offset, len: x.data.length, last: x.last }));
    expect(shape).toEqual([
      { seqno: 0, offset: 0, len: 700, last: false },
      { seqno: 1, offset: 512, len: 288, last: false },
      { seqno: 2, offset: 800, len: 0, last: true },
    ]);
    expect(dn.packets[1].data).toEqual(Buffer.concat([first.subarray(512), second]));
    expect(dn.packets[1].sums).toEqual([crc32c(dn.packets[1].data)]);
  });

  test("a batch larger than a packet goes as several whole-chunk packets; flush waits for the last one's ack", async () => {
    const dn = await dataNode(0);
    servers.push(dn.server);
    const p = await BlockPipeline.open(block(dn.port), opts);
    p.write(Buffer.alloc(150_000, 3));
    await p.flush();
    expect(dn.packets.map((x) => [x.offset, x.data.length])).toEqual([
      [0, 64512],
      [64512, 64512],
      [129024, 20976],
    ]);
    p.abort();
  });

  test("a refused setup names the DataNode and the status; a bad ack fails flush naming the DataNode that answered it", async () => {
    const refusing = await dataNode(1);
    servers.push(refusing.server);
    const err = await BlockPipeline.open(block(refusing.port), opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PipelineError);
    expect((err as Error).message).toBe(`DataNode 127.0.0.1:${refusing.port} refused the block (ERROR): no space`);
    const failing = await dataNode(0, (x) => (x.seqno === 1 ? [0, 1] : [0, 0]));
    servers.push(failing.server);
    const p = await BlockPipeline.open(block(failing.port, 1), opts);
    p.write(Buffer.alloc(10));
    await p.flush();
    p.write(Buffer.alloc(10));
    const e2 = (await p.flush().catch((e: unknown) => e)) as PipelineError;
    expect(e2.message).toBe(`DataNode 127.0.0.1:${failing.port + 1} answered ERROR for packet 1`);
    expect(e2.bad?.xferPort).toBe(failing.port + 1);
    expect(() => p.write(Buffer.alloc(1))).toThrow(PipelineError);
  });

  test("a DataNode that never acknowledges: flush fails after the timeout naming the pipeline", async () => {
    const dn = await dataNode(0);
    servers.push(dn.server);
    // Swallow packets: no acks.
    dn.server.removeAllListeners("connection");
    dn.server.on("connection", (s: Socket) => {
      let answered = false;
      s.on("data", () => {
        if (!answered) s.write(delimited(new Msg().uint(1, 0).finish()));
        answered = true;
      });
    });
    const p = await BlockPipeline.open(block(dn.port), { ...opts, timeoutMs: 300 });
    p.write(Buffer.alloc(10));
    await expect(p.flush()).rejects.toThrow(`no acknowledgement from the pipeline (127.0.0.1:${dn.port}) within 300 ms`);
  });
});
