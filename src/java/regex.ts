import { ConfigurationError } from "../core/errors.ts";

/**
 * Flume's regex properties are Java patterns. JavaScript's syntax covers nearly all of what
 * configs use; this maps the few Java-only spellings that appear in practice (a leading
 * inline flag group, \A, \z and \Z) and reports patterns JavaScript cannot compile.
 */
export function compileJavaRegex(pattern: string, key: string, extraFlags = ""): RegExp {
  let source = pattern;
  let flags = extraFlags;
  const inline = /^\(\?([imsxu]+)\)/.exec(source);
  if (inline) {
    source = source.slice(inline[0].length);
    // x is handled while translating; u (Unicode case folding) is what JavaScript's i does already.
    for (const f of inline[1]) if (f !== "x" && f !== "u" && !flags.includes(f)) flags += f;
  }
  source = translateEscapes(source, pattern, key, inline?.[1].includes("x") ?? false, flags.includes("m"));
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new ConfigurationError(key, `invalid regular expression "${pattern}": ${(err as Error).message}`);
  }
}

// Java's POSIX classes (US-ASCII), as JavaScript class contents.
const POSIX: Record<string, string> = {
  Lower: "a-z",
  Upper: "A-Z",
  ASCII: "\\x00-\\x7F",
  Alpha: "A-Za-z",
  Digit: "0-9",
  Alnum: "A-Za-z0-9",
  Punct: "!-\\/:-@\\[-`{-~",
  Graph: "!-~",
  Print: " -~",
  Blank: " \\t",
  Cntrl: "\\x00-\\x1F\\x7F",
  XDigit: "0-9a-fA-F",
  Space: " \\t\\n\\x0B\\f\\r",
};

// Java's \h (horizontal) and \v (vertical) whitespace; JavaScript reads \h as "h" and \v as \x0B only.
const JAVA_CLASSES: Record<string, string> = {
  h: " \\t\\xA0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000",
  v: "\\n\\x0B\\f\\r\\x85\\u2028\\u2029",
};

/**
 * Rewrites the Java escapes JavaScript reads differently (without the u flag it would take
 * \Q or \p{Alpha} as plain letters and match something else without a word): \Q...\E quoting,
 * POSIX classes \p{Name}, \h \v \R \e \a, \A, \z, \Z outside character classes, and (?x) comments.
 */
// Java's $ (without MULTILINE) and \Z: the end of the input, or before a line terminator that ends it.
const END_OR_FINAL_TERMINATOR = "(?=(?:\\r\\n|[\\n\\r\\x85\\u2028\\u2029])?(?![\\s\\S]))";

function translateEscapes(source: string, pattern: string, key: string, comments: boolean, multiline: boolean): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (comments && /[ \t\n\x0B\f\r]/.test(c)) continue; // (?x): blanks are not part of the pattern
    if (comments && c === "#") {
      // (?x): a comment runs to the end of the line
      while (i + 1 < source.length && source[i + 1] !== "\n") i++;
      continue;
    }
    if (c !== "\\" || i + 1 === source.length) {
      if (c === "[" && !inClass) {
        inClass = true;
        out += c;
        // A "]" right after "[" or "[^" is a literal, not the end of the class.
        if (source[i + 1] === "^") out += source[++i];
        if (source[i + 1] === "]") {
          out += "\\]";
          i++;
        }
        continue;
      }
      if (inClass && (c === "[" || (c === "&" && source[i + 1] === "&"))) {
        // Java's nested classes and && intersections; JavaScript would read them as literal characters.
        throw new ConfigurationError(key, `invalid regular expression "${pattern}": nested character classes and && intersections are not supported; write the resulting class out, e.g. [ac-z] for [a-z&&[^b]]`);
      }
      if (c === "]" && inClass) inClass = false;
      out += c === "$" && !inClass && !multiline ? END_OR_FINAL_TERMINATOR : c;
      continue;
    }
    const n = source[i + 1];
    if (n === "Q") {
      const end = source.indexOf("\\E", i + 2);
      const quoted = source.slice(i + 2, end < 0 ? source.length : end);
      out += quoted.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
      i = end < 0 ? source.length : end + 1;
      continue;
    }
    if (n === "p" || n === "P") {
      const m = /^\{(?:Is)?([A-Za-z]+)\}/.exec(source.slice(i + 2));
      const posix = m ? POSIX[m[1]] : undefined;
      if (posix === undefined || (n === "P" && inClass)) {
        throw new ConfigurationError(key, `invalid regular expression "${pattern}": the class \\${n}${m ? m[0] : source.slice(i + 2, i + 3)} is not supported; use a character class such as [A-Za-z] or one of \\p{Alpha} \\p{Digit} \\p{Alnum} \\p{Punct} \\p{Space} \\p{Upper} \\p{Lower}`);
      }
      out += inClass ? posix : n === "p" ? `[${posix}]` : `[^${posix}]`;
      i += 1 + (m as RegExpExecArray)[0].length;
      continue;
    }
    const cls = JAVA_CLASSES[n];
    if (cls !== undefined) out += inClass ? cls : `[${cls}]`;
    else if (!inClass && n === "R") out += "(?:\\r\\n|[\\n\\x0B\\f\\r\\x85\\u2028\\u2029])";
    else if (n === "e") out += "\\x1B";
    else if (n === "a") out += "\\x07";
    else if (!inClass && n === "A") out += "(?<![\\s\\S])";
    else if (!inClass && n === "z") out += "(?![\\s\\S])";
    else if (!inClass && n === "Z") out += END_OR_FINAL_TERMINATOR;
    else if (n === "0") {
      // Java's octal escape \0n, \0nn, \0mnn (m <= 3); JavaScript reads \0 as NUL.
      const m = /^[0-3]?[0-7]{1,2}/.exec(source.slice(i + 2)) ?? /^[0-7]/.exec(source.slice(i + 2));
      if (!m) throw new ConfigurationError(key, `invalid regular expression "${pattern}": \\0 must be followed by octal digits`);
      out += `\\x${parseInt(m[0], 8).toString(16).padStart(2, "0")}`;
      i += m[0].length;
    }
    else if (n === "G" || n === "X" || n === "R") {
      throw new ConfigurationError(key, `invalid regular expression "${pattern}": \\${n} is not supported here`);
    } else out += c + n;
    i++;
  }
  return out;
}

