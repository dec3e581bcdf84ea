import { bodyEvent, readHeaders, type Event } from "../core/event.ts";
import { AvroReader, AvroWriter, longSize } from "./binary.ts";
import { RpcProtocolError } from "./errors.ts";
import { STATUS_SYMBOLS, type RpcStatus } from "./protocol.ts";

/** Avro IPC HandshakeRequest (org.apache.avro.ipc.HandshakeRequest). */
export interface HandshakeRequest {
  clientHash: Buffer;
  clientProtocol: string | null;
  serverHash: Buffer;
  meta: Map<string, Buffer> | null;
}

export type HandshakeMatch = "BOTH" | "CLIENT" | "NONE";
const MATCH_SYMBOLS: readonly HandshakeMatch[] = ["BOTH", "CLIENT", "NONE"];

/** Avro IPC HandshakeResponse. */
export interface HandshakeResponse {
  match: HandshakeMatch;
  serverProtocol: string | null;
  serverHash: Buffer | null;
  meta: Map<string, Buffer> | null;
}

export function readHandshakeRequest(r: AvroReader): HandshakeRequest {
  const clientHash = r.fixed(16);
  const clientProtocol = r.unionIndex(2) === 1 ? r.string() : null;
  const serverHash = r.fixed(16);
  const meta = r.unionIndex(2) === 1 ? r.bytesMap() : null;
  return { clientHash, clientProtocol, serverHash, meta };
}

/** An Avro union ["null", T]: branch 0 for null, else branch 1 and the value. */
function writeNullable<T>(w: AvroWriter, value: T | null, write: (v: T) => void): void {
  if (value === null) w.long(0);
  else {
    w.long(1);
    write(value);
  }
}

export function writeHandshakeRequest(w: AvroWriter, h: HandshakeRequest): void {
  w.raw(h.clientHash);
  writeNullable(w, h.clientProtocol, (v) => w.string(v));
  w.raw(h.serverHash);
  writeNullable(w, h.meta, (v) => w.bytesMap(v));
}

export function readHandshakeResponse(r: AvroReader): HandshakeResponse {
  const m = r.long();
  if (m < 0 || m > 2) throw new RpcProtocolError(`invalid handshake match ${m}`);
  const serverProtocol = r.unionIndex(2) === 1 ? r.string() : null;
  const serverHash = r.unionIndex(2) === 1 ? r.fixed(16) : null;
  const meta = r.unionIndex(2) === 1 ? r.bytesMap() : null;
  return { match: MATCH_SYMBOLS[m], serverProtocol, serverHash, meta };
}

export function writeHandshakeResponse(w: AvroWriter, h: HandshakeResponse): void {
  w.long(MATCH_SYMBOLS.indexOf(h.match));
  writeNullable(w, h.serverProtocol, (v) => w.string(v));
  writeNullable(w, h.serverHash, (v) => w.raw(v));
  writeNullable(w, h.meta, (v) => w.bytesMap(v));
}

/**
 * One AvroFlumeEvent: headers map<string>, body bytes (a view of the reader's buffer). Without
 * headers, an event of bodyEvent (its headers object is made only if something reads them).
 */
export function readEvent(r: AvroReader): Event {
  const headers = r.stringMapOrNull();
  const body = r.bytes();
  return headers === null ? bodyEvent(body) : { headers, body };
}

/** array<AvroFlumeEvent>, bounded so a forged count cannot allocate without limit. */
export function readEventArray(r: AvroReader): Event[] {
  const events: Event[] = [];
  for (let n = r.blockCount(); n > 0; n = r.blockCount()) {
    // Each event takes at least 2 bytes (empty map, empty body).
    if (n > r.remaining() / 2) throw new RpcProtocolError(`event array declares ${n} events but only ${r.remaining()} bytes follow`);
    for (let i = 0; i < n; i++) events.push(readEvent(r));
  }
  return events;
}

/** UTF-16 length: exact for ASCII, and the writer grows in the rare case it falls short. */
function asciiOrUtf8Length(s: string): number {
  return s.length;
}

/** Encoded size of one event (exact for ASCII headers), so a batch is written into one right-sized buffer. */
export function eventSize(e: Event): number {
  let size = 0;
  const headers = readHeaders(e);
  let count = 0;
  for (const k in headers) {
    const kl = asciiOrUtf8Length(k);
    const vl = asciiOrUtf8Length(headers[k]);
    size += longSize(kl) + kl + longSize(vl) + vl;
    count++;
  }
  size += count > 0 ? longSize(count) + 1 : 1;
  return size + longSize(e.body.length) + e.body.length;
}

export function writeEvent(w: AvroWriter, e: Event): void {
  w.stringMap(readHeaders(e));
  w.bytes(e.body);
}

/** Writes events as Java's encoder does: one block with the full count, then 0. */
export function writeEventArray(w: AvroWriter, events: readonly Event[]): void {
  if (events.length > 0) {
    w.long(events.length);
    for (let i = 0; i < events.length; i++) writeEvent(w, events[i]);
  }
  w.long(0);
}

export function eventArraySize(events: readonly Event[]): number {
  let size = 1 + (events.length > 0 ? longSize(events.length) : 0);
  for (let i = 0; i < events.length; i++) size += eventSize(events[i]);
  return size;
}

/** The outcome a call's response carries. */
export type CallResult = { ok: true; status: RpcStatus } | { ok: false; error: string };

/** Reads a response after its handshake: metadata, error flag, Status or error string. */
export function readCallResult(r: AvroReader): CallResult {
  r.bytesMap();
  const isError = r.boolean();
  if (!isError) {
    const i = r.long();
    if (i < 0 || i >= STATUS_SYMBOLS.length) throw new RpcProtocolError(`invalid Status index ${i} in response`);
    return { ok: true, status: STATUS_SYMBOLS[i] };
  }
  // Flume's messages declare no errors, so the union is Avro's system errors: ["string"].
  r.unionIndex(1);
  return { ok: false, error: r.string() };
}
