import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import type { Event } from "../../core/event.ts";
import { ConfigurationError } from "../../core/errors.ts";
import { EventInterceptor, type Interceptor } from "../../core/interceptor.ts";
import { compileJavaRegex, javaReplacement, javaReplacementProblem } from "../../java/regex.ts";

/** Node's TextDecoder labels for the charsets Flume configs name. */
const CHARSETS: Record<string, string> = {
  "utf-8": "utf-8",
  utf8: "utf-8",
  "iso-8859-1": "latin1",
  latin1: "latin1",
  "us-ascii": "latin1",
  ascii: "latin1",
  "utf-16le": "utf-16le",
  "utf-16": "utf-16le",
};

const utf8 = new TextDecoder();

function decodeAs(body: Uint8Array, charset: string): string {
  if (charset === "utf-8") return utf8.decode(body);
  return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString(charset === "latin1" ? "latin1" : "utf16le");
}

function encodeAs(text: string, charset: string): Uint8Array {
  if (charset === "utf-8") return new TextEncoder().encode(text);
  return Buffer.from(text, charset === "latin1" ? "latin1" : "utf16le");
}

/** Rewrites the body with a regex replace-all (Flume's SearchAndReplaceInterceptor). */
export class SearchAndReplaceInterceptor extends EventInterceptor {
  private readonly replace: (match: string, ...rest: unknown[]) => string;

  constructor(
    private readonly search: RegExp,
    replaceString: string,
    private readonly charset = "utf-8",
  ) {
    super();
    this.replace = javaReplacement(replaceString);
  }

  intercept(event: Event): Event {
    const text = decodeAs(event.body, this.charset);
    event.body = encodeAs(text.replace(this.search, this.replace), this.charset);
    return event;
  }
}

export function charsetLabel(name: string): string | undefined {
  return CHARSETS[name.toLowerCase()];
}

export const definition = defineComponent({
  ...builtIn.searchReplaceInterceptor,
  doc: "Replaces every match of a regex in the body (Java replaceAll syntax: $1 refers to a group).",
  props: {
    searchPattern: { type: "string", required: true, doc: "Regular expression to search for." },
    replaceString: { type: "string", default: "", doc: "Replacement; $n inserts group n." },
    charset: { type: "string", default: "UTF-8", doc: "Charset of the body (UTF-8, ISO-8859-1, US-ASCII, UTF-16LE)." },
  },
  create(config): Interceptor {
    const charset = charsetLabel(config.charset);
    if (!charset) throw new ConfigurationError("charset", `unsupported charset "${config.charset}"; use UTF-8, ISO-8859-1, US-ASCII or UTF-16LE`);
    return new SearchAndReplaceInterceptor(compileJavaRegex(config.searchPattern, "searchPattern", "g"), config.replaceString, charset);
  },
  validate(config) {
    const errors: { key: string; message: string }[] = [];
    if (config.searchPattern === undefined) errors.push({ key: "searchPattern", message: "must not be empty" });
    else
      try {
        const regex = compileJavaRegex(config.searchPattern, "searchPattern", "g");
        const problem = javaReplacementProblem(config.replaceString, regex);
        if (problem) errors.push({ key: "replaceString", message: problem });
      } catch (err) {
        errors.push({ key: "searchPattern", message: (err as Error).message });
      }
    if (!charsetLabel(config.charset)) errors.push({ key: "charset", message: `unsupported charset "${config.charset}"; use UTF-8, ISO-8859-1, US-ASCII or UTF-16LE` });
    return errors;
  },
});
