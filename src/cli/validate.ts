/**
 * `flume validate <file> [-n agent] [--json] [--strict] [-D k=v ...]`: reports every problem
 * of a Flume configuration file at once. Exit 0 valid (warnings allowed), 1 errors (or
 * warnings under --strict), 2 usage errors (bad options, unreadable file, no such agent).
 */

import { readFileSync } from "node:fs";
import { defineCommand } from "citty";
import * as registry from "../components/registry.ts";
import { formatProblem, fullMessage, type Problem } from "../config/problems.ts";
import { decodeProperties } from "../config/properties.ts";
import type { ParseResult } from "../config/flume-config.ts";
import { loadConfigText } from "../config/custom-components.ts";
import { ArgReader, UsageError } from "./args.ts";

export const EXIT_VALID = 0;
export const EXIT_INVALID = 1;
export const EXIT_USAGE = 2;

export interface ValidateOptions {
  file?: string;
  agentName?: string;
  json: boolean;
  strict: boolean;
  sysProps: Record<string, string>;
}

export { UsageError };

/**
 * Parses validate's arguments by hand: citty cannot repeat `-D` or take `-Dk=v`, and usage
 * errors must exit 2. Accepts flume-ng's spellings too (-f/--conf-file, --name).
 */
export function parseValidateArgs(args: string[]): ValidateOptions {
  const opts: ValidateOptions = { json: false, strict: false, sysProps: {} };
  const positionals: string[] = [];
  const r = new ArgReader(args);
  for (let flag = r.next(); flag !== undefined; flag = r.next()) {
    if (r.raw === "--") {
      positionals.push(...r.rest());
      break;
    }
    switch (flag) {
      case "--json":
        opts.json = true;
        r.ignoreInlineValue();
        continue;
      case "--strict":
        opts.strict = true;
        r.ignoreInlineValue();
        continue;
      case "-n":
      case "--name":
        opts.agentName = r.value(flag);
        continue;
      case "-c":
      case "--conf":
        // flume-ng's configuration directory (log4j, flume-env.sh): nothing to validate there.
        r.value(flag);
        continue;
      case "-f":
      case "--conf-file":
      case "--file":
        opts.file = r.value(flag);
        continue;
      case "--define":
      case "-D":
        defineSysProp(opts, r.value(flag));
        continue;
    }
    if (flag.startsWith("-D")) defineSysProp(opts, flag.slice(2));
    else if (flag.startsWith("-") && flag !== "-") throw new UsageError(`unknown option ${r.raw}`);
    else positionals.push(flag);
  }
  if (positionals.length > 1 || (positionals.length === 1 && opts.file !== undefined)) {
    throw new UsageError(`expected one configuration file, got ${[opts.file, ...positionals].filter(Boolean).join(", ")}`);
  }
  opts.file ??= positionals[0];
  if (opts.file === undefined) throw new UsageError("missing the configuration file to validate");
  return opts;
}

function defineSysProp(opts: ValidateOptions, def: string): void {
  const at = def.indexOf("=");
  if (at <= 0) throw new UsageError(`-D expects key=value, got "${def}"`);
  opts.sysProps[def.slice(0, at)] = def.slice(at + 1);
}

/** The --json document: exactly valid, errors and warnings. */
export function jsonReport(problems: Problem[], strict: boolean): { valid: boolean; errors: JsonProblem[]; warnings: JsonProblem[] } {
  const toJson = (p: Problem): JsonProblem => ({ file: p.file, line: p.line, component: p.component, key: p.key, message: fullMessage(p) });
  const errors = problems.filter((p) => p.severity === "error" || strict).map(toJson);
  const warnings = strict ? [] : problems.filter((p) => p.severity === "warning").map(toJson);
  return { valid: errors.length === 0, errors, warnings };
}

export interface JsonProblem {
  file: string;
  line: number;
  component: string;
  key: string;
  message: string;
}

/** Runs the command; returns the exit code. Output goes through the given writers (tests, run). */
export async function runValidate(args: string[], out: (s: string) => void = (s) => process.stdout.write(s), err: (s: string) => void = (s) => process.stderr.write(s)): Promise<number> {
  let opts: ValidateOptions;
  try {
    opts = parseValidateArgs(args);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err(`flume validate: ${e.message}\nusage: flume validate <file> [-n agent] [--json] [--strict] [-D key=value ...]\n`);
    return EXIT_USAGE;
  }
  const usageFailure = (problem: Problem): number => {
    if (opts.json) out(JSON.stringify(jsonReport([problem], false), null, 2) + "\n");
    err(`flume validate: ${formatProblem(problem)}\n`);
    return EXIT_USAGE;
  };

  const file = opts.file!;
  let text: string;
  try {
    text = decodeProperties(readFileSync(file));
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message;
    return usageFailure({ file, line: 0, component: "", key: "", message: `cannot read the file: ${reason}`, severity: "error", code: "syntax" });
  }

  // Custom components (types that name modules) are imported first, then checked like the rest.
  const result = await loadConfigText(text, file, { agentName: opts.agentName, sysProps: opts.sysProps }, registry);
  if (!result.config && result.agents.length > 0) {
    const selection = result.problems.find((p) => p.code === "unknown-agent" || p.code === "ambiguous-agent");
    if (selection) return usageFailure(selection);
  }

  const report = humanReport(result, file, opts.strict);
  out(opts.json ? JSON.stringify(jsonReport(result.problems, opts.strict), null, 2) + "\n" : report.text);
  return report.errors === 0 ? EXIT_VALID : EXIT_INVALID;
}

/**
 * The human report: one `file:line: severity: component: key: message (hint)` line per
 * problem and a verdict line. `flume run` prints the same when it refuses to start.
 */
export function humanReport(result: ParseResult, file: string, strict = false): { text: string; errors: number; warnings: number } {
  const problems = strict ? result.problems.map((p) => ({ ...p, severity: "error" as const })) : result.problems;
  const errors = problems.filter((p) => p.severity === "error").length;
  const warnings = problems.length - errors;
  const agent = result.config ? `agent ${result.config.agent}` : "configuration";
  const verdict =
    errors === 0
      ? `${file}: ${agent} is valid${warnings ? ` (${plural(warnings, "warning")})` : ""}`
      : `${file}: ${agent} is invalid: ${plural(errors, "error")}, ${plural(warnings, "warning")}`;
  return { text: problems.map((p) => formatProblem(p) + "\n").join("") + verdict + "\n", errors, warnings };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export const validate = defineCommand({
  meta: { name: "validate", description: "Check a Flume configuration file and report every problem with file and line" },
  args: {
    file: { type: "positional", required: false, description: "The Flume properties file (also -f/--conf-file)" },
    name: { type: "string", alias: "n", description: "The agent to check (optional when the file has one agent)" },
    json: { type: "boolean", description: 'Print {"valid", "errors", "warnings"} as JSON' },
    strict: { type: "boolean", description: "Treat warnings as errors" },
    define: { type: "string", alias: "D", valueHint: "key=value", description: "A system property for ${sys:key}, as -Dkey=value (repeatable)" },
  },
  async run(ctx) {
    process.exitCode = await runValidate(ctx.rawArgs);
  },
});
