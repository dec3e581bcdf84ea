/**
 * `flume replay`: re-executes a transaction trace (see trace.ts) against fresh channels of
 * the same kind and capacity, checks each operation against the transaction rules and each
 * take against the events the fresh channel really returns, and compares the ledger it
 * reaches with the one recorded at the end of the trace.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Channel } from "../core/channel.ts";
import { FlumeError } from "../core/errors.ts";
import type { Event } from "../core/event.ts";
import { silentLogger } from "../core/logger.ts";
import type { Transaction } from "../core/transaction.ts";
import { VirtualClock } from "../core/virtual-clock.ts";
import { createComponent } from "../agent/build.ts";
import type { AnyDefinition } from "../components/component.ts";
import { lookupComponent } from "../components/registry.ts";
import { type AnyOptions, keysWithRole, keyWithRole, type Role } from "../config/schema.ts";
import { channelStandIn } from "./stand-in.ts";
import { seededRandom } from "./rng.ts";
import { Epoch } from "./components.ts";
import { Ledger, type LedgerSummary, SUMMARY_KEYS, verdict } from "./ledger.ts";
import { formatTime } from "./options.ts";
import type { EventId, TraceChannelInfo } from "./trace.ts";

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

interface OpenTx {
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

interface ReplayChannel {
  info: TraceChannelInfo;
  channel: Channel;
  definition: AnyDefinition;
  /** The channel's clock: it dies with the channel at a crash, so no old timer touches the directory. */
  epoch: Epoch;
  dir?: string;
}

export interface ReplayResult {
  operations: number;
  transactions: number;
  summary: LedgerSummary;
  expected?: LedgerSummary;
  mismatches: { key: string; expected: number; replayed: number }[];
  truncated: boolean;
  verdict: { held: boolean; line: string };
}

const ID_HEADER = "trace.id";
const immediate: () => Promise<void> =
  typeof setImmediate === "function" ? () => new Promise((resolve) => setImmediate(resolve)) : () => new Promise((resolve) => setTimeout(resolve, 0));
const encoder = new TextEncoder();

function describeIds(ids: readonly EventId[]): string {
  if (ids.length === 0) return "";
  const nums = ids.every((i) => typeof i === "number") ? (ids as number[]) : null;
  if (nums && nums.length > 2 && nums.every((v, i) => i === 0 || v === nums[i - 1] + 1)) return `${nums[0]}..${nums[nums.length - 1]}`;
  const shown = ids.slice(0, 6).map(String).join(" ");
  return ids.length > 6 ? `${shown} ... (+${ids.length - 6})` : shown;
}

export interface ReplayOptions {
  /** Called with a readable line per operation (--step). */
  step?: (line: string) => void;
  /** Scratch directory for durable channels (a temp dir by default). */
  workDir?: string;
}

