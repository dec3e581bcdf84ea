// Events and the typed errors of the core.
import { describe, expect, test } from "bun:test";
import { ChannelException, ChannelFullException, ConfigurationError, EventDeliveryException, FlumeError, TransactionStateError } from "../../src/core/errors.ts";
import { bodyEvent, bodyLength, bodyText, compactBodies, copyBody, createEvent, type Event, flatRangeEvent, lineEvent, type RangeEventWithHeaders, readHeaders } from "../../src/core/event.ts";

describe("Event", () => {
  test("a string body is encoded as UTF-8; headers are plain strings", () => {
    const e = createEvent("héllo ✓", { host: "h1" });
    expect(e.body).toBeInstanceOf(Uint8Array);
    expect(e.body.length).toBe(Buffer.byteLength("héllo ✓"));
    expect(bodyText(e)).toBe("héllo ✓");
    expect(e.headers).toEqual({ host: "h1" });
  });

  test("a byte body is kept as given, and headers default to empty", () => {
    const body = new Uint8Array([0, 255, 10]);
    const e = createEvent(body);
    expect(e.body).toBe(body);
    expect(e.headers).toEqual({});
  });
});

describe("bodyEvent (what line and sequence sources make)", () => {
  test("its headers start empty and keep what is written into them", () => {
    const e = bodyEvent(new Uint8Array([104, 105]));
    expect(bodyText(e)).toBe("hi");
    expect(e.headers).toEqual({});
    e.headers.host = "h1";
    e.headers.timestamp = "1700000000000";
    expect(e.headers).toBe(e.headers);
    expect(e.headers).toEqual({ host: "h1", timestamp: "1700000000000" });
  });

  test("headers can be replaced, and a body too", () => {
    const e = bodyEvent(new Uint8Array([1]));
    e.headers = { a: "1" };
    e.headers.b = "2";
    e.body = new Uint8Array([2, 3]);
    expect(e.headers).toEqual({ a: "1", b: "2" });
    expect([...e.body]).toEqual([2, 3]);
  });

  test("readHeaders (for encoders): one shared empty object until the event's headers are made, then the event's own", () => {
    const e = bodyEvent(new Uint8Array([1]));
    const none = readHeaders(e);
    expect(none).toEqual({});
    expect(Object.isFrozen(none)).toBe(true);
    expect(readHeaders(bodyEvent(new Uint8Array([2])))).toBe(none);
    e.headers.k = "v";
    expect(readHeaders(e)).toBe(e.headers);
    expect(readHeaders(e)).toEqual({ k: "v" });
    const plain = createEvent("x", { a: "1" });
    expect(readHeaders(plain)).toBe(plain.headers);
  });

  test("it reads in JSON as a plain event does", () => {
    const plain = createEvent(new Uint8Array([7]), { k: "v" });
    const lazy = bodyEvent(new Uint8Array([7]));
    expect(JSON.stringify(lazy)).toBe(JSON.stringify({ headers: {}, body: lazy.body }));
    lazy.headers.k = "v";
    expect(JSON.stringify(lazy)).toBe(JSON.stringify(plain));
  });
});

describe("lineEvent (a line that is a range of a read, as TAILDIR makes)", () => {
  const read = new TextEncoder().encode("first\nsecond\n");

  test("its body is the range's bytes, a view of the read made once, when first read", () => {
    const e = lineEvent(read, 6, 12);
    expect(bodyLength(e)).toBe(6);
    expect(bodyText(e)).toBe("second");
    expect(e.body).toBe(e.body);
    expect(e.body.buffer).toBe(read.buffer);
    expect(bodyLength(e)).toBe(6);
  });

  test("body and headers can be replaced; bodyLength follows the new body", () => {
    const e = lineEvent(read, 0, 5);
    e.body = new Uint8Array([1, 2]);
    e.headers.k = "v";
    expect(bodyLength(e)).toBe(2);
    expect([...e.body]).toEqual([1, 2]);
    expect(e.headers).toEqual({ k: "v" });
  });

  test("headers are made on demand: readHeaders shares the empty object until then; JSON as a plain event", () => {
    const e = lineEvent(read, 0, 5);
    expect(readHeaders(e)).toBe(readHeaders(bodyEvent(new Uint8Array(1))));
    expect(JSON.stringify(e)).toBe(JSON.stringify(createEvent("first")));
    expect(bodyLength(createEvent("abc"))).toBe(3);
  });
});

/** A range event with headers of one constructor, as the Kafka source's (flatRangeEvent). */
interface NumberedLine extends RangeEventWithHeaders {}
class NumberedLine {
  made = 0;
  constructor(
    protected bytes: Uint8Array,
    protected start: number,
    protected end: number,
    private readonly n: number,
  ) {}

  protected makeHeaders(): Record<string, string> {
    this.made++;
    return { n: String(this.n) };
  }
}
flatRangeEvent(NumberedLine);

