/**
 * `flume replay FILE [--step] [--json]`: re-executes a transaction trace (from `flume simulate
 * --trace` or `flume run --trace`) against fresh channels and checks it reaches the recorded
 * ledger. Exit 0 same ledger, 1 divergence or a broken transaction rule (with its line), 2 usage.
 */
import { existsSync } from "node:fs";
import { SUMMARY_KEYS } from "../simulate/ledger.ts";
import { replayTrace, TraceError } from "../simulate/replay.ts";
import { UsageError } from "./args.ts";
import { command } from "./command.ts";

const LABELS: Record<(typeof SUMMARY_KEYS)[number], string> = {
  accepted: "accepted",
  deliveredUnique: "delivered unique",
  duplicates: "duplicates",
  lost: "lost",
  remaining: "still in channels",
  rolledBack: "rolled-back transactions",
  crashLost: "lost in crashes",
};

async function runReplay(file: string | undefined, stepMode: boolean, json: boolean): Promise<number> {
  if (!file) throw new UsageError("missing the trace: flume replay TRACE.jsonl [--step] [--json]");
  if (!existsSync(file)) throw new UsageError(`${file}: no such file`);
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

export const replay = command({
  name: "replay",
  description: "Re-execute a transaction trace against fresh channels and check it reaches the same ledger",
  args: {
    file: { type: "positional", description: "A trace written by flume simulate --trace or flume run --trace" },
    step: { type: "boolean", description: "Print every operation as a readable timeline" },
    json: { type: "boolean", description: "Print the result as JSON" },
  },
  run: (a) => runReplay(a.file, a.step, a.json),
});
