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

/**
 * Decimal strings of 0..999. Header values come from here (or from the small caches below)
 * rather than from regex captures: in JSC a capture is a substring that keeps the whole
 * decoded message alive for as long as the event is queued.
 */
const DECIMAL: readonly string[] = Array.from({ length: 1000 }, (_, i) => String(i));

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

/** The value of a leading "<1-3 digits>", or -1 (what /^<(\d{1,3})>/ matches). */
function readPriority(text: string): number {
  if (text.charCodeAt(0) !== 60) return -1;
  let pri = 0;
  let i = 1;
  for (; i < 4; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) break;
    pri = pri * 10 + c - 48;
  }
  return i > 1 && text.charCodeAt(i) === 62 ? pri : -1;
}

/** The priority header as written in the message ("<007>" keeps its zeros, as Flume). */
function priorityText(text: string, pri: number): string {
  const canonical = DECIMAL[pri];
  // "<" + digits + ">": the digits are canonical when their count matches.
  return text.charCodeAt(canonical.length + 1) === 62 ? canonical : flatCopy(text.slice(1, text.indexOf(">")));
}

/** A copy of s that shares no storage with the string it was cut from. */
function flatCopy(s: string): string {
  return s.length < 2 ? s : s.split("").join("");
}

/** A body that owns its bytes: a view would keep the whole socket read (up to 512 KiB) alive while the event is queued. */
function ownBytes(bytes: Uint8Array, start = 0): Uint8Array {
  const n = bytes.length - start;
  const out = new Uint8Array(n);
  // A short body is copied by hand: cheaper than making a subarray for set().
  if (n <= 128) for (let i = 0; i < n; i++) out[i] = bytes[start + i];
  else out.set(start === 0 ? bytes : bytes.subarray(start));
  return out;
}

/** Most distinct strings a parser keeps for reuse (host names); the cache is emptied when full. */
const INTERN_LIMIT = 1024;

/**
 * Matches the RFC 5424 layout, then RFC 3164 (Flume's order). A month name right after the
 * priority can only be RFC 3164, so that case skips the RFC 5424 attempt.
 */
function matchLayout(text: string): RegExpExecArray | null {
  const close = text.indexOf(">");
  const c = close > 0 ? text.charCodeAt(close + 1) : 0;
  if (c >= 65 && c <= 90) return RFC3164.exec(text);
  return RFC5424.exec(text) ?? RFC3164.exec(text);
}

/** Whether a matchLayout stamp is RFC 5424's (digits, or none for "-") rather than RFC 3164's (a month name). */
function is5424Stamp(stamp: string | undefined): boolean {
  return stamp === undefined || stamp.charCodeAt(0) <= 57;
}

/** The last timestamps parsed, so a burst within one second parses its stamp once. */
class StampCache {
  private key = "";
  private value: number | undefined;
  get(text: string, parse: (t: string) => number | undefined): number | undefined {
    if (text === this.key) return this.value;
    // Keeps one message's text alive; cheaper than copying stamps that change every message.
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
  return { event: { headers, body: ownBytes(bytes) }, invalid: reason };
}

const isDigit = (c: number) => c >= 48 && c <= 57;
const isLower = (c: number) => c >= 97 && c <= 122;
/** What \s matches in ASCII. */
const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);
/** \w */
const isWord = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
/** [\w\d.@-] */
const isHostChar = (c: number) => isWord(c) || c === 46 || c === 64 || c === 45;

/** Bytes [start, end) as a string, for ASCII (each byte one character). */
function ascii(bytes: Uint8Array, start: number, end: number): string {
  let s = "";
  for (let i = start; i < end; i++) s += String.fromCharCode(bytes[i]);
  return s;
}

function sameBytes(a: Uint8Array, aLength: number, b: Uint8Array, start: number, end: number): boolean {
  if (aLength !== end - start) return false;
  for (let i = 0; i < aLength; i++) if (a[i] !== b[start + i]) return false;
  return true;
}

