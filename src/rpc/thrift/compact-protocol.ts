import { ThriftReader, ThriftWriter, writeAscii, type MessageHeader } from "./codec.ts";
import { ThriftProtocolError } from "./errors.ts";
import { TType } from "./types.ts";

/**
 * TCompactProtocol (Flume's default): varints, zig-zag integers, field ids as deltas from the
 * previous field in the high nibble, booleans folded into field headers, small list sizes in
 * the type byte.
 */
const PROTOCOL_ID = 0x82;
const VERSION = 1;
const VERSION_MASK = 0x1f;
const TYPE_SHIFT = 5;

/** Compact type nibble -> TType; BOOLEAN_TRUE (1) and BOOLEAN_FALSE (2) both mean BOOL. */
const FROM_COMPACT: readonly number[] = [
  TType.STOP,
  TType.BOOL,
  TType.BOOL,
  TType.BYTE,
  TType.I16,
  TType.I32,
  TType.I64,
  TType.DOUBLE,
  TType.STRING,
  TType.LIST,
  TType.SET,
  TType.MAP,
  TType.STRUCT,
  TType.UUID,
];

const TO_COMPACT: Record<number, number> = {
  [TType.BOOL]: 1,
  [TType.BYTE]: 3,
  [TType.I16]: 4,
  [TType.I32]: 5,
  [TType.I64]: 6,
  [TType.DOUBLE]: 7,
  [TType.STRING]: 8,
  [TType.LIST]: 9,
  [TType.SET]: 10,
  [TType.MAP]: 11,
  [TType.STRUCT]: 12,
  [TType.UUID]: 13,
};

function compactType(type: number): number {
  const t = TO_COMPACT[type];
  if (t === undefined) throw new ThriftProtocolError(`cannot write type ${type} in the compact protocol`);
  return t;
}

export class CompactReader extends ThriftReader {
  readonly protocol = "compact" as const;
  private lastFieldId = 0;
  private readonly fieldIds: number[] = [];
  /** The value of a boolean field, carried by its field header. */
  private pendingBool: boolean | null = null;

  private type(nibble: number): number {
    const t = FROM_COMPACT[nibble];
    if (t === undefined) throw new ThriftProtocolError(`invalid compact message: unknown type ${nibble} (at byte ${this.pos - 1})`);
    return t;
  }

  /** An unsigned varint of at most 32 bits, as a uint32 reinterpreted as int32 by the caller. */
  private varint32(): number {
    const buf = this.buf;
    let pos = this.pos;
    let n = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (pos >= this.end) this.truncated("a varint");
      const b = buf[pos++];
      n |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) {
        this.pos = pos;
        return n;
      }
    }
    throw new ThriftProtocolError(`invalid compact message: varint longer than 5 bytes (at byte ${this.pos})`);
  }

  readMessageBegin(): MessageHeader {
    const id = this.readByte();
    if (id !== PROTOCOL_ID) {
      throw new ThriftProtocolError(`invalid compact message: protocol id 0x${id.toString(16).padStart(2, "0")} (expected 0x82)`);
    }
    const versionAndType = this.readByte();
    const version = versionAndType & VERSION_MASK;
    if (version !== VERSION) throw new ThriftProtocolError(`invalid compact message: version ${version} (expected ${VERSION})`);
    const type = (versionAndType >> TYPE_SHIFT) & 0x07;
    const seqid = this.varint32() | 0;
    const name = this.readString();
    return { name, type, seqid };
  }

  readStructBegin(): void {
    this.fieldIds.push(this.lastFieldId);
    this.lastFieldId = 0;
  }

  readStructEnd(): void {
    this.lastFieldId = this.fieldIds.pop() ?? 0;
  }

  readFieldBegin(): number {
    const b = this.readByte();
    if (b === 0) return TType.STOP;
    const delta = b >> 4;
    const nibble = b & 0x0f;
    const type = this.type(nibble);
    this.fieldId = delta === 0 ? this.readI16() : this.lastFieldId + delta;
    this.lastFieldId = this.fieldId;
    if (type === TType.BOOL) this.pendingBool = nibble === 1;
    return type;
  }

  readMapBegin(): number {
    const n = this.checkCount(this.varint32(), "map");
    if (n === 0) {
      this.keyType = TType.STOP;
      this.valueType = TType.STOP;
      return 0;
    }
    const kv = this.readByte();
    this.keyType = this.type(kv >> 4);
    this.valueType = this.type(kv & 0x0f);
    return n;
  }

  readListBegin(): number {
    const b = this.readByte();
    this.elementType = this.type(b & 0x0f);
    const small = b >> 4;
    return this.checkCount(small === 15 ? this.varint32() : small, "list");
  }

  readBool(): boolean {
    const pending = this.pendingBool;
    if (pending !== null) {
      this.pendingBool = null;
      return pending;
    }
    return this.readByte() === 1;
  }

  readI16(): number {
    const z = this.varint32();
    return ((z >>> 1) ^ -(z & 1)) << 16 >> 16;
  }

  readI32(): number {
    const z = this.varint32();
    return (z >>> 1) ^ -(z & 1);
  }

  skipI64(): void {
    for (let i = 0; i < 10; i++) if ((this.readByte() & 0x80) === 0) return;
    throw new ThriftProtocolError(`invalid compact message: varint longer than 10 bytes (at byte ${this.pos})`);
  }

  protected readLength(): number {
    const n = this.varint32();
    if (n < 0) throw new ThriftProtocolError(`invalid compact message: length ${n >>> 0} out of range (at byte ${this.pos})`);
    return n;
  }
}

