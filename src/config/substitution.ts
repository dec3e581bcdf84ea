/**
 * `${...}` substitution as Flume 1.11 does it when it loads a properties file (commons-text
 * StringSubstitutor with an interpolator): `${env:X}` environment, `${sys:X}` system
 * properties (our -D options), `${KEY}` another property of the file, `${X:-default}`
 * defaults, nested variables (`${env:${sys:which}}`), `$${x}` for a literal `${x}`, and
 * resolved values substituted again. Config filter references `${f1['key']}` are resolved here
 * too when a filter of that name is known. Unlike Flume, an unresolved variable is reported
 * instead of being left in the value.
 */

import { homedir, tmpdir, userInfo } from "node:os";
import path from "node:path";
import type { ProblemCode } from "./problems.ts";

export interface SubstitutionIssue {
  code: ProblemCode;
  message: string;
  hint: string;
}

/** Resolves `${f1['key']}` for a configured config filter. */
export interface FilterLookup {
  lookup(key: string): { value: string } | { error: string; hint: string };
}

export interface SubstitutionSources {
  env: Record<string, string | undefined>;
  sys: Record<string, string | undefined>;
  /** Raw (unsubstituted) value of another property of the file, by full key. */
  property(key: string): string | undefined;
  /** Config filters by name; absent while the filters' own settings are being resolved. */
  filters?: ReadonlyMap<string, FilterLookup>;
  /** Names of declared filters (even broken ones), to explain `${f['k']}` that cannot resolve. */
  filterNames?: ReadonlySet<string>;
  /** Flume's deprecated EnvVarResolverProperties mode: bare `${X}` falls back to the environment. */
  envFallback?: boolean;
}

