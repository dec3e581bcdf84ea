/**
 * The read loop of a request/response connection (the avro and thrift sources): the one read
 * loop of read-loop.ts with a frame decoder plugged in. Reads are decoded into frames; frames are
 * answered one at a time, in order; while one waits for the channel, later requests are read
 * ahead up to a bound of bytes, then reading pauses until the loop is idle again.
 */
import type { Logger } from "../core/logger.ts";
import { PausingReadLoop } from "./read-loop.ts";
import { type TcpConnection, WRITE_HIGH_WATER } from "./tcp-server.ts";

/** Cuts a connection's bytes into frames; throws on bytes that cannot be one (the connection closes). */
export interface FrameDecoder<F> {
  /** Adds received bytes; returns the frames they completed. */
  push(chunk: Buffer): F[];
  /** Part of a frame is buffered (a truncated request if the peer closes now). */
  readonly midFrame: boolean;
  /** Bytes buffered for the frame not yet complete. */
  readonly bufferedBytes: number;
}

export interface RequestLoopOptions<F> {
  logger: Logger;
  /** Prefix for log lines, e.g. "Avro source r1". */
  label: string;
  /** The payload bytes of a decoded frame, for bufferedBytes. */
  sizeOf(frame: F): number;
  /**
   * Request bytes read ahead while one is served before reading pauses (the avro source's
   * max-buffered-bytes; the thrift source's max-frame-size, as libthrift's read buffer).
   */
  readAheadBytes: number;
  /** The connection closed (the server forgets it). */
  closed?(): void;
}

/** Failed requests logged per connection: a client repeating a bad call must not flood the log. */
const MAX_FAILURES_LOGGED = 3;

/** Reads as Buffers (Bun's sockets deliver plain Uint8Arrays): a view, no copy. */
function asBuffer(read: Uint8Array): Buffer {
  return Buffer.isBuffer(read) ? read : Buffer.from(read.buffer, read.byteOffset, read.byteLength);
}

export abstract class RequestLoop<F> extends PausingReadLoop {
  private failuresLogged = 0;
  /** The connection was closed for bad input: later reads are dropped, no truncation is reported. */
  private broken = false;
  /** Bytes of reads queued and not yet decoded, and of the frame being answered. */
  private queuedBytes = 0;
  private servingBytes = 0;
  /** The most request bytes this connection held at once. */
  peakBufferedBytes = 0;
  protected override readonly pauseEachRun = false;

  constructor(
    conn: TcpConnection,
    protected readonly decoder: FrameDecoder<F>,
    protected readonly options: RequestLoopOptions<F>,
  ) {
    super(conn);
  }

  /** One request in, its answer out (sent in the order the requests came). */
  protected abstract respond(frame: F): Promise<Uint8Array>;

  /** Sends an answer (a subclass with a compressing stage overrides it). */
  protected send(answer: Uint8Array): void {
    this.conn.write(answer);
  }

  /** Bytes held before the decoder by a stage of the subclass (an inflater's output). */
  protected get stagedBytes(): number {
    return 0;
  }

  /** Request bytes this connection holds now: reads not decoded, the unfinished frame, the frame being answered. */
  get bufferedBytes(): number {
    return this.queuedBytes + this.decoder.bufferedBytes + this.servingBytes + this.stagedBytes;
  }

  /** Answer bytes written and not yet taken by the kernel (a client that does not read them). */
  get unsentBytes(): number {
    return this.conn.pendingBytes;
  }

  protected override readAheadFull(): boolean {
    return this.bufferedBytes > this.options.readAheadBytes;
  }

  protected override get halted(): boolean {
    return this.broken;
  }

  override data(chunk: Uint8Array): void {
    if (this.broken) return;
    this.queuedBytes += chunk.byteLength;
    const buffered = this.bufferedBytes;
    if (buffered > this.peakBufferedBytes) this.peakBufferedBytes = buffered;
    super.data(chunk);
  }

  protected async consume(reads: Uint8Array[]): Promise<void> {
    const { conn, decoder, options } = this;
    for (const read of reads) {
      this.queuedBytes -= read.byteLength;
      const frames = decoder.push(asBuffer(read));
      for (const frame of frames) {
        if (conn.closed) return;
        this.servingBytes = options.sizeOf(frame);
        const answer = await this.respond(frame);
        this.servingBytes = 0;
        if (conn.closed) return;
        this.send(answer);
        // A client that pipelines calls without reading the answers must not make us buffer them without bound.
        if (conn.pendingBytes > WRITE_HIGH_WATER) await conn.drained();
      }
    }
  }

  /** The client half-closed: our side ends once its requests are answered. */
  protected async finish(): Promise<void> {
    this.conn.end();
  }

  /** The decoder refused the bytes, or respond() threw: the connection is destroyed after this. */
  protected failed(err: unknown): void {
    this.closing(err instanceof Error ? err.message : String(err));
  }

  error(err: Error): void {
    this.abort(`socket error: ${err.message}`);
  }

  /** Closes the connection at once; answers not yet sent are dropped (the client retries). */
  destroy(): void {
    this.broken = true;
    this.conn.destroy();
  }

  /** Closes the connection for a reason the log tells. */
  protected abort(reason: string): void {
    this.closing(reason);
    this.conn.destroy();
  }

  close(): void {
    if (this.decoder.midFrame && !this.broken) this.options.logger.warn(`${this.options.label}: connection from ${this.conn.peer} closed in the middle of a frame (truncated request dropped)`);
    this.options.closed?.();
  }

  /** Logs a request answered with an error; the connection stays open. */
  protected logFailure(message: string): void {
    if (this.failuresLogged >= MAX_FAILURES_LOGGED) return;
    const more = ++this.failuresLogged === MAX_FAILURES_LOGGED ? " (further failures on this connection are answered but not logged)" : "";
    this.options.logger.warn(`${this.options.label}: request from ${this.conn.peer} failed: ${message}${more}`);
  }

  private closing(reason: string): void {
    if (this.broken) return;
    this.broken = true;
    this.options.logger.warn(`${this.options.label}: closing connection from ${this.conn.peer}: ${reason}`);
  }
}
