/**
 * Flume's Kafka wire format for useFlumeEventFormat / parseAsFlumeEvent: one AvroFlumeEvent
 * record {headers: map<string>, body: bytes} per Kafka record value, in Avro's plain binary
 * encoding (no container, no schema), as Flume's SpecificDatumWriter writes it.
 */
import type { Event } from "../core/event.ts";
import { AvroReader, AvroWriter } from "../rpc/binary.ts";
import { eventArraySize, eventSize, readEvent, writeEvent } from "../rpc/messages.ts";

export function encodeFlumeEvent(e: Event): Buffer {
  const w = new AvroWriter(eventSize(e));
  writeEvent(w, e);
  return w.buf.subarray(0, w.pos);
}

/**
 * Each event as an AvroFlumeEvent, all written into one buffer (one allocation a batch, not
 * one an event); the values are views of it, in the events' order.
 */
export function encodeFlumeEvents(events: readonly Event[]): Buffer[] {
  const w = new AvroWriter(eventArraySize(events));
  const ends = new Array<number>(events.length);
  for (let i = 0; i < events.length; i++) {
    writeEvent(w, events[i]);
    ends[i] = w.pos;
  }
  // Views taken once everything is written: the writer grows (and moves) if a size fell short.
  const values = new Array<Buffer>(events.length);
  for (let i = 0, start = 0; i < events.length; start = ends[i++]) values[i] = w.buf.subarray(start, ends[i]);
  return values;
}

/** Reads a record value as an AvroFlumeEvent; throws when it is not one (or has bytes left over). */
export function decodeFlumeEvent(value: Buffer): Event {
  const r = new AvroReader(value);
  const e = readEvent(r);
  if (r.remaining() !== 0) throw new Error(`${r.remaining()} bytes left after the event`);
  return e;
}
