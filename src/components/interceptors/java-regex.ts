import { ConfigurationError } from "../../core/errors.ts";

/**
 * Flume's regex properties are Java patterns. JavaScript's syntax covers nearly all of what
 * configs use; this maps the few Java-only spellings that appear in practice (a leading
 * inline flag group, \A, \z and \Z) and reports patterns JavaScript cannot compile.
 */
export function compileJavaRegex(pattern: string, key: string, extraFlags = ""): RegExp {
  let source = pattern;
  let flags = extraFlags;
  const inline = /^\(\?([imsx]+)\)/.exec(source);
  if (inline) {
    source = source.slice(inline[0].length);
    for (const f of inline[1]) if (f !== "x" && !flags.includes(f)) flags += f;
  }
  source = source.replace(/(^|[^\\])\\A/g, "$1^").replace(/(^|[^\\])\\[zZ]/g, "$1$");
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new ConfigurationError(key, `invalid regular expression "${pattern}": ${(err as Error).message}`);
  }
}

/** A RegExp that must match the whole input, as Java's Matcher.matches(). */
export function compileJavaFullMatch(pattern: string, key: string): RegExp {
  const inner = compileJavaRegex(pattern, key);
  return new RegExp(`^(?:${inner.source})$`, inner.flags);
}

/**
 * Java's Matcher.replaceAll replacement syntax: $n or ${name} refer to groups, a backslash
 * escapes the next character. Returns a function for String.replace so JavaScript's own
 * `$&`, `$$` spellings are not interpreted.
 */
export function javaReplacement(replacement: string): (match: string, ...rest: unknown[]) => string {
  type Part = string | number | { name: string };
  const parts: Part[] = [];
  let literal = "";
  for (let i = 0; i < replacement.length; i++) {
    const c = replacement[i];
    if (c === "\\" && i + 1 < replacement.length) {
      literal += replacement[++i];
    } else if (c === "$" && i + 1 < replacement.length) {
      const named = /^\{([A-Za-z][A-Za-z0-9]*)\}/.exec(replacement.slice(i + 1));
      const digits = /^\d/.exec(replacement.slice(i + 1));
      if (named) {
        if (literal) parts.push(literal);
        literal = "";
        parts.push({ name: named[1] });
        i += named[0].length;
      } else if (digits) {
        if (literal) parts.push(literal);
        literal = "";
        parts.push(Number(digits[0]));
        i += 1;
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
      else if (typeof p === "number") {
        if (p === 0) out += match;
        else if (p <= captureCount) out += (rest[p - 1] as string | undefined) ?? "";
        else throw new Error(`No group ${p} in the search pattern`);
      } else out += groups?.[p.name] ?? "";
    }
    return out;
  };
}
