import { ThriftReader, ThriftWriter, writeAscii, type MessageHeader } from "./codec.ts";
import { ThriftProtocolError } from "./errors.ts";
import { TType } from "./types.ts";

/**
 * TBinaryProtocol: big-endian fixed-width integers, i32 length prefixes. Messages are written
 * in the strict form (version word 0x8001 | type), as libthrift does by default; the old
 * non-strict form (name length first) is still read, as libthrift's default strictRead=false
 * allows.
 */
const VERSION_1 = 0x8001;

export class BinaryReader extends ThriftReader {
  readonly protocol = "binary" as const;

  readMessageBegin(): MessageHeader {
    const first = this.readI32();
    if (first < 0) {
      if (first >>> 16 !== VERSION_1) {
        throw new ThriftProtocolError(`invalid binary message: bad version word 0x${(first >>> 0).toString(16).padStart(8, "0")} (expected 0x8001000n)`);
      }
      const name = this.readString();
      return { name, type: first & 0xff, seqid: this.readI32() };
    }
    // Non-strict: the first word is the name's length.
    if (first > this.end - this.pos) this.truncated(`a ${first}-byte method name`);
    this.pos -= 4;
    const name = this.readString();
    const type = this.readByte();
    return { name, type, seqid: this.readI32() };
  }

  readStructBegin(): void {}
  readStructEnd(): void {}

  readFieldBegin(): number {
    const type = this.readByte();
    if (type === TType.STOP) return type;
    this.fieldId = this.readI16();
    return type;
  }

  readMapBegin(): number {
    this.keyType = this.readByte();
    this.valueType = this.readByte();
    return this.checkCount(this.readI32(), "map");
  }

  readListBegin(): number {
    this.elementType = this.readByte();
    return this.checkCount(this.readI32(), "list");
  }

  readBool(): boolean {
    return this.readByte() === 1;
  }

  readI16(): number {
    if (this.end - this.pos < 2) this.truncated("an i16");
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  readI32(): number {
    if (this.end - this.pos < 4) this.truncated("an i32");
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  skipI64(): void {
    this.skipBytes(8, "an i64");
  }

  protected readLength(): number {
    const n = this.readI32();
    if (n < 0) throw new ThriftProtocolError(`invalid binary message: negative length ${n} (at byte ${this.pos - 4})`);
    return n;
  }
}

export class BinaryWriter extends ThriftWriter {
  readonly protocol = "binary" as const;

  writeMessageBegin(name: string, type: number, seqid: number): void {
    this.ensure(4);
    this.buf.writeUInt32BE(((VERSION_1 << 16) | type) >>> 0, this.pos);
    this.pos += 4;
    this.writeString(name);
    this.writeI32(seqid);
  }

  writeStructBegin(): void {}
  writeStructEnd(): void {}

  writeFieldBegin(type: number, id: number): void {
    this.ensure(3);
    this.buf[this.pos] = type;
    this.buf.writeInt16BE(id, this.pos + 1);
    this.pos += 3;
  }

  writeFieldStop(): void {
    this.ensure(1);
    this.buf[this.pos++] = TType.STOP;
  }

  writeMapBegin(keyType: number, valueType: number, size: number): void {
    this.ensure(6);
    this.buf[this.pos] = keyType;
    this.buf[this.pos + 1] = valueType;
    this.buf.writeInt32BE(size, this.pos + 2);
    this.pos += 6;
  }

  writeListBegin(elementType: number, size: number): void {
    this.ensure(5);
    this.buf[this.pos] = elementType;
    this.buf.writeInt32BE(size, this.pos + 1);
    this.pos += 5;
  }

  writeI32(n: number): void {
    this.ensure(4);
    this.buf.writeInt32BE(n | 0, this.pos);
    this.pos += 4;
  }

  writeBinary(bytes: Uint8Array): void {
    this.ensure(4 + bytes.length);
    this.buf.writeInt32BE(bytes.length, this.pos);
    this.buf.set(bytes, this.pos + 4);
    this.pos += 4 + bytes.length;
  }

  writeString(s: string): void {
    this.ensure(4 + s.length);
    let n = writeAscii(this.buf, this.pos + 4, s);
    if (n !== s.length) {
      this.ensure(4 + s.length * 3);
      n = this.buf.write(s, this.pos + 4, "utf8");
    }
    this.buf.writeInt32BE(n, this.pos);
    this.pos += 4 + n;
  }

  stringSize(s: string): number {
    return 4 + s.length;
  }
}
