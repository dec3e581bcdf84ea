/**
 * Flume's escape sequences (BucketPath), one implementation for every sink that takes them:
 * the HDFS sink's hdfs.path, hdfs.filePrefix and hdfs.fileSuffix, the Kafka sink's kafka.topic.
 * %{header} (empty when the event lacks it), the date shorthands %a %A %b %B %c %d %e %D %H %I
 * %j %k %l %m %n %M %p %s %S %t %y %Y %z %% (from the `timestamp` header, or the clock with
 * useLocalTimeStamp, rounded down when round is on), and %[localhost] %[IP] %[FQDN].
 *
 * `escape` writes header values as they are (Flume's escapeString). `directory` and `name`, for
 * file paths, go further than Flume: a header value can never leave the directory the path's
 * literal part names: '/', '\', ':', '%' and control characters in it are percent-encoded, and a
 * path segment that comes out as "." or ".." is encoded too.
 */
import { promises as dns } from "node:dns";
import { hostname } from "node:os";
import { ConfigurationError, EventDeliveryException } from "../core/errors.ts";

export type RoundUnit = "second" | "minute" | "hour";

export interface EscapeOptions {
  /** An IANA time zone (Java's IDs); the process's own when absent. */
  timeZone?: string;
  round: boolean;
  roundValue: number;
  roundUnit: RoundUnit;
  useLocalTimeStamp: boolean;
  /** The setting naming the time zone, in the error for an unknown one (default "timeZone"). */
  timeZoneKey?: string;
  /** The setting that makes the clock the event's time, offered when an event has no timestamp; none when the sink has no such setting. */
  useLocalTimeStampKey?: string;
}

/** The host names %[localhost], %[IP] and %[FQDN] stand for (looked up once, at start). */
export interface HostNames {
  localhost: string;
  ip: string;
  fqdn: string;
}

/**
 * This host's names as Java's InetAddress.getLocalHost() gives them: the host name, its address
 * and its name in DNS; without a resolver, the host name and `interfaceAddress()`.
 */
export async function lookupHostNames(interfaceAddress: () => string): Promise<HostNames> {
  const localhost = hostname();
  let ip = interfaceAddress();
  let fqdn = localhost;
  try {
    ip = (await dns.lookup(localhost)).address;
    const names = await dns.reverse(ip);
    if (names[0]) fqdn = names[0];
  } catch {
    // no resolver: the host name and the interface's address
  }
  return { localhost, ip, fqdn };
}

type Part = { literal: string } | { header: string } | { date: string } | { host: keyof HostNames };

/** Thrown when an event lacks the timestamp a time escape needs; the batch is rolled back, as in Flume. */
export class MissingTimestampError extends EventDeliveryException {}

const TAG = /%(\w|%)|%\{([\w.-]+)\}|%\[(\w+)\]/g;
const HAS_TAG = new RegExp(TAG.source);

/** Whether the text holds an escape (valid or not): what a setting taken as written would keep as it is. */
export function containsEscape(text: string): boolean {
  return HAS_TAG.test(text);
}

/** A template compiled once at configure time. */
export class EscapeTemplate {
  readonly parts: readonly Part[];
  readonly needsTime: boolean;
  readonly needsHosts: boolean;
  readonly isLiteral: boolean;

  constructor(
    readonly template: string,
    readonly key: string,
  ) {
    const parts: Part[] = [];
    // Where the last escape ended: 0 when there is none.
    let last = 0;
    for (const m of template.matchAll(TAG)) {
      if (m.index > last) parts.push({ literal: template.slice(last, m.index) });
      if (m[2] !== undefined) parts.push({ header: m[2] });
      else if (m[3] !== undefined) {
        const host = m[3].toLowerCase();
        if (host !== "localhost" && host !== "ip" && host !== "fqdn") {
          throw new ConfigurationError(key, `the static escape %[${m[3]}] matches none of localhost, IP, FQDN`);
        }
        parts.push({ host });
      } else if (m[1] === "%") parts.push({ literal: "%" });
      else parts.push({ date: m[1] });
      last = m.index + m[0].length;
    }
    if (last < template.length) parts.push({ literal: template.slice(last) });
    this.parts = parts;
    this.needsTime = parts.some((p) => "date" in p);
    this.needsHosts = parts.some((p) => "host" in p);
    this.isLiteral = last === 0;
  }

