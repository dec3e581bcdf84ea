import { RpcFrameTooLargeError, RpcProtocolError } from "./errors.ts";

/**
 * Avro's Netty framing: serial (int32 BE), buffer count N (int32 BE), then N times
 * (length int32 BE, bytes). Buffer boundaries carry no meaning to Avro; the payload is their
 * concatenation.
 */
export interface Frame {
  serial: number;
  buffers: Buffer[];
}

export interface FrameLimits {
  /** Largest total payload of one frame, in bytes. */
  maxFrameBytes: number;
  /** Most buffers one frame may declare. */
  maxBuffers: number;
}

export const DEFAULT_FRAME_LIMITS: FrameLimits = {
  maxFrameBytes: 64 * 1024 * 1024,
  maxBuffers: 1024,
};

/**
 * Incremental frame decoder: feed it chunks as they arrive, get complete frames back.
 * A buffer that lies inside one chunk comes out as a view of that chunk (no copy), so event
 * bodies decoded from it are slices of what the socket delivered.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private head = 0; // offset into chunks[0]
  private available = 0;
  // Current frame state.
  private serial = 0;
  private count = -1; // -1: waiting for the frame header
  private buffers: Buffer[] = [];
  private frameBytes = 0;
  private nextLength = -1; // -1: waiting for a buffer length

  constructor(private readonly limits: FrameLimits = DEFAULT_FRAME_LIMITS) {}

  /** True when bytes of an unfinished frame are buffered (a truncated stream if the peer closes now). */
  get midFrame(): boolean {
    return this.available > 0 || this.count >= 0;
  }

  /** Bytes held for the frame not yet complete (its buffers so far and what is not decoded yet). */
  get bufferedBytes(): number {
    return this.available + (this.count >= 0 ? this.frameBytes : 0);
  }

  /** Adds a chunk; returns the frames it completed. Throws RpcProtocolError on invalid framing. */
  push(chunk: Buffer): Frame[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.available += chunk.length;
    }
    const out: Frame[] = [];
    for (;;) {
      if (this.count < 0) {
        if (this.available < 8) break;
        const header = this.take(8);
        this.serial = header.readInt32BE(0);
        const count = header.readInt32BE(4);
        if (count < 0 || count > this.limits.maxBuffers) {
          throw new RpcProtocolError(`invalid frame: declares ${count} buffers (allowed 0 to ${this.limits.maxBuffers}); not an Avro RPC client?`);
        }
        this.count = count;
        this.buffers = [];
        this.frameBytes = 0;
      }
      if (this.buffers.length === this.count) {
        out.push({ serial: this.serial, buffers: this.buffers });
        this.count = -1;
        this.buffers = [];
        continue;
      }
      if (this.nextLength < 0) {
        if (this.available < 4) break;
        const len = this.take(4).readInt32BE(0);
        if (len < 0) throw new RpcProtocolError(`invalid frame: negative buffer length ${len}`);
        if (this.frameBytes + len > this.limits.maxFrameBytes) {
          throw new RpcFrameTooLargeError(
            `frame of more than ${this.frameBytes + len} bytes exceeds the limit of ${this.limits.maxFrameBytes} bytes (raise the max frame size setting if this is legitimate)`,
          );
        }
        this.nextLength = len;
      }
      if (this.available < this.nextLength) break;
      this.frameBytes += this.nextLength;
      this.buffers.push(this.take(this.nextLength));
      this.nextLength = -1;
    }
    return out;
  }

  /** Takes n buffered bytes: a view when they lie in one chunk, else a copy. */
  private take(n: number): Buffer {
    this.available -= n;
    const first = this.chunks[0];
    if (n === 0) return Buffer.alloc(0);
    if (first.length - this.head >= n) {
      const view = first.subarray(this.head, this.head + n);
      this.head += n;
      if (this.head === first.length) {
        this.chunks.shift();
        this.head = 0;
      }
      return view;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0];
      const m = Math.min(n - filled, c.length - this.head);
      c.copy(out, filled, this.head, this.head + m);
      filled += m;
      this.head += m;
      if (this.head === c.length) {
        this.chunks.shift();
        this.head = 0;
      }
    }
    return out;
  }
}

/** Encodes one frame into a single buffer (one write, one syscall). */
export function encodeFrame(serial: number, buffers: readonly Uint8Array[]): Buffer {
  let size = 8;
  for (const b of buffers) size += 4 + b.length;
  const out = Buffer.allocUnsafe(size);
  out.writeInt32BE(serial | 0, 0);
  out.writeInt32BE(buffers.length, 4);
  let pos = 8;
  for (const b of buffers) {
    out.writeInt32BE(b.length, pos);
    out.set(b, pos + 4);
    pos += 4 + b.length;
  }
  return out;
}

/** The payload bytes of a frame. */
export function frameSize(frame: Frame): number {
  let n = 0;
  for (const b of frame.buffers) n += b.length;
  return n;
}

/** The frame's payload as one buffer (no copy for a single buffer). */
export function joinBuffers(buffers: readonly Buffer[]): Buffer {
  if (buffers.length === 1) return buffers[0];
  return Buffer.concat(buffers);
}
