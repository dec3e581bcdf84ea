import { RpcProtocolError } from "./errors.ts";
import { FrameCursor } from "./frame-cursor.ts";

/**
 * Avro binary primitives (zig-zag varints, strings, bytes, fixed) for the RPC hot path.
 * Hand-written rather than avsc's Tap because bytes must come out as views of the received
 * chunk (avsc copies them) and encoding a batch must size one buffer up front.
 */
export class AvroReader extends FrameCursor {
  protected truncated(what: string): never {
    throw new RpcProtocolError(`truncated Avro payload: ${what} runs past the end of the message (at byte ${this.pos} of ${this.end})`);
  }

  /** An Avro long as a JS number; values beyond ±2^52 are refused (no Flume field needs them). */
  long(): number {
    const buf = this.buf;
    let pos = this.pos;
    let b: number;
    let n = 0;
    let shift = 0;
    // Fast path: up to 4 bytes fit a 28-bit unsigned value, exact with bit operations.
    do {
      if (pos >= this.end) this.truncated("a varint");
      b = buf[pos++];
      n |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80 && shift < 28);
    if (b & 0x80) {
      let big = n >>> 0;
      let mul = 2 ** 28;
      do {
        if (pos >= this.end) this.truncated("a varint");
        b = buf[pos++];
        big += (b & 0x7f) * mul;
        mul *= 128;
        if (mul > 2 ** 63) throw new RpcProtocolError(`invalid Avro varint at byte ${this.pos}: longer than 10 bytes`);
      } while (b & 0x80);
      this.pos = pos;
      if (big > 2 ** 53) throw new RpcProtocolError(`Avro long at byte ${this.pos} is too large (beyond ±2^52)`);
      return big % 2 === 0 ? big / 2 : -(big + 1) / 2;
    }
    this.pos = pos;
    return (n >>> 1) ^ -(n & 1);
  }

  boolean(): boolean {
    if (this.pos >= this.end) this.truncated("a boolean");
    const b = this.buf[this.pos++];
    if (b > 1) throw new RpcProtocolError(`invalid Avro boolean byte ${b} at ${this.pos - 1}`);
    return b === 1;
  }

  // bytes(), string() and key() read their length inline (not through a helper) for the same
  // reason the cursor's readers check bounds inline: see frame-cursor.ts.

  /** A length-prefixed byte run, as a view into the underlying buffer (no copy). */
  bytes(): Buffer {
    const len = this.long();
    if (len < 0) this.negative("bytes", len);
    return this.viewOf(len, "value");
  }

  string(): string {
    const len = this.long();
    if (len < 0) this.negative("string", len);
    return this.utf8Of(len);
  }

  fixed(size: number): Buffer {
    return this.viewOf(size, "fixed");
  }

  /** A bytes or string value's length was negative. */
  private negative(kind: "bytes" | "string", len: number): never {
    throw new RpcProtocolError(`negative Avro ${kind} length ${len} at byte ${this.pos}`);
  }

  /** Reads an array/map block header: item count (>= 0); skips the byte size of negative counts. */
  blockCount(): number {
    let n = this.long();
    if (n < 0) {
      n = -n;
      this.long(); // block size in bytes, only useful for skipping
    }
    return n;
  }

  /** A union branch index, checked against the number of branches. */
  unionIndex(branches: number): number {
    const i = this.long();
    if (i < 0 || i >= branches) throw new RpcProtocolError(`invalid Avro union index ${i} at byte ${this.pos}`);
    return i;
  }

  /** A map key, interned (see interned-keys.ts). */
  key(): string {
    const len = this.long();
    if (len < 0) this.negative("string", len);
    return this.keyOf(len);
  }

  /** map<string> as a plain object, or null for an empty map (no object made). */
  stringMapOrNull(): Record<string, string> | null {
    let n = this.blockCount();
    if (n === 0) return null;
    const out: Record<string, string> = {};
    for (; n > 0; n = this.blockCount()) {
      for (let i = 0; i < n; i++) {
        const k = this.key();
        out[k] = this.string();
      }
    }
    return out;
  }