  /** The template's text before its first escape: the part no event can change. */
  get fixedPrefix(): string {
    if (this.isLiteral) return this.template;
    const first = this.parts[0];
    return "literal" in first ? first.literal : "";
  }
}

/** Percent-encodes what would let a header value change the directory: separators, ':', '%', control characters. */
export function sanitizeHeaderValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  return /[/\\:%\x00-\x1f\x7f]/.test(value) ? value.replace(/[/\\:%\x00-\x1f\x7f]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`) : value;
}

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** The calendar fields of one instant in one zone. */
interface Fields {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: number;
  dayOfYear: number;
  /** Minutes east of UTC. */
  offset: number;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/**
 * Calendar fields in a time zone, through Intl (one formatter per zone), cached for the last
 * second asked: a batch's events mostly share it.
 */
export class ZonedCalendar {
  private readonly format: Intl.DateTimeFormat;
  private lastSecond = Number.NaN;
  private last: Fields | null = null;

  constructor(
    readonly timeZone?: string,
    key = "timeZone",
  ) {
    try {
      this.format = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
    } catch {
      throw new ConfigurationError(key, `unknown time zone "${timeZone}" (expected an ID such as UTC or America/Los_Angeles)`);
    }
  }

  fields(ts: number): Fields {
    const second = Math.floor(ts / 1000);
    if (second === this.lastSecond && this.last) return this.last;
    const v: Record<string, number> = {};
    for (const p of this.format.formatToParts(new Date(second * 1000))) if (p.type !== "literal") v[p.type] = Number(p.value);
    const utc = Date.UTC(v.year, v.month - 1, v.day, v.hour, v.minute, v.second);
    const f: Fields = {
      year: v.year,
      month: v.month,
      day: v.day,
      hour: v.hour,
      minute: v.minute,
      second: v.second,
      weekday: new Date(utc).getUTCDay(),
      dayOfYear: Math.floor((utc - Date.UTC(v.year, 0, 1)) / 86_400_000) + 1,
      offset: Math.round((utc - second * 1000) / 60_000),
    };
    this.lastSecond = second;
    this.last = f;
    return f;
  }

  /** Flume's TimestampRoundDownUtil: down to a multiple of `value` units of the zone's clock, milliseconds cleared. */
  roundDown(ts: number, value: number, unit: RoundUnit): number {
    const f = this.fields(ts);
    const ms = ((ts % 1000) + 1000) % 1000;
    const v = Math.max(1, value);
    if (unit === "second") return ts - ms - (f.second % v) * 1000;
    if (unit === "minute") return ts - ms - f.second * 1000 - (f.minute % v) * 60_000;
    return ts - ms - f.second * 1000 - f.minute * 60_000 - (f.hour % v) * 3_600_000;
  }

  /** One date shorthand of Flume's BucketPath, as Java's SimpleDateFormat (US locale) writes it. */
  shorthand(c: string, ts: number, raw: string): string {
    const f = this.fields(ts);
    const h12 = f.hour % 12 === 0 ? 12 : f.hour % 12;
    switch (c) {
      case "a":
        return WEEKDAYS[f.weekday].slice(0, 3);
      case "A":
        return WEEKDAYS[f.weekday];
      case "b":
        return MONTHS[f.month - 1].slice(0, 3);
      case "B":
        return MONTHS[f.month - 1];
      case "c":
        return `${WEEKDAYS[f.weekday].slice(0, 3)} ${MONTHS[f.month - 1].slice(0, 3)} ${f.day} ${pad(f.hour)}:${pad(f.minute)}:${pad(f.second)} ${f.year}`;
      case "d":
        return pad(f.day);
      case "e":
        return String(f.day);
      case "D":
        return `${pad(f.month)}/${pad(f.day)}/${pad(f.year % 100)}`;
      case "H":
        return pad(f.hour);
      case "I":
        return pad(h12);
      case "j":
        return pad(f.dayOfYear, 3);
      case "k":
        return String(f.hour);
      case "l":
        return String(h12);
      case "m":
        return pad(f.month);
      case "M":
        return pad(f.minute);
      case "n":
        return String(f.month);
      case "p":
        return f.hour < 12 ? "AM" : "PM";
      case "s":
        return String(Math.floor(ts / 1000));
      case "S":
        return pad(f.second);
      case "t":
        return raw;
      case "y":
        return pad(f.year % 100);
      case "Y":
        return String(f.year);
      case "z": {
        const o = Math.abs(f.offset);
        return `${f.offset < 0 ? "-" : "+"}${pad(Math.floor(o / 60))}${pad(o % 60)}`;
      }
      default:
        // Flume replaces an unknown shorthand with nothing.
        return "";
    }
  }
}

/** Escapes templates for events: one per sink, sharing its calendar and host names. */
export class Escaper {
  private readonly calendar: ZonedCalendar;

  constructor(
    readonly options: EscapeOptions,
    private readonly hosts: HostNames,
    private readonly now: () => number,
  ) {
    this.calendar = new ZonedCalendar(options.timeZone, options.timeZoneKey);
  }

  /** The event's time for the date escapes: [rounded time, the raw value %t writes]. */
  timeOf(headers: Readonly<Record<string, string>>, template: EscapeTemplate): [number, string] {
    let ts: number;
    let raw: string;
    if (this.options.useLocalTimeStamp) {
      ts = this.now();
      raw = String(ts);
    } else {
      const h = headers.timestamp;
      if (h === undefined) {
        const local = this.options.useLocalTimeStampKey;
        throw new MissingTimestampError(
          `${template.key} "${template.template}" needs the event's time, but the event has no timestamp header: add a timestamp interceptor to the source${local ? ` or set ${local} = true` : ""}`,
        );
      }
      ts = Number(h);
      if (!/^-?\d+$/.test(h.trim()) || !Number.isSafeInteger(ts)) {
        throw new MissingTimestampError(`${template.key} "${template.template}" needs the event's time, but its timestamp header "${h}" is not a number of milliseconds`);
      }
      raw = h;
    }
    if (this.options.round) ts = this.calendar.roundDown(ts, this.options.roundValue, this.options.roundUnit);
    return [ts, raw];
  }

  /** The template with the event's values, header values as they are (Flume's BucketPath.escapeString). */
  escape(template: EscapeTemplate, headers: Readonly<Record<string, string>>, time?: [number, string]): string {
    return this.render(template, headers, time, false);
  }

  private render(template: EscapeTemplate, headers: Readonly<Record<string, string>>, time: [number, string] | undefined, pathSafe: boolean): string {
    if (template.isLiteral) return template.template;
    const t = template.needsTime ? (time ?? this.timeOf(headers, template)) : undefined;
    let out = "";
    for (const p of template.parts) {
      if ("literal" in p) out += p.literal;
      else if ("header" in p) {
        const v = headers[p.header] ?? "";
        out += pathSafe ? sanitizeHeaderValue(v) : v;
      } else if ("host" in p) out += this.hosts[p.host];
      else out += this.calendar.shorthand(p.date, (t as [number, string])[0], (t as [number, string])[1]);
    }
    return out;
  }

  /**
   * The directory for an event: the escaped path with every segment after the template's
   * literal prefix kept inside it (header values sanitized, "." and ".." segments encoded).
   */
  directory(template: EscapeTemplate, headers: Readonly<Record<string, string>>, time?: [number, string]): string {
    const escaped = this.render(template, headers, time, true);
    if (template.isLiteral) return escaped;
    const fixed = template.fixedPrefix;
    const cut = fixed.lastIndexOf("/") + 1;
    const head = escaped.slice(0, cut);
    const tail = escaped
      .slice(cut)
      .split("/")
      .map((seg) => (seg === "." ? "%2E" : seg === ".." ? "%2E%2E" : seg))
      .join("/");
    return head + tail;
  }

  /** A file name part (prefix or suffix): never "." or "..", never a separator. */
  name(template: EscapeTemplate, headers: Readonly<Record<string, string>>, time?: [number, string]): string {
    const escaped = this.render(template, headers, time, true);
    if (template.isLiteral) return escaped;
    return escaped === "." ? "%2E" : escaped === ".." ? "%2E%2E" : escaped;
  }
}
