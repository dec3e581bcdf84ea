/**
 * Splits a stream of byte chunks into lines without a syscall or a copy per line: a line
 * inside a chunk is a view (subarray) of that chunk; only a line that straddles two chunks is
 * copied. Callers feed a chunk, pull lines with next() until it returns null, then feed the
 * next chunk. Used by TAILDIR, spooldir (LINE), exec and netcat-style sources.
 */

import { concatBytes } from "./concat-bytes.ts";

/** What happens to a line longer than maxLineLength bytes. */
export type OverlongPolicy =
  /** Emit it in pieces of maxLineLength bytes (nothing lost; Flume's LineDeserializer). */
  | "split"
  /** Emit the first maxLineLength bytes, drop the rest up to the newline. */
  | "truncate";

export interface LineSplitterOptions {
  /** Longest line in bytes, newline excluded; 0 or less means unbounded. */
  maxLineLength?: number;
  overlong?: OverlongPolicy;
  /** Drop a carriage return before the newline (CRLF input). */
  stripCR?: boolean;
  /** Cut overlong lines at a UTF-8 character boundary instead of inside a character. */
  utf8?: boolean;
  /** Called once per overlong line, with the bytes seen so far; for a warning. */
  onOverlong?: (length: number) => void;
}

const NL = 10;
const CR = 13;
const EMPTY = new Uint8Array(0);

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** Largest cut <= max that does not split a UTF-8 sequence (falls back to max). */
function utf8Cut(bytes: Uint8Array, max: number): number {
  let cut = max;
  // Back off over continuation bytes (10xxxxxx) so the piece ends on a character boundary.
  while (cut > 0 && cut > max - 4 && (bytes[cut] & 0xc0) === 0x80) cut--;
  return cut > 0 ? cut : max;
}

export class LineSplitter {
  private readonly max: number;
  private readonly policy: OverlongPolicy;
  private readonly stripCR: boolean;
  private readonly utf8: boolean;
  private readonly onOverlong?: (length: number) => void;
  private chunk: Uint8Array = EMPTY;
  private cursor = 0;
  /**
   * Bytes of an unfinished line carried over from earlier chunks, as a list joined only when
   * the line (or a piece of it) is cut: joining on every feed would copy a long line once per
   * chunk (quadratic; 32 MB/s for a 16 MB line read in 64 KB pipe chunks).
   */
  private carryParts: Uint8Array[] = [];
  private carryLen = 0;
  /** True while dropping the rest of a truncated line up to its newline. */
  private discarding = false;
  /** Bytes consumed through the end of the last line returned (newline included). */
  private consumedBytes = 0;
  /** True when the last line returned ended with a newline (not an overlong piece). */
  lastComplete = true;

  constructor(options: LineSplitterOptions = {}) {
    this.max = options.maxLineLength && options.maxLineLength > 0 ? options.maxLineLength : 0;
    this.policy = options.overlong ?? "split";
    this.stripCR = options.stripCR ?? false;
    this.utf8 = options.utf8 ?? true;
    this.onOverlong = options.onOverlong;
  }

  /** Bytes consumed through the end of the last line returned, since construction or reset(). */
  get offset(): number {
    return this.consumedBytes;
  }

  /** Bytes held (carried and unread) that do not form a complete line yet. */
  get pending(): number {
    return this.carryLen + (this.chunk.length - this.cursor) + (this.rest?.length ?? 0);
  }

  /** Starts over at `offset` (for example after reopening a file at a position). */
  reset(offset = 0): void {
    this.chunk = EMPTY;
    this.spanBytes = EMPTY;
    this.cursor = 0;
    this.takeCarry();
    this.discarding = false;
    this.rest = null;
    this.restNewline = 0;
    this.consumedBytes = offset;
    this.lastComplete = true;
  }

  /** Adds the next chunk. Lines still unread in the previous chunk are carried over. */
  feed(chunk: Uint8Array): void {
    if (this.cursor < this.chunk.length) {
      const tail = this.chunk.slice(this.cursor);
      this.carryParts.push(tail);
      this.carryLen += tail.length;
    }
    this.chunk = chunk;
    this.cursor = 0;
  }

