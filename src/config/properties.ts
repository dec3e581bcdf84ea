/**
 * Java .properties parsing with the rules of java.util.Properties.load: `#`/`!` comments,
 * `=`, `:` or whitespace separators, backslash continuation lines, escapes, and later keys
 * overriding earlier ones. Unlike Java, every entry remembers its file and line.
 */

export interface PropertyEntry {
  key: string;
  value: string;
  file: string;
  /** 1-based line where the key starts (a continued entry spans the following lines). */
  line: number;
}

export interface PropertiesSyntaxError {
  file: string;
  line: number;
  message: string;
}

export interface ParsedProperties {
  /** Each key's winning entry, in the order keys first appeared (as a LinkedHashMap would keep them). */
  entries: Map<string, PropertyEntry>;
  /** Entries that overrode an earlier one, with the entry they replaced. */
  duplicates: { entry: PropertyEntry; overridden: PropertyEntry }[];
  errors: PropertiesSyntaxError[];
}

// Java's Properties treats only these as whitespace around keys and separators.
const isBlank = (c: string) => c === " " || c === "\t" || c === "\f";

/** Splits on \n, \r\n and \r, as Java's LineReader does. */
function naturalLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

function skipBlanks(s: string, from: number): number {
  let i = from;
  while (i < s.length && isBlank(s[i])) i++;
  return i;
}

/** True when the line ends with an odd number of backslashes, i.e. continues on the next line. */
function continues(s: string): boolean {
  let n = 0;
  for (let i = s.length - 1; i >= 0 && s[i] === "\\"; i--) n++;
  return n % 2 === 1;
}

/** Resolves \t \n \r \f \uXXXX and `\x` -> `x`; returns an error message for a bad \u escape. */
function unescape(s: string): { text: string } | { error: string } {
  if (!s.includes("\\")) return { text: s };
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    i++;
    if (i >= s.length) break; // a lone trailing backslash (end of file) is dropped, as Java does
    const e = s[i];
    switch (e) {
      case "t":
        out += "\t";
        break;
      case "n":
        out += "\n";
        break;
      case "r":
        out += "\r";
        break;
      case "f":
        out += "\f";
        break;
      case "u": {
        const hex = s.slice(i + 1, i + 5);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) return { error: `malformed \\uXXXX escape "\\u${hex}"` };
        out += String.fromCharCode(parseInt(hex, 16));
        i += 4;
        break;
      }
      default:
        out += e;
    }
  }
  return { text: out };
}

/** Splits one logical line into its raw (still escaped) key and value. */
function splitKeyValue(line: string): { key: string; value: string } {
  let i = 0;
  let escaped = false;
  for (; i < line.length; i++) {
    const c = line[i];
    if (escaped) {
      escaped = false;
      continue;
    }
    if (c === "\\") escaped = true;
    else if (c === "=" || c === ":" || isBlank(c)) break;
  }
  const key = line.slice(0, i);
  let v = skipBlanks(line, i);
  // One '=' or ':' may follow the key (after blanks), then blanks again.
  if (v < line.length && (line[v] === "=" || line[v] === ":")) {
    v = skipBlanks(line, v + 1);
  }
  return { key, value: line.slice(v) };
}

/**
 * Decodes a properties file. Flume reads them as ISO-8859-1 (Properties.load(InputStream));
 * Flume TS reads UTF-8, which is what editors write, and falls back to ISO-8859-1 for files
 * that are not valid UTF-8, so Latin-1 files still read as Flume reads them.
 */
export function decodeProperties(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return new TextDecoder("latin1").decode(bytes);
  }
}

export function parseProperties(text: string, file: string): ParsedProperties {
  const lines = naturalLines(text.startsWith("\uFEFF") ? text.slice(1) : text);
  const entries = new Map<string, PropertyEntry>();
  const duplicates: ParsedProperties["duplicates"] = [];
  const errors: PropertiesSyntaxError[] = [];

  for (let n = 0; n < lines.length; n++) {
    const first = lines[n];
    const start = skipBlanks(first, 0);
    if (start === first.length) continue;
    if (first[start] === "#" || first[start] === "!") continue; // comments never continue
    const lineNo = n + 1;
    let logical = first.slice(start);
    // Continuation: drop the backslash, join the next line without its leading blanks.
    while (continues(logical) && n + 1 < lines.length) {
      n++;
      logical = logical.slice(0, -1) + lines[n].slice(skipBlanks(lines[n], 0));
    }
    const backslashAtEof = continues(logical);
    if (backslashAtEof) logical = logical.slice(0, -1);
    // Java's LineReader skips a logical line left empty at a line end; only a trailing `\` at
    // the very end of the file yields an empty key.
    if (logical === "" && !backslashAtEof) continue;

    const raw = splitKeyValue(logical);
    const key = unescape(raw.key);
    const value = unescape(raw.value);
    if ("error" in key || "error" in value) {
      const message = "error" in key ? key.error : (value as { error: string }).error;
      errors.push({ file, line: lineNo, message });
      continue;
    }
    const entry: PropertyEntry = { key: key.text, value: value.text, file, line: lineNo };
    const previous = entries.get(entry.key);
    if (previous) duplicates.push({ entry, overridden: previous });
    entries.set(entry.key, entry);
  }
  return { entries, duplicates, errors };
}
