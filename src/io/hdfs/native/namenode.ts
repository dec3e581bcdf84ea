/**
 * The calls of Hadoop's ClientNamenodeProtocol the hdfs sink makes, over one IPC connection.
 * Request and response field numbers from ClientNamenodeProtocol.proto.
 */
import { IpcConnection, type IpcOptions } from "./ipc.ts";
import { type ExtendedBlock, type FileInfo, type LocatedBlock, Msg, decodeFileStatus, decodeLocatedBlock, encodeBlock, field, permission } from "./proto.ts";

const CLIENT_PROTOCOL = "org.apache.hadoop.hdfs.protocol.ClientProtocol";
/** CreateFlagProto.CREATE: fail if the file exists (no OVERWRITE). */
const CREATE = 0x01;
/** XAttrProto.XAttrNamespaceProto.USER */
const XATTR_USER = 0;
/** XAttrSetFlagProto.XATTR_CREATE */
const XATTR_CREATE = 1;

export interface ServerDefaults {
  blockSize: number;
  bytesPerChecksum: number;
  writePacketSize: number;
  replication: number;
}

export class NameNode {
  readonly ipc: IpcConnection;

  constructor(o: Omit<IpcOptions, "protocol" | "protocolVersion">) {
    this.ipc = new IpcConnection({ ...o, protocol: CLIENT_PROTOCOL, protocolVersion: 1 });
  }

  async getServerDefaults(): Promise<ServerDefaults> {
    const d = field.msg(await this.ipc.call("getServerDefaults", new Uint8Array()), 1) ?? new Map();
    return { blockSize: field.num(d, 1), bytesPerChecksum: field.num(d, 2, 512), writePacketSize: field.num(d, 3, 65536), replication: field.num(d, 4, 1) };
  }

  async create(src: string, clientName: string, replication: number, blockSize: number): Promise<FileInfo> {
    const req = new Msg().str(1, src).msg(2, permission(0o644)).str(3, clientName).uint(4, CREATE).bool(5, true).uint(6, replication).uint(7, blockSize).finish();
    const fs = field.msg(await this.ipc.call("create", req), 1);
    if (!fs) throw new Error(`the NameNode answered create of ${src} without a file status`);
    return decodeFileStatus(fs);
  }

  async addBlock(src: string, clientName: string, previous: ExtendedBlock | undefined, fileId: bigint, exclude: Uint8Array[] = []): Promise<LocatedBlock> {
    const m = new Msg().str(1, src).str(2, clientName).msg(3, previous && encodeBlock(previous));
    for (const dn of exclude) m.msg(4, dn);
    m.uint(5, fileId);
    const b = field.msg(await this.ipc.call("addBlock", m.finish()), 1);
    if (!b) throw new Error(`the NameNode answered addBlock of ${src} without a block`);
    return decodeLocatedBlock(b);
  }

  async abandonBlock(src: string, clientName: string, block: ExtendedBlock, fileId: bigint): Promise<void> {
    await this.ipc.call("abandonBlock", new Msg().msg(1, encodeBlock(block)).str(2, src).str(3, clientName).uint(4, fileId).finish());
  }

  /** True when the file is closed; false while its last block has too few replicas reported. */
  async complete(src: string, clientName: string, last: ExtendedBlock | undefined, fileId: bigint): Promise<boolean> {
    return field.bool(await this.ipc.call("complete", new Msg().str(1, src).str(2, clientName).msg(3, last && encodeBlock(last)).uint(4, fileId).finish()), 1);
  }

  async renewLease(clientName: string): Promise<void> {
    await this.ipc.call("renewLease", new Msg().str(1, clientName).finish());
  }

  /** True when the file is closed now; false when the NameNode started recovering its last block. */
  async recoverLease(src: string, clientName: string): Promise<boolean> {
    return field.bool(await this.ipc.call("recoverLease", new Msg().str(1, src).str(2, clientName).finish()), 1);
  }

  /** Renames without replacing (the old rename): false when dst exists or src does not. */
  async rename(src: string, dst: string): Promise<boolean> {
    return field.bool(await this.ipc.call("rename", new Msg().str(1, src).str(2, dst).finish()), 1);
  }

  async delete(src: string, recursive: boolean): Promise<boolean> {
    return field.bool(await this.ipc.call("delete", new Msg().str(1, src).bool(2, recursive).finish()), 1);
  }

  async mkdirs(src: string): Promise<boolean> {
    return field.bool(await this.ipc.call("mkdirs", new Msg().str(1, src).msg(2, permission(0o755)).bool(3, true).finish()), 1);
  }

  async getFileInfo(src: string): Promise<FileInfo | null> {
    const fs = field.msg(await this.ipc.call("getFileInfo", new Msg().str(1, src).finish()), 1);
    return fs ? decodeFileStatus(fs) : null;
  }

  /** The directory's entries; null when it does not exist. */
  async getListing(src: string): Promise<FileInfo[] | null> {
    const out: FileInfo[] = [];
    let after = new Uint8Array();
    for (;;) {
      const res = await this.ipc.call("getListing", new Msg().str(1, src).bytes(2, after).bool(3, false).finish());
      const dir = field.msg(res, 1);
      if (!dir) return out.length > 0 ? out : null;
      const page = field.msgs(dir, 1).map(decodeFileStatus);
      out.push(...page);
      if (field.num(dir, 2) === 0 || page.length === 0) return out;
      after = new TextEncoder().encode(page[page.length - 1].name);
    }
  }

  async setXAttr(src: string, name: string, value: Uint8Array): Promise<void> {
    const x = new Msg().uint(1, XATTR_USER).str(2, name).bytes(3, value).finish();
    await this.ipc.call("setXAttr", new Msg().str(1, src).msg(2, x).uint(3, XATTR_CREATE).finish());
  }

  /** The value of one user.* attribute; null when the file has none of that name. */
  async getXAttr(src: string, name: string): Promise<Uint8Array | null> {
    const x = new Msg().uint(1, XATTR_USER).str(2, name).finish();
    const res = await this.ipc.call("getXAttrs", new Msg().str(1, src).msg(2, x).finish());
    const found = field.msgs(res, 1).find((a) => field.str(a, 2) === name);
    return found ? (field.bytes(found, 3) ?? new Uint8Array()) : null;
  }

  close(): void {
    this.ipc.close();
  }
}
