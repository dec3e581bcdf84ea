/** Helpers for the configuration tests: a file's text from its lines, parsed as flume.conf. */
import { parseFlumeConfig, type ParseOptions } from "../../src/config/flume-config.ts";
import type { Problem } from "../../src/config/problems.ts";

/** The lines joined, with a final newline. */
export const conf = (lines: string[]) => lines.join("\n") + "\n";

/** Parses text as flume.conf with an empty environment unless opts give one. */
export function parse(text: string, opts: ParseOptions = {}) {
  return parseFlumeConfig(text, "flume.conf", { env: {}, ...opts });
}

/** The place and kind of each problem, without its message. */
export function brief(problems: Problem[]) {
  return problems.map((p) => ({ line: p.line, severity: p.severity, code: p.code, component: p.component, key: p.key }));
}
