/**
 * Whether text for a stream may carry colour codes: the one policy for `--help` (citty) and the
 * agent's log (src/agent/logging.ts). citty decides on its own from process.stdout and a few
 * variables, so `flume --help > file` in a terminal would get escape codes.
 */

/** node:util's, loaded when first needed (the agent's start path loads no node:util for it). */
function stripVTControlCharacters(text: string): string {
  return (process.getBuiltinModule("node:util") as typeof import("node:util")).stripVTControlCharacters(text);
}

export interface TerminalStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

/** A terminal, unless NO_COLOR is set to anything (no-color.org) or TERM is dumb; FORCE_COLOR forces it. */
export function colorEnabled(stream: { isTTY?: boolean }, env: Record<string, string | undefined> = process.env): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR && env.FORCE_COLOR !== "0") return true;
  return stream.isTTY === true && env.TERM !== "dumb";
}

/** `text` as it may be written to `stream`: colour codes removed where colour is off. */
export function forStream(stream: { isTTY?: boolean }, text: string): string {
  return colorEnabled(stream) ? text : stripVTControlCharacters(text);
}

/**
 * The stream itself where colour is on, else a stand-in that removes colour codes from what is
 * written (for libraries that colour by their own rule).
 */
export function plainWhereNoColor<S extends TerminalStream>(stream: S): S {
  if (colorEnabled(stream)) return stream;
  return new Proxy(stream, {
    get(target, key) {
      if (key === "write") return (text: string) => target.write(stripVTControlCharacters(String(text)));
      const v = Reflect.get(target, key, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}
