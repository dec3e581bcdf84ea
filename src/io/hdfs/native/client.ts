/**
 * The hdfs sink's file system over Hadoop's own protocols (hdfs:// paths), without a JVM, as
 * Go's colinmarc/hdfs and Rust's hdfs-native do: ClientNamenodeProtocol over Hadoop IPC to the
 * NameNode, the DataTransferProtocol write pipeline to the DataNodes.
 *
 * A file stays open across batches as in Flume: `create` and `append` send a batch through the
 * open block's pipeline and resolve once every DataNode acknowledged it (hflush); `rename` (the
 * sink's roll) first ends the block and completes the file. The lease of open files is renewed
 * every 30 s. A write that fails leaves its file open with a broken pipeline: the batch goes
 * back to the channel, the sink moves to a new file, and the old one is closed by lease recovery
 * (recoverLease, which keeps every acknowledged byte) before it is renamed; so are the in-use
 * files a killed agent left.
 */
import { randomBytes } from "node:crypto";
import { type DfsClient, type FileStatus, HdfsError } from "../file-system.ts";
import { IpcError, RemoteError } from "./ipc.ts";
import { NameNode, type ServerDefaults } from "./namenode.ts";
import { HdfsOutputStream } from "./output-stream.ts";
import { PipelineError } from "./pipeline.ts";

export interface NativeHdfsOptions {
  host: string;
  /** The NameNode's RPC port (8020). */
  port: number;
  user: string;
  proxyUser?: string;
  /** Bound on one call or one acknowledgement (Flume's callTimeout). */
  timeoutMs: number;
  /** Replication of new files; 0: the NameNode's dfs.replication. */
  replication?: number;
  /** Block size of new files; 0: the NameNode's dfs.blocksize. */
  blockSize?: number;
  /** hsync (the DataNodes fsync each batch) instead of hflush. */
  sync?: boolean;
}

const LEASE_RENEWAL_MS = 30_000;
const utf8 = new TextEncoder();

