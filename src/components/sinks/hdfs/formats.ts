/**
 * The hdfs sink's file types, as Hadoop reads them: each file writer turns batches of events into
 * bytes that are appended to the file, every batch complete on its own (a SequenceFile batch
 * ends with a sync mark or a whole compressed block, a compressed stream batch is a whole gzip or
 * zlib member), so the file reads to the end after any committed batch, as after Flume's hflush.
 *
 * - DataStream: the serializer's bytes (text, header_and_text, avro_event).
 * - CompressedStream: the same, compressed by codeC, one member per batch.
 * - SequenceFile: LongWritable keys (the timestamp header, else the clock) and BytesWritable
 *   (writeFormat Writable) or Text values, uncompressed or, with codeC, block-compressed (Flume
 *   always uses BLOCK compression).
 */
import { randomBytes } from "node:crypto";
import { deflateSync, gzipSync } from "node:zlib";
import { ConfigurationError } from "../../../core/errors.ts";
import type { Event } from "../../../core/event.ts";
import { bzip2Compress } from "../../../io/codecs/bzip2.ts";
import { hadoopBlocks, lz4Block, snappyBlock } from "../../../io/codecs/hadoop-block.ts";
import { concatBytes } from "../../../io/concat-bytes.ts";
import { ChunkOutput, type EventSerializer, type SerializerFactory } from "../../serializers/serializer.ts";

/** A compression codec of Hadoop's that we can write. */
export interface Codec {
  /** Hadoop's class, written in SequenceFile headers. */
  readonly className: string;
  /** Hadoop's default extension, added to file names without a fileSuffix. */
  readonly extension: string;
  /** bytes as one complete output of Hadoop's codec stream (a gzip member, a bzip2 stream, framed blocks). */
  compress(bytes: Uint8Array): Uint8Array;
}

const PKG = "org.apache.hadoop.io.compress.";

const CODECS: Record<string, Codec> = {
  GzipCodec: { className: `${PKG}GzipCodec`, extension: ".gz", compress: (b) => gzipSync(b) },
  DefaultCodec: { className: `${PKG}DefaultCodec`, extension: ".deflate", compress: (b) => deflateSync(b) },
  DeflateCodec: { className: `${PKG}DeflateCodec`, extension: ".deflate", compress: (b) => deflateSync(b) },
  BZip2Codec: { className: `${PKG}BZip2Codec`, extension: ".bz2", compress: bzip2Compress },
  SnappyCodec: { className: `${PKG}SnappyCodec`, extension: ".snappy", compress: (b) => hadoopBlocks(b, snappyBlock) },
  Lz4Codec: { className: `${PKG}Lz4Codec`, extension: ".lz4", compress: (b) => hadoopBlocks(b, lz4Block) },
};

/** Hadoop's codecs we do not write, and why. */
const UNSUPPORTED: Record<string, string> = {
  ZStandardCodec:
    "Hadoop 3.3's ZStandardCodec reads and writes only through libhadoop built with zstd (native), so files cannot be checked with Hadoop's own reader here",
  LzoCodec: "LZO is not part of Hadoop (the GPL hadoop-lzo library)",
  LzopCodec: "LZO is not part of Hadoop (the GPL hadoop-lzo library)",
};

const CHOICES = "None, gzip (GzipCodec), bzip2 (BZip2Codec), snappy (SnappyCodec), lz4 (Lz4Codec), default (DefaultCodec), deflate (DeflateCodec)";

/** Flume's match of a codeC value to a codec: the class name, the simple name, or it without "Codec", any case. */
function matches(simple: string, name: string): boolean {
  const n = name.toLowerCase();
  return `${PKG}${simple}` === name || simple.toLowerCase() === n || simple.slice(0, -5).toLowerCase() === n;
}

/** Flume's codec lookup (see matches). null for "None". */
export function findCodec(name: string): Codec | null {
  const n = name.trim();
  if (n.toLowerCase() === "none") return null;
  for (const [simple, codec] of Object.entries(CODECS)) if (matches(simple, n)) return codec;
  const known = Object.keys(UNSUPPORTED).find((s) => matches(s, n));
  throw new ConfigurationError(
    "hdfs.codeC",
    known ? `codec ${known} is not supported by Flume TS: ${UNSUPPORTED[known]}; choose from ${CHOICES}` : `unsupported compression codec "${name}"; choose from ${CHOICES}`,
  );
}

/** One open file's encoder. */
export interface FileFormat {
  /** The bytes of one batch (with the file's header before the first); complete on their own. */
  batch(events: readonly Event[], from: number, to: number): Uint8Array;
  /** Bytes to append when the file is closed (usually none). */
  close(): Uint8Array;
}

export type FileType = "SequenceFile" | "DataStream" | "CompressedStream";
export type CompressionType = "BLOCK" | "RECORD";

