/**
 * The batch framing: many Flume events (headers and bodies) in one NATS message, marked by the
 * message header `Flume-Batch: 1` (the format's version). The body, integers big-endian:
 *
 *   u32 event count
 *   per event: u16 header count,
 *              per header: u16 name length, name (UTF-8), u32 value length, value (UTF-8),
 *              u32 body length, body
 *
 * Encoding measures the events first and writes them into one buffer (no allocation per event);
 * decoding makes each body a view of the message's data (when first read, for an event without headers).
 */
import { bodyLength, copyBody, type Event, lineEvent, readHeaders } from "../core/event.ts";
import { FlumeError } from "../core/errors.ts";

export const BATCH_HEADER = "Flume-Batch";
export const BATCH_VERSION = "1";

/** A batch message that does not decode (truncated, or a version this build does not read). */
export class BatchFrameError extends FlumeError {}

/** Bytes an event takes in a batch message. */
export function framedSize(e: Event): number {
  let size = 2 + 4 + bodyLength(e);
  const headers = readHeaders(e);
  for (const key in headers) size += 2 + Buffer.byteLength(key) + 4 + Buffer.byteLength(headers[key]);
  return size;
}

/** Bytes of a batch message's body before its events. */
export const BATCH_PREFIX = 4;

/**
 * Writes events[from..to) as one batch body of `total` bytes (BATCH_PREFIX plus their
 * framedSize), into `into` when given (at its start), else into a new buffer.
 */
export function encodeBatch(events: readonly Event[], from: number, to: number, total: number, into?: Buffer): Uint8Array {
  const buf = into ? into.subarray(0, total) : Buffer.allocUnsafe(total);
  buf.writeUInt32BE(to - from, 0);
  let p = BATCH_PREFIX;
  for (let i = from; i < to; i++) {
    const e = events[i];
    const countAt = p;
    p += 2;
    let count = 0;
    const headers = readHeaders(e);
    for (const key in headers) {
      const kLen = buf.write(key, p + 2, "utf8");
      if (kLen > 0xffff) throw new BatchFrameError(`an event header name is ${kLen} bytes long; a batch message carries names up to 65535 bytes`);
      buf.writeUInt16BE(kLen, p);
      p += 2 + kLen;
      const vLen = buf.write(headers[key], p + 4, "utf8");
      buf.writeUInt32BE(vLen, p);
      p += 4 + vLen;
      count++;
    }
    if (count > 0xffff) throw new BatchFrameError(`an event has ${count} headers; a batch message carries up to 65535 per event`);
    buf.writeUInt16BE(count, countAt);
    const len = bodyLength(e);
    buf.writeUInt32BE(len, p);
    p += 4;
    copyBody(e, buf, p);
    p += len;
  }
  return buf;
}

/** The events of a batch body; bodies are views of `data`. */
export function decodeBatch(data: Uint8Array, version: string): Event[] {
  if (version !== BATCH_VERSION) throw new BatchFrameError(`${BATCH_HEADER} version ${version} is not one this agent reads (it reads ${BATCH_VERSION})`);
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const end = buf.length;
  const short = () => new BatchFrameError(`a ${BATCH_HEADER} message of ${end} bytes is truncated`);
  if (end < BATCH_PREFIX) throw short();
  const n = buf.readUInt32BE(0);
  // Each event takes at least 6 bytes: a count that cannot fit is damage, not an allocation to make.
  if (n > (end - BATCH_PREFIX) / 6) throw short();
  const out = new Array<Event>(n);
  let p = BATCH_PREFIX;
  for (let i = 0; i < n; i++) {
    if (p + 2 > end) throw short();
    const count = buf.readUInt16BE(p);
    p += 2;
    let headers: Record<string, string> | null = null;
    if (count > 0) {
      headers = {};
      for (let h = 0; h < count; h++) {
        if (p + 2 > end) throw short();
        const kLen = buf.readUInt16BE(p);
        if (p + 2 + kLen + 4 > end) throw short();
        const key = buf.toString("utf8", p + 2, p + 2 + kLen);
        p += 2 + kLen;
        const vLen = buf.readUInt32BE(p);
        if (p + 4 + vLen > end) throw short();
        headers[key] = buf.toString("utf8", p + 4, p + 4 + vLen);
        p += 4 + vLen;
      }
    }
    if (p + 4 > end) throw short();
    const len = buf.readUInt32BE(p);
    p += 4;
    if (p + len > end) throw short();
    // A headerless event's body view is made only if something reads it (a null sink, a file
    // channel's copy do not): a subarray per event was a tenth of the channel's CPU.
    out[i] = headers === null ? lineEvent(data, p, p + len) : { headers, body: data.subarray(p, p + len) };
    p += len;
  }
  return out;
}

/**
 * Cuts events into runs that each fit in `limit` bytes of body; returns the run ends and
 * fills `sizes` (framedSize per event) and `totals` (body length per run). An event that
 * cannot fit alone throws `tooLarge(index, size)`.
 */
export function splitBatch(events: readonly Event[], limit: number, tooLarge: (index: number, size: number) => Error): { ends: number[]; totals: number[] } {
  const ends: number[] = [];
  const totals: number[] = [];
  let total = BATCH_PREFIX;
  for (let i = 0; i < events.length; i++) {
    const size = framedSize(events[i]);
    if (BATCH_PREFIX + size > limit) throw tooLarge(i, size);
    if (total + size > limit) {
      ends.push(i);
      totals.push(total);
      total = BATCH_PREFIX;
    }
    total += size;
  }
  if (events.length > 0) {
    ends.push(events.length);
    totals.push(total);
  }
  return { ends, totals };
}

/**
 * The buffer a component encodes its batch messages into, written again only once the publish
 * that used it was acknowledged (a failed one may still sit in the client's outgoing buffer:
 * then a new one is made). Saves a buffer per commit; bigger commits than `max` get their own.
 */
export class FrameScratch {
  private buf: Buffer | null = null;
  private lent = false;

  constructor(private readonly max = 4 * 1024 * 1024) {}

  /** A buffer of at least `size` bytes, or null (lent already, or too big). */
  lend(size: number): Buffer | null {
    if (this.lent || size > this.max) return null;
    if (this.buf === null || this.buf.length < size) this.buf = Buffer.allocUnsafeSlow(Math.max(size, 64 * 1024));
    this.lent = true;
    return this.buf;
  }

  /** The publish ended; `acknowledged`: every message was stored, so the bytes are no longer needed. */
  giveBack(acknowledged: boolean): void {
    if (!this.lent) return;
    this.lent = false;
    if (!acknowledged) this.buf = null;
  }
}