export class NativeHdfsClient implements DfsClient {
  readonly label: string;
  private readonly nn: NameNode;
  private readonly clientName = `DFSClient_NONMAPREDUCE_flume-ts_${randomBytes(6).toString("hex")}`;
  /** recoverLease refuses the holder itself: recoveries go under another client name. */
  private readonly recoveryName = `${this.clientName}_recovery`;
  private readonly streams = new Map<string, HdfsOutputStream>();
  /** Streams being closed by rename (no longer in streams): abort reaches them too. */
  private readonly closing = new Set<HdfsOutputStream>();
  private defaults: ServerDefaults | null = null;
  private leaseTimer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly o: NativeHdfsOptions) {
    this.label = `hdfs://${o.host}:${o.port}`;
    this.nn = new NameNode({ host: o.host, port: o.port, user: o.user, proxyUser: o.proxyUser, timeoutMs: o.timeoutMs });
  }

  /** An HdfsError naming the operation, the path and the cause (Hadoop's exception class and message). */
  private error(op: string, path: string, err: unknown): HdfsError {
    if (err instanceof HdfsError) return err;
    if (err instanceof RemoteError) return new HdfsError(op, path, `${err.shortName}: ${err.message.split("\n")[0]}`, err.shortName, { cause: err });
    if (err instanceof IpcError) return new HdfsError(op, path, `NameNode ${err.message}`, undefined, { cause: err });
    if (err instanceof PipelineError) return new HdfsError(op, path, err.message, undefined, { cause: err });
    return new HdfsError(op, path, (err as Error).message, undefined, { cause: err });
  }

  private async serverDefaults(): Promise<ServerDefaults> {
    this.defaults ??= await this.nn.getServerDefaults();
    return this.defaults;
  }

  private leases(): void {
    if (this.streams.size > 0 && !this.leaseTimer) {
      this.leaseTimer = setInterval(() => {
        if (this.streams.size === 0) return;
        this.nn.renewLease(this.clientName).catch(() => undefined);
      }, LEASE_RENEWAL_MS);
      this.leaseTimer.unref?.();
    } else if (this.streams.size === 0 && this.leaseTimer) {
      clearInterval(this.leaseTimer);
      this.leaseTimer = null;
    }
  }

  private forget(path: string): HdfsOutputStream | undefined {
    const s = this.streams.get(path);
    this.streams.delete(path);
    this.leases();
    return s;
  }

  async create(path: string, bytes: Uint8Array): Promise<void> {
    let stream: HdfsOutputStream;
    try {
      const d = await this.serverDefaults();
      const blockSize = this.o.blockSize || d.blockSize;
      const info = await this.nn.create(path, this.clientName, this.o.replication || d.replication, blockSize);
      const bpc = d.bytesPerChecksum || 512;
      // Whole chunks per packet, within the packet size (64 KB less the header's room).
      const packetData = Math.max(1, Math.floor((d.writePacketSize - 33) / (bpc + 4))) * bpc;
      stream = new HdfsOutputStream(this.nn, path, info.fileId, { clientName: this.clientName, bytesPerChecksum: bpc, packetData, timeoutMs: this.o.timeoutMs, sync: this.o.sync ?? false, blockSize });
    } catch (err) {
      throw this.error("CREATE", path, err);
    }
    this.streams.set(path, stream);
    this.leases();
    await this.write("CREATE", path, stream, bytes);
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    const stream = this.streams.get(path);
    if (!stream) throw new HdfsError("APPEND", path, "the file is not open for writing by this client (its stream failed or it was closed)");
    await this.write("APPEND", path, stream, bytes);
  }

  /** A stream whose write failed is done for: it is forgotten (no lease kept for it). */
  private async write(op: "CREATE" | "APPEND", path: string, stream: HdfsOutputStream, bytes: Uint8Array): Promise<void> {
    try {
      await stream.write(bytes);
    } catch (err) {
      this.forget(path);
      throw this.error(op, path, err);
    }
  }

  async rename(from: string, to: string): Promise<boolean> {
    const stream = this.forget(from);
    try {
      if (stream) {
        this.closing.add(stream);
        try {
          await stream.close();
        } finally {
          this.closing.delete(stream);
        }
      } else {
        // Not open here: a file whose stream failed, or one a killed agent left open. Close it
        // by lease recovery (a closed file answers true at once).
        await this.nn.recoverLease(from, this.recoveryName).catch((err: unknown) => {
          if (err instanceof RemoteError && err.shortName === "FileNotFoundException") return false;
          throw err;
        });
      }
      return await this.nn.rename(from, to);
    } catch (err) {
      throw this.error("RENAME", from, err);
    }
  }

  async delete(path: string): Promise<boolean> {
    this.forget(path)?.abort();
    try {
      return await this.nn.delete(path, false);
    } catch (err) {
      throw this.error("DELETE", path, err);
    }
  }

  async list(dir: string): Promise<FileStatus[] | null> {
    try {
      const entries = await this.nn.getListing(dir);
      return entries && entries.map((e) => ({ name: e.name, type: e.type, length: e.length, modificationTime: e.modificationTime }));
    } catch (err) {
      throw this.error("LISTSTATUS", dir, err);
    }
  }

  async setMark(path: string, name: string, value: string): Promise<boolean> {
    try {
      await this.nn.setXAttr(path, name, utf8.encode(value));
      return true;
    } catch {
      return false;
    }
  }

  async getMark(path: string, name: string): Promise<string | null> {
    try {
      const v = await this.nn.getXAttr(path, name);
      return v && new TextDecoder().decode(v);
    } catch {
      return null;
    }
  }

  abort(why: string): void {
    this.nn.ipc.abort(why);
    for (const path of [...this.streams.keys()]) this.forget(path)?.abort(new Error(why));
    for (const s of this.closing) s.abort(new Error(why));
  }

  async close(): Promise<void> {
    for (const path of [...this.streams.keys()]) {
      const s = this.forget(path);
      await s?.close().catch(() => s.abort());
    }
    this.nn.close();
  }
}
