/**
 * Reading a transaction trace (see trace.ts) for `flume replay`: its lines one at a time, its
 * open transactions, its ledger line, and the errors a bad or diverging trace raises.
 */
import { FlumeError } from "../core/errors.ts";
import type { Transaction } from "../core/transaction.ts";
import { type LedgerSummary, SUMMARY_KEYS } from "./ledger.ts";
import type { EventId, TraceHeader } from "./trace.ts";

/** A line that is not valid trace syntax, or an operation the transaction rules forbid. */
export class TraceError extends FlumeError {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}: ${reason}`);
  }
}

/** The fresh channel did something else than the traced one. */
export class TraceDivergence extends TraceError {}

/** A traced transaction replayed on a fresh channel. */
export interface OpenTx {
  id: number;
  ch: number;
  by?: string;
  line: number;
  tx: Transaction;
  puts: number[];
  takes: number[];
  closed: boolean;
  commitFailed: boolean;
  /** A commit called by the trace and not yet seen to return. */
  pending: { done: boolean; error: Error | null } | null;
}

/** Event ids for a --step line: a range when consecutive numbers, else the first few. */
export function describeIds(ids: readonly EventId[]): string {
  if (ids.length === 0) return "";
  const nums = ids.every((i) => typeof i === "number") ? (ids as number[]) : null;
  if (nums && nums.length > 2 && nums.every((v, i) => i === 0 || v === nums[i - 1] + 1)) return `${nums[0]}..${nums[nums.length - 1]}`;
  const shown = ids.slice(0, 6).map(String).join(" ");
  return ids.length > 6 ? `${shown} ... (+${ids.length - 6})` : shown;
}

/** One trace being read: its lines one at a time, and its own transactions. */
export class TraceFile {
  private pos = 0;
  lineNo = 0;
  header: TraceHeader | null = null;
  /** Wall-clock start (live traces), to merge several. */
  started = 0;
  deliveries: "sink" | "take" = "take";
  /** Channel name in the trace -> replay channel index. */
  readonly channelIndex = new Map<string, number>();
  readonly txs = new Map<number, OpenTx>();
  readonly begunAt = new Map<number, number>();
  /** Transactions that were open when a crash ended them. */
  readonly vanished = new Set<number>();
  expected?: LedgerSummary;
  expectedAgents?: Record<string, LedgerSummary>;
  truncated = false;
  operations = 0;
  /** The next record and its line, read ahead for merging. */
  next: { rec: Record<string, unknown> | null; raw: string; line: number; error?: string } | null = null;
  /** Time of the last timed operation, in the trace's own milliseconds. */
  lastT = 0;

  constructor(
    readonly name: string,
    readonly index: number,
    private readonly text: string,
  ) {}

  /** Reads the next non-empty line into `next` (null at the end). */
  advance(): void {
    this.next = null;
    while (this.pos < this.text.length) {
      let nl = this.text.indexOf("\n", this.pos);
      if (nl < 0) nl = this.text.length;
      const raw = this.text.slice(this.pos, nl);
      this.pos = nl + 1;
      this.lineNo++;
      if (raw.trim() === "") continue;
      try {
        const parsed: unknown = JSON.parse(raw);
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) this.next = { rec: null, raw, line: this.lineNo, error: "expected a JSON object" };
        else this.next = { rec: parsed as Record<string, unknown>, raw, line: this.lineNo };
      } catch (err) {
        this.next = { rec: null, raw, line: this.lineNo, error: `not valid JSON: ${(err as Error).message}` };
      }
      return;
    }
  }

  /** Where the next record falls on the merged time line (ms after the earliest trace began). */
  timeOfNext(base: number): number {
    const n = this.next;
    if (!n || !n.rec) return -Infinity;
    const t = n.rec.t;
    return typeof t === "number" && Number.isFinite(t) ? this.started - base + t : this.started - base + this.lastT;
  }
}

/** A ledger summary read from a trace line; `fail` reports a missing figure. */
export function readSummary(rec: Record<string, unknown>, fail: (reason: string) => never, what: string): LedgerSummary {
  const out = {} as LedgerSummary;
  for (const k of SUMMARY_KEYS) {
    const v = rec[k];
    if (typeof v !== "number") fail(`${what}: "${k}" must be a number`);
    out[k] = v as number;
  }
  return out;
}