export class CompactWriter extends ThriftWriter {
  readonly protocol = "compact" as const;
  private lastFieldId = 0;
  private readonly fieldIds: number[] = [];

  private varint32(n: number): void {
    this.ensure(5);
    const buf = this.buf;
    let pos = this.pos;
    let z = n >>> 0;
    while (z > 0x7f) {
      buf[pos++] = (z & 0x7f) | 0x80;
      z >>>= 7;
    }
    buf[pos++] = z;
    this.pos = pos;
  }

  private byte(b: number): void {
    this.ensure(1);
    this.buf[this.pos++] = b;
  }

  writeMessageBegin(name: string, type: number, seqid: number): void {
    this.ensure(2);
    this.buf[this.pos] = PROTOCOL_ID;
    this.buf[this.pos + 1] = (VERSION & VERSION_MASK) | ((type << TYPE_SHIFT) & 0xe0);
    this.pos += 2;
    this.varint32(seqid);
    this.writeString(name);
  }

  writeStructBegin(): void {
    this.fieldIds.push(this.lastFieldId);
    this.lastFieldId = 0;
  }

  writeStructEnd(): void {
    this.lastFieldId = this.fieldIds.pop() ?? 0;
  }

  writeFieldBegin(type: number, id: number): void {
    const t = compactType(type);
    const delta = id - this.lastFieldId;
    if (delta > 0 && delta <= 15) {
      this.byte((delta << 4) | t);
    } else {
      this.byte(t);
      this.varint32((id << 1) ^ (id >> 31));
    }
    this.lastFieldId = id;
  }

  writeFieldStop(): void {
    this.byte(0);
  }

  writeMapBegin(keyType: number, valueType: number, size: number): void {
    if (size === 0) return this.byte(0);
    this.varint32(size);
    this.byte((compactType(keyType) << 4) | compactType(valueType));
  }

  writeListBegin(elementType: number, size: number): void {
    const t = compactType(elementType);
    if (size <= 14) return this.byte((size << 4) | t);
    this.byte(0xf0 | t);
    this.varint32(size);
  }

  writeI32(n: number): void {
    this.varint32((n << 1) ^ (n >> 31));
  }

  writeBinary(bytes: Uint8Array): void {
    this.varint32(bytes.length);
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  writeString(s: string): void {
    const len = s.length;
    if (len < 128) {
      // Likely ASCII: a one-byte length, then the characters.
      this.ensure(1 + len);
      const n = writeAscii(this.buf, this.pos + 1, s);
      if (n === len) {
        this.buf[this.pos] = len;
        this.pos += 1 + len;
        return;
      }
    }
    const bytes = Buffer.byteLength(s, "utf8");
    this.varint32(bytes);
    this.ensure(bytes);
    this.buf.write(s, this.pos, "utf8");
    this.pos += bytes;
  }

  stringSize(s: string): number {
    return (s.length < 128 ? 1 : 5) + s.length;
  }
}