/**
 * An RFC 3164 message read by the fast path. Its five headers are kept as the priority and
 * the two strings they come from and made into an object the first time something reads
 * them: queued untouched (a null or text sink), the event costs 48 bytes besides its body
 * instead of 96 for an event and its headers object.
 */
class Rfc3164Event implements Event {
  declare private made: Record<string, string> | undefined;

  constructor(
    public body: Uint8Array,
    private readonly pri: number,
    private readonly timestamp: string,
    private readonly host: string,
  ) {}

  get headers(): Record<string, string> {
    let h = this.made;
    if (h === undefined) {
      const pri = this.pri;
      this.made = h = { Facility: DECIMAL[pri >> 3], Severity: DECIMAL[pri & 7], priority: DECIMAL[pri], timestamp: this.timestamp, host: this.host };
    }
    return h;
  }

  set headers(headers: Record<string, string>) {
    this.made = headers;
  }

  toJSON(): Event {
    return { headers: this.headers, body: this.body };
  }
}

/** Turns one syslog message (frame without its trailer) into an event with Flume's headers. */
export class SyslogEventParser {
  /** Why the last parseRange event is Invalid, when it is (for the source's log line). */
  invalid: string | undefined;
  /** The RFC 3164 fast path applies (syslogtcp's defaults: no custom layout, no keepFields). */
  private readonly fast: boolean;
  /** The last stamp and host the fast path read, as bytes, and what they became. */
  private readonly fastStamp = new Uint8Array(16);
  private fastStampLength = -1;
  private fastTimestamp = "";
  private readonly fastHost = new Uint8Array(64);
  private fastHostLength = -1;
  private fastHostText = "";
  private readonly stamps5424 = new StampCache();
  private readonly stamps3164 = new StampCache();

  private readonly latin1: boolean;
  /** The last timestamp header, shared by the events of a burst. */
  private lastTs = Number.NaN;
  private lastTsText = "";
  /** Host names (and custom-layout fields) seen, so events share one copy. */
  private readonly interned = new Map<string, string>();
  private lastHost = "";

  // Made once, not per message.
  private readonly parse3164 = (t: string) => parseRfc3164Timestamp(t.replace("  ", " "), this.options.now(), this.options.rfc3164Zone);
  private readonly parse3164Utc = (t: string) => parseRfc3164Timestamp(t.replace("  ", " "), this.options.now(), "utc");

  constructor(private readonly options: ParseOptions) {
    this.latin1 = options.charset === "latin1";
    const keep = options.keepFields;
    this.fast = options.dialect === "syslog" && !options.custom && (keep === null || (keep !== "all" && keep.size === 0));
  }

