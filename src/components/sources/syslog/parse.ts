import type { Event } from "../../../core/event.ts";
import { parseRfc3164Timestamp, parseRfc5424Timestamp, type ZoneRule } from "./dates.ts";

/** Header names and values Flume's syslog sources write. */
export const SYSLOG_FACILITY = "Facility";
export const SYSLOG_SEVERITY = "Severity";
export const EVENT_STATUS = "flume.syslog.status";
export const STATUS_INVALID = "Invalid";
export const STATUS_INCOMPLETE = "Incomplete";
export const DEFAULT_EVENT_SIZE = 2500;
/** Flume raises smaller eventSize values to this. */
export const MIN_EVENT_SIZE = 10;

/** Fields keepFields can put back into the body; null keeps none, "all" keeps the raw message. */
export type KeepFields = null | "all" | ReadonlySet<"priority" | "version" | "timestamp" | "hostname">;

/** Flume's keepFields: none/false, all/true, or a list naming priority, version, timestamp, hostname. */
export function parseKeepFields(value: string): KeepFields {
  const v = value.trim().toLowerCase();
  if (v === "" || v === "false" || v === "none") return null;
  if (v === "true" || v === "all") return "all";
  const set = new Set<"priority" | "version" | "timestamp" | "hostname">();
  for (const f of ["priority", "version", "timestamp", "hostname"] as const) if (v.includes(f)) set.add(f);
  return set;
}

/**
 * How the parsed fields become headers. "syslog" is SyslogUtils (syslogtcp, syslogudp):
 * Facility, Severity, priority, version, timestamp, host; a message whose header does not
 * parse keeps its priority headers and its whole text as body. "multiport" is SyslogParser
 * (multiport_syslogtcp): Priority, Version, Facility, Severity, timestamp (now for "-"), host;
 * a message that does not parse is Invalid.
 */
export type Dialect = "syslog" | "multiport";

/**
 * A site-specific layout (Flume's format.regex / format.search / format.replace /
 * format.dateFormat), tried before the standard ones. Its groups are, in order: priority,
 * version, timestamp, hostname, message.
 */
export interface CustomFormat {
  regex: RegExp;
  /** Parses the timestamp group (search/replace included) into epoch ms. */
  parseDate?: (text: string) => number | undefined;
}

export interface ParseOptions {
  dialect: Dialect;
  keepFields: KeepFields;
  /** RFC 3164 stamps are read in local time (syslogtcp/udp) or UTC (multiport), as Flume. */
  rfc3164Zone: ZoneRule;
  now: () => number;
  custom?: CustomFormat;
  /** Character set of the messages (multiport's charset.*): UTF-8 (default) or ISO-8859-1. */
  charset?: SyslogCharset;
}

export type SyslogCharset = "utf-8" | "latin1";

/** The charset names Flume configs use that we can read; undefined for others. */
export function syslogCharset(name: string): SyslogCharset | undefined {
  const n = name.trim().toLowerCase();
  if (n === "utf-8" || n === "utf8") return "utf-8";
  if (n === "iso-8859-1" || n === "latin1" || n === "us-ascii" || n === "ascii") return "latin1";
  return undefined;
}

// The message layouts of Flume's SyslogUtils (RFC 5424 first, then RFC 3164); fractions of a
// second may have up to nine digits here (Flume: six).
const RFC5424 =
  /^<(\d{1,3})>(?:(\d?)\s?)(?:(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[+-]\d{2}:\d{2}|Z)?)|-)\s(?:([\w][\w\d.@-]*)|-)\s(.*)$/s;
const RFC3164 = /^<(\d{1,3})>(?:(\d)?\s?)([A-Z][a-z][a-z]\s{1,2}\d{1,2}\s\d{2}:\d{2}:\d{2})\s([\w][\w\d.@-]*)\s(.*)$/s;
const PRIORITY = /^<(\d{1,3})>/;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

/** ISO-8859-1: one byte per character, every byte valid. */
function decodeLatin1(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) out += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return out;
}

