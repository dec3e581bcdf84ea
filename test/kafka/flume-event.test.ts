/**
 * FlumeEvents read from a record value, or from a range of a larger buffer (the Kafka channel
 * reads them out of the copy of a run of records): an event without headers is read without
 * the Avro reader; the result, and the refusal of bytes that are no event, must be the reader's.
 */
import { describe, expect, test } from "bun:test";
import { bodyLength, createEvent, lineEvent, readHeaders } from "../../src/core/event.ts";
import { decodeFlumeEvent, decodeFlumeEventAt, encodeFlumeEvent, flumeEventSize } from "../../src/kafka/flume-event.ts";
import { AvroReader } from "../../src/rpc/binary.ts";
import { readEvent } from "../../src/rpc/messages.ts";

/** What the Avro reader makes of the bytes: the event, or its error's message. */
function byReader(bytes: Buffer): { headers: Record<string, string>; body: string } | string {
  try {
    const r = new AvroReader(bytes);
    const e = readEvent(r);
    if (r.remaining() !== 0) return `${r.remaining()} bytes left after the event`;
    return { headers: { ...readHeaders(e) }, body: Buffer.from(e.body).toString("hex") };
  } catch (err) {
    return (err as Error).message;
  }
}

/** What decodeFlumeEventAt makes of the bytes, placed amid others in a larger buffer. */
function byRange(bytes: Buffer): { headers: Record<string, string>; body: string } | string {
  const around = Buffer.concat([Buffer.from([7, 7, 7]), bytes, Buffer.from([9, 9])]);
  try {
    const e = decodeFlumeEventAt(around, 3, 3 + bytes.length);
    return { headers: { ...readHeaders(e) }, body: Buffer.from(e.body).toString("hex") };
  } catch (err) {
    return (err as Error).message;
  }
}

describe("decodeFlumeEventAt", () => {
  test("events with and without headers, bodies whose length takes one, two or three bytes, read as the Avro reader reads them", () => {
    for (const size of [0, 1, 63, 64, 100, 8191, 8192, 20_000]) {
      for (const headers of [{}, { key: "k1", "naïve": "é" }] as Record<string, string>[]) {
        const bytes = encodeFlumeEvent({ headers, body: Buffer.alloc(size, size % 251) });
        const read = byRange(bytes);
        expect(read).toEqual(byReader(bytes));
        expect(typeof read === "object" && read.body.length).toBe(size * 2);
      }
    }
  });

  test("the body is a view of the buffer read, not a copy", () => {
    const buf = Buffer.concat([Buffer.from([1, 2]), encodeFlumeEvent({ headers: {}, body: Buffer.from("hello") })]);
    const e = decodeFlumeEventAt(buf, 2, buf.length);
    expect(Buffer.from(e.body).toString()).toBe("hello");
    expect(e.body.buffer).toBe(buf.buffer);
  });

  test("an event read without headers keeps its body as a range: its length, and the event written again, are the same bytes", () => {
    for (const size of [0, 5, 100, 200]) {
      const bytes = encodeFlumeEvent({ headers: {}, body: Buffer.alloc(size, 3) });
      const buf = Buffer.concat([Buffer.from([1, 2]), bytes, Buffer.from([4])]);
      const e = decodeFlumeEventAt(buf, 2, 2 + bytes.length);
      expect(bodyLength(e)).toBe(size);
      expect(flumeEventSize(e)).toBe(bytes.length);
      expect(encodeFlumeEvent(e)).toEqual(bytes);
      // Headers set on it after the read (an interceptor) are written too.
      e.headers.k = "v";
      expect(decodeFlumeEvent(encodeFlumeEvent(e))).toMatchObject({ headers: { k: "v" } });
      expect(Buffer.from(decodeFlumeEvent(encodeFlumeEvent(e)).body)).toEqual(Buffer.alloc(size, 3));
    }
  });

  test("a line kept as a range of its read (TAILDIR, exec) is written as the event with that body", () => {
    const read = Buffer.from("first\nsecond line\n");
    const line = lineEvent(read, 6, 17);
    expect(encodeFlumeEvent(line)).toEqual(encodeFlumeEvent(createEvent("second line")));
  });

  test("bytes that are no event are refused with the Avro reader's reason", () => {
    const body100 = encodeFlumeEvent({ headers: {}, body: Buffer.alloc(100, 1) });
    const cases: Buffer[] = [
      body100.subarray(0, 50), // truncated body
      Buffer.concat([body100, Buffer.from([0])]), // a byte left over
      Buffer.from([0, 0x01]), // negative body length (zigzag -1)
      Buffer.from([0, 0x83, 0x01, 1, 2]), // a negative two-byte length
      Buffer.from([0]), // no body length
      Buffer.from([0, 0x80]), // a varint cut short
      Buffer.from([]), // nothing
      Buffer.from([0x02, 0x02, 0x61]), // a header map cut short
    ];
    for (const bytes of cases) {
      const read = byRange(bytes);
      expect(typeof read).toBe("string");
      expect(read).toBe(byReader(bytes) as string);
      expect(() => decodeFlumeEvent(bytes)).toThrow();
    }
  });
});
