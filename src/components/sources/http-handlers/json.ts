import type { Event } from "../../../core/event.ts";
import { defineComponent } from "../../component.ts";
import { builtIn } from "../../registry.ts";
import { contentTypeCharset, HttpBadRequestError, type HttpRequestData, type HttpSourceHandler } from "./handler.ts";

type JsonCharset = "utf-8" | "utf-16" | "utf-32";

const utf8Decoder = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();

function normalise(charset: string | undefined): JsonCharset {
  if (charset === undefined || charset === "utf-8" || charset === "utf8") return "utf-8";
  if (charset === "utf-16") return "utf-16";
  if (charset === "utf-32") return "utf-32";
  throw new HttpBadRequestError(`Unsupported character set in request: ${charset}. JSON handler supports UTF-8, UTF-16 and UTF-32 only.`);
}

/** Java's UTF-16 decoder: a byte-order mark chooses the order, big-endian without one. */
function decodeUtf16(bytes: Uint8Array): string {
  let le = false;
  let start = 0;
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) {
    le = true;
    start = 2;
  } else if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) start = 2;
  if ((bytes.length - start) % 2 !== 0) throw new HttpBadRequestError("Request body is not valid UTF-16 (odd number of bytes)");
  return new TextDecoder(le ? "utf-16le" : "utf-16be", { fatal: true }).decode(bytes.subarray(start));
}

function decodeUtf32(bytes: Uint8Array): string {
  let le = false;
  let start = 0;
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xfe && bytes[2] === 0 && bytes[3] === 0) {
    le = true;
    start = 4;
  } else if (bytes.length >= 4 && bytes[0] === 0 && bytes[1] === 0 && bytes[2] === 0xfe && bytes[3] === 0xff) start = 4;
  if ((bytes.length - start) % 4 !== 0) throw new HttpBadRequestError("Request body is not valid UTF-32 (length is not a multiple of 4)");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const points: number[] = [];
  for (let i = start; i < bytes.length; i += 4) {
    const cp = view.getUint32(i, le);
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw new HttpBadRequestError(`Request body is not valid UTF-32 (code point ${cp.toString(16)} at byte ${i})`);
    points.push(cp);
  }
  let out = "";
  for (let i = 0; i < points.length; i += 8192) out += String.fromCodePoint(...points.slice(i, i + 8192));
  return out;
}

/** Encodes as Java's String.getBytes(charset): UTF-16 with a big-endian mark, UTF-32 big-endian. */
function encode(text: string, charset: JsonCharset): Uint8Array {
  if (charset === "utf-8") return utf8Encoder.encode(text);
  if (charset === "utf-16") {
    const out = new Uint8Array(2 + text.length * 2);
    out[0] = 0xfe;
    out[1] = 0xff;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      out[2 + i * 2] = c >> 8;
      out[3 + i * 2] = c & 0xff;
    }
    return out;
  }
  const points = Array.from(text, (ch) => ch.codePointAt(0) as number);
  const out = new Uint8Array(points.length * 4);
  const view = new DataView(out.buffer);
  points.forEach((cp, i) => view.setUint32(i * 4, cp, false));
  return out;
}

function decode(bytes: Uint8Array, charset: JsonCharset): string {
  try {
    if (charset === "utf-8") return utf8Decoder.decode(bytes);
    if (charset === "utf-16") return decodeUtf16(bytes);
    return decodeUtf32(bytes);
  } catch (err) {
    if (err instanceof HttpBadRequestError) throw err;
    throw new HttpBadRequestError(`Request body is not valid ${charset.toUpperCase()}`);
  }
}

function scalar(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
}

/**
 * Flume's JSONHandler: the body is an array of {"headers": {...}, "body": "..."}; each body is
 * stored encoded in the request's charset (UTF-8 unless Content-Type names UTF-16 or UTF-32).
 */
export class JsonHandler implements HttpSourceHandler {
  getEvents(request: HttpRequestData): Event[] {
    const charset = normalise(contentTypeCharset(request.headers["content-type"]));
    const text = decode(request.body, charset);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new HttpBadRequestError(`Request has invalid JSON Syntax: ${(err as Error).message}`);
    }
    if (!Array.isArray(parsed)) throw new HttpBadRequestError('Request must be a JSON array of events: [{"headers":{...},"body":"..."}]');
    const events: Event[] = new Array(parsed.length);
    for (let i = 0; i < parsed.length; i++) {
      const item: unknown = parsed[i];
      if (typeof item !== "object" || item === null || Array.isArray(item)) throw new HttpBadRequestError(`Event ${i} is not a JSON object`);
      const { headers: rawHeaders, body: rawBody } = item as { headers?: unknown; body?: unknown };
      const headers: Record<string, string> = {};
      if (rawHeaders !== undefined && rawHeaders !== null) {
        if (typeof rawHeaders !== "object" || Array.isArray(rawHeaders)) throw new HttpBadRequestError(`Event ${i}: "headers" must be an object of strings`);
        for (const [k, v] of Object.entries(rawHeaders as Record<string, unknown>)) {
          const s = scalar(v);
          if (s === undefined) {
            if (v === null) continue;
            throw new HttpBadRequestError(`Event ${i}: header "${k}" must be a string`);
          }
          headers[k] = s;
        }
      }
      let body = "";
      if (rawBody !== undefined && rawBody !== null) {
        const s = scalar(rawBody);
        if (s === undefined) throw new HttpBadRequestError(`Event ${i}: "body" must be a string`);
        body = s;
      }
      events[i] = { headers, body: encode(body, charset) };
    }
    return events;
  }
}

export const definition = defineComponent({
  ...builtIn.jsonHttpHandler,
  doc: "The body is a JSON array of events ({\"headers\": {...}, \"body\": \"...\"}), in the request's charset.",
  props: {},
  create: (): HttpSourceHandler => new JsonHandler(),
});
