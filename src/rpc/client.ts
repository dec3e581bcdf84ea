import type tls from "node:tls";
import type { Clock, TimerHandle } from "../core/clock.ts";
import { systemClock } from "../core/clock.ts";
import type { Event } from "../core/event.ts";
import { AvroReader, AvroWriter } from "./binary.ts";
import { connectRpc } from "./connect.ts";
import { RpcConnectionError, RpcHandshakeTimeoutError, RpcProtocolError, RpcStatusError, RpcTimeoutError } from "./errors.ts";
import { DEFAULT_FRAME_LIMITS, joinBuffers, type Frame, type FrameLimits } from "./frame.ts";
import { eventArraySize, eventSize, readCallResult, readHandshakeResponse, writeEvent, writeEventArray, writeHandshakeRequest } from "./messages.ts";
import { MESSAGE_APPEND, MESSAGE_APPEND_BATCH, PROTOCOL_HASH, PROTOCOL_TEXT, type RpcStatus } from "./protocol.ts";
import { FramedTransport, type CompressionType } from "./transport.ts";
import type { Network } from "../net/network.ts";

export interface AvroRpcClientOptions {
  host: string;
  port: number;
  /** Milliseconds for TCP + TLS, and again for the Avro handshake on the first call (Flume: connect-timeout, 20000). */
  connectTimeout?: number;
  /** Milliseconds to wait for each answer once the handshake is done (Flume: request-timeout, 20000). */
  requestTimeout?: number;
  compression?: CompressionType;
  compressionLevel?: number;
  /** tls.connect options (see clientTlsOptions); absent: plain TCP. */
  tls?: tls.ConnectionOptions;
  limits?: FrameLimits;
  clock?: Clock;
  /** The network to connect through (the simulator's); default: TCP. */
  network?: Network;
}

interface Pending {
  serial: number;
  withHandshake: boolean;
  sentText: boolean;
  encodeParams: (w: AvroWriter) => void;
  paramsSize: number;
  name: string;
  resolve: (status: RpcStatus) => void;
  reject: (err: Error) => void;
  timer: TimerHandle | null;
}

const EMPTY_META = new Map<string, Buffer>();

/**
 * Flume's NettyAvroRpcClient over Avro's NettyTransceiver: one connection, a handshake on the
 * first call (resent with our protocol text if the server answers NONE), then calls matched
 * to answers by serial. Calls may be pipelined once the handshake is done.
 */
export class AvroRpcClient {
  private serial = 0;
  private readonly pending = new Map<number, Pending>();
  private established = false;
  /** Calls waiting for the handshake to finish (only one call carries the handshake). */
  private waiting: Pending[] = [];
  private handshaking = false;
  private broken: Error | null = null;
  private readonly clock: Clock;
  private readonly requestTimeout: number;
  private readonly connectTimeout: number;
  readonly address: string;

  private constructor(
    private readonly transport: FramedTransport,
    options: AvroRpcClientOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.requestTimeout = options.requestTimeout ?? 20000;
    this.connectTimeout = options.connectTimeout ?? 20000;
    this.address = `${options.host}:${options.port}`;
  }

  /** Connects (plain or TLS) within connect-timeout. */
  static connect(options: AvroRpcClientOptions): Promise<AvroRpcClient> {
    const where = `${options.host}:${options.port}`;
    return connectRpc(options, "Avro source", (socket) => {
      let client: AvroRpcClient | null = null;
      const transport = new FramedTransport(
        socket,
        { compression: options.compression ?? "none", compressionLevel: options.compressionLevel ?? 6, limits: options.limits ?? DEFAULT_FRAME_LIMITS },
        {
          onFrames: (frames) => client?.receive(frames),
          onError: (err) => client?.fail(new RpcConnectionError(`connection to ${where} failed: ${err.message}`, { cause: err })),
          onClose: () => client?.fail(new RpcConnectionError(`connection to ${where} closed before the answer`)),
        },
      );
      client = new AvroRpcClient(transport, options);
      return client;
    });
  }

  /** False once the connection broke, timed out or was closed. */
  isActive(): boolean {
    return this.broken === null && this.transport.isOpen;
  }

  /** Sends one appendBatch; resolves on Status OK, throws RpcStatusError otherwise. */
  async appendBatch(events: readonly Event[]): Promise<void> {
    const status = await this.call(MESSAGE_APPEND_BATCH, eventArraySize(events), (w) => writeEventArray(w, events));
    if (status !== "OK") throw new RpcStatusError(status, `Avro source at ${this.address} answered appendBatch with Status ${status}`);
  }

  async append(event: Event): Promise<void> {
    const status = await this.call(MESSAGE_APPEND, eventSize(event), (w) => writeEvent(w, event));
    if (status !== "OK") throw new RpcStatusError(status, `Avro source at ${this.address} answered append with Status ${status}`);
  }

