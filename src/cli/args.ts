/**
 * A command's options, declared once as an `ArgsSpec`, and the parsing they drive. The same
 * record gives citty its `args` for `--help` (see command.ts).
 *
 * Words are split by node:util's parseArgs (the same in Bun, Deno and Node) and read token by
 * token here: citty's own parse is parseArgs without strict checks, so it accepts any unknown
 * option, keeps only the last of repeated ones (`-D a=b -D c=d`) and reads every `--no-X` as
 * "X = false" (`--no-reload-conf` would be lost).
 */
import { parseArgs } from "node:util";
import { UsageError } from "../core/errors.ts";

export { UsageError };

/** Converts an option's text to its value; throws a UsageError naming `flag` (as written) if bad. */
export type ValueParser<T> = ((text: string, flag: string) => T) & { hint?: string };

interface Described {
  description: string;
}

/** An option without a value (`--json`, `-q`). */
export interface SwitchArg extends Described {
  type: "boolean";
  /** An optional value written inline (`--fail-fast=60`): parsed by this; alone the switch is `true`. */
  inline?: ValueParser<unknown>;
  /** One letter: `-q`; longer: `--file` (shown in --help as "also --file"). */
  alias?: string | readonly string[];
}

/** An option with a value: `--name a1`, `--name=a1`, `-n a1`, `-na1`. */
export interface ValueArg extends Described {
  type: "string";
  alias?: string | readonly string[];
  /** The placeholder in --help (`-D, --define=<key=value>`); else the parser's hint. */
  valueHint?: string;
  /** Checks and converts the text; without it the value is the text. */
  parse?: ValueParser<unknown>;
  /** Used when the option is absent: written as on the command line, parsed, shown in --help. */
  default?: string;
  /** Keeps every occurrence in order (else the last one wins). */
  multiple?: boolean;
}

/** A word that is not an option; positionals are filled in declaration order. */
export interface PositionalArg extends Described {
  type: "positional";
  /** Takes this and every further word (declared last). */
  multiple?: boolean;
}

export type ArgSpec = SwitchArg | ValueArg | PositionalArg;
export type ArgsSpec = Readonly<Record<string, ArgSpec>>;

type ValueOf<A> = A extends { parse: (text: string, flag: string) => infer T } ? T : string;

/** What parseCommandLine returns for a spec: one typed field per declared option. */
export type Parsed<S extends ArgsSpec> = {
  -readonly [K in keyof S]: S[K] extends { type: "boolean"; inline: (text: string, flag: string) => infer T }
    ? boolean | T
    : S[K] extends { type: "boolean" }
    ? boolean
    : S[K] extends { type: "positional"; multiple: true }
      ? string[]
      : S[K] extends { type: "positional" }
      ? string | undefined
      : S[K] extends { multiple: true }
        ? ValueOf<S[K]>[]
        : S[K] extends { default: string }
          ? ValueOf<S[K]>
          : ValueOf<S[K]> | undefined;
};

export function aliasesOf(a: ArgSpec): readonly string[] {
  if (a.type === "positional" || a.alias === undefined) return [];
  return typeof a.alias === "string" ? [a.alias] : a.alias;
}

