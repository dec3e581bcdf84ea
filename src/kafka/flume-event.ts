/**
 * Flume's Kafka wire format for useFlumeEventFormat / parseAsFlumeEvent: one AvroFlumeEvent
 * record {headers: map<string>, body: bytes} per Kafka record value, in Avro's plain binary
 * encoding (no container, no schema), as Flume's SpecificDatumWriter writes it: the headers as
 * one map block (count, entries, 0), then the body.
 */
import { bodyLength, copyBody, type Event, lineEvent, readHeaders } from "../core/event.ts";
import { AvroReader, longSize, writeLongAt } from "../rpc/binary.ts";
import { readEvent } from "../rpc/messages.ts";

/** A string's UTF-8 length: its length when it is ASCII (header names and values mostly are). */
function utf8Length(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, "utf8");
  return s.length;
}

/** A non-negative Avro long (zig-zag varint). */
function writeString(buf: Buffer, pos: number, s: string): number {
  const n = utf8Length(s);
  pos = writeLongAt(buf, pos, n);
  if (n === s.length) for (let i = 0; i < n; i++) buf[pos + i] = s.charCodeAt(i);
  else buf.write(s, pos, n, "utf8");
  return pos + n;
}

/** The exact size of e as an AvroFlumeEvent. */
export function flumeEventSize(e: Event): number {
  const headers = readHeaders(e);
  let size = 1; // the map's closing 0
  let count = 0;
  for (const k in headers) {
    const kl = utf8Length(k);
    const vl = utf8Length(headers[k]);
    size += longSize(kl) + kl + longSize(vl) + vl;
    count++;
  }
  if (count > 0) size += longSize(count);
  // A line's length and bytes are read from its range: no view of it is made.
  const n = bodyLength(e);
  return size + longSize(n) + n;
}

/** Writes e as an AvroFlumeEvent at `pos` of `buf`, which has room for flumeEventSize(e) bytes there; returns where it ends. */
export function writeFlumeEvent(buf: Buffer, pos: number, e: Event): number {
  const headers = readHeaders(e);
  let count = 0;
  for (const _ in headers) count++;
  if (count > 0) {
    pos = writeLongAt(buf, pos, count);
    for (const k in headers) {
      pos = writeString(buf, pos, k);
      pos = writeString(buf, pos, headers[k]);
    }
  }
  buf[pos++] = 0;
  const n = bodyLength(e);
  pos = writeLongAt(buf, pos, n);
  copyBody(e, buf, pos);
  return pos + n;
}

export function encodeFlumeEvent(e: Event): Buffer {
  const buf = Buffer.allocUnsafe(flumeEventSize(e));
  writeFlumeEvent(buf, 0, e);
  return buf;
}

/** Reads a record value as an AvroFlumeEvent; throws when it is not one (or has bytes left over). */
export function decodeFlumeEvent(value: Buffer): Event {
  return decodeFlumeEventAt(value, 0, value.length);
}

/**
 * Reads the AvroFlumeEvent in bytes `from` to `to` of buf (its body a view of buf, made when first read); throws when
 * they are not one. An event without headers (an empty map, the body's length in one or two
 * bytes, the body: the Kafka channel's usual record) is read without a reader.
 */
export function decodeFlumeEventAt(buf: Buffer, from: number, to: number): Event {
  if (to - from >= 2 && buf[from] === 0) {
    const b = buf[from + 1];
    let z = b;
    let pos = from + 2;
    if (b >= 0x80 && pos < to && buf[pos] < 0x80) z = (b & 0x7f) | (buf[pos++] << 7);
    // A zigzag varint of at most two bytes, not negative: the body runs to the end.
    // The body kept as its range of buf: the view is made when something reads it (a null sink
    // never does, a memory or file channel copies the range), not one a take.
    if (z < 0x4000 && (z & 1) === 0 && pos + (z >>> 1) === to) return lineEvent(buf, pos, to);
  }
  // Positions in errors count from the value's start.
  const r = new AvroReader(from === 0 && to === buf.length ? buf : buf.subarray(from, to));
  const e = readEvent(r);
  if (r.remaining() !== 0) throw new Error(`${r.remaining()} bytes left after the event`);
  return e;
}
