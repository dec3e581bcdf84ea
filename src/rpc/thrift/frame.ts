import { RpcFrameTooLargeError, RpcProtocolError } from "../errors.ts";

/**
 * Thrift's framed transport (TFramedTransport / TFastFramedTransport): each message is preceded
 * by its length as a big-endian int32. Flume's thrift source and sink only speak it framed.
 */

/** What the first four bytes of an invalid frame header most likely were, for the error message. */
export function describeNonFrame(header: Buffer): string {
  const [a, b] = header;
  if (a === 0x80 && b === 0x01) return "an unframed TBinaryProtocol message: the client must use the framed transport (TFramedTransport), as Flume's thrift sink does";
  if (a === 0x82) return "an unframed TCompactProtocol message: the client must use the framed transport (TFramedTransport), as Flume's thrift sink does";
  if (a === 0x16 && b === 0x03) return "a TLS handshake: the client uses TLS but ssl is not enabled here";
  const text = header.toString("latin1");
  if (/^(GET |POST|PUT |HEAD|DELE|OPTI|PATC|CONN)/.test(text)) return "an HTTP request: this port speaks Thrift RPC, not HTTP";
  return "not a framed Thrift client?";
}

/**
 * Incremental frame decoder with a bounded frame size. A frame that lies inside one received
 * chunk comes out as a view of it (event bodies decoded from it are then views too); a frame
 * spread over several chunks is joined once, when complete.
 */
export class ThriftFrameDecoder {
  private readonly header = Buffer.alloc(4);
  private headerFill = 0;
  /** Length of the frame being read; -1 while reading its header. */
  private size = -1;
  private pieces: Buffer[] = [];
  private filled = 0;

  constructor(readonly maxFrameSize: number) {}

  /** True when part of a frame is buffered (a truncated request if the peer closes now). */
  get midFrame(): boolean {
    return this.headerFill > 0 || this.size >= 0;
  }

  /** Bytes buffered for the frame not yet complete. */
  get bufferedBytes(): number {
    return this.headerFill + this.filled;
  }

  /** Adds received bytes; returns the frames they completed. Throws on an invalid or oversized frame header. */
  push(chunk: Buffer): Buffer[] {
    const frames: Buffer[] = [];
    let pos = 0;
    const len = chunk.length;
    while (pos < len) {
      if (this.size < 0) {
        if (this.headerFill === 0 && len - pos >= 4) {
          this.start(chunk.subarray(pos, pos + 4));
          pos += 4;
        } else {
          const m = Math.min(4 - this.headerFill, len - pos);
          chunk.copy(this.header, this.headerFill, pos, pos + m);
          this.headerFill += m;
          pos += m;
          if (this.headerFill < 4) break;
          this.headerFill = 0;
          this.start(this.header);
        }
        continue;
      }
      const need = this.size - this.filled;
      const m = Math.min(need, len - pos);
      if (this.filled === 0 && m === need) {
        frames.push(chunk.subarray(pos, pos + m));
      } else {
        this.pieces.push(chunk.subarray(pos, pos + m));
        this.filled += m;
        if (this.filled === this.size) {
          frames.push(Buffer.concat(this.pieces, this.size));
          this.pieces = [];
          this.filled = 0;
        }
      }
      pos += m;
      if (this.filled === 0) this.size = -1;
    }
    return frames;
  }

  private start(header: Buffer): void {
    const size = header.readInt32BE(0);
    if (size <= 0) throw new RpcProtocolError(`invalid frame size ${size} (first bytes ${header.toString("hex")}): ${describeNonFrame(header)}`);
    if (size > this.maxFrameSize) {
      const what = describeNonFrame(header);
      if (what !== "not a framed Thrift client?") throw new RpcProtocolError(`invalid frame size ${size} (first bytes ${header.toString("hex")}): ${what}`);
      throw new RpcFrameTooLargeError(`frame of ${size} bytes exceeds max-frame-size (${this.maxFrameSize} bytes); raise max-frame-size if such batches are legitimate`);
    }
    this.size = size;
  }
}