  /**
   * The bytes of the line nextSpan() found: `spanBytes[spanStart..spanEnd)`. Usually a range of
   * the chunk being read, so a caller that keeps the line need not make a view of it (making a
   * subarray costs more than finding the newline: 3.7 against 4.6-5.9 M lines/s for TAILDIR).
   */
  spanBytes: Uint8Array = EMPTY;
  spanStart = 0;
  spanEnd = 0;

  /** The next complete line (without its newline), or null when more input is needed. */
  next(): Uint8Array | null {
    if (!this.nextSpan()) return null;
    const bytes = this.spanBytes;
    return this.spanStart === 0 && this.spanEnd === bytes.length ? bytes : bytes.subarray(this.spanStart, this.spanEnd);
  }

  /**
   * Cuts complete lines that lie inside the current chunk, as nextSpan() would, adding
   * make(chunk, start, end) of each to `out`: up to maxLines lines, and no line once maxBytes
   * bytes of lines were cut. Returns how many lines were cut, and leaves their bytes in
   * cutBytes; the last one is left in spanBytes, spanStart and spanEnd, and spanOffset is where
   * it starts. Stops, for nextSpan() to go on, at the end of the chunk and where nextSpan() has
   * more to do: a line carried over from an earlier chunk, the rest of a cut line, a line over
   * maxLineLength. One call per batch instead of one per line: TAILDIR's per-line cost.
   */
  cutInChunk<T>(out: T[], maxLines: number, maxBytes: number, make: (bytes: Uint8Array, start: number, end: number) => T): number {
    this.cutBytes = 0;
    if (this.rest !== null || this.discarding || this.carryLen > 0) return 0;
    const chunk = this.chunk;
    const max = this.max;
    const stripCR = this.stripCR;
    let cursor = this.cursor;
    let consumed = this.consumedBytes;
    let bytes = 0;
    let lines = 0;
    let start = 0;
    let end = 0;
    let lineOffset = 0;
    while (lines < maxLines && bytes < maxBytes && cursor < chunk.length) {
      const nl = chunk.indexOf(NL, cursor);
      if (nl < 0) break;
      let to = nl;
      if (stripCR && to > cursor && chunk[to - 1] === CR) to--;
      if (max > 0 && to - cursor > max) break;
      out.push(make(chunk, cursor, to));
      start = cursor;
      end = to;
      lineOffset = consumed;
      bytes += to - cursor;
      consumed += nl + 1 - cursor;
      cursor = nl + 1;
      lines++;
    }
    this.cutBytes = bytes;
    if (lines === 0) return 0;
    this.cursor = cursor;
    this.consumedBytes = consumed;
    this.lastComplete = true;
    this.spanBytes = chunk;
    this.spanStart = start;
    this.spanEnd = end;
    this.spanOffset = lineOffset;
    return lines;
  }

  /** Where the line cutInChunk() cut last starts, as an offset (see offset). */
  spanOffset = 0;
  /** The bytes of the lines the last cutInChunk() cut, newlines excluded. */
  cutBytes = 0;

