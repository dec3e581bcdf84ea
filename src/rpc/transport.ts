import { peerName } from "../net/peer.ts";
import type { NetSocket } from "../net/network.ts";
import zlib from "node:zlib";
import { RpcProtocolError } from "./errors.ts";
import { DEFAULT_FRAME_LIMITS, FrameDecoder, type Frame, type FrameLimits } from "./frame.ts";

export type CompressionType = "none" | "deflate";

export interface TransportOptions {
  compression: CompressionType;
  /** zlib level for what we send (Flume: 6). */
  compressionLevel?: number;
  limits?: FrameLimits;
}

export interface TransportHandlers {
  onFrames(frames: Frame[]): void;
  /** Invalid bytes from the peer, or a socket error; the connection is being destroyed. */
  onError(err: Error): void;
  /** The socket closed; midFrame is true when the peer left a frame unfinished. */
  onClose(midFrame: boolean): void;
}

/**
 * The client's framed Avro RPC connection over a socket (plain or TLS; the server's connections
 * run on the net layer's read loop, see server.ts). With deflate, each direction is one zlib
 * stream for the whole connection, sync-flushed after every frame, as Netty's
 * ZlibEncoder/ZlibDecoder in Flume's pipeline; TLS (when on) carries the compressed bytes.
 */
export class FramedTransport {
  readonly peer: string;
  private readonly decoder: FrameDecoder;
  private readonly deflater: zlib.Deflate | null = null;
  private readonly inflater: zlib.Inflate | null = null;
  private failed = false;
  private closed = false;

  constructor(
    readonly socket: NetSocket,
    options: TransportOptions,
    private readonly handlers: TransportHandlers,
  ) {
    this.peer = peerName(socket);
    socket.setNoDelay(true);
    this.decoder = new FrameDecoder(options.limits ?? DEFAULT_FRAME_LIMITS);
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
    if (frames.length > 0) this.handlers.onFrames(frames);
  }

  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.handlers.onError(err);
    this.socket.destroy();
  }
}
