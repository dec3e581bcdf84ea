import { isUtf8 } from "node:buffer";
import type { FileHandle } from "node:fs/promises";
import { bodyEvent, type Event } from "../../../core/event.ts";
import { LineSplitter } from "../../../io/line-splitter.ts";

export type DecodeErrorPolicy = "FAIL" | "REPLACE" | "IGNORE";

/** Bytes read per syscall. */
const CHUNK = 256 * 1024;

/** Charsets whose newline is the byte 0x0A, so lines can be cut before decoding. */
const SINGLE_BYTE_OR_UTF8 = /^(utf-?8|us-ascii|ascii|iso-8859-\d+|latin1|windows-125\d|cp125\d)$/i;

export function isSupportedInputCharset(name: string): boolean {
  if (!SINGLE_BYTE_OR_UTF8.test(name.trim())) return false;
  try {
    new TextDecoder(normalizeLabel(name) as ConstructorParameters<typeof TextDecoder>[0]);
    return true;
  } catch {
    return false;
  }
}

export function isSupportedOutputCharset(name: string): boolean {
  return /^(utf-?8|us-ascii|ascii|iso-8859-1|latin1)$/i.test(name.trim());
}

function normalizeLabel(name: string): string {
  const n = name.trim().toLowerCase();
  return n === "ascii" ? "us-ascii" : n;
}

/** A decoding failure: the file and byte offset, for the error that sets the file aside. */
export class DecodeError extends Error {}

/**
 * Turns a line's bytes (in inputCharset) into the event body (in outputCharset), applying
 * decodeErrorPolicy. UTF-8 to UTF-8 passes valid bytes through untouched.
 */
export class LineCodec {
  private readonly input: string;
  private readonly output: string;
  private readonly fatal: TextDecoder | null;
  private readonly lenient: TextDecoder | null;
  private readonly encoder = new TextEncoder();

  constructor(
    inputCharset: string,
    outputCharset: string,
    private readonly policy: DecodeErrorPolicy,
  ) {
    this.input = normalizeLabel(inputCharset).replace(/^utf8$/, "utf-8");
    this.output = normalizeLabel(outputCharset).replace(/^utf8$/, "utf-8");
    const isLatin1 = this.input === "iso-8859-1" || this.input === "latin1";
    const label = this.input as ConstructorParameters<typeof TextDecoder>[0];
    this.fatal = isLatin1 ? null : new TextDecoder(label, { fatal: true });
    this.lenient = isLatin1 ? null : new TextDecoder(label);
  }

  /** Returns the body, or throws DecodeError under policy FAIL. */
  body(line: Uint8Array): Uint8Array {
    if (this.input === "utf-8" && this.output === "utf-8" && isUtf8(line)) return line;
    const text = this.decode(line);
    return this.encode(text);
  }

  private decode(line: Uint8Array): string {
    if (this.fatal === null) return Buffer.from(line.buffer, line.byteOffset, line.byteLength).toString("latin1");
    try {
      return this.fatal.decode(line);
    } catch {
      if (this.policy === "FAIL") throw new DecodeError(`input is not valid ${this.input}`);
      const text = (this.lenient as TextDecoder).decode(line);
      return this.policy === "IGNORE" ? text.replace(/\uFFFD/g, "") : text;
    }
  }

  private encode(text: string): Uint8Array {
    if (this.output === "utf-8") return this.encoder.encode(text);
    // ISO-8859-1 / US-ASCII: one byte per character, '?' for what does not fit (as Java).
    const limit = this.output === "us-ascii" ? 0x7f : 0xff;
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      out[i] = c <= limit ? c : 0x3f;
    }
    return out;
  }
}

/** What a deserializer cut from the file: events and the file offset after them. */
export interface Cut {
  events: Event[];
  endPos: number;
  /** Set when reading stopped at bytes that could not be decoded (policy FAIL). */
  error?: { offset: number; message: string };
  /** True when the end of the file was reached and everything before it was returned. */
  atEnd: boolean;
}

export interface Deserializer {
  /** Reads up to max events starting at the position after the last call (or `start`). */
  read(max: number): Promise<Cut>;
}