  /** Finds the next complete line as next() does and leaves it in spanBytes, spanStart and spanEnd; false when more input is needed. */
  nextSpan(): boolean {
    if (this.rest !== null) return this.spanOf(this.nextPiece());
    for (;;) {
      const chunk = this.chunk;
      const start = this.cursor;
      const nl = start < chunk.length ? chunk.indexOf(NL, start) : -1;
      if (this.discarding) {
        if (nl < 0) {
          this.consumedBytes += chunk.length - start;
          this.cursor = chunk.length;
          return false;
        }
        this.consumedBytes += nl + 1 - start;
        this.cursor = nl + 1;
        this.discarding = false;
        this.lastComplete = true;
        continue;
      }
      if (nl < 0) {
        // No newline yet: the line is unfinished. Bound what we hold.
        if (this.max > 0 && this.carryLen + (chunk.length - start) > this.max) return this.spanOf(this.unfinishedPiece());
        return false;
      }
      const consumed = this.carryLen + (nl + 1 - start);
      let bytes = chunk;
      let from = start;
      let to = nl;
      if (this.carryLen > 0) {
        bytes = concat(this.takeCarry(), chunk.subarray(start, nl));
        from = 0;
        to = bytes.length;
      }
      this.cursor = nl + 1;
      if (this.stripCR && to > from && bytes[to - 1] === CR) to--;
      if (this.max > 0 && to - from > this.max) {
        const line = bytes.subarray(from, to);
        // Warned already when its first part was cut while unfinished.
        if (this.lastComplete) this.onOverlong?.(line.length);
        if (this.policy === "truncate") {
          this.consumedBytes += consumed;
          this.lastComplete = true;
          return this.spanOf(line.subarray(0, this.cutAt(line)));
        }
        this.rest = line;
        this.restNewline = consumed - line.length;
        return this.spanOf(this.nextPiece());
      }
      this.consumedBytes += consumed;
      this.lastComplete = true;
      this.spanBytes = bytes;
      this.spanStart = from;
      this.spanEnd = to;
      return true;
    }
  }

  private spanOf(line: Uint8Array): true {
    this.spanBytes = line;
    this.spanStart = 0;
    this.spanEnd = line.length;
    return true;
  }

  /** The carried bytes as one buffer (one copy of each); the carry is empty afterwards. */
  private takeCarry(): Uint8Array {
    const parts = this.carryParts;
    const len = this.carryLen;
    this.carryParts = [];
    this.carryLen = 0;
    if (parts.length === 0) return EMPTY;
    return concatBytes(parts, len);
  }

  /** The remainder of an overlong complete line being emitted in pieces. */
  private rest: Uint8Array | null = null;
  private restNewline = 0;

  private cutAt(bytes: Uint8Array): number {
    return this.utf8 ? utf8Cut(bytes, this.max) : this.max;
  }

  private nextPiece(): Uint8Array {
    const rest = this.rest as Uint8Array;
    if (rest.length <= this.max) {
      this.rest = null;
      this.consumedBytes += rest.length + this.restNewline;
      this.lastComplete = true;
      return rest;
    }
    const cut = this.cutAt(rest);
    this.rest = rest.subarray(cut);
    this.consumedBytes += cut;
    this.lastComplete = false;
    return rest.subarray(0, cut);
  }

  /** An unfinished line grew past maxLineLength: emit a piece now so memory stays bounded. */
  private unfinishedPiece(): Uint8Array {
    const bytes = concat(this.takeCarry(), this.chunk.subarray(this.cursor));
    this.cursor = this.chunk.length;
    const cut = this.cutAt(bytes);
    if (this.policy === "split") {
      // Once per line: its first piece (later pieces follow with lastComplete false).
      if (this.lastComplete) this.onOverlong?.(bytes.length);
      this.lastComplete = false;
      // Keep only the remainder; copy it so the big chunk can be freed.
      const remainder = bytes.slice(cut);
      this.carryParts.push(remainder);
      this.carryLen = remainder.length;
      this.consumedBytes += cut;
      return bytes.subarray(0, cut);
    }
    this.onOverlong?.(bytes.length);
    this.lastComplete = false;
    this.consumedBytes += bytes.length;
    this.discarding = true;
    return bytes.slice(0, cut);
  }

  /**
   * Returns the unfinished last line, if any, and consumes it: at the end of an input that
   * will not grow (end of a file, a closed pipe).
   */
  flush(): Uint8Array | null {
    let rest = this.takeCarry();
    if (this.cursor < this.chunk.length) rest = concat(rest, this.chunk.subarray(this.cursor));
    this.chunk = EMPTY;
    this.spanBytes = EMPTY;
    this.cursor = 0;
    const wasDiscarding = this.discarding;
    this.discarding = false;
    this.consumedBytes += rest.length;
    if (wasDiscarding || rest.length === 0) return null;
    this.lastComplete = false;
    return rest;
  }
}
