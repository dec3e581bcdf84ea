import type tls from "node:tls";
import type { Clock, TimerHandle } from "../../core/clock.ts";
import { systemClock } from "../../core/clock.ts";
import type { Event } from "../../core/event.ts";
import { connectRpc } from "../connect.ts";
import type { NetSocket, Network } from "../../net/network.ts";
import { RpcConnectionError, RpcStatusError, RpcTimeoutError } from "../errors.ts";
import { ThriftFrameDecoder } from "./frame.ts";
import { createReader, encodeAppend, encodeAppendBatch, readStatusReply } from "./messages.ts";
import { DEFAULT_MAX_FRAME_SIZE, METHOD_APPEND, METHOD_APPEND_BATCH, statusName, type ThriftProtocolName } from "./types.ts";

export interface ThriftRpcClientOptions {
  host: string;
  port: number;
  protocol: ThriftProtocolName;
  /** Milliseconds for TCP (+ TLS) to be set up (default 20000). */
  connectTimeout?: number;
  /** Milliseconds to wait for each answer (Flume: request-timeout, 20000). */
  requestTimeout?: number;
  /** tls.connect options (see src/net/tls.ts clientTls); absent: plain TCP. */
  tls?: tls.ConnectionOptions;
  /** Largest answer frame accepted. */
  maxFrameSize?: number;
  clock?: Clock;
  /** The network to connect through (the simulator's); default: TCP. */
  network?: Network;
}

interface Pending {
  name: string;
  seqid: number;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: TimerHandle;
}

/**
 * Flume's ThriftRpcClient: ThriftSourceProtocol calls over one framed connection, Status OK
 * or an error. Calls may be pipelined; the server answers them in order, and each answer must
 * carry its call's sequence id (libthrift's "out of sequence response" check). A timeout or
 * broken connection fails every call in flight and the client stays unusable, as Flume's
 * client destroys the connection.
 */
export class ThriftRpcClient {
  private seqid = 0;
  private readonly pending: Pending[] = [];
  private readonly decoder: ThriftFrameDecoder;
  private broken: Error | null = null;
  private readonly clock: Clock;
  private readonly requestTimeout: number;
  readonly protocol: ThriftProtocolName;
  readonly address: string;

  private constructor(
    private readonly socket: NetSocket,
    options: ThriftRpcClientOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.requestTimeout = options.requestTimeout ?? 20000;
    this.protocol = options.protocol;
    this.address = `${options.host}:${options.port}`;
    this.decoder = new ThriftFrameDecoder(options.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE);
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.on("error", (err) => this.fail(new RpcConnectionError(`connection to thrift source at ${this.address} failed: ${err.message}`, { cause: err })));
    socket.on("close", () => this.fail(new RpcConnectionError(`connection to thrift source at ${this.address} closed before the answer`)));
  }

  /** Connects (plain or TLS) within connect-timeout. */
  static connect(options: ThriftRpcClientOptions): Promise<ThriftRpcClient> {
    return connectRpc(options, "thrift source", (socket) => new ThriftRpcClient(socket, options));
  }

  /** False once the connection broke, timed out or was closed. */
  isActive(): boolean {
    return this.broken === null && !this.socket.destroyed;
  }

  /** One appendBatch call; resolves on Status OK, throws RpcStatusError (or a connection error) otherwise. */
  appendBatch(events: readonly Event[]): Promise<void> {
    return this.call(METHOD_APPEND_BATCH, (seqid) => encodeAppendBatch(this.protocol, seqid, events));
  }

  append(event: Event): Promise<void> {
    return this.call(METHOD_APPEND, (seqid) => encodeAppend(this.protocol, seqid, event));
  }

  /** Closes the connection; calls still waiting fail. */
  close(): void {
    this.fail(new RpcConnectionError(`connection to thrift source at ${this.address} closed by the client`));
    this.socket.end();
  }

  private call(name: string, encode: (seqid: number) => Buffer): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    // libthrift's client numbers calls from 1.
    const seqid = (this.seqid = (this.seqid + 1) | 0);
    const frame = encode(seqid);
    return new Promise<void>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.fail(new RpcTimeoutError(`no answer to ${name} from thrift source at ${this.address} within ${this.requestTimeout} ms (request-timeout)`));
        this.socket.destroy();
      }, this.requestTimeout);
      this.pending.push({ name, seqid, resolve, reject, timer });
      this.socket.write(frame);
    });
  }

  private receive(chunk: Buffer): void {
    if (this.broken) return;
    try {
      for (const frame of this.decoder.push(chunk)) {
        const p = this.pending.shift();
        if (!p) throw new RpcConnectionError(`thrift source at ${this.address} sent an answer to no call`);
        this.clock.clearTimeout(p.timer);
        let status: number;
        try {
          status = readStatusReply(createReader(this.protocol, frame), p.name, p.seqid, this.address);
        } catch (err) {
          // A TApplicationException fails this call only; the connection still works.
          if (err instanceof RpcStatusError) {
            p.reject(err);
            continue;
          }
          p.reject(err as Error);
          throw err;
        }
        if (status === 0) p.resolve();
        else p.reject(new RpcStatusError(statusName(status), `thrift source at ${this.address} answered ${p.name} with Status ${statusName(status)}`));
      }
    } catch (err) {
      this.fail(new RpcConnectionError(`invalid answer from thrift source at ${this.address}: ${(err as Error).message}`, { cause: err }));
      this.socket.destroy();
    }
  }

  private fail(err: Error): void {
    if (this.broken) return;
    this.broken = err;
    for (const p of this.pending.splice(0)) {
      this.clock.clearTimeout(p.timer);
      p.reject(err);
    }
  }
}
