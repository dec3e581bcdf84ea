/**
 * `flume replay FILE... [--step] [--json]`: re-executes transaction traces (from `flume simulate
 * --trace`, or `flume run --trace` of each agent of a tier) against fresh channels and checks
 * they reach the recorded ledgers. Exit 0 same ledgers, 1 divergence or a broken transaction
 * rule (with its line), 2 usage.
 */
import { existsSync } from "node:fs";
import { type LedgerSummary, SUMMARY_KEYS } from "../simulate/ledger.ts";
import { replayTraces, TraceError } from "../simulate/replay.ts";
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

const fmt = (n: number) => n.toLocaleString("en-US");

/** Rows "label  recorded  replayed", marking differences; `who` prefixes each (an agent's name). */
function ledgerTable(expected: LedgerSummary | undefined, replayed: LedgerSummary, who = "", whoWidth = 0): string[] {
  const w = Math.max(...Object.values(LABELS).map((l) => l.length)) + 2;
  return SUMMARY_KEYS.map((k) => {
    const e = expected ? fmt(expected[k]) : "-";
    const mark = expected && expected[k] !== replayed[k] ? "  <- differs" : "";
    return `${who.padEnd(whoWidth)}${LABELS[k].padEnd(w)}${e.padStart(12)}${fmt(replayed[k]).padStart(12)}${mark}`;
  });
}

async function runReplay(files: string[], stepMode: boolean, json: boolean): Promise<number> {
  if (files.length === 0) throw new UsageError("missing the trace: flume replay TRACE.jsonl [TRACE.jsonl ...] [--step] [--json]");
  for (const f of files) if (!existsSync(f)) throw new UsageError(`${f}: no such file`);
  const out: string[] = [];
  const step = stepMode && !json ? (line: string) => process.stdout.write(`${line}\n`) : undefined;
  let result;
  try {
    result = await replayTraces(files, { step });
  } catch (err) {
    if (err instanceof TraceError) {
      if (json) process.stdout.write(`${JSON.stringify({ ok: false, file: err.file, line: err.line, error: err.reason })}\n`);
      else console.error(`flume replay: ${err.message}`);
      return 1;
    }
    throw err;
  }
  const same = result.files.every((f) => f.expected !== undefined) && result.mismatches.length === 0;
  const agentsOf = (f: (typeof result.files)[number]) => f.agents.map((a) => ({ name: a.name, ledger: a.summary, expected: a.expected ?? null, mismatches: a.mismatches }));
  if (json) {
    const first = result.files[0];
    const body = {
      ok: same,
      operations: result.operations,
      transactions: result.transactions,
      truncated: result.truncated,
      ledger: result.files.length > 1 && result.tier ? result.tier.summary : first.summary,
      expected: result.files.length > 1 ? null : (first.expected ?? null),
      mismatches: result.mismatches,
      agents: result.files.length > 1 ? result.files.map((f) => ({ name: f.agent ?? f.file, file: f.file, ledger: f.summary, expected: f.expected ?? null, mismatches: f.mismatches })) : agentsOf(first),
      ...(result.tier ? { tier: { ledger: result.tier.summary, verdict: result.tier.verdict.line, hops: result.tier.hops } } : {}),
    };
    process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
    return same ? 0 : 1;
  }
  if (stepMode) out.push("");
  for (const f of result.files) {
    out.push(`replayed ${fmt(f.operations)} operations of ${fmt(f.transactions)} transactions from ${f.file}${f.agent ? ` (agent ${f.agent})` : ""}${f.truncated ? " (the trace was truncated at its size bound)" : ""}`);
    const w = Math.max(...Object.values(LABELS).map((l) => l.length)) + 2;
    out.push(`${"".padEnd(w)}${"recorded".padStart(12)}${"replayed".padStart(12)}`);
    out.push(...ledgerTable(f.expected, f.summary));
    if (f.agents.length > 0) {
      const aw = Math.max(...f.agents.map((a) => a.name.length)) + 2;
      out.push("", "per agent:");
      for (const a of f.agents) out.push(...ledgerTable(a.expected, a.summary, a.name, aw));
    }
    if (!f.expected) out.push("the trace has no ledger line (the recording did not finish): nothing to compare with");
    out.push("");
  }
  if (result.tier && result.files.length > 1) {
    out.push(`the tier across the ${result.files.length} traces${result.tier.hops.length > 0 ? `, hops: ${result.tier.hops.join("; ")}` : " (no avro sink of one sends to an avro source of another)"}:`);
    const w = Math.max(...Object.values(LABELS).map((l) => l.length)) + 2;
    for (const k of SUMMARY_KEYS) out.push(`${LABELS[k].padEnd(w)}${fmt(result.tier.summary[k]).padStart(12)}`);
    out.push(result.tier.verdict.line);
  } else out.push(result.tier ? result.tier.verdict.line : result.verdict.line);
  if (result.files.every((f) => f.expected)) out.push(same ? `replay reached the same ledger${result.files.length > 1 ? "s" : ""}` : `replay reached a different ledger (${result.mismatches.map((m) => m.key).join(", ")})`);
  process.stdout.write(`${out.join("\n")}\n`);
  return same ? 0 : 1;
}

export const replay = command({
  name: "replay",
  description: "Re-execute transaction traces against fresh channels and check they reach the same ledgers",
  args: {
    file: { type: "positional", multiple: true, description: "Traces written by flume simulate --trace or flume run --trace (several: the agents of a tier, replayed together)" },
    step: { type: "boolean", description: "Print every operation as a readable timeline" },
    json: { type: "boolean", description: "Print the result as JSON" },
  },
  run: (a) => runReplay(a.file, a.step, a.json),
});
