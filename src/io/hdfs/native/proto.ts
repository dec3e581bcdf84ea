/**
 * The few protobuf messages of Hadoop's RPC and data transfer protocols the hdfs sink uses,
 * encoded and decoded with @bufbuild/protobuf's wire Reader/Writer. Field numbers are those of
 * Hadoop 3's RpcHeader.proto, IpcConnectionContext.proto, ProtobufRpcEngine.proto, hdfs.proto,
 * ClientNamenodeProtocol.proto and datatransfer.proto; only the fields the sink reads or writes.
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

/** A decoded message: every field's values in order (varints as bigint, length-delimited as bytes). */
export type Fields = Map<number, (bigint | Uint8Array)[]>;

export function decode(buf: Uint8Array): Fields {
  const r = new BinaryReader(buf);
  const out: Fields = new Map();
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    let v: bigint | Uint8Array;
    switch (wt) {
      case WireType.Varint:
        v = BigInt(r.uint64());
        break;
      case WireType.LengthDelimited:
        v = r.bytes();
        break;
      case WireType.Bit64:
        v = BigInt(r.fixed64());
        break;
      case WireType.Bit32:
        v = BigInt(r.fixed32());
        break;
      default:
        r.skip(wt, no);
        continue;
    }
    const list = out.get(no);
    if (list) list.push(v);
    else out.set(no, [v]);
  }
  return out;
}

const utf8 = new TextDecoder();

export const field = {
  big(m: Fields, no: number): bigint | undefined {
    const v = m.get(no)?.[0];
    return typeof v === "bigint" ? v : undefined;
  },
  num(m: Fields, no: number, dflt = 0): number {
    const v = m.get(no)?.[0];
    return typeof v === "bigint" ? Number(v) : dflt;
  },
  bool(m: Fields, no: number): boolean {
    return m.get(no)?.[0] === 1n;
  },
  bytes(m: Fields, no: number): Uint8Array | undefined {
    const v = m.get(no)?.[0];
    return v instanceof Uint8Array ? v : undefined;
  },
  str(m: Fields, no: number): string {
    const v = m.get(no)?.[0];
    return v instanceof Uint8Array ? utf8.decode(v) : "";
  },
  msg(m: Fields, no: number): Fields | undefined {
    const v = m.get(no)?.[0];
    return v instanceof Uint8Array ? decode(v) : undefined;
  },
  msgs(m: Fields, no: number): Fields[] {
    return (m.get(no) ?? []).filter((v): v is Uint8Array => v instanceof Uint8Array).map(decode);
  },
  strs(m: Fields, no: number): string[] {
    return (m.get(no) ?? []).filter((v): v is Uint8Array => v instanceof Uint8Array).map((v) => utf8.decode(v));
  },
  /** A repeated varint field, packed or not. */
  varints(m: Fields, no: number): bigint[] {
    const out: bigint[] = [];
    for (const v of m.get(no) ?? []) {
      if (typeof v === "bigint") out.push(v);
      else {
        const r = new BinaryReader(v);
        while (r.pos < r.len) out.push(BigInt(r.uint64()));
      }
    }
    return out;
  },
};

/** Zigzag-decodes a sint64 read as a raw varint. */
export function unzigzag(v: bigint): bigint {
  return (v >> 1n) ^ -(v & 1n);
}

/** Builds a message field by field; undefined values are left out. */
export class Msg {
  readonly w = new BinaryWriter();
  str(no: number, v: string | undefined): this {
    if (v !== undefined) this.w.tag(no, WireType.LengthDelimited).string(v);
    return this;
  }
  bytes(no: number, v: Uint8Array | undefined): this {
    if (v !== undefined) this.w.tag(no, WireType.LengthDelimited).bytes(v);
    return this;
  }
  uint(no: number, v: number | bigint | undefined): this {
    if (v !== undefined) this.w.tag(no, WireType.Varint).uint64(v);
    return this;
  }
  sint32(no: number, v: number): this {
    this.w.tag(no, WireType.Varint).sint32(v);
    return this;
  }
  bool(no: number, v: boolean | undefined): this {
    if (v !== undefined) this.w.tag(no, WireType.Varint).bool(v);
    return this;
  }
  sfixed64(no: number, v: number | bigint): this {
    this.w.tag(no, WireType.Bit64).sfixed64(v);
    return this;
  }
  sfixed32(no: number, v: number): this {
    this.w.tag(no, WireType.Bit32).sfixed32(v);
    return this;
  }
  msg(no: number, v: Uint8Array | undefined): this {
    return this.bytes(no, v);
  }
  finish(): Uint8Array {
    return this.w.finish();
  }
}

/** A message prefixed by its varint length (Java's writeDelimitedTo). */
export function delimited(...msgs: Uint8Array[]): Uint8Array {
  const w = new BinaryWriter();
  for (const m of msgs) w.bytes(m);
  return w.finish();
}

// ---- hdfs.proto ----

export interface ExtendedBlock {
  poolId: string;
  blockId: bigint;
  generationStamp: bigint;
  numBytes: bigint;
}

export function encodeBlock(b: ExtendedBlock): Uint8Array {
  return new Msg().str(1, b.poolId).uint(2, b.blockId).uint(3, b.generationStamp).uint(4, b.numBytes).finish();
}

export function decodeBlock(m: Fields): ExtendedBlock {
  return { poolId: field.str(m, 1), blockId: field.big(m, 2) ?? 0n, generationStamp: field.big(m, 3) ?? 0n, numBytes: field.big(m, 4) ?? 0n };
}

export interface DatanodeInfo {
  /** The DatanodeInfoProto as received, sent back as is in OP_WRITE_BLOCK's targets. */
  raw: Uint8Array;
  ipAddr: string;
  hostName: string;
  xferPort: number;
}

export function decodeDatanode(raw: Uint8Array): DatanodeInfo {
  const id = field.msg(decode(raw), 1) ?? new Map();
  return { raw, ipAddr: field.str(id, 1), hostName: field.str(id, 2), xferPort: field.num(id, 4) };
}

export interface LocatedBlock {
  block: ExtendedBlock;
  locs: DatanodeInfo[];
  /** TokenProto bytes, sent back as is. */
  token: Uint8Array | undefined;
  storageTypes: bigint[];
  storageIds: string[];
}

export function decodeLocatedBlock(m: Fields): LocatedBlock {
  return {
    block: decodeBlock(field.msg(m, 1) ?? new Map()),
    locs: (m.get(3) ?? []).filter((v): v is Uint8Array => v instanceof Uint8Array).map(decodeDatanode),
    token: field.bytes(m, 5),
    storageTypes: field.varints(m, 7),
    storageIds: field.strs(m, 8),
  };
}

export interface FileInfo {
  name: string;
  type: "FILE" | "DIRECTORY";
  length: number;
  modificationTime: number;
  fileId: bigint;
  blockSize: number;
  replication: number;
}

/** HdfsFileStatusProto. */
export function decodeFileStatus(m: Fields): FileInfo {
  return {
    name: field.str(m, 2),
    type: field.num(m, 1) === 1 ? "DIRECTORY" : "FILE",
    length: field.num(m, 3),
    modificationTime: field.num(m, 7),
    blockSize: field.num(m, 11),
    replication: field.num(m, 10),
    fileId: field.big(m, 13) ?? 0n,
  };
}

export function permission(mode: number): Uint8Array {
  return new Msg().uint(1, mode).finish();
}
