/**
 * A Flume event: string headers and an opaque byte body. Sources may hand out objects whose
 * `headers` is an accessor (bodyEvent): copy an event field by field, not with `{ ...event }`.
 */
export interface Event {
  headers: Record<string, string>;
  body: Uint8Array;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * An event that arrives without headers (a line, a number): its headers object is made the
 * first time anything reads or sets them. Most such events cross a channel untouched, and an
 * empty object costs 64 bytes in JSC (room for six properties), about a quarter of a queued
 * 100-byte line; `headers` is a getter here, so the object never exists for those.
 */
abstract class HeadersOnDemand {
  // Declared, not initialised: JSC sizes instances by the fields the constructor sets, and one
  // field keeps the object at 32 bytes (two would make it 48); `h` fits in the room left.
  declare protected h: Record<string, string> | undefined;

  abstract body: Uint8Array;

  get headers(): Record<string, string> {
    let h = this.h;
    if (h === undefined) this.h = h = {};
    return h;
  }

  set headers(headers: Record<string, string>) {
    this.h = headers;
  }

  /** The headers if they were made, without making them. */
  peekHeaders(): Readonly<Record<string, string>> {
    return this.h ?? NO_HEADERS;
  }

  /** As a plain event reads in JSON (traces, test output). */
  toJSON(): Event {
    return { headers: this.headers, body: this.body };
  }
}

class HeaderlessEvent extends HeadersOnDemand implements Event {
  constructor(public body: Uint8Array) {
    super();
  }
}

/**
 * A line that is a range of a larger read, without headers: the view of its bytes is made the
 * first time something reads `body`. TAILDIR's lines to a memory channel and a null or counting
 * sink are never read, and a subarray per line was a fifth of that pipeline's CPU.
 */
class LineEvent extends HeadersOnDemand implements Event {
  // Three fields keep the object at 48 bytes; a fourth for the view would make it 64. Once the
  // view is made it replaces `bytes`, and `start` -1 says so. Protected: a flat range event's
  // constructor (flatRangeEvent) sets them.
  constructor(
    protected bytes: Uint8Array,
    protected start: number,
    protected end: number,
  ) {
    super();
  }

  get body(): Uint8Array {
    if (this.start < 0) return this.bytes;
    const view = this.bytes.subarray(this.start, this.end);
    this.bytes = view;
    this.start = -1;
    return view;
  }

  set body(body: Uint8Array) {
    this.bytes = body;
    this.start = -1;
  }

  /** The body's length, without making the view. (A method: one more accessor would make the object 64 bytes.) */
  bodyLength(): number {
    return this.start < 0 ? this.bytes.length : this.end - this.start;
  }

