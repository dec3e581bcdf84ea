import type { OptionsOf, Props } from "../../../config/schema.ts";
import { plainLink, tlsFeature } from "../../component.ts";
import { ConfigurationError, configurationProblems } from "../../../core/errors.ts";
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

/** A custom layout tried before the standard ones (see customFormat). */
export const FORMAT_PROPS = {
  "format.regex": { type: "string", doc: "A custom layout tried first: a regex whose groups are priority, version, timestamp, hostname, message" },
  "format.search": { type: "string", doc: "A regex applied to the custom layout's timestamp before it is parsed" },
  "format.replace": { type: "string", default: "", doc: "What format.search's matches are replaced with" },
  "format.dateFormat": { type: "string", doc: "The custom layout's timestamp as a SimpleDateFormat pattern" },
} as const satisfies Props;

type FormatOptions = OptionsOf<typeof FORMAT_PROPS>;

/** The format.* properties as a custom layout, or undefined when format.regex is not set. */
export function customFormat(f: FormatOptions): CustomFormat | undefined {
  if (!f["format.regex"]) return undefined;
  const regex = compileJavaFullMatch(f["format.regex"], "format.regex");
  if (!f["format.dateFormat"]) return { regex };
  let pattern: DatePattern;
  try {
    pattern = new DatePattern(f["format.dateFormat"]);
  } catch (err) {
    throw new ConfigurationError("format.dateFormat", (err as Error).message);
  }
  if (!f["format.search"]) return { regex, parseDate: (text) => pattern.parse(text) };
  const search = compileJavaRegex(f["format.search"], "format.search", "g");
  const replace = javaReplacement(f["format.replace"]);
  return { regex, parseDate: (text) => pattern.parse(text.replace(search, replace)) };
}

/** Config errors of the format.* properties (for validate()). */
export function customFormatErrors(format: FormatOptions): { key: string; message: string }[] {
  return configurationProblems(() => customFormat(format));
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
    tlsFeature(options),
    { name: "clientHostnameHeader (a reverse DNS lookup)", on: options.clientHostnameHeader !== undefined, off: { clientHostnameHeader: undefined } as Partial<O> },
  ]);
}