/** The file a deserializer reads (from pos up to size, its length at pickup) and the source's settings that concern it. */
export interface DeserializerInput {
  handle: FileHandle;
  pos: number;
  size: number;
  path: string;
  inputCharset: string;
  decodeErrorPolicy: DecodeErrorPolicy;
  /** Logs a warning under the source's name. */
  warn(message: string): void;
}

/**
 * A configured deserializer type (Flume's EventDeserializer.Builder): a component of kind
 * "deserializer" in the registry (the built-in LINE and BLOB, and custom modules), named by the
 * spooldir source's `deserializer`, its settings under `deserializer.`.
 */
export interface DeserializerFactory {
  open(input: DeserializerInput): Deserializer;
}

/**
 * Flume's LINE deserializer: one event per line ending in '\n' (a '\r' stays in the body, as
 * Flume), at most maxLineLength bytes per event (longer lines continue in the next event), the
 * last line without a newline is an event too. Reads the file only up to `size`.
 */
export class LineDeserializer implements Deserializer {
  private readonly splitter: LineSplitter;
  private readOffset: number;

  constructor(
    private readonly handle: FileHandle,
    private readonly start: number,
    private readonly size: number,
    maxLineLength: number,
    private readonly codec: LineCodec,
    onOverlong: (length: number) => void,
  ) {
    this.readOffset = start;
    this.splitter = new LineSplitter({ maxLineLength, overlong: "split", stripCR: false, onOverlong });
  }

  async read(max: number): Promise<Cut> {
    const events: Event[] = [];
    let atEnd = false;
    while (events.length < max) {
      const before = this.splitter.offset;
      let line = this.splitter.next();
      if (line === null) {
        if (this.readOffset < this.size) {
          const want = Math.min(CHUNK, this.size - this.readOffset);
          const buf = new Uint8Array(want);
          const { bytesRead } = await this.handle.read(buf, 0, want, this.readOffset);
          if (bytesRead === 0) throw new Error(`file is shorter than when it was picked up (${this.size} bytes): it was truncated while being read`);
          this.readOffset += bytesRead;
          this.splitter.feed(buf.subarray(0, bytesRead));
          continue;
        }
        line = this.splitter.flush();
        if (line === null) {
          atEnd = true;
          break;
        }
      }
      let body: Uint8Array;
      try {
        body = this.codec.body(line);
      } catch (err) {
        if (!(err instanceof DecodeError)) throw err;
        // Hand out the good lines first; the caller sets the file aside after committing them.
        return { events, endPos: this.start + before, error: { offset: this.start + before, message: err.message }, atEnd: false };
      }
      events.push(bodyEvent(body));
    }
    return { events, endPos: this.start + this.splitter.offset, atEnd: atEnd || (this.readOffset >= this.size && this.splitter.pending === 0) };
  }
}

/** Flume's BLOB deserializer: the whole file as one event, in pieces of at most maxBlobLength bytes. */
export class BlobDeserializer implements Deserializer {
  private offset: number;

  constructor(
    private readonly handle: FileHandle,
    start: number,
    private readonly size: number,
    private readonly maxBlobLength: number,
    private readonly onTruncate: (length: number) => void,
  ) {
    this.offset = start;
  }

  async read(max: number): Promise<Cut> {
    const events: Event[] = [];
    // One event per batch (a file is one event unless it is split): a batch of full pieces
    // would hold up to batchSize x maxBlobLength bytes (10 GB with the defaults) at once.
    while (events.length < Math.min(max, 1) && this.offset < this.size) {
      const want = Math.min(this.maxBlobLength, this.size - this.offset);
      const buf = new Uint8Array(want);
      let got = 0;
      while (got < want) {
        const { bytesRead } = await this.handle.read(buf, got, want - got, this.offset + got);
        if (bytesRead === 0) throw new Error(`file is shorter than when it was picked up (${this.size} bytes): it was truncated while being read`);
        got += bytesRead;
      }
      if (this.size - this.offset > this.maxBlobLength) this.onTruncate(this.size);
      this.offset += want;
      events.push(bodyEvent(buf));
    }
    return { events, endPos: this.offset, atEnd: this.offset >= this.size };
  }
}
