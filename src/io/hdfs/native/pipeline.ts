/**
 * The DataNode write pipeline of one block (DataTransferProtocol OP_WRITE_BLOCK, as Hadoop's
 * DFSOutputStream drives it): the first DataNode is asked to build the pipeline through the
 * others, then data goes as packets (PacketHeaderProto, a CRC32C per 512-byte chunk, the data)
 * and every DataNode's acknowledgement comes back per packet (PipelineAckProto). `flush` is
 * hflush: it resolves when every DataNode acknowledged every byte sent.
 *
 * A batch rarely ends on a chunk boundary; as Hadoop's client does, the bytes of the last,
 * partial chunk are sent again at the start of the next packet, from the chunk's start, so
 * every packet starts on a chunk boundary and carries whole-chunk checksums.
 *
 * Any failure (refused setup, a bad ack, a broken socket, no ack in time) fails the pipeline for
 * good: the block is abandoned by the caller, there is no pipeline recovery.
 */
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { type Socket, connect } from "node:net";
import { crc32c } from "../../crc32c.ts";
import { type DatanodeInfo, type LocatedBlock, Msg, decode, delimited, encodeBlock, field, unzigzag } from "./proto.ts";

const DATA_TRANSFER_VERSION = 28;
const OP_WRITE_BLOCK = 80;
/** BlockConstructionStage.PIPELINE_SETUP_CREATE */
const PIPELINE_SETUP_CREATE = 6;
/** ChecksumTypeProto.CHECKSUM_CRC32C */
const CHECKSUM_CRC32C = 2;
const HEARTBEAT_SEQNO = -1n;
/** Status names of datatransfer.proto, for messages. */
const STATUS = ["SUCCESS", "ERROR", "ERROR_CHECKSUM", "ERROR_INVALID", "ERROR_EXISTS", "ERROR_ACCESS_TOKEN", "CHECKSUM_OK", "ERROR_UNSUPPORTED", "OOB_RESTART", "OOB_RESERVED1", "OOB_RESERVED2", "OOB_RESERVED3", "IN_PROGRESS", "ERROR_BLOCK_PINNED"];

/** The pipeline failed; `bad` is the DataNode to blame when one is known (the first when unsure, as Hadoop's client does). */
export class PipelineError extends Error {
  constructor(
    message: string,
    readonly bad?: DatanodeInfo,
  ) {
    super(message);
  }
}

export interface PipelineOptions {
  clientName: string;
  bytesPerChecksum: number;
  /** Data bytes per packet (a multiple of bytesPerChecksum). */
  packetData: number;
  timeoutMs: number;
  /** Set the syncBlock flag on the last packet of a flush: the DataNodes fsync (hsync), not only acknowledge (hflush). */
  sync: boolean;
}

/** OpWriteBlockProto to set up a pipeline for a new block. */
export function writeBlockOp(lb: LocatedBlock, o: Pick<PipelineOptions, "clientName" | "bytesPerChecksum">): Uint8Array {
  const base = new Msg().msg(1, encodeBlock(lb.block)).msg(2, lb.token).finish();
  const header = new Msg().msg(1, base).str(2, o.clientName).finish();
  const m = new Msg().msg(1, header);
  for (const t of lb.locs.slice(1)) m.msg(2, t.raw);
  m.uint(4, PIPELINE_SETUP_CREATE)
    .uint(5, lb.locs.length)
    .uint(6, 0)
    .uint(7, 0)
    .uint(8, lb.block.generationStamp)
    .msg(9, new Msg().uint(1, CHECKSUM_CRC32C).uint(2, o.bytesPerChecksum).finish());
  if (lb.storageTypes.length > 0) m.uint(11, lb.storageTypes[0]);
  for (const t of lb.storageTypes.slice(1)) m.uint(12, t);
  if (lb.storageIds.length > 0) m.str(16, lb.storageIds[0]);
  for (const s of lb.storageIds.slice(1)) m.str(17, s);
  const op = m.finish();
  const d = delimited(op);
  const out = new Uint8Array(3 + d.length);
  out[0] = DATA_TRANSFER_VERSION >> 8;
  out[1] = DATA_TRANSFER_VERSION & 0xff;
  out[2] = OP_WRITE_BLOCK;
  out.set(d, 3);
  return out;
}

/**
 * One packet: PLEN (4 bytes: itself, the checksums and the data), HLEN (2 bytes), the
 * PacketHeaderProto, a big-endian CRC32C per chunk, the data.
 */