export interface FormatOptions {
  fileType: FileType;
  codec: Codec | null;
  writeFormat: "Writable" | "Text";
  /** SequenceFile compression with a codec: each block of records (Flume's), or each value. */
  compressionType: CompressionType;
  serializer: SerializerFactory;
  now: () => number;
}

/** A new encoder for a new file. */
export async function openFormat(o: FormatOptions): Promise<FileFormat> {
  if (o.fileType === "SequenceFile") return new SequenceFileFormat(o.writeFormat, o.codec, o.now, o.compressionType);
  const out = new ChunkOutput();
  const serializer = await o.serializer.open(out);
  return new StreamFormat(serializer, out, o.fileType === "CompressedStream" ? o.codec : null);
}

class StreamFormat implements FileFormat {
  private created = false;

  constructor(
    private readonly serializer: EventSerializer,
    private readonly out: ChunkOutput,
    private readonly codec: Codec | null,
  ) {}

  batch(events: readonly Event[], from: number, to: number): Uint8Array {
    if (!this.created) {
      this.created = true;
      this.serializer.afterCreate();
    }
    for (let i = from; i < to; i++) this.serializer.write(events[i]);
    this.serializer.flush();
    const bytes = this.out.take();
    return this.codec ? this.codec.compress(bytes) : bytes;
  }

  close(): Uint8Array {
    this.serializer.beforeClose();
    const bytes = this.out.take();
    if (bytes.length === 0) return bytes;
    return this.codec ? this.codec.compress(bytes) : bytes;
  }
}

/** Hadoop's WritableUtils.writeVLong. */
export function writeVLong(out: number[], value: number): void {
  let i = BigInt(value);
  if (i >= -112n && i <= 127n) {
    out.push(Number(BigInt.asUintN(8, i)));
    return;
  }
  let len = -112;
  if (i < 0n) {
    i = ~i;
    len = -120;
  }
  for (let tmp = i; tmp !== 0n; tmp >>= 8n) len--;
  out.push(len & 0xff);
  const n = len < -120 ? -(len + 120) : -(len + 112);
  for (let idx = n; idx !== 0; idx--) out.push(Number((i >> BigInt((idx - 1) * 8)) & 0xffn));
}

function vint(value: number): Uint8Array {
  if (value >= -112 && value <= 127) return Uint8Array.of(value & 0xff);
  const out: number[] = [];
  writeVLong(out, value);
  return Uint8Array.from(out);
}

const encoder = new TextEncoder();

/** Hadoop's Text.writeString: a vint length, then UTF-8. */
function text(s: string): Uint8Array {
  const b = encoder.encode(s);
  return concatBytes([vint(b.length), b]);
}


const SYNC_ESCAPE = -1;
/** SequenceFile.SYNC_INTERVAL: a sync mark at least every 2000 bytes of records. */
const SYNC_INTERVAL = 100 * (4 + 16);
/** io.seqfile.compress.blocksize's default: a compressed block at most this big before it is written. */
const COMPRESSION_BLOCK_SIZE = 1_000_000;

/**
 * Hadoop's SequenceFile (version 6) writer: header, then records (or compressed blocks) with
 * sync marks. Every batch ends with a sync mark or a complete block, as Flume's
 * HDFSSequenceFile.sync() does before hflush.
 */
export class SequenceFileFormat implements FileFormat {
  private readonly sync = randomBytes(16);
  /** Bytes written so far (the file's length). */
  private pos = 0;
  private lastSyncPos = 0;
  private header: Uint8Array | null;

  constructor(
    readonly writeFormat: "Writable" | "Text",
    readonly codec: Codec | null,
    private readonly now: () => number,
    readonly compressionType: CompressionType = "BLOCK",
  ) {
    const valueClass = writeFormat === "Text" ? "org.apache.hadoop.io.Text" : "org.apache.hadoop.io.BytesWritable";
    this.header = concatBytes([
      Uint8Array.of(0x53, 0x45, 0x51, 6),
      text("org.apache.hadoop.io.LongWritable"),
      text(valueClass),
      Uint8Array.of(codec ? 1 : 0, codec && compressionType === "BLOCK" ? 1 : 0),
      codec ? text(codec.className) : new Uint8Array(0),
      new Uint8Array(4), // no metadata
      this.sync,
    ]);
  }

  /** The key: the timestamp header, else the clock (Flume's HDFSWritableSerializer). */
  private key(e: Event, view: DataView, at: number): void {
    const h = e.headers.timestamp;
    let ts = h === undefined ? Number.NaN : Number(h);
    if (!Number.isSafeInteger(ts)) ts = this.now();
    view.setBigInt64(at, BigInt(ts));
  }

  /** The serialized value: BytesWritable (int length, bytes) or Text (vint length, bytes). */
  private valueLength(body: Uint8Array): number {
    return this.writeFormat === "Text" ? vintSize(body.length) + body.length : 4 + body.length;
  }

