/**
 * The argv walking shared by the hand-parsed commands (run, validate, avro-client, simulate).
 * They parse by hand because citty cannot repeat `-D`, take `-Dk=v`, or exit 2 on bad usage.
 */

/** A bad command line: the commands print `flume <command>: <message>` and exit 2. */
export class UsageError extends Error {}

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