/** Parses `argv` by `spec`; a UsageError names the first unknown option, bad value or extra word. */
export function parseCommandLine<const S extends ArgsSpec>(argv: readonly string[], spec: S): Parsed<S> {
  // parseArgs' option table: one entry per spelling, keyed as written (`conf-file`, `file`, `-f`).
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {};
  const keyOf = new Map<string, string>();
  const positionals: string[] = [];
  for (const [key, a] of Object.entries(spec)) {
    if (a.type === "positional") {
      positionals.push(key);
      continue;
    }
    for (const name of [key, ...aliasesOf(a)]) {
      const entry = name.length === 1 ? `-${name}` : name;
      options[entry] = name.length === 1 ? { type: a.type, short: name } : { type: a.type };
      keyOf.set(entry, key);
    }
  }
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const values: Record<string, unknown> = {};
  let filled = 0;
  for (const t of tokens) {
    if (t.kind === "option-terminator") continue;
    if (t.kind === "positional") {
      const key = positionals[filled];
      if (key === undefined) throw new UsageError(`unexpected argument "${t.value}"`);
      const a = spec[key];
      // A multiple positional keeps every further word.
      if (a.type === "positional" && a.multiple) ((values[key] ??= []) as string[]).push(t.value);
      else {
        values[key] = t.value;
        filled++;
      }
      continue;
    }
    const key = keyOf.get(t.name);
    if (key === undefined) throw new UsageError(`unknown option "${t.rawName}"`);
    const a = spec[key];
    if (a.type === "boolean") {
      if (t.value !== undefined && !a.inline) throw new UsageError(`${t.rawName} takes no value, got "${t.value}"`);
      values[key] = t.value !== undefined && a.inline ? a.inline(t.value, t.rawName) : true;
    } else if (a.type === "string") {
      if (t.value === undefined) throw new UsageError(`${t.rawName} needs a value`);
      const v = a.parse ? a.parse(t.value, t.rawName) : t.value;
      if (a.multiple) ((values[key] ??= []) as unknown[]).push(v);
      else values[key] = v;
    }
  }
  for (const [key, a] of Object.entries(spec)) {
    if (key in values) continue;
    if (a.type === "boolean") values[key] = false;
    else if ((a.type === "string" || a.type === "positional") && a.multiple) values[key] = [];
    else if (a.type === "string" && a.default !== undefined) values[key] = a.parse ? a.parse(a.default, `--${key}`) : a.default;
  }
  return values as Parsed<S>;
}

function withHint<T>(hint: string | undefined, parse: (text: string, flag: string) => T): ValueParser<T> {
  return Object.assign(parse, { hint });
}

/** A whole number (digits only) from `min` to `max`; `noun` names it in the message. */
export function int(min: number, max?: number, noun = "whole number"): ValueParser<number> {
  return withHint(undefined, (text, flag) => {
    const n = Number(text);
    if (!/^\d+$/.test(text) || n < min || (max !== undefined && n > max)) {
      const range = max === undefined ? `of at least ${min}` : `from ${min} to ${max}`;
      throw new UsageError(`${flag} needs a ${noun} ${range}, got "${text}"`);
    }
    return n;
  });
}

/** A TCP port, from `min` (0: any free port) to 65535. */
export const port = (min = 0): ValueParser<number> => int(min, 65535, "port number");

/** A finite number of at least 0, fractions allowed (seconds, milliseconds, bytes). */
export const nonNegative: ValueParser<number> = withHint(undefined, (text, flag) => {
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n) || n < 0) throw new UsageError(`${flag} needs a non-negative number, got "${text}"`);
  return n;
});

/** One of `values`, in any letter case. */
export function oneOf<const V extends string>(...values: V[]): ValueParser<V> {
  return withHint(values.join("|"), (text, flag) => {
    const v = values.find((x) => x.toLowerCase() === text.toLowerCase());
    if (v === undefined) throw new UsageError(`${flag} needs one of ${values.join(", ")}, got "${text}"`);
    return v;
  });
}

/** `key=value` (a system property, as Java's -D). */
export const keyValue: ValueParser<[string, string]> = withHint("key=value", (text, flag) => {
  const eq = text.indexOf("=");
  if (eq <= 0) throw new UsageError(`${flag} needs key=value, got "${text}"`);
  return [text.slice(0, eq), text.slice(eq + 1)];
});

/**
 * The options of every command that reads a Flume properties file, in flume-ng's spellings
 * (`--conf-file`/`-f`, `--name`/`-n`).
 */
export const AGENT_FILE_ARGS = {
  "conf-file": { type: "string", alias: ["f", "file"], description: "The Flume properties file" },
  name: { type: "string", alias: "n", description: "The agent in the file; optional when it configures one agent" },
} as const satisfies ArgsSpec;

/** flume-ng's `-c DIR` and `-Dkey=value`, for the commands that take a command line written for flume-ng. */
export const FLUME_NG_ARGS = {
  conf: { type: "string", alias: "c", description: "flume-ng's configuration directory: accepted and ignored" },
  define: {
    type: "string",
    alias: "D",
    multiple: true,
    parse: keyValue,
    description: "A system property for ${sys:key}, as -Dkey=value or -D key=value (repeatable)",
  },
} as const satisfies ArgsSpec;