export function packet(seqno: bigint, offsetInBlock: number, data: Uint8Array, last: boolean, sync: boolean, bytesPerChecksum: number): Buffer {
  const h = new Msg().sfixed64(1, offsetInBlock).sfixed64(2, seqno).bool(3, last).sfixed32(4, data.length);
  if (sync) h.bool(5, true);
  const header = h.finish();
  const chunks = Math.ceil(data.length / bytesPerChecksum);
  const out = Buffer.allocUnsafe(6 + header.length + chunks * 4 + data.length);
  out.writeUInt32BE(4 + chunks * 4 + data.length, 0);
  out.writeUInt16BE(header.length, 4);
  out.set(header, 6);
  let p = 6 + header.length;
  for (let c = 0; c < chunks; c++) {
    out.writeUInt32BE(crc32c(data, c * bytesPerChecksum, Math.min((c + 1) * bytesPerChecksum, data.length)), p);
    p += 4;
  }
  out.set(data, p);
  return out;
}

/** Reads varint-delimited messages off a byte stream; undefined until one is whole. */
class DelimitedReader {
  private buf: Buffer = Buffer.alloc(0);
  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
  }
  next(): Uint8Array | undefined {
    if (this.buf.length === 0) return undefined;
    const r = new BinaryReader(this.buf);
    let len: number;
    try {
      len = r.uint32();
    } catch {
      return undefined; // the length itself is not whole yet
    }
    if (this.buf.length < r.pos + len) return undefined;
    const m = this.buf.subarray(r.pos, r.pos + len);
    this.buf = this.buf.subarray(r.pos + len);
    return m;
  }
}

export class BlockPipeline {
  private seqno = 0n;
  /** Bytes of the block sent (and, after flush, acknowledged). */
  bytes = 0;
  /** The last partial chunk's bytes, sent again with the next packet. */
  private partial = new Uint8Array(0);
  private failure: Error | null = null;
  private lastAcked = -1n;
  private waiter: { seqno: bigint; resolve: () => void; reject: (e: Error) => void; timer: ReturnType<typeof setTimeout> } | null = null;
  private heartbeat: ReturnType<typeof setInterval>;
  private lastSent = Date.now();

  private constructor(
    readonly block: LocatedBlock,
    private readonly socket: Socket,
    reader: DelimitedReader,
    private readonly o: PipelineOptions,
  ) {
    socket.on("data", (c: Buffer) => {
      reader.push(c);
      for (let m = reader.next(); m; m = reader.next()) this.ack(m);
    });
    socket.on("error", (e) => this.fail(new PipelineError(`DataNode ${this.first}: ${(e as NodeJS.ErrnoException).code ?? e.name}: ${e.message}`, block.locs[0])));
    socket.on("close", () => this.fail(new PipelineError(`DataNode ${this.first} closed the connection`, block.locs[0])));
    // The DataNodes time out a silent pipeline (dfs.client.socket-timeout, 60 s): keep it alive
    // between batches with heartbeat packets, as Hadoop's client does.
    this.heartbeat = setInterval(() => {
      if (this.failure || Date.now() - this.lastSent < 15_000) return;
      this.send(packet(HEARTBEAT_SEQNO, 0, new Uint8Array(0), false, false, o.bytesPerChecksum));
    }, 5_000);
    this.heartbeat.unref?.();
  }

  get first(): string {
    const dn = this.block.locs[0];
    return `${dn.ipAddr}:${dn.xferPort}`;
  }

  /** The DataNodes of the pipeline, for messages. */
  get nodes(): string {
    return this.block.locs.map((d) => `${d.ipAddr}:${d.xferPort}`).join(", ");
  }

  /** Connects to the first DataNode and has it set up the pipeline to the others. */
  static open(lb: LocatedBlock, o: PipelineOptions): Promise<BlockPipeline> {
    const dn = lb.locs[0];
    if (!dn) return Promise.reject(new PipelineError("the NameNode gave a block with no DataNode"));
    const where = `${dn.ipAddr}:${dn.xferPort}`;
    return new Promise((resolve, reject) => {
      const s = connect({ host: dn.ipAddr, port: dn.xferPort, noDelay: true });
      const reader = new DelimitedReader();
      const timer = setTimeout(() => s.destroy(new PipelineError(`no pipeline set up within ${o.timeoutMs} ms`)), o.timeoutMs);
      const onError = (e: Error) => {
        clearTimeout(timer);
        reject(new PipelineError(`DataNode ${where}: ${e instanceof PipelineError ? "" : `${(e as NodeJS.ErrnoException).code ?? e.name}: `}${e.message}`, dn));
      };
      const onClose = () => onError(new PipelineError("closed the connection while setting up the pipeline"));
      const onData = (c: Buffer) => {
        reader.push(c);
        const m = reader.next();
        if (!m) return;
        clearTimeout(timer);
        s.off("data", onData);
        s.off("error", onError);
        s.off("close", onClose);
        const r = decode(m);
        const status = field.num(r, 1);
        if (status !== 0) {
          s.destroy();
          const bad = field.str(r, 2);
          const badNode = lb.locs.find((d) => `${d.ipAddr}:${d.xferPort}` === bad || `${d.hostName}:${d.xferPort}` === bad) ?? dn;
          reject(new PipelineError(`DataNode ${where} refused the block (${STATUS[status] ?? status})${field.str(r, 5) ? `: ${field.str(r, 5)}` : ""}${bad ? `; first bad link ${bad}` : ""}`, badNode));
          return;
        }
        const p = new BlockPipeline(lb, s, reader, o);
        // Acks that came with the setup answer (none expected).
        for (let more = reader.next(); more; more = reader.next()) p.ack(more);
        resolve(p);
      };
      s.on("data", onData);
      s.on("error", onError);
      s.on("close", onClose);
      s.once("connect", () => s.write(writeBlockOp(lb, o)));
    });
  }