/** A RegExp that must match the whole input, as Java's Matcher.matches(). */
export function compileJavaFullMatch(pattern: string, key: string): RegExp {
  const inner = compileJavaRegex(pattern, key);
  // Lookarounds instead of ^ and $: under (?m) those would also match at line ends.
  return new RegExp(`(?<![\\s\\S])(?:${inner.source})(?![\\s\\S])`, inner.flags);
}

/**
 * Java's Matcher.replaceAll replacement syntax: $n or ${name} refer to groups, a backslash
 * escapes the next character. Returns a function for String.replace so JavaScript's own
 * `$&`, `$$` spellings are not interpreted.
 */
export function javaReplacement(replacement: string): (match: string, ...rest: unknown[]) => string {
  // A group number's digits: Java takes as many as still name an existing group.
  type Part = string | { digits: string } | { name: string };
  const parts: Part[] = [];
  let literal = "";
  for (let i = 0; i < replacement.length; i++) {
    const c = replacement[i];
    if (c === "\\" && i + 1 < replacement.length) {
      literal += replacement[++i];
    } else if (c === "$" && i + 1 < replacement.length) {
      const named = /^\{([A-Za-z][A-Za-z0-9]*)\}/.exec(replacement.slice(i + 1));
      const digits = /^\d+/.exec(replacement.slice(i + 1));
      if (named) {
        if (literal) parts.push(literal);
        literal = "";
        parts.push({ name: named[1] });
        i += named[0].length;
      } else if (digits) {
        if (literal) parts.push(literal);
        literal = "";
        parts.push({ digits: digits[0] });
        i += digits[0].length;
      } else {
        literal += c;
      }
    } else {
      literal += c;
    }
  }
  if (literal) parts.push(literal);
  return (match: string, ...rest: unknown[]) => {
    // rest: p1..pn, offset, input, [groups]
    const last = rest[rest.length - 1];
    const groups = typeof last === "object" && last !== null ? (last as Record<string, string | undefined>) : undefined;
    const captureCount = rest.length - (groups ? 3 : 2);
    let out = "";
    for (const p of parts) {
      if (typeof p === "string") out += p;
      else if ("digits" in p) {
        let ref = Number(p.digits[0]);
        let k = 1;
        for (; k < p.digits.length && ref * 10 + Number(p.digits[k]) <= captureCount; k++) ref = ref * 10 + Number(p.digits[k]);
        if (ref === 0) out += match;
        else if (ref <= captureCount) out += (rest[ref - 1] as string | undefined) ?? "";
        else throw new Error(`No group ${ref} in the search pattern`);
        out += p.digits.slice(k);
      } else out += groups?.[p.name] ?? "";
    }
    return out;
  };
}

/**
 * What Java's Matcher.replaceAll would throw for this replacement with this pattern (at every
 * matching event, so the batch fails): a reference to a group the pattern lacks, a `$` that
 * starts no group reference, a trailing backslash. Undefined when the replacement is fine.
 */
export function javaReplacementProblem(replacement: string, regex: RegExp): string | undefined {
  const groupCount = new RegExp(`${regex.source}|`, regex.flags.replace("g", "")).exec("")!.length - 1;
  const names = new Set(Object.keys(new RegExp(`${regex.source}|`).exec("")?.groups ?? {}));
  for (let i = 0; i < replacement.length; i++) {
    const c = replacement[i];
    if (c === "\\") {
      if (i + 1 === replacement.length) return "ends with a backslash that escapes nothing (write \\\\ for a backslash)";
      i++;
    } else if (c === "$") {
      const rest = replacement.slice(i + 1);
      const named = /^\{([A-Za-z][A-Za-z0-9]*)\}/.exec(rest);
      if (named) {
        if (!names.has(named[1])) return `refers to group \${${named[1]}}, which the search pattern does not have`;
        i += named[0].length;
      } else if (/^\d/.test(rest)) {
        if (Number(rest[0]) > groupCount) return `refers to group $${rest[0]}, but the search pattern has ${groupCount} group(s)`;
        i += 1;
      } else return `has a "$" that starts no group reference (write \\$ for a dollar sign)`;
    }
  }
  return undefined;
}
