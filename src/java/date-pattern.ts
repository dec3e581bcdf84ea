import { ConfigurationError } from "../core/errors.ts";

/**
 * Parses dates written by a Joda-Time / SimpleDateFormat pattern (as Flume's
 * RegexExtractorInterceptorMillisSerializer and the syslog sources' custom formats use) into
 * epoch milliseconds. Supports the fields that appear in log timestamps: y M d H k h K m s S a
 * Z (offset) and E (day name, checked for shape only); text in single quotes is literal. Without
 * a Z field the time is read in the agent's local time zone, as Java's default.
 */

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const FULL_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

type Field = "y" | "M" | "d" | "H" | "k" | "h" | "K" | "m" | "s" | "S" | "a" | "Z" | "E" | "D";
type Token = { literal: string } | { field: Field; count: number };

const NUMERIC = new Set<Field>(["y", "M", "d", "H", "k", "h", "K", "m", "s", "S", "D"]);

/** MMM and MMMM are month names, M and MM month numbers. */
const isNumeric = (t: { field: Field; count: number }) => NUMERIC.has(t.field) && !(t.field === "M" && t.count >= 3);

function tokenize(pattern: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i];
    if (c === "'") {
      const end = pattern.indexOf("'", i + 1);
      if (end === i + 1) {
        tokens.push({ literal: "'" });
        i += 2;
        continue;
      }
      if (end < 0) throw new ConfigurationError("pattern", `unterminated quote in date pattern "${pattern}"`);
      tokens.push({ literal: pattern.slice(i + 1, end) });
      i = end + 1;
    } else if (/[A-Za-z]/.test(c)) {
      let j = i;
      while (pattern[j] === c) j++;
      if (!"yMdHkhKmsSaZEDY".includes(c)) throw new ConfigurationError("pattern", `date pattern letter "${c}" is not supported in "${pattern}"`);
      tokens.push({ field: (c === "Y" ? "y" : c) as Field, count: j - i });
      i = j;
    } else {
      tokens.push({ literal: c });
      i++;
    }
  }
  return tokens;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

export class DatePattern {
  private readonly regex: RegExp;
  private readonly fields: { field: Field; count: number }[] = [];

  private readonly defaultYear: number;

  /** `defaultYear`: the year when the pattern has a month or day but no year (Joda: 2000, SimpleDateFormat: 1970). */
  constructor(
    readonly pattern: string,
    options: { defaultYear?: number } = {},
  ) {
    this.defaultYear = options.defaultYear ?? 1970;
    const tokens = tokenize(pattern);
    let source = "^";
    tokens.forEach((t, idx) => {
      if ("literal" in t) {
        source += escapeRe(t.literal);
        return;
      }
      this.fields.push(t);
      const next = tokens[idx + 1];
      const adjacentNumeric = next !== undefined && "field" in next && isNumeric(next);
      if (isNumeric(t)) {
        if (adjacentNumeric) source += `(\\d{${t.count}})`;
        else if (t.field === "S") source += "(\\d+)";
        // yy before a literal reads any year (Joda's lenient parse); only exactly two digits pivot.
        else if (t.field === "y") source += "([-+]?\\d{1,9})";
        else source += `(\\d{1,${Math.max(t.count, t.field === "D" ? 3 : 2)}})`;
      } else if (t.field === "M") {
        source += "([A-Za-z]+)";
      } else if (t.field === "a") source += "([AaPp][Mm])";
      else if (t.field === "E") source += "([A-Za-z]+)";
      else source += "(Z|[-+]\\d{2}:?\\d{2})";
    });
    this.regex = new RegExp(`${source}$`);
  }

  /** Epoch milliseconds, or undefined when the text does not fit the pattern. */
  parse(text: string, now = Date.now()): number | undefined {
    const m = this.regex.exec(text.trim());
    if (!m) return undefined;
    // Joda applies its default year only when the largest field is a month or a day.
    let year = this.fields.some((f) => "MdDE".includes(f.field)) ? this.defaultYear : 1970;
    let dayOfYear: number | undefined;
    let month = 0;
    let day = 1;
    let hour = 0;
    let minute = 0;
    let second = 0;
    let millis = 0;
    let pm: boolean | undefined;
    let offsetMinutes: number | undefined;
    for (let i = 0; i < this.fields.length; i++) {
      const { field, count } = this.fields[i];
      const v = m[i + 1];
      switch (field) {
        case "y": {
          year = Number(v);
          if (count === 2 && /^\d{2}$/.test(v)) {
            // Two-digit years land from 80 years before now to 19 after (Joda's pivot, now - 30).
            const current = new Date(now).getFullYear();
            year += Math.floor(current / 100) * 100;
            if (year > current + 19) year -= 100;
            else if (year < current - 80) year += 100;
          }
          break;
        }
        case "M": {
          if (/^\d+$/.test(v)) month = Number(v) - 1;
          else {
            const lower = v.toLowerCase();
            month = FULL_MONTHS.indexOf(lower);
            if (month < 0) month = MONTHS.indexOf(lower.slice(0, 3));
            if (month < 0 || (lower.length > 3 && FULL_MONTHS[month] !== lower)) return undefined;
          }
          break;
        }
        case "d":
          day = Number(v);
          break;
        case "H":
          hour = Number(v);
          break;
        case "k":
          hour = Number(v) % 24;
          break;
        case "h":
          hour = Number(v) % 12;
          break;
        case "K":
          hour = Number(v);
          break;
        case "m":
          minute = Number(v);
          break;
        case "s":
          second = Number(v);
          break;
        case "S":
          // Joda reads the digits as a fraction of a second.
          millis = Math.floor(Number(`0.${v}`) * 1000 + 1e-6);
          break;
        case "a":
          pm = v.toLowerCase() === "pm";
          break;
        case "Z": {
          if (v === "Z") offsetMinutes = 0;
          else {
            const sign = v[0] === "-" ? -1 : 1;
            const digits = v.slice(1).replace(":", "");
            offsetMinutes = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2)));
          }
          break;
        }
        case "D":
          dayOfYear = Number(v);
          break;
        case "E":
          break;
      }
    }
    if (pm !== undefined && pm && hour < 12) hour += 12;
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    const refYear = leap ? 2000 : 2001; // a year of the same kind, for month lengths
    if (dayOfYear !== undefined) {
      if (dayOfYear < 1 || dayOfYear > (leap ? 366 : 365)) return undefined;
      const date = new Date(Date.UTC(refYear, 0, dayOfYear));
      month = date.getUTCMonth();
      day = date.getUTCDate();
    }
    // Joda rejects a day the month does not have (Feb 30) instead of rolling over.
    const daysInMonth = new Date(Date.UTC(refYear, month + 1, 0)).getUTCDate();
    if (month < 0 || month > 11 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 60) return undefined;
    if (offsetMinutes !== undefined) return Date.UTC(year, month, day, hour, minute, second, millis) - offsetMinutes * 60000;
    const d = new Date(year, month, day, hour, minute, second, millis);
    return d.getTime();
  }
}
