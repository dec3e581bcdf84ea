/**
 * `flume validate <file> [-n agent] [--json] [--strict] [-D k=v ...]`: reports every problem
 * of a Flume configuration file at once. Exit 0 valid (warnings allowed), 1 errors (or
 * warnings under --strict), 2 usage errors (bad options, unreadable file, no such agent).
 */

import * as registry from "../components/registry.ts";
import { formatProblem, fullMessage, type Problem } from "../config/problems.ts";
import type { ParseResult } from "../config/flume-config.ts";
import { ConfigReadError, loadConfigFile } from "../config/load.ts";
import { AGENT_FILE_ARGS, type ArgsSpec, FLUME_NG_ARGS, type Parsed, UsageError } from "./args.ts";
import { command, EXIT_USAGE } from "./command.ts";

export const EXIT_VALID = 0;
export const EXIT_INVALID = 1;

const VALIDATE_ARGS = {
  file: { type: "positional", description: "The Flume properties file (or -f FILE)" },
  ...AGENT_FILE_ARGS,
  name: { ...AGENT_FILE_ARGS.name, description: "The agent to check; optional when the file configures one agent" },
  json: { type: "boolean", description: 'Print {"valid", "errors", "warnings"} as JSON' },
  strict: { type: "boolean", description: "Treat warnings as errors" },
  ...FLUME_NG_ARGS,
} as const satisfies ArgsSpec;

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

/** Checks the file; returns the exit code. */
async function runValidate(a: Parsed<typeof VALIDATE_ARGS>): Promise<number> {
  if (a.file !== undefined && a["conf-file"] !== undefined) throw new UsageError(`expected one configuration file, got ${a["conf-file"]}, ${a.file}`);
  const file = a.file ?? a["conf-file"];
  if (file === undefined) throw new UsageError("missing the configuration file to validate: flume validate FILE");
  const out = (s: string) => process.stdout.write(s);
  const usageFailure = (problem: Problem): number => {
    if (a.json) out(JSON.stringify(jsonReport([problem], false), null, 2) + "\n");
    process.stderr.write(`flume validate: ${formatProblem(problem)}\n`);
    return EXIT_USAGE;
  };

  let loading;
  try {
    // Custom components (types that name modules) are imported first, then checked like the rest.
    loading = loadConfigFile(file, { agentName: a.name, sysProps: Object.fromEntries(a.define) }, registry).loaded;
  } catch (e) {
    if (!(e instanceof ConfigReadError)) throw e;
    return usageFailure({ file, line: 0, component: "", key: "", message: `cannot read the file: ${e.reason}`, severity: "error", code: "syntax" });
  }
  const result = await loading;
  if (!result.config && result.agents.length > 0) {
    const selection = result.problems.find((p) => p.code === "unknown-agent" || p.code === "ambiguous-agent");
    if (selection) return usageFailure(selection);
  }

  const report = humanReport(result, file, a.strict);
  out(a.json ? JSON.stringify(jsonReport(result.problems, a.strict), null, 2) + "\n" : report.text);
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

export const validate = command({
  name: "validate",
  description: "Check a Flume configuration file and report every problem with file and line",
  args: VALIDATE_ARGS,
  run: runValidate,
});
