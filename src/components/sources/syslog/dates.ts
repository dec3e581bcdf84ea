/**
 * Syslog timestamps to epoch milliseconds.
 *
 * RFC 5424 stamps carry their own offset, which we honour. (Flume 1.11 parses them with
 * SimpleDateFormat.parse, which stops before the offset and reads the time in the JVM's zone;
 * on the usual UTC hosts both agree.) RFC 3164 stamps have no year and no zone: the year is
 * the current one, moved back a year when that would put the message more than a month in
 * the future and forward when it is more than eleven months old (as Flume's SyslogUtils).
 */

const MONTHS: Record<string, number> = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 };

const RFC5424 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?$/;
const RFC3164 = /^([A-Z][a-z][a-z])\s{1,2}(\d{1,2})\s(\d{2}):(\d{2}):(\d{2})$/;

export type ZoneRule = "local" | "utc";

export function parseRfc5424Timestamp(text: string): number | undefined {
  const m = RFC5424.exec(text);
  if (!m) return undefined;
  const millis = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000 + 1e-6) : 0;
  // Six Number() calls rather than an array and map(): with fractions of a second every message misses the stamp cache.
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  const h = Number(m[4]);
  const mi = Number(m[5]);
  const s = Number(m[6]);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return undefined;
  const zone = m[8];
  if (zone === undefined) return new Date(y, mo - 1, d, h, mi, s, millis).getTime();
  let offset = 0;
  if (zone !== "Z") offset = (zone[0] === "-" ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  return Date.UTC(y, mo - 1, d, h, mi, s, millis) - offset * 60000;
}

function at(zone: ZoneRule, year: number, month: number, day: number, h: number, mi: number, s: number): number {
  return zone === "utc" ? Date.UTC(year, month, day, h, mi, s) : new Date(year, month, day, h, mi, s).getTime();
}

function addMonths(zone: ZoneRule, t: number, months: number): number {
  const d = new Date(t);
  if (zone === "utc") d.setUTCMonth(d.getUTCMonth() + months);
  else d.setMonth(d.getMonth() + months);
  return d.getTime();
}

export function parseRfc3164Timestamp(text: string, now: number, zone: ZoneRule = "local"): number | undefined {
  const m = RFC3164.exec(text);
  if (!m) return undefined;
  const month = MONTHS[m[1]];
  if (month === undefined) return undefined;
  const [day, h, mi, s] = [m[2], m[3], m[4], m[5]].map(Number);
  if (day < 1 || day > 31 || h > 23 || mi > 59 || s > 60) return undefined;
  const year = new Date(now).getUTCFullYear();
  let t = at(zone, year, month, day, h, mi, s);
  if (t > now && addMonths(zone, t, -1) > now) t = at(zone, year - 1, month, day, h, mi, s);
  else if (t < now && addMonths(zone, t, 11) < now) t = at(zone, year + 1, month, day, h, mi, s);
  return t;
}