  /** Closes the connection; calls still waiting fail. */
  close(): void {
    this.fail(new RpcConnectionError(`connection to ${this.address} closed by the client`));
    this.transport.end();
  }

  private call(name: string, paramsSize: number, encodeParams: (w: AvroWriter) => void): Promise<RpcStatus> {
    if (this.broken) return Promise.reject(this.broken);
    return new Promise<RpcStatus>((resolve, reject) => {
      const p: Pending = { serial: 0, withHandshake: false, sentText: false, encodeParams, paramsSize, name, resolve, reject, timer: null };
      // The call that carries the handshake finishes the connection setup, so connect-timeout
      // bounds it (NONE and the resend included), as Flume's client bounds its first call;
      // request-timeout bounds every other call.
      const carriesHandshake = !this.established && !this.handshaking;
      const timeout = carriesHandshake ? this.connectTimeout : this.requestTimeout;
      p.timer = this.clock.setTimeout(() => {
        const err = carriesHandshake
          ? new RpcHandshakeTimeoutError(`Avro handshake with the source at ${this.address} not answered within ${timeout} ms (connect-timeout)`)
          : new RpcTimeoutError(`no answer from Avro source at ${this.address} within ${timeout} ms (request-timeout)`);
        this.fail(err);
        this.transport.destroy();
      }, timeout);
      if (this.established) this.send(p, false, false);
      else if (this.handshaking) this.waiting.push(p);
      else {
        this.handshaking = true;
        this.send(p, true, false);
      }
    });
  }

  private send(p: Pending, withHandshake: boolean, sendText: boolean): void {
    p.serial = ++this.serial;
    p.withHandshake = withHandshake;
    p.sentText = sendText;
    this.pending.set(p.serial, p);
    // One buffer for the whole frame: [serial][2][len][handshake? meta name][len][params],
    // split as Java's Requestor splits it.
    const headSize = (withHandshake ? 40 + (sendText ? PROTOCOL_TEXT.length + 4 : 0) : 0) + 2 + p.name.length;
    const w = new AvroWriter(16 + headSize + p.paramsSize);
    w.int32(p.serial);
    w.int32(2);
    const headLenAt = w.int32(0);
    if (withHandshake) {
      writeHandshakeRequest(w, { clientHash: PROTOCOL_HASH, clientProtocol: sendText ? PROTOCOL_TEXT : null, serverHash: PROTOCOL_HASH, meta: EMPTY_META });
    }
    w.bytesMap(undefined);
    w.string(p.name);
    w.patchInt32(headLenAt, w.pos - headLenAt - 4);
    const paramsLenAt = w.int32(0);
    p.encodeParams(w);
    w.patchInt32(paramsLenAt, w.pos - paramsLenAt - 4);
    this.transport.send(w.finish());
  }

  private receive(frames: Frame[]): void {
    for (const frame of frames) {
      const p = this.pending.get(frame.serial);
      if (!p) continue; // an answer to a call that already timed out
      this.pending.delete(frame.serial);
      try {
        this.answer(p, new AvroReader(joinBuffers(frame.buffers)));
      } catch (err) {
        const e = err instanceof RpcProtocolError ? err : new RpcProtocolError(String(err));
        this.settle(p, e);
        this.fail(new RpcConnectionError(`invalid answer from ${this.address}: ${e.message}`));
        this.transport.destroy();
        return;
      }
    }
  }

  private answer(p: Pending, r: AvroReader): void {
    if (p.withHandshake) {
      const hs = readHandshakeResponse(r);
      if (hs.match === "NONE") {
        if (p.sentText) throw new RpcProtocolError(`Avro source at ${this.address} does not accept Flume's AvroSourceProtocol (handshake NONE)`);
        this.send(p, true, true);
        return;
      }
      this.established = true;
      this.handshaking = false;
      const waiting = this.waiting;
      this.waiting = [];
      for (const w of waiting) this.send(w, false, false);
    }
    const result = readCallResult(r);
    if (result.ok) this.settle(p, null, result.status);
    else this.settle(p, new RpcStatusError("ERROR", `Avro source at ${this.address} answered ${p.name} with an error: ${result.error}`));
  }

  private settle(p: Pending, err: Error | null, status?: RpcStatus): void {
    if (p.timer) this.clock.clearTimeout(p.timer);
    p.timer = null;
    if (err) p.reject(err);
    else p.resolve(status as RpcStatus);
  }

  private fail(err: Error): void {
    if (this.broken) return;
    this.broken = err;
    for (const p of this.pending.values()) this.settle(p, err);
    for (const p of this.waiting) this.settle(p, err);
    this.pending.clear();
    this.waiting = [];
  }
}
