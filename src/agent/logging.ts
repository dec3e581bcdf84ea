import { createConsola } from "consola";
import type { ConsolaInstance } from "consola";
import type { Logger } from "../core/logger.ts";
import { plainWhereNoColor } from "../io/terminal.ts";

/** The agent's log output: consola on stderr, so stdout stays free for data (logger sink aside). */
export function createAgentLogger(options: { level?: number; quiet?: boolean } = {}): ConsolaInstance {
  // consola colours when stdout is a terminal; the log goes to stderr, so stderr decides.
  const out = plainWhereNoColor(process.stderr);
  return createConsola({
    level: options.quiet ? 1 : (options.level ?? 3),
    stdout: out,
    stderr: out,
    formatOptions: { date: true, colors: false, compact: true },
  });
}

/** A component's logger: the agent logger tagged with the component's name. */
export function componentLogger(base: ConsolaInstance, name: string): Logger {
  return base.withTag(name);
}
