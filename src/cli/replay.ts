/**
 * `flume replay FILE [--step] [--json]`: re-executes a transaction trace (from `flume simulate
 * --trace` or `flume run --trace`) against fresh channels and checks it reaches the recorded
 * ledger. Exit 0 same ledger, 1 divergence or a broken transaction rule (with its line), 2 usage.
 */
import { existsSync } from "node:fs";
import { type ArgsDef, defineCommand } from "citty";
import { SUMMARY_KEYS } from "../simulate/ledger.ts";
import { replayTrace, TraceError } from "../simulate/replay.ts";

const LABELS: Record<(typeof SUMMARY_KEYS)[number], string> = {
  accepted: "accepted",
  deliveredUnique: "delivered unique",
  duplicates: "duplicates",
  lost: "lost",
  remaining: "still in channels",
  rolledBack: "rolled-back transactions",
  crashLost: "lost in crashes",
};

export async function runReplayCli(argv: string[]): Promise<number> {
  let file: string | undefined;
  let stepMode = false;
  let json = false;
  for (const a of argv) {
    if (a === "--step") stepMode = true;
    else if (a === "--json") json = true;
    else if (a.startsWith("-")) {
      console.error(`flume replay: unknown option "${a}"`);
      return 2;
    } else if (file === undefined) file = a;
    else {
      console.error(`flume replay: one trace file only (got "${file}" and "${a}")`);
      return 2;
    }
  }
  if (!file) {
    console.error("flume replay: usage: flume replay TRACE.jsonl [--step] [--json]");
    return 2;
  }
  if (!existsSync(file)) {
    console.error(`flume replay: ${file}: no such file`);
    return 2;
  }
  const out: string[] = [];
  const step = stepMode && !json ? (line: string) => process.stdout.write(`${line}\n`) : undefined;
  let result;
  try {
    result = await replayTrace(file, { step });
  } catch (err) {
    if (err instanceof TraceError) {
      if (json) process.stdout.write(`${JSON.stringify({ ok: false, file: err.file, line: err.line, error: err.reason })}\n`);
      else console.error(`flume replay: ${err.message}`);
      return 1;
    }
    throw err;
  }
  const same = result.expected !== undefined && result.mismatches.length === 0;
  if (json) {
    process.stdout.write(`${JSON.stringify({ ok: same, operations: result.operations, transactions: result.transactions, truncated: result.truncated, ledger: result.summary, expected: result.expected ?? null, mismatches: result.mismatches }, null, 2)}\n`);
    return same ? 0 : 1;
  }
  if (stepMode) out.push("");
  out.push(`replayed ${result.operations.toLocaleString("en-US")} operations of ${result.transactions.toLocaleString("en-US")} transactions from ${file}${result.truncated ? " (the trace was truncated at its size bound)" : ""}`);
  const w = Math.max(...Object.values(LABELS).map((l) => l.length)) + 2;
  out.push(`${"".padEnd(w)}${"recorded".padStart(12)}${"replayed".padStart(12)}`);
  for (const k of SUMMARY_KEYS) {
    const e = result.expected ? result.expected[k].toLocaleString("en-US") : "-";
    const r = result.summary[k].toLocaleString("en-US");
    const mark = result.expected && result.expected[k] !== result.summary[k] ? "  <- differs" : "";
    out.push(`${LABELS[k].padEnd(w)}${e.padStart(12)}${r.padStart(12)}${mark}`);
  }
  out.push(result.verdict.line);
  if (!result.expected) out.push("the trace has no ledger line (the recording did not finish): nothing to compare with");
  else out.push(same ? "replay reached the same ledger" : `replay reached a different ledger (${result.mismatches.map((m) => m.key).join(", ")})`);
  process.stdout.write(`${out.join("\n")}\n`);
  return same ? 0 : 1;
}

const ARGS = {
  file: { type: "positional", required: false, description: "A trace written by flume simulate --trace or flume run --trace" },
  step: { type: "boolean", description: "Print every operation as a readable timeline" },
  json: { type: "boolean", description: "Print the result as JSON" },
} satisfies ArgsDef;

export const replay = defineCommand({
  meta: { name: "replay", description: "Re-execute a transaction trace against fresh channels and check it reaches the same ledger" },
  args: ARGS,
  async run({ rawArgs }) {
    process.exit(await runReplayCli(rawArgs));
  },
});