  /** Copies the body to out[at...], without making the view. */
  copyBody(out: Uint8Array, at: number): void {
    if (this.start < 0) copyBytes(this.bytes, 0, this.bytes.length, out, at);
    else copyBytes(this.bytes, this.start, this.end, out, at);
  }
}

/** A short run is copied by hand: set() is a native call that costs more than the copy (and a subarray for it more still). */
function copyBytes(from: Uint8Array, start: number, end: number, out: Uint8Array, at: number): void {
  if (end - start <= 64) for (let i = start, j = at; i < end; i++, j++) out[j] = from[i];
  else out.set(start === 0 && end === from.length ? from : from.subarray(start, end), at);
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * A range event (as lineEvent's) whose headers are known but not held: makeHeaders() makes them
 * the first time anything reads them, readHeaders() included. For a source that sets headers on
 * every event which a memory channel and a null or counting sink never read (Kafka's timestamp,
 * topic, partition and offset: a headers object and an offset string per record were a sixth of
 * that pipeline's CPU). The subclass holds what the headers are made of; made one a record, it
 * is better a flat one (flatRangeEvent).
 */
export abstract class RangeEventWithHeaders extends LineEvent {
  // Written out: JSC's default derived constructor spreads its arguments, at 2-3 times the cost of the object.
  constructor(bytes: Uint8Array, start: number, end: number) {
    super(bytes, start, end);
  }

  /** The event's headers, made when first read. */
  protected abstract makeHeaders(): Record<string, string>;

  override get headers(): Record<string, string> {
    let h = this.h;
    if (h === undefined) this.h = h = this.makeHeaders();
    return h;
  }

  override set headers(headers: Record<string, string>) {
    this.h = headers;
  }

  override peekHeaders(): Readonly<Record<string, string>> {
    return this.headers;
  }
}

/**
 * Makes the instances of `cls` RangeEventWithHeaders without `extends`, whose events run four
 * constructors each (cls's, RangeEventWithHeaders's, LineEvent's, HeadersOnDemand's: 4% of the
 * Kafka source's CPU, at 100-byte records): cls's prototype gets RangeEventWithHeaders's, so its
 * instances have its body, headers and peekHeaders, and readHeaders, bodyLength and copyBody
 * know them. cls's constructor sets bytes, start and end first, in that order (LineEvent's
 * fields), then what its makeHeaders reads; `interface Cls extends RangeEventWithHeaders {}`
 * beside the class gives its instances their type.
 */
export function flatRangeEvent(cls: { prototype: object }): void {
  Object.setPrototypeOf(cls.prototype, RangeEventWithHeaders.prototype);
}

/**
 * An event's headers, to read only: for an event of bodyEvent whose headers were never made, a
 * shared empty object instead of a new one. For what writes out every event's headers (the file
 * channel, RPC encoders, serializers, sinks), where reading `headers` would make an object per event.
 */
export function readHeaders(e: Event): Readonly<Record<string, string>> {
  return e instanceof HeadersOnDemand ? e.peekHeaders() : e.headers;
}

/** An event's body length; for a line of lineEvent, without making a view of it. */
export function bodyLength(e: Event): number {
  return e instanceof LineEvent ? e.bodyLength() : e.body.length;
}

/** Copies an event's body to out[at...]; for a line of lineEvent, without making a view of it. */
export function copyBody(e: Event, out: Uint8Array, at: number): void {
  if (e instanceof LineEvent) e.copyBody(out, at);
  else copyBytes(e.body, 0, e.body.length, out, at);
}

/** An event with no headers (yet): what line, sequence and blob sources make. */
export function bodyEvent(body: Uint8Array): Event {
  return new HeaderlessEvent(body);
}

/** An event with no headers (yet) whose body is `bytes[start..end)`, a view made when first read. */
export function lineEvent(bytes: Uint8Array, start: number, end: number): Event {
  return new LineEvent(bytes, start, end);
}

/** Builds an event; a string body is encoded as UTF-8. */
export function createEvent(body: Uint8Array | string, headers: Record<string, string> = {}): Event {
  return { headers, body: typeof body === "string" ? encoder.encode(body) : body };
}

export function bodyText(event: Event): string {
  return decoder.decode(event.body);
}

/**
 * Makes the bodies of a batch hold only their own bytes when they are small views into much
 * larger buffers (a pipe or socket read of which an interceptor kept one line in a thousand):
 * they are copied into one new buffer for the batch, so a queued event no longer keeps the
 * whole read alive and a channel's byteCapacity, which counts body bytes, bounds memory.
 * Bodies that own at least half of the buffers they keep alive are left as they are (one pass
 * over the batch, no allocation). Returns whether it copied. For batches that interceptors
 * thinned out: without drops the rest of those buffers is queued events too.
 */
export function compactBodies(events: Event[]): boolean {
  let own = 0;
  let held = 0;
  let last: ArrayBufferLike | null = null;
  for (let i = 0; i < events.length; i++) {
    const body = events[i].body;
    own += body.byteLength;
    // At offset 0: an array of its own (or the first line of a read). Its .buffer is not read:
    // for a small array JSC would then allocate an ArrayBuffer apart, in time and memory.
    if (body.byteOffset === 0) {
      held += body.byteLength;
      continue;
    }
    // Bodies of one read are adjacent in a batch: a buffer is counted once per run.
    if (body.buffer !== last) {
      last = body.buffer;
      held += last.byteLength;
    }
  }
  if (held <= own * 2) return false;
  const copy = new Uint8Array(own);
  let pos = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    const length = e.body.byteLength;
    copy.set(e.body, pos);
    e.body = copy.subarray(pos, pos + length);
    pos += length;
  }
  return true;
}