  private send(buf: Buffer): void {
    this.lastSent = Date.now();
    this.socket.write(buf);
  }

  private ack(m: Uint8Array): void {
    const a = decode(m);
    const seqno = unzigzag(field.big(a, 1) ?? 0n);
    const replies = field.varints(a, 2);
    const bad = replies.findIndex((r) => r !== 0n);
    if (bad >= 0) {
      const dn = this.block.locs[bad];
      this.fail(new PipelineError(`DataNode ${dn ? `${dn.ipAddr}:${dn.xferPort}` : `#${bad}`} answered ${STATUS[Number(replies[bad])] ?? replies[bad]} for packet ${seqno}`, dn));
      return;
    }
    if (seqno === HEARTBEAT_SEQNO) return;
    this.lastAcked = seqno;
    const w = this.waiter;
    if (w && seqno >= w.seqno) {
      this.waiter = null;
      clearTimeout(w.timer);
      w.resolve();
    }
  }

  private fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    clearInterval(this.heartbeat);
    this.socket.destroy();
    const w = this.waiter;
    this.waiter = null;
    if (w) {
      clearTimeout(w.timer);
      w.reject(e);
    }
  }

  /** Sends `data` as the next bytes of the block (not waiting for acks). */
  write(data: Uint8Array): void {
    if (this.failure) throw this.failure;
    const bpc = this.o.bytesPerChecksum;
    let buf = data;
    if (this.partial.length > 0) {
      buf = new Uint8Array(this.partial.length + data.length);
      buf.set(this.partial);
      buf.set(data, this.partial.length);
    }
    const start = this.bytes - this.partial.length;
    const parts: Buffer[] = [];
    for (let off = 0; off < buf.length; off += this.o.packetData) {
      const end = Math.min(off + this.o.packetData, buf.length);
      parts.push(packet(this.seqno++, start + off, buf.subarray(off, end), false, false, bpc));
    }
    this.bytes = start + buf.length;
    const tail = this.bytes % bpc;
    this.partial = tail === 0 ? new Uint8Array(0) : buf.slice(buf.length - tail);
    this.send(parts.length === 1 ? parts[0] : Buffer.concat(parts));
  }

  /** Resolves when every DataNode acknowledged every packet sent (hflush; hsync with `sync`). */
  flush(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.o.sync) {
      // An empty packet with the syncBlock flag at the current end: the DataNodes fsync.
      this.send(packet(this.seqno++, this.bytes, new Uint8Array(0), false, true, this.o.bytesPerChecksum));
    }
    return this.waitFor(this.seqno - 1n);
  }

  private waitFor(seqno: bigint): Promise<void> {
    if (this.lastAcked >= seqno) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new PipelineError(`no acknowledgement from the pipeline (${this.nodes}) within ${this.o.timeoutMs} ms`)), this.o.timeoutMs);
      this.waiter = { seqno, resolve, reject, timer };
    });
  }

  /** Ends the block: the last, empty packet, its acks (the replicas are finalized), then closes. */
  async end(): Promise<void> {
    if (this.failure) throw this.failure;
    this.send(packet(this.seqno++, this.bytes, new Uint8Array(0), true, false, this.o.bytesPerChecksum));
    await this.waitFor(this.seqno - 1n);
    clearInterval(this.heartbeat);
    this.failure = new PipelineError("the block is closed");
    this.socket.end();
  }

  /** Drops the pipeline (after a failure, or to abandon the block). */
  abort(): void {
    this.fail(new PipelineError("aborted"));
  }
}
