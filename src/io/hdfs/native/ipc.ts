/**
 * A Hadoop IPC client connection (the transport of ClientNamenodeProtocol), without a JVM:
 * the connection header "hrpc", version 9, service class 0, auth protocol NONE (simple
 * authentication: the user is named in the connection context), then calls framed as a 4-byte
 * length and three varint-delimited messages (RpcRequestHeaderProto, RequestHeaderProto, the
 * request); answers as a 4-byte length, RpcResponseHeaderProto and the response. Calls are
 * multiplexed on one socket by call id. A broken connection fails its pending calls and the next
 * call opens a new one.
 */
import { randomBytes } from "node:crypto";
import { type Socket, connect } from "node:net";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { type Fields, Msg, decode, delimited, field } from "./proto.ts";

const RPC_PROTOCOL_BUFFER = 2;
const CONNECTION_CONTEXT_CALL_ID = -3;

/** The server answered a call with an exception (Hadoop's RemoteException). */
export class RemoteError extends Error {
  constructor(
    /** The Java class, e.g. org.apache.hadoop.security.AccessControlException. */
    readonly className: string,
    message: string,
  ) {
    super(message);
  }
  /** The class without its package, as WebHDFS names it. */
  get shortName(): string {
    return this.className.slice(this.className.lastIndexOf(".") + 1);
  }
}

/** The connection failed or a call got no answer in time. */
export class IpcError extends Error {}

export interface IpcOptions {
  host: string;
  port: number;
  /** The user who connects (simple authentication). */
  user: string;
  /** The user to act as; `user` must be allowed to impersonate (hadoop.proxyuser.*). */
  proxyUser?: string;
  /** The protocol class, e.g. org.apache.hadoop.hdfs.protocol.ClientProtocol. */
  protocol: string;
  protocolVersion: number;
  timeoutMs: number;
}

interface Pending {
  resolve: (m: Fields) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class IpcConnection {
  private socket: Socket | null = null;
  private ready: Promise<Socket> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private readonly clientId = randomBytes(16);
  private inbox: Buffer = Buffer.alloc(0);
  /** Set by abort: the error of every later call. */
  private aborted: IpcError | null = null;

  constructor(private readonly o: IpcOptions) {}

  get address(): string {
    return `${this.o.host}:${this.o.port}`;
  }

  /** Encodes the 7-byte connection preamble. */
  static preamble(): Uint8Array {
    return Uint8Array.of(0x68, 0x72, 0x70, 0x63, 9, 0, 0);
  }

  /** RpcRequestHeaderProto of a call. */
  private rpcHeader(callId: number, retry: number): Uint8Array {
    return new Msg().uint(1, RPC_PROTOCOL_BUFFER).uint(2, 0).sint32(3, callId).bytes(4, this.clientId).sint32(5, retry).finish();
  }

  /** One frame: the 4-byte big-endian length, then the parts. */
  static frame(body: Uint8Array): Buffer {
    const out = Buffer.allocUnsafe(4 + body.length);
    out.writeUInt32BE(body.length, 0);
    out.set(body, 4);
    return out;
  }

  private connectionContext(): Uint8Array {
    const userInfo = this.o.proxyUser ? new Msg().str(1, this.o.proxyUser).str(2, this.o.user) : new Msg().str(1, this.o.user);
    return new Msg().msg(2, userInfo.finish()).str(3, this.o.protocol).finish();
  }

  private open(): Promise<Socket> {
    this.ready ??= new Promise<Socket>((resolve, reject) => {
      const s = connect({ host: this.o.host, port: this.o.port, noDelay: true });
      this.socket = s;
      const timer = setTimeout(() => s.destroy(new IpcError(`no connection within ${this.o.timeoutMs} ms`)), this.o.timeoutMs);
      s.once("connect", () => {
        clearTimeout(timer);
        s.write(IpcConnection.preamble());
        s.write(IpcConnection.frame(delimited(this.rpcHeader(CONNECTION_CONTEXT_CALL_ID, -1), this.connectionContext())));
        resolve(s);
      });
      s.on("data", (chunk: Buffer) => this.receive(chunk));
      s.on("error", (err) => {
        clearTimeout(timer);
        reject(new IpcError(`${this.address}: ${(err as NodeJS.ErrnoException).code ?? err.name}: ${err.message}`));
        this.broken(err, s);
      });
      s.on("close", () => {
        // Closed before it connected (abort destroys it): the open fails now, not at its timer.
        clearTimeout(timer);
        reject(new IpcError(`${this.address}: connection closed before it was set up`));
        this.broken(new Error("connection closed by the NameNode"), s);
      });
    });
    return this.ready;
  }

  /** Fails the pending calls of the connection `s` (the current one when not given). */
  private broken(err: Error, s: Socket | null = this.socket): void {
    // A late event of a connection already replaced must not touch the new one.
    if (s !== this.socket) return;
    this.socket?.destroy();
    this.socket = null;
    this.ready = null;
    this.inbox = Buffer.alloc(0);
    const why = new IpcError(`${this.address}: ${(err as NodeJS.ErrnoException).code ?? ""}${(err as NodeJS.ErrnoException).code ? ": " : ""}${err.message}`);
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(why);
    }
  }