export async function replayTrace(file: string, opts: ReplayOptions = {}): Promise<ReplayResult> {
  const text = readFileSync(file, "utf8");
  const ownDir = opts.workDir === undefined;
  const workDir = opts.workDir ?? mkdtempSync(path.join(tmpdir(), "flume-replay-"));
  const clock = new VirtualClock(0, immediate);
  const channels: ReplayChannel[] = [];
  const txs = new Map<number, OpenTx>();
  const begunAt = new Map<number, number>();
  /** Transactions that were open when a crash ended them. */
  const vanished = new Set<number>();
  let ledger = new Ledger([]);
  let deliveries: "sink" | "take" = "take";
  let expected: LedgerSummary | undefined;
  let truncated = false;
  let operations = 0;
  const step = opts.step;
  try {
    let lineNo = 0;
    let pos = 0;
    let sawHeader = false;
    while (pos < text.length) {
      let nl = text.indexOf("\n", pos);
      if (nl < 0) nl = text.length;
      const raw = text.slice(pos, nl);
      pos = nl + 1;
      lineNo++;
      if (raw.trim() === "") continue;
      const fail = (reason: string): never => {
        throw new TraceError(file, lineNo, reason);
      };
      const diverge = (reason: string): never => {
        throw new TraceDivergence(file, lineNo, `replay diverged: ${reason}`);
      };
      let rec: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(raw);
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) fail("expected a JSON object");
        rec = parsed as Record<string, unknown>;
      } catch (err) {
        if (err instanceof TraceError) throw err;
        return fail(`not valid JSON: ${(err as Error).message}`);
      }
      if (!sawHeader) {
        if (rec.flumeTrace !== 1) fail("not a Flume TS trace: the first line must be the header {\"flumeTrace\":1,...}");
        sawHeader = true;
        deliveries = rec.deliveries === "sink" ? "sink" : "take";
        const list = Array.isArray(rec.channels) ? (rec.channels as TraceChannelInfo[]) : [];
        ledger = new Ledger([]);
        for (const info of list) await addChannel(info, lineNo);
        continue;
      }
      const op = rec.op;
      if (typeof op !== "string") fail('missing "op"');
      if (op === "channel") {
        await addChannel(rec as unknown as TraceChannelInfo, lineNo);
        continue;
      }
      if (op === "truncated") {
        truncated = true;
        step?.(`  -- the trace was truncated here (its size bound); replay stops`);
        continue;
      }
      if (op === "ledger") {
        expected = {} as LedgerSummary;
        for (const k of SUMMARY_KEYS) {
          const v = rec[k];
          if (typeof v !== "number") fail(`ledger line: "${k}" must be a number`);
          expected[k] = v as number;
        }
        continue;
      }
      if (truncated) continue;
      const t = rec.t;
      if (typeof t !== "number" || !Number.isFinite(t)) fail(`"${op}" needs a time "t" in ms`);
      if ((t as number) < clock.now()) fail(`time goes backwards (${t} after ${clock.now()})`);
      await clock.advanceTo(t as number);
      operations++;
      const when = formatTime(t as number).padStart(10);
      if (op === "crash") {
        for (const o of txs.values()) {
          if (o.closed) continue;
          begunAt.delete(o.id);
          vanished.add(o.id);
        }
        txs.clear();
        // A channel that keeps only part of its events (SPILLABLEMEMORY) says which it loses.
        const partial = new Map<number, number[]>();
        channels.forEach((c, k) => {
          const lostOnCrash = c.definition.durability?.lostOnCrash;
          if (lostOnCrash) partial.set(k, lostOnCrash(c.channel).map((e) => ledger.index(JSON.parse(e.headers[ID_HEADER]) as EventId)));
        });
        const lost = ledger.crash(partial);
        await settleIo();
        for (let k = 0; k < channels.length; k++) await restart(k);
        step?.(`${when}  CRASH: open transactions vanish${lost.filter((l) => l.lost > 0).map((l) => `; ${l.channel} loses ${l.lost} events`).join("")}`);
        continue;
      }
      const txId = rec.tx;
      if (typeof txId !== "number" || !Number.isInteger(txId)) fail(`"${op}" needs a transaction number "tx"`);
      const id = txId as number;
      if (op === "begin") {
        const chName = rec.ch;
        const k = channels.findIndex((c) => c.info.name === chName);
        if (k < 0) fail(`begin on unknown channel ${JSON.stringify(chName)}`);
        if (begunAt.has(id)) fail(`transaction ${id} begun twice (first at line ${begunAt.get(id)})`);
        const tx = channels[k].channel.getTransaction();
        tx.begin();
        const o: OpenTx = { id, ch: k, by: typeof rec.by === "string" ? rec.by : undefined, line: lineNo, tx, puts: [], takes: [], closed: false, commitFailed: false, pending: null };
        txs.set(id, o);
        begunAt.set(id, lineNo);
        vanished.delete(id);
        step?.(`${when}  tx ${String(id).padEnd(6)} ${label(o).padEnd(14)} begin`);
        continue;
      }
      const o = txs.get(id);
      if (!o) {
        const what = vanished.has(id) ? "vanished in a crash" : begunAt.has(id) ? "was closed before the crash" : "was never begun";
        fail(`${op} on transaction ${id}, which ${what}: ${op === "take" || op === "put" ? `a ${op} must happen inside a transaction` : "begin it first"}`);
      }
      const tx = (o as OpenTx).tx;
      const cur = o as OpenTx;
      const stateError = (err: unknown): never => fail(`${op} on transaction ${id} (begun at line ${cur.line}) breaks the transaction rules: ${(err as Error).message}`);
      const ids = (): EventId[] => {
        const v = rec.ids;
        if (!Array.isArray(v) || !v.every((x) => typeof x === "number" || typeof x === "string")) return fail(`"${op}" needs "ids", an array of event ids`);
        return v as EventId[];
      };
      const chName = channels[cur.ch].info.name;
      switch (op) {
        case "put": {
          const list = ids();
          try {
            for (const eid of list) {
              tx.put({ headers: { [ID_HEADER]: JSON.stringify(eid) }, body: encoder.encode(String(eid)) });
              cur.puts.push(ledger.index(eid));
            }
          } catch (err) {
            stateError(err);
          }
          step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} put ${list.length} events ${describeIds(list)}`);
          break;
        }
        case "take": {
          const list = ids();
          for (const want of list) {
            let e: Event | null;
            try {
              e = tx.take();
              // The event may come from a commit whose disk write is still running.
              if (e === null && [...txs.values()].some((x) => x.pending && !x.pending.done)) {
                await settleIo();
                e = tx.take();
              }
            } catch (err) {
              return stateError(err);
            }
            if (e === null) diverge(`transaction ${id} took event ${JSON.stringify(want)} from ${chName}, but the replayed channel is empty`);
            const got = JSON.parse((e as Event).headers[ID_HEADER]) as EventId;
            if (got !== want) diverge(`transaction ${id} took event ${JSON.stringify(want)} from ${chName}, the replayed channel gave ${JSON.stringify(got)}`);
            cur.takes.push(ledger.index(got));
          }
          // "end" (the channel looked empty) is not checked: a commit whose disk write was
          // still running then may already be visible in the replay.
          step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} take ${list.length} events ${describeIds(list)}${rec.end === true ? (list.length ? " (then empty)" : "(channel empty)") : ""}`);
          break;
        }
        case "deliver": {
          const list = ids();
          const taken = new Set(cur.takes);
          const idx = list.map((eid) => ledger.index(eid));
          const stray = idx.findIndex((i) => !taken.has(i));
          if (stray >= 0) fail(`deliver of event ${JSON.stringify(list[stray])}, which transaction ${id} did not take`);
          ledger.delivered(cur.ch, idx);
          step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} delivered ${list.length} events${typeof rec.by === "string" ? ` by ${rec.by}` : ""}`);
          break;
        }
        case "commit": {
          if (typeof rec.refused === "string") {
            if (tx.state !== "OPEN") stateError(new Error(`commit() called when transaction is ${tx.state}`));
            cur.commitFailed = true;
            step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} commit REFUSED: ${rec.refused}`);
            break;
          }
          if (tx.state !== "OPEN" || cur.pending) {
            try {
              await tx.commit();
            } catch (err) {
              stateError(err);
            }
            stateError(new Error(`commit() called twice`));
          }
          const pending = { done: false, error: null as Error | null };
          cur.pending = pending;
          tx.commit().then(
            () => (pending.done = true),
            (err: unknown) => {
              pending.done = true;
              pending.error = err instanceof Error ? err : new Error(String(err));
            },
          );
          // Let it take effect as it did when it was recorded (a wait for space goes on waiting).
          await immediate();
          break;
        }
        case "committed": {
          const pending = cur.pending;
          if (!pending) fail(`committed on transaction ${id} without a commit line before it`);
          const p = pending as { done: boolean; error: Error | null };
          if (!p.done) await settleIo();
          const want = typeof rec.error === "string" ? rec.error : null;
          if (!p.done) diverge(`transaction ${id} ${want ? "failed to commit" : "committed"} on ${chName}, the replayed commit is still waiting (for space?)`);
          if (want && !p.error) diverge(`transaction ${id} failed to commit on ${chName} (${want}), the replayed commit succeeded`);
          if (!want && p.error) {
            if (p.error.name === "TransactionStateError") stateError(p.error);
            diverge(`transaction ${id} committed on ${chName}, the replayed commit failed: ${p.error.message}`);
          }
          cur.pending = null;
          if (want) {
            cur.commitFailed = true;
            step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} commit FAILED: ${want}`);
            break;
          }
          ledger.committed(cur.ch, cur.puts, cur.takes);
          if (deliveries === "take" && cur.takes.length > 0) ledger.delivered(cur.ch, cur.takes);
          step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} commit${cur.puts.length ? ` +${cur.puts.length}` : ""}${cur.takes.length ? ` -${cur.takes.length}` : ""}  (${chName} holds ${channels[cur.ch].channel.counter.values.ChannelSize})`);
          break;
        }
        case "rollback": {
          try {
            await tx.rollback();
          } catch (err) {
            stateError(err);
          }
          ledger.rolledBack();
          step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} ROLLBACK${cur.takes.length ? ` (${cur.takes.length} events back into ${chName})` : ""}`);
          break;
        }
        case "close": {
          try {
            tx.close();
          } catch (err) {
            stateError(err);
          }
          cur.closed = true;
          break;
        }
        default:
          fail(`unknown op "${op}"`);
      }
    }
    if (!sawHeader) throw new TraceError(file, 1, "empty trace: no header line");

    // Transactions still open when the trace ended (a live agent stopped mid-batch) end unrecorded.
    for (const o of txs.values()) {
      if (o.tx.state === "OPEN") await o.tx.rollback().catch(() => {});
    }
    // What is left must be what the ledger says is left (a truncated trace may end mid-commit).
    // An unfinished recording (no ledger line: the agent is still running or was killed) may end mid-commit too.
    for (let k = 0; k < channels.length && !truncated && expected !== undefined; k++) {
      const left = channels[k].channel.counter.values.ChannelSize;
      const held = ledger.held(k);
      if (left !== held) throw new TraceDivergence(file, lineNo, `replay diverged: channel ${channels[k].info.name} holds ${left} events at the end, the ledger says ${held}`);
    }
    const summary = ledger.summary();
    const mismatches: ReplayResult["mismatches"] = [];
    if (expected) for (const k of SUMMARY_KEYS) if (expected[k] !== summary[k]) mismatches.push({ key: k, expected: expected[k], replayed: summary[k] });
    return { operations, transactions: begunAt.size, summary, expected, mismatches, truncated, verdict: verdict(summary) };
  } finally {
    for (const c of channels) {
      try {
        await c.channel.stop();
      } catch {
        // best effort
      }
    }
    if (ownDir) rmSync(workDir, { recursive: true, force: true });
  }

  /** Lets pending disk writes of file channels finish. */
  async function settleIo(): Promise<void> {
    for (;;) {
      await immediate();
      const busy = channels.some((c) => c.channel.ioBusy?.() === true);
      if (!busy) return;
    }
  }

  function label(o: OpenTx): string {
    const ch = channels[o.ch].info.name;
    if (!o.by) return ch;
    return `${o.by} @ ${ch}`;
  }

  /**
   * A fresh channel of the traced type, made by its definition as the agent builder makes it:
   * with the traced options (or the traced limits, for traces that did not record options),
   * its storage in a scratch directory.
   */
  function makeChannel(info: TraceChannelInfo, dir: string, epoch: Epoch, line: number): { channel: Channel; definition: AnyDefinition } {
    const definition = lookupComponent("channel", info.type);
    if (!definition) throw new TraceError(file, line, `channel ${info.name}: unknown channel type "${info.type}"`);
    let options: AnyOptions;
    if (info.options && typeof info.options === "object") options = info.options;
    else {
      const raw: Record<string, string> = {};
      const set = (role: Role, v: number | undefined) => {
        const key = keyWithRole(definition.schema, role);
        if (key && v !== undefined && v > 0) raw[key] = String(v);
      };
      set("capacity", info.capacity);
      // Further capacity properties (SPILLABLEMEMORY's overflowCapacity) add to the first: none.
      for (const key of keysWithRole(definition.schema, "capacity").slice(1)) if (info.capacity) raw[key] = "0";
      set("transactionCapacity", info.transactionCapacity && info.capacity ? Math.min(info.transactionCapacity, info.capacity) : info.transactionCapacity);
      set("keepAlive", info.keepAlive);
      options = definition.parse(raw).options;
    }
    // A type that needs a server is replayed by the stand-in its definition names.
    let stand: ReturnType<typeof channelStandIn>;
    try {
      stand = channelStandIn(info.name, definition, options, (t) => lookupComponent("channel", t));
    } catch (err) {
      throw new TraceError(file, line, (err as Error).message);
    }
    const built = stand ?? { definition, options };
    const storage = new Map<string, string>();
    const storagePath = (configured: string) => {
      let d = storage.get(configured);
      if (d === undefined) storage.set(configured, (d = path.join(dir, `storage-${storage.size + 1}`)));
      return d;
    };
    const ctx = { name: info.name, agentName: "replay", clock: epoch, logger: silentLogger, random: seededRandom(1, 9), storagePath };
    return { channel: createComponent<Channel>(built.definition, built.options, ctx), definition: built.definition };
  }

  async function addChannel(info: TraceChannelInfo, line: number): Promise<void> {
    if (info === null || typeof info !== "object" || typeof info.name !== "string") throw new TraceError(file, line, "a channel needs a name");
    const dir = path.join(workDir, `ch${channels.length}`);
    const epoch = new Epoch(1, clock);
    const { channel, definition } = makeChannel(info, dir, epoch, line);
    await channel.start();
    channels.push({ info, channel, definition, epoch, dir });
    ledger.addChannel({ name: info.name, durable: info.durable === true });
  }

  async function restart(k: number): Promise<void> {
    const c = channels[k];
    c.epoch.alive = false;
    // As after a real crash: no orderly stop; what survives is the definition's business.
    await c.definition.durability?.crash(c.channel);
    c.epoch = new Epoch(c.epoch.number + 1, clock);
    c.channel = makeChannel(c.info, c.dir as string, c.epoch, 0).channel;
    await c.channel.start();
  }
}