// A filter reference, as Flume's pattern: name[key], name['key'] or name["key"].
const FILTER_REF = /^([^[\]'"]+)\[(['"]?)([-_a-zA-Z0-9]+)\2\]$/;
const DEFAULT_SEPARATOR = ":-";

/** Java-like system properties that configs commonly reference with `${sys:...}`. */
export function javaSystemProperties(): Record<string, string> {
  let user = "";
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? "";
  }
  return {
    "user.home": homedir(),
    "user.name": user,
    "user.dir": process.cwd(),
    "java.io.tmpdir": tmpdir(),
    "os.name": process.platform,
    "file.separator": path.sep,
    "path.separator": path.delimiter,
    "line.separator": "\n",
  };
}

/** Whether a value contains anything substitution would touch (fast path for plain values). */
export function hasVariables(value: string): boolean {
  return value.includes("${");
}

/**
 * Substitutes every variable of value. Unresolvable variables stay as written and are
 * reported; `referenced` collects the property keys that were looked up.
 */
export function substitute(
  value: string,
  sources: SubstitutionSources,
  referenced?: Set<string>,
): { value: string; issues: SubstitutionIssue[] } {
  const issues: SubstitutionIssue[] = [];
  const result = expand(value, sources, [], issues, referenced);
  return { value: result, issues };
}

function expand(s: string, src: SubstitutionSources, stack: string[], issues: SubstitutionIssue[], referenced?: Set<string>): string {
  if (!s.includes("$")) return s;
  let out = "";
  let i = 0;
  while (i < s.length) {
    if (s.startsWith("$${", i)) {
      out += "${";
      i += 3;
      continue;
    }
    if (!s.startsWith("${", i)) {
      out += s[i++];
      continue;
    }
    const end = closingBrace(s, i + 2);
    if (end < 0) {
      out += s.slice(i); // an unterminated "${" is literal text, as in Flume
      break;
    }
    const inner = s.slice(i + 2, end);
    // The default after ":-" is expanded only when it is used, so its variables need not exist otherwise.
    const sep = defaultSeparator(inner);
    const rawName = sep < 0 ? inner : inner.slice(0, sep);
    const fallback = sep < 0 ? undefined : inner.slice(sep + DEFAULT_SEPARATOR.length);
    const name = rawName.includes("${") ? expand(rawName, src, stack, issues, referenced) : rawName;
    const resolved = resolve(name, fallback, src, stack, issues, referenced);
    out += resolved ?? s.slice(i, end + 1);
    i = end + 1;
  }
  return out;
}

/** Position of the first ":-" outside nested `${...}`, or -1. */
function defaultSeparator(inner: string): number {
  let depth = 0;
  for (let j = 0; j < inner.length; j++) {
    if (inner.startsWith("${", j)) {
      depth++;
      j++;
    } else if (inner[j] === "}" && depth > 0) depth--;
    else if (depth === 0 && inner.startsWith(DEFAULT_SEPARATOR, j)) return j;
  }
  return -1;
}

function closingBrace(s: string, from: number): number {
  let depth = 1;
  for (let j = from; j < s.length; j++) {
    if (s.startsWith("${", j)) {
      depth++;
      j++;
    } else if (s[j] === "}" && --depth === 0) return j;
  }
  return -1;
}

function resolve(name: string, fallback: string | undefined, src: SubstitutionSources, stack: string[], issues: SubstitutionIssue[], referenced?: Set<string>): string | undefined {
  const filterRef = fallback === undefined ? FILTER_REF.exec(name) : null;
  if (filterRef && (src.filterNames?.has(filterRef[1]) || src.filters?.has(filterRef[1]))) {
    const filter = src.filters?.get(filterRef[1]);
    if (!filter) {
      // Declared but unusable (reported where it is declared), or used inside a filter's own settings.
      issues.push({
        code: "config-filter",
        message: `config filter ${filterRef[1]} cannot resolve \${${name}}`,
        hint: `fix the configuration of config filter ${filterRef[1]}`,
      });
      return undefined;
    }
    const r = filter.lookup(filterRef[3]);
    if ("error" in r) {
      issues.push({ code: "unresolved-variable", message: `\${${name}}: ${r.error}`, hint: r.hint });
      return undefined;
    }
    return r.value;
  }

  const varName = name;
  if (stack.includes(varName)) {
    issues.push({
      code: "substitution-cycle",
      message: `\${${varName}} refers to itself (${[...stack, varName].join(" -> ")})`,
      hint: "break the cycle by giving one of these properties a literal value",
    });
    return undefined;
  }

  const colon = varName.indexOf(":");
  const prefix = colon > 0 ? varName.slice(0, colon).toLowerCase() : "";
  const key = colon > 0 ? varName.slice(colon + 1) : varName;
  let value: string | undefined;
  let miss: SubstitutionIssue;
  if (prefix === "env") {
    value = src.env[key];
    miss = { code: "unresolved-variable", message: `environment variable ${key} is not set`, hint: `export ${key}=... before starting, or write \${env:${key}:-default}` };
  } else if (prefix === "sys") {
    value = src.sys[key];
    miss = { code: "unresolved-variable", message: `system property ${key} is not set`, hint: `pass -D${key}=... on the command line, or write \${sys:${key}:-default}` };
  } else if (prefix === "java" || prefix === "date") {
    miss = { code: "unresolved-variable", message: `the ${prefix}: lookup of Flume is not supported by Flume TS`, hint: `use \${env:...} or \${sys:...} instead` };
  } else {
    value = src.property(varName);
    if (value !== undefined) referenced?.add(varName);
    else if (src.envFallback) value = src.env[varName];
    miss = filterRef
      ? {
          code: "unresolved-variable",
          message: `\${${name}} names no config filter`,
          hint: `declare it: <agent>.configfilters = ${filterRef[1]} and <agent>.configfilters.${filterRef[1]}.type = env|external`,
        }
      : {
          code: "unresolved-variable",
          message: `variable \${${varName}} is not defined`,
          hint: `define a property ${varName} in the file, or use \${env:${varName}} / \${sys:${varName}}`,
        };
  }
  if (value === undefined) {
    if (fallback !== undefined) return expand(fallback, src, stack, issues, referenced);
    issues.push(miss);
    return undefined;
  }
  return expand(value, src, [...stack, varName], issues, referenced);
}
