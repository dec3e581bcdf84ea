import { internedUtf8 } from "./interned-keys.ts";

type Utf8Sliceable = Buffer & { utf8Slice(start: number, end: number): string };

/**
 * A position in one received message, and the length-prefixed runs read from it with a bounds
 * check: as views (no copy), strings, or interned header names. The Avro and Thrift readers
 * extend it with their own encodings of numbers and lengths, and their own error.
 */
export abstract class FrameCursor {
  pos: number;

  constructor(
    readonly buf: Buffer,
    pos = 0,
    readonly end = buf.length,
  ) {
    this.pos = pos;
  }

  remaining(): number {
    return this.end - this.pos;
  }

  /** Throws the protocol's error: `what` runs past the end of the message. */
  protected abstract truncated(what: string): never;

  // Each reader below checks its bounds itself rather than through a shared helper: one call
  // level more on the header path (map -> key -> keyOf -> helper) is past what JSC inlines, and
  // decoding Avro events with two headers took about a fifth longer that way.

  /** The next len bytes as a view of the message. */
  protected viewOf(len: number, kind: string): Buffer {
    const start = this.pos;
    if (len > this.end - start) this.truncated(`a ${len}-byte ${kind}`);
    this.pos = start + len;
    return this.buf.subarray(start, start + len);
  }

  /** The next len bytes as UTF-8 (invalid bytes become U+FFFD, as in Java). */
  protected utf8Of(len: number): string {
    const start = this.pos;
    if (len > this.end - start) this.truncated(`a ${len}-byte string`);
    this.pos = start + len;
    // utf8Slice skips toString's encoding dispatch (both Bun and Node have it).
    return (this.buf as Utf8Sliceable).utf8Slice(start, start + len);
  }

  /** The next len bytes as a string that recurs (a header name): interned, see interned-keys.ts. */
  protected keyOf(len: number): string {
    const start = this.pos;
    if (len > this.end - start) this.truncated(`a ${len}-byte string`);
    this.pos = start + len;
    return internedUtf8(this.buf, start, len);
  }
}
