import { peerName } from "../net/peer.ts";
import { drained } from "../net/drain.ts";
import type { NetSocket } from "../net/network.ts";
import zlib from "node:zlib";
import { RpcProtocolError } from "./errors.ts";
import { DEFAULT_FRAME_LIMITS, FrameDecoder, frameSize, type Frame, type FrameLimits } from "./frame.ts";

export type CompressionType = "none" | "deflate";

export interface TransportOptions {
  compression: CompressionType;
  /** zlib level for what we send (Flume: 6). */
  compressionLevel?: number;
  limits?: FrameLimits;
  /** The peer's name for logs, as read when the connection was accepted (default: read now). */
  peer?: string;
  /**
   * Most bytes of requests held for this connection: frames handed to the receiver and not yet
   * release()d, plus the frame being decoded. Beyond it reading (and inflating) pauses until the
   * receiver releases frames. Absent: no accounting (the receiver does not call release()).
   */
  maxBufferedBytes?: number;
}

export interface TransportHandlers {
  onFrames(frames: Frame[]): void;
  /** Invalid bytes from the peer, or a socket error; the connection is being destroyed. */
  onError(err: Error): void;
  /** The socket closed; midFrame is true when the peer left a frame unfinished. */
  onClose(midFrame: boolean): void;
  /**
   * The peer half-closed after the frames delivered so far (sockets created with allowHalfOpen);
   * the receiver answers them, then calls end().
   */
  onEnd?(): void;
}

/**
 * One framed Avro RPC connection over a socket (plain or TLS). With deflate, each direction
 * is one zlib stream for the whole connection, sync-flushed after every frame, as Netty's
 * ZlibEncoder/ZlibDecoder in Flume's pipeline; TLS (when on) carries the compressed bytes.
 */
export class FramedTransport {
  readonly peer: string;
  private readonly decoder: FrameDecoder;
  private readonly deflater: zlib.Deflate | null = null;
  private readonly inflater: zlib.Inflate | null = null;
  private failed = false;
  private closed = false;
  private readonly maxBuffered: number;
  /** Bytes of frames handed to the receiver and not yet released. */
  private held = 0;
  /** Highest bufferedBytes seen on this connection. */
  peakBufferedBytes = 0;
  private receiverPaused = false;
  private bytesPaused = false;
  private flowPaused = false;

  constructor(
    readonly socket: NetSocket,
    options: TransportOptions,
    private readonly handlers: TransportHandlers,
  ) {
    this.peer = options.peer ?? peerName(socket);
    socket.setNoDelay(true);
    this.decoder = new FrameDecoder(options.limits ?? DEFAULT_FRAME_LIMITS);
    this.maxBuffered = options.maxBufferedBytes ?? Infinity;
    if (options.compression === "deflate") {
      const deflater = zlib.createDeflate({ level: options.compressionLevel ?? 6 });
      deflater.on("data", (chunk: Buffer) => {
        if (!socket.destroyed) socket.write(chunk);
      });
      deflater.on("error", (err) => this.fail(err));
      const inflater = zlib.createInflate();
      inflater.on("data", (chunk: Buffer) => this.receive(chunk));
      inflater.on("error", (err) => this.fail(new RpcProtocolError(`invalid deflate stream from ${this.peer}: ${err.message}`)));
      this.deflater = deflater;
      this.inflater = inflater;
      socket.on("data", (chunk: Buffer) => {
        if (!this.failed) inflater.write(chunk);
      });
    } else {
      socket.on("data", (chunk: Buffer) => this.receive(chunk));
    }
    socket.on("end", () => {
      const onEnd = this.handlers.onEnd;
      if (!onEnd || this.failed) return;
      // With deflate, bytes written to the inflater may still be on their way to receive().
      if (this.inflater) this.inflater.flush(zlib.constants.Z_SYNC_FLUSH, () => setImmediate(onEnd));
      else onEnd();
    });
    socket.on("error", (err) => this.fail(err));
    socket.on("close", () => {
      if (this.closed) return;
      this.closed = true;
      this.deflater?.destroy();
      this.inflater?.destroy();
      this.handlers.onClose(this.decoder.midFrame && !this.failed);
    });
  }

  get isOpen(): boolean {
    return !this.closed && !this.failed && !this.socket.destroyed;
  }

  /** Sends one encoded frame. */
  send(frame: Buffer): void {
    if (!this.isOpen) return;
    if (this.deflater) {
      this.deflater.write(frame);
      this.deflater.flush(zlib.constants.Z_SYNC_FLUSH);
    } else {
      this.socket.write(frame);
    }
  }

  /** Resolves at once unless the peer is not reading our answers; then when they drained or the socket closed. */
  drained(): Promise<void> {
    return drained(this.socket, this.socket.writableHighWaterMark);
  }

  /** Request bytes held for this connection (see TransportOptions.maxBufferedBytes). */
  get bufferedBytes(): number {
    return this.held + this.decoder.bufferedBytes + (this.inflater?.readableLength ?? 0);
  }

  /** The receiver is done with a frame it was handed: its bytes no longer count. */
  release(frame: Frame): void {
    if (this.maxBuffered === Infinity) return;
    this.held -= frameSize(frame);
    if (this.bytesPaused && (this.held === 0 || this.bufferedBytes <= this.maxBuffered / 2)) {
      this.bytesPaused = false;
      this.applyFlow();
    }
  }

  pause(): void {
    this.receiverPaused = true;
    this.applyFlow();
  }

  resume(): void {
    this.receiverPaused = false;
    this.applyFlow();
  }

  /** Reads while neither the receiver nor the byte limit asks for a pause. */
  private applyFlow(): void {
    const pause = this.receiverPaused || this.bytesPaused;
    if (pause === this.flowPaused) return;
    this.flowPaused = pause;
    // The inflater too: compressed bytes already read would otherwise keep inflating (a deflate bomb).
    if (pause) {
      this.socket.pause();
      this.inflater?.pause();
    } else {
      this.socket.resume();
      this.inflater?.resume();
    }
  }

  /** Ends the connection after pending writes (finishing the zlib stream). */
  end(): void {
    if (this.closed || this.socket.destroyed) return;
    if (this.deflater) {
      // The final zlib bytes arrive through the 'data' handler before 'end'.
      this.deflater.once("end", () => this.socket.end());
      this.deflater.end();
    } else {
      this.socket.end();
    }
  }

  destroy(): void {
    this.failed = true;
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    if (this.failed) return;
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    if (this.maxBuffered !== Infinity) {
      for (const f of frames) this.held += frameSize(f);
      const buffered = this.bufferedBytes;
      if (buffered > this.peakBufferedBytes) this.peakBufferedBytes = buffered;
      // Only frames the receiver will release can free room; an unfinished frame alone needs more bytes.
      if (buffered > this.maxBuffered && this.held > 0 && !this.bytesPaused) {
        this.bytesPaused = true;
        this.applyFlow();
      }
    }
    if (frames.length > 0) this.handlers.onFrames(frames);
  }

  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.handlers.onError(err);
    this.socket.destroy();
  }
}
