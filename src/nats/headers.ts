/**
 * Flume event headers <-> NATS message headers. NATS header names are printable ASCII without
 * ':' and values may not hold CR/LF (and lose surrounding whitespace), while a Flume header
 * is any string pair. Headers that NATS can carry as they are travel as plain NATS headers
 * (readable by any NATS client); the others, and any name NATS reserves (Nats-*), travel
 * together as base64 JSON in one header, ESCAPED_HEADERS, so every event round-trips exactly.
 */
import type { MsgHdrs } from "@nats-io/nats-core";
import { bodyEvent, type Event } from "../core/event.ts";

/** The header that carries the Flume headers NATS cannot carry as they are. */
export const ESCAPED_HEADERS = "Flume-Escaped-Headers";

/** The header constructor of @nats-io/nats-core, passed in so this module loads no package. */
export type HeadersFactory = () => MsgHdrs;

function safeName(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 33 || c > 126 || c === 58) return false;
  }
  const lower = name.toLowerCase();
  return !lower.startsWith("nats-") && lower !== ESCAPED_HEADERS.toLowerCase();
}

function safeValue(value: string): boolean {
  return value.indexOf("\r") < 0 && value.indexOf("\n") < 0 && value.trim() === value;
}

/** The NATS headers for an event's headers, with `msgId` as Nats-Msg-Id when given. */
export function toNatsHeaders(make: HeadersFactory, headers: Readonly<Record<string, string>>): MsgHdrs | undefined {
  let out: MsgHdrs | undefined;
  let escaped: Record<string, string> | null = null;
  for (const name in headers) {
    const value = headers[name];
    if (safeName(name) && safeValue(value)) (out ??= make()).append(name, value);
    else (escaped ??= {})[name] = value;
  }
  if (escaped) (out ??= make()).set(ESCAPED_HEADERS, Buffer.from(JSON.stringify(escaped), "utf8").toString("base64"));
  return out;
}

/**
 * The Flume headers of a NATS message: its plain headers (the first value of a repeated one)
 * plus the escaped ones; the server's own Nats-* headers are left out.
 */
export function fromNatsHeaders(h: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  let escaped: string | null = null;
  for (const name of h.keys()) {
    if (name === ESCAPED_HEADERS) {
      escaped = h.get(name);
      continue;
    }
    if (name.length >= 5 && name.slice(0, 5).toLowerCase() === "nats-") continue;
    out[name] = h.get(name);
  }
  if (escaped) {
    try {
      const parsed = JSON.parse(Buffer.from(escaped, "base64").toString("utf8")) as unknown;
      if (parsed && typeof parsed === "object") {
        for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) if (typeof v === "string") out[k] = v;
      }
    } catch {
      // Not ours (a foreign publisher used the name): keep it as an ordinary header.
      out[ESCAPED_HEADERS] = escaped;
    }
  }
  return out;
}

/** The Flume event of a NATS message; one with no Flume headers gets none made (a bodyEvent). */
export function eventOfMessage(data: Uint8Array, h: MsgHdrs | undefined): Event {
  if (!h) return bodyEvent(data);
  const headers = fromNatsHeaders(h);
  for (const _ in headers) return { headers, body: data };
  return bodyEvent(data);
}