function encodeLatin1(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

/**
 * Matches the RFC 5424 layout, then RFC 3164 (Flume's order). A month name right after the
 * priority can only be RFC 3164, so that case skips the RFC 5424 attempt.
 */
function matchLayout(text: string): { m: RegExpExecArray | null; is5424: boolean } {
  const close = text.indexOf(">");
  const c = close > 0 ? text.charCodeAt(close + 1) : 0;
  if (c >= 65 && c <= 90) return { m: RFC3164.exec(text), is5424: false };
  const m = RFC5424.exec(text);
  if (m) return { m, is5424: true };
  return { m: RFC3164.exec(text), is5424: false };
}

/** The last timestamps parsed, so a burst within one second parses its stamp once. */
class StampCache {
  private key = "";
  private value: number | undefined;
  get(text: string, parse: (t: string) => number | undefined): number | undefined {
    if (text === this.key) return this.value;
    this.key = text;
    this.value = parse(text);
    return this.value;
  }
}

export interface ParsedEvent {
  event: Event;
  /** Why the event is marked Invalid (for the log line), when it is. */
  invalid?: string;
}

function invalidEvent(bytes: Uint8Array, dialect: Dialect, reason: string): ParsedEvent {
  const headers: Record<string, string> =
    dialect === "syslog" ? { [SYSLOG_FACILITY]: "0", [SYSLOG_SEVERITY]: "0", [EVENT_STATUS]: STATUS_INVALID } : { [EVENT_STATUS]: STATUS_INVALID };
  return { event: { headers, body: bytes }, invalid: reason };
}

/** Turns one syslog message (frame without its trailer) into an event with Flume's headers. */
export class SyslogEventParser {
  private readonly stamps5424 = new StampCache();
  private readonly stamps3164 = new StampCache();

  private readonly latin1: boolean;

  constructor(private readonly options: ParseOptions) {
    this.latin1 = options.charset === "latin1";
  }

  /**
   * `part`: "whole" for a complete message, "first" for the first eventSize bytes of a longer
   * one (marked Incomplete), "rest" for what followed (marked Invalid, as Flume does).
   */
  parse(bytes: Uint8Array, part: "whole" | "first" | "rest" = "whole"): ParsedEvent {
    const { dialect } = this.options;
    if (part === "rest") return invalidEvent(bytes, dialect, "continuation of a message longer than eventSize");
    let text: string;
    try {
      text = this.latin1 ? decodeLatin1(bytes) : utf8.decode(bytes);
    } catch {
      return invalidEvent(bytes, dialect, "not valid UTF-8");
    }
    const result = dialect === "syslog" ? this.parseSyslog(text, bytes) : this.parseMultiport(text, bytes);
    if (part === "first") result.event.headers[EVENT_STATUS] = STATUS_INCOMPLETE;
    return result;
  }

  private parseSyslog(text: string, bytes: Uint8Array): ParsedEvent {
    const prio = PRIORITY.exec(text);
    if (!prio) return invalidEvent(bytes, "syslog", text.startsWith("<") ? "bad priority" : "no <priority> at the start");
    const pri = Number(prio[1]);
    const headers: Record<string, string> = { [SYSLOG_FACILITY]: String(pri >> 3), [SYSLOG_SEVERITY]: String(pri & 7) };
    const custom = this.options.custom;
    if (custom) {
      const c = custom.regex.exec(text);
      if (c) return { event: { headers: this.customHeaders(headers, c, custom), body: this.body(bytes, c[5] ?? "", c[1] ?? prio[1], c[2], c[3], c[4]) } };
    }
    const { m, is5424 } = matchLayout(text);
    if (!m) return { event: { headers, body: bytes } };
    const [, priority, version, stamp, host, msg] = m;
    headers.priority = priority;
    if (version) headers.version = version;
    if (stamp !== undefined) {
      const ts = is5424
        ? this.stamps5424.get(stamp, parseRfc5424Timestamp)
        : this.stamps3164.get(stamp, (t) => parseRfc3164Timestamp(t.replace("  ", " "), this.options.now(), this.options.rfc3164Zone));
      if (ts !== undefined) headers.timestamp = String(ts);
    }
    if (host) headers.host = host;
    return { event: { headers, body: this.body(bytes, msg, priority, version, stamp, host) } };
  }

  private customHeaders(headers: Record<string, string>, m: RegExpExecArray, custom: CustomFormat): Record<string, string> {
    const [, priority, version, stamp, host] = m;
    if (priority) headers.priority = priority;
    if (version) headers.version = version;
    if (stamp && custom.parseDate) {
      const ts = custom.parseDate(stamp);
      if (ts !== undefined) headers.timestamp = String(ts);
    }
    if (host) headers.host = host;
    return headers;
  }

  private parseMultiport(text: string, bytes: Uint8Array): ParsedEvent {
    const { m, is5424 } = matchLayout(text);
    if (!m) return invalidEvent(bytes, "multiport", PRIORITY.test(text) ? "unrecognised syslog header" : "no <priority> at the start");
    const [, priority, version, stamp, host, msg] = m;
    const pri = Number(priority);
    const headers: Record<string, string> = { Priority: priority, [SYSLOG_FACILITY]: String(pri >> 3), [SYSLOG_SEVERITY]: String(pri & 7) };
    if (version) headers.Version = version;
    let ts: number | undefined;
    if (stamp === undefined) ts = this.options.now();
    else if (is5424) ts = this.stamps5424.get(stamp, parseRfc5424Timestamp);
    else ts = this.stamps3164.get(stamp, (t) => parseRfc3164Timestamp(t.replace("  ", " "), this.options.now(), "utc"));
    if (ts === undefined) return invalidEvent(bytes, "multiport", `bad timestamp "${stamp}"`);
    headers.timestamp = String(ts);
    if (host === undefined) return invalidEvent(bytes, "multiport", "missing hostname");
    headers.host = host;
    return { event: { headers, body: this.body(bytes, msg, priority, version, stamp ?? "-", host) } };
  }

  /** The body: the message after the header, with the fields keepFields asks for put back. */
  private body(bytes: Uint8Array, msg: string, priority: string, version: string | undefined, stamp: string | undefined, host: string | undefined): Uint8Array {
    const keep = this.options.keepFields;
    if (keep === "all") return bytes;
    if (keep === null || keep.size === 0) {
      if (msg.length === 0) return bytes;
      // msg is a suffix of the decoded text, so its bytes are the frame's tail: no re-encoding.
      return bytes.subarray(bytes.length - (this.latin1 ? msg.length : byteLength(msg)));
    }
    let body = msg;
    if (keep.has("hostname")) body = `${host ?? "null"} ${body}`;
    if (keep.has("timestamp")) body = `${stamp ?? "null"} ${body}`;
    if (keep.has("version") && version) body = `${version} ${body}`;
    if (keep.has("priority")) body = `<${priority}>${body}`;
    return this.latin1 ? encodeLatin1(body) : encoder.encode(body);
  }
}

/** UTF-8 length of a string without encoding it. */
export function byteLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
