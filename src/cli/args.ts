/**
 * The argv walking shared by the hand-parsed commands (run, validate, avro-client, simulate).
 * They parse by hand because citty cannot repeat `-D`, take `-Dk=v`, or exit 2 on bad usage.
 */

/** A bad command line: the commands print `flume <command>: <message>` and exit 2. */
import { UsageError } from "../core/errors.ts";

export { UsageError };

/** The error class a command's reader throws, so its own `instanceof` checks keep working. */
export type UsageErrorClass = new (message: string) => UsageError;

/**
 * Reads argv one word at a time. `--flag=value` is read as `--flag` followed by `value`, so
 * a flag reads its value the same way in both spellings; single-dash words are never split
 * (`-Dkey=value` stays whole).
 */
export class ArgReader {
  private readonly args: string[];
  /** Whether the front of `args` is the `=value` split off the word next() last returned. */
  private inlinePending = false;
  /** The word next() last returned, as written (`--flag=value` whole), for "unknown option" messages. */
  raw = "";

  constructor(
    argv: readonly string[],
    private readonly errorClass: UsageErrorClass = UsageError,
  ) {
    this.args = [...argv];
  }

  /** The next flag or word, undefined at the end. */
  next(): string | undefined {
    this.inlinePending = false;
    const raw = this.args.shift();
    if (raw === undefined) return undefined;
    this.raw = raw;
    const eq = raw.startsWith("--") ? raw.indexOf("=") : -1;
    if (eq < 0) return raw;
    this.args.unshift(raw.slice(eq + 1));
    this.inlinePending = true;
    return raw.slice(0, eq);
  }

  /** The value of `flag`: its `=value`, else the next word whatever it looks like. */
  value(flag: string): string {
    this.inlinePending = false;
    const v = this.args.shift();
    if (v === undefined) throw this.error(`${flag} needs a value`);
    return v;
  }

  /**
   * For a switch that takes no value: drops a `=value` written after it. Without this call
   * such a value is read as the next word.
   */
  ignoreInlineValue(): void {
    if (this.inlinePending) this.args.shift();
    this.inlinePending = false;
  }

  /** All words not read yet (the positionals after `--`). */
  rest(): string[] {
    this.inlinePending = false;
    return this.args.splice(0);
  }

  /** A whole number (digits only) of at least `min`: the flag's value, or `text` when given. */
  int(flag: string, min: number, text: string = this.value(flag)): number {
    if (!/^\d+$/.test(text) || Number(text) < min) throw this.error(`${flag} needs a whole number of at least ${min}, got "${text}"`);
    return Number(text);
  }

  /** A finite number >= 0: the flag's value, or `text` when given. */
  number(flag: string, text: string = this.value(flag)): number {
    const n = Number(text);
    if (!Number.isFinite(n) || n < 0) throw this.error(`${flag} needs a non-negative number, got "${text}"`);
    return n;
  }

  /** A usage error of the command's class, to throw. */
  error(message: string): UsageError {
    return new this.errorClass(message);
  }
}

/** The option and positional shape of a citty command, as far as strict checking needs it. */
type ArgSpec = Record<string, { type?: string; alias?: string | string[] }>;

function kebab(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();
}

/**
 * The first word of `rawArgs` that the command does not define (an unknown option or one
 * positional too many), as a usage message; null when every word is known. citty itself
 * accepts anything, which would let a typo like `--verfy` pass silently.
 */
export function unknownArgument(rawArgs: readonly string[], spec: ArgSpec): string | null {
  const valued = new Set<string>();
  const switches = new Set<string>();
  let positionals = 0;
  for (const [name, d] of Object.entries(spec)) {
    if (d.type === "positional") {
      positionals++;
      continue;
    }
    const aliases = d.alias === undefined ? [] : Array.isArray(d.alias) ? d.alias : [d.alias];
    for (const s of [name, kebab(name), ...aliases]) (d.type === "boolean" ? switches : valued).add(s);
  }
  let seen = 0;
  for (let i = 0; i < rawArgs.length; i++) {
    const w = rawArgs[i];
    if (w === "--") {
      seen += rawArgs.length - i - 1;
      if (seen > positionals) return `unexpected argument "${rawArgs[i + 1 + positionals]}"`;
      break;
    }
    if (w.startsWith("-") && w !== "-") {
      const body = w.replace(/^--?/, "");
      const eq = body.indexOf("=");
      const key = eq < 0 ? body : body.slice(0, eq);
      if (valued.has(key)) {
        if (eq < 0) i++; // its value is the next word
      } else if (!switches.has(key) && !(key.startsWith("no-") && switches.has(key.slice(3)))) {
        return `unknown option "${w}"`;
      }
      continue;
    }
    if (++seen > positionals) return `unexpected argument "${w}"`;
  }
  return null;
}

/** Prints `flume <command>: <message>` and exits 2, the exit code of every usage error. */
export function exitUsage(command: string, message: string): never {
  process.stderr.write(`flume ${command}: ${message}\n`);
  process.exit(2);
}

/**
 * A setup hook for a command made of subcommands: no subcommand, an unknown one or an
 * unknown option before it exits 2 with a message (citty would exit 1 with a bare line).
 */
export function requireSubcommand(command: string, names: readonly string[], showUsage: () => Promise<void>) {
  return async ({ rawArgs }: { rawArgs: string[] }): Promise<void> => {
    const first = rawArgs[0];
    const where = command === "flume" ? "flume" : `flume ${command}`;
    const fail = (message: string): never => {
      process.stderr.write(`${where}: ${message}; see ${where} --help\n`);
      process.exit(2);
    };
    if (first === undefined) {
      await showUsage();
      fail("no command given");
    } else if (first.startsWith("-")) fail(`unknown option "${first}"`);
    else if (!names.includes(first)) fail(`unknown command "${first}"`);
  };
}