  /**
   * The event of the message bytes[start, end): as parse(), without a view or a result object
   * per message. The common RFC 3164 message is read straight from its bytes (no text, no
   * regular expression); anything else goes through parse().
   */
  parseRange(bytes: Uint8Array, start: number, end: number, part: "whole" | "first" | "rest" = "whole"): Event {
    this.invalid = undefined;
    if (part === "whole" && this.fast) {
      const e = this.fast3164(bytes, start, end);
      if (e !== null) return e;
    }
    const r = this.parse(start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end), part);
    this.invalid = r.invalid;
    return r.event;
  }

  /**
   * "<PRI>Mmm dd hh:mm:ss host msg" in ASCII, read as the RFC 3164 expression reads it (a month
   * name right after the priority rules out RFC 5424). null when the message is anything else:
   * another layout, a priority written with leading zeros, a stamp that does not parse, bytes
   * outside ASCII (parse() checks UTF-8), an empty message.
   */
  private fast3164(b: Uint8Array, start: number, end: number): Event | null {
    if (end - start < 20 || b[start] !== 60) return null;
    let i = start + 1;
    let pri = 0;
    while (i < end && i - start <= 3 && isDigit(b[i])) pri = pri * 10 + b[i++] - 48;
    const digits = i - start - 1;
    if (digits === 0 || b[i] !== 62 || digits !== DECIMAL[pri].length) return null;
    i++;
    // [A-Z][a-z][a-z]\s{1,2}\d{1,2}\s\d{2}:\d{2}:\d{2}
    const stampStart = i;
    if (i + 15 > end || b[i] < 65 || b[i] > 90 || !isLower(b[i + 1]) || !isLower(b[i + 2]) || !isSpace(b[i + 3])) return null;
    i += 4;
    if (isSpace(b[i])) i++;
    if (!isDigit(b[i])) return null;
    i++;
    if (isDigit(b[i])) i++;
    if (i + 9 > end || !isSpace(b[i])) return null;
    i++;
    if (!isDigit(b[i]) || !isDigit(b[i + 1]) || b[i + 2] !== 58 || !isDigit(b[i + 3]) || !isDigit(b[i + 4]) || b[i + 5] !== 58 || !isDigit(b[i + 6]) || !isDigit(b[i + 7])) return null;
    i += 8;
    const stampEnd = i;
    // \s[\w][\w\d.@-]*\s
    if (i + 2 >= end || !isSpace(b[i]) || !isWord(b[i + 1])) return null;
    const hostStart = ++i;
    while (i < end && isHostChar(b[i])) i++;
    const hostEnd = i;
    if (i >= end - 1 || !isSpace(b[i]) || hostEnd - hostStart > this.fastHost.length) return null;
    const msgStart = i + 1;
    for (let k = msgStart; k < end; k++) if (b[k] >= 0x80) return null;

    let timestamp = this.fastTimestamp;
    if (!sameBytes(this.fastStamp, this.fastStampLength, b, stampStart, stampEnd)) {
      const ts = this.stamps3164.get(ascii(b, stampStart, stampEnd), this.parse3164);
      if (ts === undefined) return null;
      timestamp = this.tsText(ts);
      this.fastStamp.set(b.subarray(stampStart, stampEnd));
      this.fastStampLength = stampEnd - stampStart;
      this.fastTimestamp = timestamp;
    }
    let host = this.fastHostText;
    if (!sameBytes(this.fastHost, this.fastHostLength, b, hostStart, hostEnd)) {
      host = this.intern(ascii(b, hostStart, hostEnd));
      this.fastHost.set(b.subarray(hostStart, hostEnd));
      this.fastHostLength = hostEnd - hostStart;
      this.fastHostText = host;
    }
    const n = end - msgStart;
    const body = new Uint8Array(n);
    if (n <= 128) for (let k = 0; k < n; k++) body[k] = b[msgStart + k];
    else body.set(b.subarray(msgStart, end));
    return new Rfc3164Event(body, pri, timestamp, host);
  }

  private tsText(ts: number): string {
    if (ts !== this.lastTs) {
      this.lastTs = ts;
      this.lastTsText = String(ts);
    }
    return this.lastTsText;
  }

  /** One shared copy per distinct value, detached from the message it was captured from. */
  private intern(s: string): string {
    if (s === this.lastHost) return this.lastHost;
    let v = this.interned.get(s);
    if (v === undefined) {
      if (this.interned.size >= INTERN_LIMIT) this.interned.clear();
      v = flatCopy(s);
      this.interned.set(v, v);
    }
    this.lastHost = v;
    return v;
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
    const pri = readPriority(text);
    if (pri < 0) return invalidEvent(bytes, "syslog", text.startsWith("<") ? "bad priority" : "no <priority> at the start");
    const facility = DECIMAL[pri >> 3];
    const severity = DECIMAL[pri & 7];
    const custom = this.options.custom;
    if (custom) {
      const c = custom.regex.exec(text);
      if (c) {
        const headers: Record<string, string> = { Facility: facility, Severity: severity };
        return { event: { headers: this.customHeaders(headers, c, custom), body: this.body(bytes, c[5] ?? "", c[1] ?? priorityText(text, pri), c[2], c[3], c[4]) } };
      }
    }
    const m = matchLayout(text);
    if (!m) return { event: { headers: { Facility: facility, Severity: severity }, body: ownBytes(bytes) } };
    const [, , version, stamp, host, msg] = m;
    const priority = priorityText(text, pri);
    let timestamp: string | undefined;
    if (stamp !== undefined) {
      const ts = is5424Stamp(stamp)
        ? this.stamps5424.get(stamp, parseRfc5424Timestamp)
        : this.stamps3164.get(stamp, this.parse3164);
      if (ts !== undefined) timestamp = this.tsText(ts);
    }
    const body = this.body(bytes, msg, priority, version, stamp, host);
    // The usual shapes as literals (Flume's header order), so every event gets the same
    // compact object layout; the rarer ones are built up.
    let headers: Record<string, string>;
    if (timestamp !== undefined && host) {
      headers = version
        ? { Facility: facility, Severity: severity, priority, version: DECIMAL[version.charCodeAt(0) - 48], timestamp, host: this.intern(host) }
        : { Facility: facility, Severity: severity, priority, timestamp, host: this.intern(host) };
    } else {
      headers = { Facility: facility, Severity: severity, priority };
      if (version) headers.version = DECIMAL[version.charCodeAt(0) - 48];
      if (timestamp !== undefined) headers.timestamp = timestamp;
      if (host) headers.host = this.intern(host);
    }
    return { event: { headers, body } };
  }

  private customHeaders(headers: Record<string, string>, m: RegExpExecArray, custom: CustomFormat): Record<string, string> {
    const [, priority, version, stamp, host] = m;
    if (priority) headers.priority = this.intern(priority);
    if (version) headers.version = this.intern(version);
    if (stamp && custom.parseDate) {
      const ts = custom.parseDate(stamp);
      if (ts !== undefined) headers.timestamp = this.tsText(ts);
    }
    if (host) headers.host = this.intern(host);
    return headers;
  }

  private parseMultiport(text: string, bytes: Uint8Array): ParsedEvent {
    const m = matchLayout(text);
    if (!m) return invalidEvent(bytes, "multiport", readPriority(text) >= 0 ? "unrecognised syslog header" : "no <priority> at the start");
    const [, , version, stamp, host, msg] = m;
    const pri = readPriority(text);
    const priority = priorityText(text, pri);
    let ts: number | undefined;
    if (stamp === undefined) ts = this.options.now();
    else if (is5424Stamp(stamp)) ts = this.stamps5424.get(stamp, parseRfc5424Timestamp);
    else ts = this.stamps3164.get(stamp, this.parse3164Utc);
    if (ts === undefined) return invalidEvent(bytes, "multiport", `bad timestamp "${stamp}"`);
    if (host === undefined) return invalidEvent(bytes, "multiport", "missing hostname");
    const facility = DECIMAL[pri >> 3];
    const severity = DECIMAL[pri & 7];
    const timestamp = this.tsText(ts);
    const headers: Record<string, string> = version
      ? { Priority: priority, Facility: facility, Severity: severity, Version: DECIMAL[version.charCodeAt(0) - 48], timestamp, host: this.intern(host) }
      : { Priority: priority, Facility: facility, Severity: severity, timestamp, host: this.intern(host) };
    return { event: { headers, body: this.body(bytes, msg, priority, version, stamp ?? "-", host) } };
  }

  /** The body: the message after the header, with the fields keepFields asks for put back. */
  private body(bytes: Uint8Array, msg: string, priority: string, version: string | undefined, stamp: string | undefined, host: string | undefined): Uint8Array {
    const keep = this.options.keepFields;
    if (keep === "all") return ownBytes(bytes);
    if (keep === null || keep.size === 0) {
      if (msg.length === 0) return ownBytes(bytes);
      // msg is a suffix of the decoded text, so its bytes are the frame's tail: no re-encoding.
      return ownBytes(bytes, bytes.length - (this.latin1 ? msg.length : byteLength(msg)));
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