  /** map<bytes> as a Map (call metadata and handshake meta). */
  bytesMap(): Map<string, Buffer> {
    const out = new Map<string, Buffer>();
    for (let n = this.blockCount(); n > 0; n = this.blockCount()) {
      for (let i = 0; i < n; i++) out.set(this.string(), this.bytes());
    }
    return out;
  }
}

/** Bytes a zig-zag varint of n takes. */
export function longSize(n: number): number {
  let z = n >= 0 ? n * 2 : -n * 2 - 1;
  let size = 1;
  while (z >= 128) {
    z = Math.floor(z / 128);
    size++;
  }
  return size;
}

/** Writes `n` as a zigzag varint (Avro's long, Kafka's varint) at `pos` of a buffer sized with longSize; returns the position after it. */
export function writeLongAt(buf: Buffer, pos: number, n: number): number {
  let z = n >= 0 ? n * 2 : -n * 2 - 1;
  while (z >= 128) {
    buf[pos++] = (z % 128) | 0x80;
    z = Math.floor(z / 128);
  }
  buf[pos++] = z;
  return pos;
}

/** Writes into a buffer sized by the caller; grows only if the estimate was short. */
export class AvroWriter {
  buf: Buffer;
  pos = 0;

  constructor(capacity = 256) {
    this.buf = Buffer.allocUnsafe(capacity);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  long(n: number): void {
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    if (n >= -0x40000000 && n < 0x40000000) {
      let z = ((n << 1) ^ (n >> 31)) >>> 0;
      while (z > 0x7f) {
        buf[pos++] = (z & 0x7f) | 0x80;
        z >>>= 7;
      }
      buf[pos++] = z;
    } else {
      let z = n >= 0 ? n * 2 : -n * 2 - 1;
      while (z >= 128) {
        buf[pos++] = (z % 128) | 0x80;
        z = Math.floor(z / 128);
      }
      buf[pos++] = z;
    }
    this.pos = pos;
  }

  /** A big-endian int32 (frame headers); returns its position so a length can be patched. */
  int32(n: number): number {
    this.ensure(4);
    const at = this.pos;
    this.buf.writeInt32BE(n | 0, at);
    this.pos += 4;
    return at;
  }

  patchInt32(at: number, n: number): void {
    this.buf.writeInt32BE(n | 0, at);
  }

  boolean(b: boolean): void {
    this.ensure(1);
    this.buf[this.pos++] = b ? 1 : 0;
  }

  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  bytes(bytes: Uint8Array): void {
    this.long(bytes.length);
    this.raw(bytes);
  }

  string(s: string): void {
    const n = s.length;
    if (n < 64) {
      // Short ASCII strings (header keys and values): a one-byte length, then the chars.
      this.ensure(n + 1);
      const buf = this.buf;
      const at = this.pos;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[at + 1 + i] = c;
      }
      if (i === n) {
        buf[at] = n << 1;
        this.pos = at + 1 + n;
        return;
      }
    }
    // Worst case 3 bytes per UTF-16 unit; write in place, then fix the length prefix size.
    const max = s.length * 3;
    this.ensure(max + 10);
    const lenSize = longSize(max);
    const start = this.pos + lenSize;
    const written = this.buf.write(s, start, "utf8");
    const actualLenSize = longSize(written);
    if (actualLenSize !== lenSize) this.buf.copyWithin(this.pos + actualLenSize, start, start + written);
    this.long(written);
    this.pos += written;
  }

  stringMap(map: Record<string, string>): void {
    const keys = Object.keys(map);
    if (keys.length > 0) {
      this.long(keys.length);
      for (const k of keys) {
        this.string(k);
        this.string(map[k]);
      }
    }
    this.long(0);
  }

  bytesMap(map: Map<string, Uint8Array> | undefined): void {
    if (map && map.size > 0) {
      this.long(map.size);
      for (const [k, v] of map) {
        this.string(k);
        this.bytes(v);
      }
    }
    this.long(0);
  }

  /** The written bytes (a view; the writer must not be reused afterwards). */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}
