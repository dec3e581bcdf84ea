/**
 * The part of the protobuf (proto2) wire format that Flume's file channel messages use, decoded
 * by hand: eight tiny messages of fixed-width numbers, strings and bytes do not need a library
 * (see messages.ts). Every read is bounds-checked and throws ProtobufError on bad input.
 */

/** Malformed protobuf bytes: the caller adds which file and offset. */
export class ProtobufError extends Error {}

export const WireType = { VARINT: 0, FIXED64: 1, BYTES: 2, START_GROUP: 3, END_GROUP: 4, FIXED32: 5 } as const;

const utf8 = new TextDecoder("utf-8");

/** Reads the fields of one message in `buf[pos, end)`. */
export class ProtoReader {
  constructor(
    private readonly buf: Buffer,
    public pos: number,
    readonly end: number,
  ) {
    if (end > buf.length || pos > end) throw new ProtobufError(`message of ${end - pos} bytes runs past the ${buf.length - pos} bytes available`);
  }

  done(): boolean {
    return this.pos >= this.end;
  }

  /** The next field's number and wire type. */
  tag(): { field: number; wire: number } {
    const t = this.varint();
    const field = Math.floor(t / 8);
    if (field === 0) throw new ProtobufError("field number 0");
    return { field, wire: t % 8 };
  }

  /** An unsigned varint of up to 53 bits (every varint Flume writes is a length or a tag). */
  varint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtobufError("varint runs past the end of the message");
      const b = this.buf[this.pos++];
      result += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (!Number.isSafeInteger(result)) throw new ProtobufError("varint too large");
        return result;
      }
      scale *= 128;
    }
    throw new ProtobufError("varint longer than 10 bytes");
  }

  /** sfixed32. */
  fixed32(): number {
    return this.buf.readInt32LE(this.advance(4));
  }

  /** sfixed64, as a number: Flume's ids come from a millisecond clock, far below 2^53. */
  fixed64(): number {
    const v = this.buf.readBigInt64LE(this.advance(8));
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw new ProtobufError(`64-bit value ${v} is out of range`);
    return Number(v);
  }

  /** A length-delimited field's bounds [start, end) inside the buffer. */
  bytesRange(): { start: number; end: number } {
    const len = this.varint();
    const start = this.advance(len);
    return { start, end: this.pos };
  }

  /** A length-delimited field's bytes, copied (the buffer may be reused). */
  bytes(): Uint8Array {
    const { start, end } = this.bytesRange();
    const out = new Uint8Array(end - start);
    out.set(this.buf.subarray(start, end));
    return out;
  }

  string(): string {
    const { start, end } = this.bytesRange();
    return utf8.decode(this.buf.subarray(start, end));
  }

  /** Throws unless a field of the message has the wire type its declaration gives. */
  expect(wire: number, want: number, name: string): void {
    if (wire !== want) throw new ProtobufError(`field ${name} has wire type ${wire}, expected ${want}`);
  }

  /** Skips a field this reader does not use (proto2 readers ignore unknown fields). */
  skip(wire: number): void {
    switch (wire) {
      case WireType.VARINT:
        this.varint();
        return;
      case WireType.FIXED64:
        this.advance(8);
        return;
      case WireType.BYTES:
        this.bytesRange();
        return;
      case WireType.FIXED32:
        this.advance(4);
        return;
      default:
        throw new ProtobufError(`unsupported wire type ${wire}`);
    }
  }

  /** Moves past the next n bytes of the message and returns where they start. */
  private advance(n: number): number {
    const start = this.pos;
    if (start + n > this.end) throw new ProtobufError(`field of ${n} bytes runs past the end of the message`);
    this.pos = start + n;
    return start;
  }
}

/**
 * A message written with protobuf's writeDelimitedTo at `at`: a varint length, then the message.
 * Returns the message's bounds; throws when the length runs past `end`.
 */
export function delimited(buf: Buffer, at: number, end: number): { start: number; end: number } {
  const r = new ProtoReader(buf, at, end);
  const len = r.varint();
  if (r.pos + len > end) throw new ProtobufError(`message of ${len} bytes runs past the end (${end - r.pos} bytes left)`);
  return { start: r.pos, end: r.pos + len };
}
