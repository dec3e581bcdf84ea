import type { Props } from "../../../config/schema.ts";
import { plainLink } from "../../component.ts";
import { ConfigurationError } from "../../../core/errors.ts";
import { DatePattern } from "../../../java/date-pattern.ts";
import { compileJavaFullMatch, compileJavaRegex, javaReplacement } from "../../../java/regex.ts";
import type { CustomFormat } from "./parse.ts";
import { DEFAULT_EVENT_SIZE, MIN_EVENT_SIZE } from "./parse.ts";

/** Properties every syslog source reads, with Flume's names and defaults. */
export const KEEP_FIELDS = { keepFields: {
  type: "string",
  default: "none",
  doc: "Header fields kept in the body: none, all, or a list of priority, version, timestamp, hostname (true/false are the old spellings of all/none).",
} } as const satisfies Props;
export const EVENT_SIZE = { eventSize: { type: "int", default: DEFAULT_EVENT_SIZE, min: 1, doc: "Longest message in bytes; longer ones become an Incomplete event and Invalid pieces." } } as const satisfies Props;
export const CLIENT_IP_HEADER = { clientIPHeader: { type: "string", doc: "Header to store the client's IP address in." } } as const satisfies Props;
export const CLIENT_HOSTNAME_HEADER = { clientHostnameHeader: { type: "string", doc: "Header to store the client's host name in (reverse lookup once per connection)." } } as const satisfies Props;

/** Flume raises an eventSize below 10 to 10. */
export function effectiveEventSize(n: number): number {
  return Math.max(n, MIN_EVENT_SIZE);
}

export const FORMAT_PREFIX = {
  prefix: "format.",
  doc: "format.regex (groups: priority, version, timestamp, hostname, message), format.search / format.replace (applied to the timestamp), format.dateFormat (a SimpleDateFormat pattern): a custom layout tried first",
} as const;

/** The format.* properties as a custom layout, or undefined when format.regex is not set. */
export function customFormat(f: Readonly<Record<string, string>>): CustomFormat | undefined {
  if (!f.regex) return undefined;
  const regex = compileJavaFullMatch(f.regex, "format.regex");
  if (!f.dateFormat) return { regex };
  let pattern: DatePattern;
  try {
    pattern = new DatePattern(f.dateFormat);
  } catch (err) {
    throw new ConfigurationError("format.dateFormat", (err as Error).message);
  }
  if (!f.search) return { regex, parseDate: (text) => pattern.parse(text) };
  const search = compileJavaRegex(f.search, "format.search", "g");
  const replace = javaReplacement(f.replace ?? "");
  return { regex, parseDate: (text) => pattern.parse(text.replace(search, replace)) };
}

/** Config errors of the format.* properties (for validate()). */
export function customFormatErrors(format: Readonly<Record<string, string>>): { key: string; message: string }[] {
  try {
    customFormat(format);
    return [];
  } catch (err) {
    if (err instanceof ConfigurationError) return [{ key: err.key, message: err.detail }];
    throw err;
  }
}

/**
 * How `flume simulate` feeds a syslog TCP source (ComponentDefinition.streamFeed): RFC 3164
 * lines from a simulated client, no answers.
 */
export const SYSLOG_FEED = {
  acks: () => false,
  line: (text: string) => `<13>Jan  1 00:00:00 client ${text}`,
};

/** What the simulator turns off on a syslog TCP source: TLS, and the reverse lookup of clientHostnameHeader (real DNS, not virtual time). */
export function syslogPlain<O extends { readonly ssl: boolean; readonly clientHostnameHeader?: string }>(options: O): { options: O; off: string[] } {
  return plainLink(options, [
    { name: "TLS", on: options.ssl, off: { ssl: false } as Partial<O> },
    { name: "clientHostnameHeader (a reverse DNS lookup)", on: options.clientHostnameHeader !== undefined, off: { clientHostnameHeader: undefined } as Partial<O> },
  ]);
}