describe("flatRangeEvent (a range event whose headers are made when first read, of one constructor)", () => {
  const read = new TextEncoder().encode("first\nsecond\n");

  test("its body is the range; bodyLength and copyBody read it; body can be replaced", () => {
    const e = new NumberedLine(read, 6, 12, 7);
    expect(bodyLength(e)).toBe(6);
    const out = new Uint8Array(8).fill(46);
    copyBody(e, out, 1);
    expect(new TextDecoder().decode(out)).toBe(".second.");
    expect(bodyText(e)).toBe("second");
    expect(e.body.buffer).toBe(read.buffer);
    e.body = new Uint8Array([1, 2]);
    expect(bodyLength(e)).toBe(2);
  });

  test("readHeaders and headers make the headers once, from what the event holds; set headers replace them; JSON as a plain event", () => {
    const e = new NumberedLine(read, 0, 5, 7);
    expect(e.made).toBe(0);
    expect(readHeaders(e)).toEqual({ n: "7" });
    e.headers.k = "v";
    expect(readHeaders(e)).toEqual({ n: "7", k: "v" });
    expect(e.made).toBe(1);
    expect(JSON.stringify(e)).toBe(JSON.stringify(createEvent("first", { n: "7", k: "v" })));
    e.headers = { only: "this" };
    expect(readHeaders(e)).toEqual({ only: "this" });
  });
});

/** Events whose bodies are views of lines in one read of `size` bytes, as a socket source makes. */
function linesOfOneRead(size: number, lines: number[]): Event[] {
  const read = new Uint8Array(size).fill(120);
  return lines.map((at) => ({ headers: {}, body: read.subarray(at, at + 10) }));
}

describe("copyBody (what encoders write bodies with)", () => {
  const read = new Uint8Array(300).map((_, i) => i % 251);
  const copied = (e: Event) => {
    const out = new Uint8Array(bodyLength(e) + 4).fill(7);
    copyBody(e, out, 2);
    expect([...out.subarray(0, 2), ...out.subarray(out.length - 2)]).toEqual([7, 7, 7, 7]);
    return [...out.subarray(2, out.length - 2)];
  };

  test("a line's range, short (copied by hand) or long, before and after its view is made or its body replaced", () => {
    for (const [start, end] of [[5, 9], [10, 210], [0, 300], [3, 3]]) {
      const e = lineEvent(read, start, end);
      expect(copied(e)).toEqual([...read.subarray(start, end)]);
      expect(e.body.length).toBe(end - start);
      expect(copied(e)).toEqual([...read.subarray(start, end)]);
      e.body = new Uint8Array([1, 2, 3]);
      expect(copied(e)).toEqual([1, 2, 3]);
    }
  });

  test("any other event's body, whatever its offset in its buffer", () => {
    expect(copied(createEvent(read.subarray(100, 180)))).toEqual([...read.subarray(100, 180)]);
    expect(copied(bodyEvent(read.subarray(1, 5)))).toEqual([1, 2, 3, 4]);
  });
});

describe("compactBodies", () => {
  test("small views into a large read are copied into one buffer for the batch, bytes unchanged", () => {
    const events = linesOfOneRead(65536, [0, 30000, 60000]);
    events[1].body.set(new TextEncoder().encode("0123456789"));
    const before = events.map(bodyText);
    expect(compactBodies(events)).toBe(true);
    expect(events.map(bodyText)).toEqual(before);
    const buffer = events[0].body.buffer;
    expect(buffer.byteLength).toBe(30);
    for (const e of events) expect(e.body.buffer).toBe(buffer);
  });

  test("bodies that own at least half of what they keep alive are left alone (no copy, no allocation)", () => {
    const whole = linesOfOneRead(100, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    const bodies = whole.map((e) => e.body);
    expect(compactBodies(whole)).toBe(false);
    expect(whole.map((e) => e.body)).toEqual(bodies);
    const own = [createEvent("a"), createEvent("bb"), createEvent("")];
    expect(compactBodies(own)).toBe(false);
  });

  test("a shared body (the stress source's) counts its buffer once", () => {
    const body = new Uint8Array(500);
    const events = Array.from({ length: 100 }, () => ({ headers: {}, body }));
    expect(compactBodies(events)).toBe(false);
    expect(events[99].body).toBe(body);
  });
});

describe("errors", () => {
  test("each error is its own class, named after itself, under FlumeError", () => {
    const full = new ChannelFullException("no room");
    expect(full).toBeInstanceOf(ChannelException);
    expect(full).toBeInstanceOf(FlumeError);
    expect(full.name).toBe("ChannelFullException");
    expect(new EventDeliveryException("x").name).toBe("EventDeliveryException");
    expect(new TransactionStateError("x")).toBeInstanceOf(FlumeError);
    expect(new TransactionStateError("x")).not.toBeInstanceOf(ChannelException);
  });

  test("a configuration error names its key and component", () => {
    const e = new ConfigurationError("capacity", "must be greater than 0, got -1", "c1");
    expect(e.key).toBe("capacity");
    expect(e.component).toBe("c1");
    expect(e.message).toBe("c1: capacity: must be greater than 0, got -1");
    expect(new ConfigurationError("type", "missing").message).toBe("type: missing");
  });

  test("a cause is kept", () => {
    const cause = new Error("disk");
    expect(new ChannelException("failed", { cause }).cause).toBe(cause);
  });
});
