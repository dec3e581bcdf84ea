/**
 * Flume's Kafka wire format for useFlumeEventFormat / parseAsFlumeEvent: one AvroFlumeEvent
 * record {headers: map<string>, body: bytes} per Kafka record value, in Avro's plain binary
 * encoding (no container, no schema), as Flume's SpecificDatumWriter writes it.
 */
import type { Event } from "../core/event.ts";
import { AvroReader, AvroWriter } from "../rpc/binary.ts";
import { eventSize, readEvent, writeEvent } from "../rpc/messages.ts";

export function encodeFlumeEvent(e: Event): Buffer {
  const w = new AvroWriter(eventSize(e));
  writeEvent(w, e);
  return w.buf.subarray(0, w.pos);
}

/** Reads a record value as an AvroFlumeEvent; throws when it is not one (or has bytes left over). */
export function decodeFlumeEvent(value: Buffer): Event {
  const r = new AvroReader(value);
  const e = readEvent(r);
  if (r.remaining() !== 0) throw new Error(`${r.remaining()} bytes left after the event`);
  return e;
}
