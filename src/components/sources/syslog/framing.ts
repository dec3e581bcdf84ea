/**
 * Splits a syslog TCP stream into messages. Both RFC 6587 framings are accepted on the same
 * connection, decided per message: octet counting ("LEN SP MSG", what `logger --octet-count`
 * and rsyslog's omfwd send) when the message starts with a digit followed by digits and a space,
 * otherwise a newline trailer (what Flume's syslogtcp reads). Empty lines are skipped.
 *
 * No message buffers more than eventSize bytes: a longer one is cut into a first piece of
 * eventSize bytes (Flume's Incomplete) and pieces of what follows (Flume's Invalid), so
 * nothing is dropped and memory stays bounded.
 */

import { concatBytes } from "../../../io/concat-bytes.ts";

export type FramePart = "whole" | "first" | "rest";

export interface Frame {
  bytes: Uint8Array;
  part: FramePart;
}

/**
 * The frames of a read, as ranges: frame i is bytes[i] from starts[i] to ends[i]. A frame that
 * lies in one read is that read and its offsets (no view or object per message); one that
 * spans reads is a copy of its own. Reused from read to read (clear()).
 */
export class FrameList {
  readonly bytes: Uint8Array[] = [];
  readonly starts: number[] = [];
  readonly ends: number[] = [];
  readonly parts: FramePart[] = [];
  length = 0;

  add(bytes: Uint8Array, start: number, end: number, part: FramePart): void {
    const i = this.length++;
    this.bytes[i] = bytes;
    this.starts[i] = start;
    this.ends[i] = end;
    this.parts[i] = part;
  }

  /** Forgets the frames (and the reads they point into). */
  clear(): void {
    this.bytes.length = 0;
    this.starts.length = 0;
    this.ends.length = 0;
    this.parts.length = 0;
    this.length = 0;
  }
}

/** Where a decoder puts frames: a FrameList, or an array of Frame objects. */
type FrameOut = FrameList | Frame[];

function emit(out: FrameOut, bytes: Uint8Array, start: number, end: number, part: FramePart): void {
  if (out instanceof FrameList) out.add(bytes, start, end, part);
  else out.push({ bytes: start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end), part });
}

const NL = 10;
const CR = 13;
const SP = 32;
const EMPTY = new Uint8Array(0);
/** Longest octet count we read (RFC 6587 allows any; ten digits is beyond any sane frame). */
const MAX_COUNT_DIGITS = 10;

/** A copy that owns its bytes (Buffer's slice() would only make a view). */
function copy(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length);
  out.set(bytes);
  return out;
}


export class SyslogFrameDecoder {
  /** Pieces of the message being read (views of chunks, or copies once the chunk is done). */
  private parts: Uint8Array[] = [];
  private length = 0;
  /** True once the current message has emitted its first eventSize piece. */
  private split = false;
  /** Bytes still to read of an octet-counted message; -1 when reading to a newline. */
  private octetLeft = -1;
  /** Digits of an octet count seen at the end of the previous chunk. */
  private pendingDigits: Uint8Array = EMPTY;
  /** Messages longer than eventSize seen so far (for the source's warning). */
  overlong = 0;

  constructor(private readonly maxSize: number) {}

  /** True while a message is partly read (for the warning when a peer disconnects). */
  get midMessage(): boolean {
    return this.length > 0 || this.octetLeft > 0 || this.pendingDigits.length > 0;
  }

