import { FrameCursor } from "../frame-cursor.ts";
import { ThriftProtocolError } from "./errors.ts";
import { MAX_NESTING, TType, type ThriftProtocolName } from "./types.ts";

/**
 * What the binary and compact protocols have in common: reading from one received frame and
 * writing into one growing buffer. Only the parts of Thrift that ThriftSourceProtocol needs are
 * decoded into values; everything else a newer peer may send is skipped by type.
 */

export interface MessageHeader {
  name: string;
  type: number;
  seqid: number;
}

export abstract class ThriftReader extends FrameCursor {
  abstract readonly protocol: ThriftProtocolName;
  /** Set by readFieldBegin. */
  fieldId = 0;
  /** Set by readMapBegin. */
  keyType = 0;
  valueType = 0;
  /** Set by readListBegin (lists and sets). */
  elementType = 0;

  abstract readMessageBegin(): MessageHeader;
  abstract readStructBegin(): void;
  abstract readStructEnd(): void;
  /** The next field's type, TType.STOP after the last one; its id goes to fieldId. */
  abstract readFieldBegin(): number;
  /** Entry count; key and value types go to keyType and valueType. */
  abstract readMapBegin(): number;
  /** Element count of a list or set; the element type goes to elementType. */
  abstract readListBegin(): number;
  abstract readBool(): boolean;
  abstract readI16(): number;
  abstract readI32(): number;
  /** Skips an i64 (no Flume field has one; a JS number could not hold every value anyway). */
  abstract skipI64(): void;
  /** Length of the string or binary value that follows. */
  protected abstract readLength(): number;

  protected truncated(what: string): never {
    throw new ThriftProtocolError(`truncated ${this.protocol} message: ${what} runs past the end of the frame (at byte ${this.pos} of ${this.end})`);
  }

  protected skipBytes(n: number, what: string): void {
    if (n > this.end - this.pos) this.truncated(what);
    this.pos += n;
  }

  readByte(): number {
    if (this.pos >= this.end) this.truncated("a byte");
    return this.buf[this.pos++];
  }

  /** A string or binary value as a view of the frame (no copy). */
  readBinary(): Buffer {
    return this.viewOf(this.readLength(), "value");
  }

  readString(): string {
    return this.utf8Of(this.readLength());
  }

  /** A string that recurs (a header name): interned, see interned-keys.ts. */
  readKey(): string {
    return this.keyOf(this.readLength());
  }

  /** A declared element count: never negative, never more elements than bytes left (each takes one at least). */
  protected checkCount(n: number, what: string): number {
    if (n < 0) throw new ThriftProtocolError(`invalid ${this.protocol} message: ${what} declares a negative size ${n} (at byte ${this.pos})`);
    if (n > this.end - this.pos) this.truncated(`a ${what} of ${n} elements`);
    return n;
  }

  /** Skips one value of the given type, as libthrift's TProtocolUtil.skip, with its nesting limit. */
  skip(type: number, depth = 0): void {
    if (depth >= MAX_NESTING) throw new ThriftProtocolError(`invalid ${this.protocol} message: values nested more than ${MAX_NESTING} deep`);
    switch (type) {
      case TType.BOOL:
        this.readBool();
        return;
      case TType.BYTE:
        this.skipBytes(1, "a byte");
        return;
      case TType.I16:
        this.readI16();
        return;
      case TType.I32:
        this.readI32();
        return;
      case TType.I64:
        this.skipI64();
        return;
      case TType.DOUBLE:
        this.skipBytes(8, "a double");
        return;
      case TType.UUID:
        this.skipBytes(16, "a uuid");
        return;
      case TType.STRING:
        this.skipBytes(this.readLength(), "a string");
        return;
      case TType.STRUCT:
        this.readStructBegin();
        for (let t = this.readFieldBegin(); t !== TType.STOP; t = this.readFieldBegin()) this.skip(t, depth + 1);
        this.readStructEnd();
        return;
      case TType.MAP: {
        const n = this.readMapBegin();
        const k = this.keyType;
        const v = this.valueType;
        for (let i = 0; i < n; i++) {
          this.skip(k, depth + 1);
          this.skip(v, depth + 1);
        }
        return;
      }
      case TType.SET:
      case TType.LIST: {
        const n = this.readListBegin();
        const e = this.elementType;
        for (let i = 0; i < n; i++) this.skip(e, depth + 1);
        return;
      }
      default:
        throw new ThriftProtocolError(`invalid ${this.protocol} message: unknown field type ${type} (at byte ${this.pos})`);
    }
  }
}

/**
 * Writes one frame: 4 bytes reserved for the frame length, then the message. Sized by the
 * caller's estimate; grows only if the estimate was short.
 */
export abstract class ThriftWriter {
  abstract readonly protocol: ThriftProtocolName;
  buf: Buffer;
  pos = 4;

  constructor(capacity = 256) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 16));
  }

  abstract writeMessageBegin(name: string, type: number, seqid: number): void;
  abstract writeStructBegin(): void;
  abstract writeStructEnd(): void;
  abstract writeFieldBegin(type: number, id: number): void;
  abstract writeFieldStop(): void;
  abstract writeMapBegin(keyType: number, valueType: number, size: number): void;
  abstract writeListBegin(elementType: number, size: number): void;
  abstract writeI32(n: number): void;
  abstract writeBinary(bytes: Uint8Array): void;
  abstract writeString(s: string): void;
  /** Bytes writeString(s) takes when s is ASCII (a sizing estimate; the buffer grows for the rest). */
  abstract stringSize(s: string): number;

  protected ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** The frame: its length patched in front of the message (a view; the writer is done). */
  frame(): Buffer {
    this.buf.writeInt32BE(this.pos - 4, 0);
    return this.buf.subarray(0, this.pos);
  }
}

/** Copies plain ASCII into buf at pos; returns the count copied (s.length when it was all ASCII). */
export function writeAscii(buf: Buffer, pos: number, s: string): number {
  const n = s.length;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) break;
    buf[pos + i] = c;
  }
  return i;
}