  private receive(chunk: Buffer): void {
    this.inbox = this.inbox.length === 0 ? chunk : Buffer.concat([this.inbox, chunk]);
    while (this.inbox.length >= 4) {
      const len = this.inbox.readUInt32BE(0);
      if (this.inbox.length < 4 + len) return;
      const body = this.inbox.subarray(4, 4 + len);
      this.inbox = this.inbox.subarray(4 + len);
      this.answer(body);
    }
  }

  /** Splits an answer into its RpcResponseHeaderProto and response, and settles its call. */
  private answer(body: Uint8Array): void {
    const [header, response] = IpcConnection.parseAnswer(body);
    const callId = field.num(header, 1);
    const status = field.num(header, 2);
    const p = this.pending.get(callId);
    if (status === 2) {
      // FATAL: the server closes the connection; every call fails with its reason.
      this.broken(new RemoteError(field.str(header, 4), field.str(header, 5)));
      return;
    }
    if (!p) return;
    this.pending.delete(callId);
    clearTimeout(p.timer);
    if (status === 0) p.resolve(response ?? new Map());
    else p.reject(new RemoteError(field.str(header, 4), field.str(header, 5)));
  }

  static parseAnswer(body: Uint8Array): [Fields, Fields | undefined] {
    const r = new BinaryReader(body);
    const header = decode(r.bytes());
    return [header, r.pos < r.len ? decode(r.bytes()) : undefined];
  }

  /** Calls `method` of the protocol with an encoded request; the decoded response. */
  async call(method: string, request: Uint8Array): Promise<Fields> {
    if (this.aborted) throw this.aborted;
    let s: Socket;
    try {
      s = await this.open();
    } catch (err) {
      throw this.aborted ?? err;
    }
    if (this.aborted) throw this.aborted;
    const callId = this.nextId;
    this.nextId = (this.nextId + 1) & 0x7fffffff;
    const requestHeader = new Msg().str(1, method).str(2, this.o.protocol).uint(3, this.o.protocolVersion).finish();
    return new Promise<Fields>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(callId);
        reject(new IpcError(`${this.address}: no answer to ${method} within ${this.o.timeoutMs} ms`));
      }, this.o.timeoutMs);
      this.pending.set(callId, { resolve, reject, timer });
      s.write(IpcConnection.frame(delimited(this.rpcHeader(callId, 0), requestHeader, request)));
    });
  }

  close(): void {
    this.broken(new Error("closed"));
  }

  /** Fails the calls under way with `why`, and every later call without connecting. */
  abort(why: string): void {
    this.aborted = new IpcError(`${this.address}: ${why}`);
    this.broken(new Error(why));
  }
}