  /** Appends the frames completed by this chunk to `out`. The chunk must not be reused by the caller. */
  push(chunk: Uint8Array, out: FrameOut): void {
    let data = chunk;
    if (this.pendingDigits.length > 0) {
      const joined = new Uint8Array(this.pendingDigits.length + chunk.length);
      joined.set(this.pendingDigits, 0);
      joined.set(chunk, this.pendingDigits.length);
      data = joined;
      this.pendingDigits = EMPTY;
    }
    let pos = 0;
    const end = data.length;
    while (pos < end) {
      if (this.octetLeft > 0) {
        const n = Math.min(this.octetLeft, end - pos);
        // The whole message in this read: a range of it, no copy.
        if (n === this.octetLeft && this.length === 0 && !this.split && n <= this.maxSize) {
          emit(out, data, pos, pos + n, "whole");
          pos += n;
          this.octetLeft = -1;
          continue;
        }
        this.add(data.subarray(pos, pos + n), out);
        pos += n;
        this.octetLeft -= n;
        if (this.octetLeft === 0) {
          this.octetLeft = -1;
          this.finish(out);
        }
        continue;
      }
      if (this.length === 0 && !this.split && this.octetLeft < 0) {
        // At a message start: skip blank lines, then choose the framing.
        const b = data[pos];
        if (b === NL || b === CR) {
          pos++;
          continue;
        }
        if (b >= 0x31 && b <= 0x39) {
          let i = pos + 1;
          while (i < end && i - pos < MAX_COUNT_DIGITS && data[i] >= 0x30 && data[i] <= 0x39) i++;
          if (i === end && i - pos < MAX_COUNT_DIGITS) {
            // Cannot tell yet: keep the digits for the next chunk.
            this.pendingDigits = copy(data.subarray(pos));
            return;
          }
          if (data[i] === SP) {
            let count = 0;
            for (let d = pos; d < i; d++) count = count * 10 + data[d] - 0x30;
            this.octetLeft = count;
            pos = i + 1;
            continue;
          }
        }
      }
      const nl = data.indexOf(NL, pos);
      if (nl < 0) {
        this.add(data.subarray(pos, end), out);
        pos = end;
      } else {
        let stop = nl;
        if (stop > pos && data[stop - 1] === CR) stop--;
        if (this.length === 0 && !this.split && stop - pos <= this.maxSize) {
          // The whole line in this read: a range of it, no copy.
          if (stop > pos) emit(out, data, pos, stop, "whole");
        } else {
          this.add(data.subarray(pos, stop), out);
          this.finish(out);
        }
        pos = nl + 1;
      }
    }
    // What is left refers into this chunk; copy so the caller's buffer can be reused or freed.
    if (this.parts.length === 1) this.parts = [copy(this.parts[0])];
    else if (this.parts.length > 1) this.parts = [concatBytes(this.parts, this.length)];
  }

  /** At end of stream: the unfinished message, if any (Incomplete when an octet frame was cut short). */
  flush(out: FrameOut): { truncated: boolean } {
    const truncated = this.octetLeft > 0;
    if (this.pendingDigits.length > 0) {
      this.add(this.pendingDigits, out);
      this.pendingDigits = EMPTY;
    }
    if (this.length > 0) {
      const bytes = concatBytes(this.parts, this.length);
      emit(out, bytes, 0, bytes.length, this.split ? "rest" : truncated ? "first" : "whole");
    }
    this.reset();
    return { truncated };
  }

  private reset(): void {
    this.parts = [];
    this.length = 0;
    this.split = false;
    this.octetLeft = -1;
  }

  private add(bytes: Uint8Array, out: FrameOut): void {
    while (bytes.length > 0) {
      const room = this.maxSize - this.length;
      if (bytes.length <= room) {
        this.parts.push(bytes);
        this.length += bytes.length;
        return;
      }
      // The message outgrows eventSize: emit a full piece now.
      this.parts.push(bytes.subarray(0, room));
      const piece = concatBytes(this.parts, this.maxSize);
      emit(out, piece, 0, piece.length, this.split ? "rest" : "first");
      if (!this.split) this.overlong++;
      this.split = true;
      this.parts = [];
      this.length = 0;
      bytes = bytes.subarray(room);
    }
  }

  private finish(out: FrameOut): void {
    if (this.length > 0) {
      const bytes = concatBytes(this.parts, this.length);
      emit(out, bytes, 0, bytes.length, this.split ? "rest" : "whole");
    }
    this.parts = [];
    this.length = 0;
    this.split = false;
  }
}