  private writeValue(buf: Uint8Array, view: DataView, at: number, body: Uint8Array): number {
    if (this.writeFormat === "Text") {
      const len = vint(body.length);
      buf.set(len, at);
      at += len.length;
    } else {
      view.setInt32(at, body.length);
      at += 4;
    }
    buf.set(body, at);
    return at + body.length;
  }

  private syncMark(parts: Uint8Array[]): void {
    if (this.lastSyncPos === this.pos) return;
    const m = new Uint8Array(20);
    new DataView(m.buffer).setInt32(0, SYNC_ESCAPE);
    m.set(this.sync, 4);
    parts.push(m);
    this.pos += 20;
    this.lastSyncPos = this.pos;
  }

  batch(events: readonly Event[], from: number, to: number): Uint8Array {
    const parts: Uint8Array[] = [];
    if (this.header) {
      parts.push(this.header);
      this.pos += this.header.length;
      this.header = null;
    }
    if (this.codec && this.compressionType === "BLOCK") this.blocks(events, from, to, parts);
    else this.records(events, from, to, parts);
    return concatBytes(parts);
  }

  /** Records with their values as they are, or each compressed on its own (RECORD compression). */
  private records(events: readonly Event[], from: number, to: number, parts: Uint8Array[]): void {
    const compressed = this.codec ? this.compressedValues(events, from, to) : null;
    const vlen = (i: number) => (compressed ? compressed[i - from].length : this.valueLength(events[i].body));
    let size = 0;
    for (let i = from; i < to; i++) size += 16 + vlen(i);
    let buf = new Uint8Array(size);
    let view = new DataView(buf.buffer);
    let at = 0;
    for (let i = from; i < to; i++) {
      if (this.pos + at >= this.lastSyncPos + SYNC_INTERVAL) {
        parts.push(buf.subarray(0, at));
        this.pos += at;
        this.syncMark(parts);
        buf = buf.subarray(at);
        view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
        at = 0;
      }
      view.setInt32(at, 8 + vlen(i));
      view.setInt32(at + 4, 8);
      this.key(events[i], view, at + 8);
      if (compressed) {
        buf.set(compressed[i - from], at + 16);
        at += 16 + compressed[i - from].length;
      } else {
        at = this.writeValue(buf, view, at + 16, events[i].body);
      }
    }
    parts.push(buf.subarray(0, at));
    this.pos += at;
    // Flume's sync() per batch: a mark after the batch.
    this.syncMark(parts);
  }

  private compressedValues(events: readonly Event[], from: number, to: number): Uint8Array[] {
    const codec = this.codec as Codec;
    const out: Uint8Array[] = [];
    for (let i = from; i < to; i++) {
      const body = events[i].body;
      const value = new Uint8Array(this.valueLength(body));
      this.writeValue(value, new DataView(value.buffer), 0, body);
      out.push(codec.compress(value));
    }
    return out;
  }

  /** Block compression: sync mark, record count, then compressed key lengths, keys, value lengths, values. */
  private blocks(events: readonly Event[], from: number, to: number, parts: Uint8Array[]): void {
    const codec = this.codec as Codec;
    let start = from;
    while (start < to) {
      let end = start;
      let bytes = 0;
      while (end < to && bytes < COMPRESSION_BLOCK_SIZE) bytes += 8 + this.valueLength(events[end++].body);
      const n = end - start;
      const keyLens: number[] = [];
      const valLens: number[] = [];
      const keys = new Uint8Array(8 * n);
      const keyView = new DataView(keys.buffer);
      let vsize = 0;
      for (let i = start; i < end; i++) vsize += this.valueLength(events[i].body);
      const vals = new Uint8Array(vsize);
      const valView = new DataView(vals.buffer);
      let at = 0;
      for (let i = start; i < end; i++) {
        this.key(events[i], keyView, 8 * (i - start));
        writeVLong(keyLens, 8);
        const vlen = this.valueLength(events[i].body);
        writeVLong(valLens, vlen);
        at = this.writeValue(vals, valView, at, events[i].body);
      }
      // A block always starts with a sync mark: the reader checks it.
      this.lastSyncPos = -1;
      this.syncMark(parts);
      const block: Uint8Array[] = [vint(n)];
      for (const raw of [Uint8Array.from(keyLens), keys, Uint8Array.from(valLens), vals]) {
        const c = codec.compress(raw);
        block.push(vint(c.length), c);
      }
      const b = concatBytes(block);
      parts.push(b);
      this.pos += b.length;
      start = end;
    }
  }

  close(): Uint8Array {
    return new Uint8Array(0);
  }
}

function vintSize(v: number): number {
  if (v >= -112 && v <= 127) return 1;
  let n = 1;
  for (let tmp = v < 0 ? ~v : v; tmp !== 0; tmp = Math.floor(tmp / 256)) n++;
  return n;
}
