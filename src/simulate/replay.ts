/**
 * `flume replay`: re-executes transaction traces (see trace.ts) against fresh channels of
 * the same kind and capacity, checks each operation against the transaction rules and each
 * take against the events the fresh channel really returns, and compares the ledger it
 * reaches with the one recorded at the end of each trace.
 *
 * Several traces (`flume run --trace` of each agent of a live tier) replay together, their
 * operations merged by wall-clock time; where one trace's avro sink sends to another's avro
 * source, that sink's committed takes are hops of the tier, and the replay gives the tier's
 * ledger too. A simulated tier's trace is one file with every agent's channels.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Channel } from "../core/channel.ts";
import type { Event } from "../core/event.ts";
import { silentLogger } from "../core/logger.ts";
import { VirtualClock } from "../core/virtual-clock.ts";
import { createComponent } from "../agent/build.ts";
import type { AnyDefinition } from "../components/component.ts";
import { lookupComponent } from "../components/registry.ts";
import { type AnyOptions, keysWithRole, keyWithRole, type Role } from "../config/schema.ts";
import { channelStandIn } from "./stand-in.ts";
import { BrokerStore, type BrokerTransaction, ReplayedBrokerChannel } from "./replay-broker-channel.ts";
import { seededRandom } from "./rng.ts";
import { Epoch } from "./components.ts";
import { crashChannels, scratchStorage } from "./crash.ts";
import { Ledger, type LedgerSummary, SUMMARY_KEYS, verdict } from "./ledger.ts";
import { formatTime } from "./options.ts";
import type { EventId, TraceChannelInfo, TraceHeader } from "./trace.ts";
import { describeIds, type OpenTx, readSummary, TraceDivergence, TraceError, TraceFile } from "./trace-reader.ts";

export { TraceDivergence, TraceError } from "./trace-reader.ts";

interface ReplayChannel {
  info: TraceChannelInfo;
  /** Its name in the replay (agent-qualified when several traces replay together). */
  name: string;
  agent?: string;
  /** The trace it comes from. */
  file: number;
  channel: Channel;
  definition: AnyDefinition;
  /** The channel's clock: it dies with the channel at a crash, so no old timer touches the directory. */
  epoch: Epoch;
  dir?: string;
  /** Sinks whose committed takes are hops of the replayed tier. */
  forwarders: Set<string>;
  deliveries: "sink" | "take";
  /** A channel kept by a broker (replay-broker-channel.ts): what its topic holds, across crashes. */
  store?: BrokerStore;
}

export type Mismatch = { key: string; expected: number; replayed: number };

/** What a replay found in one trace, or (ReplayResult) over all of them. */
export interface ReplayFigures {
  operations: number;
  transactions: number;
  /** The trace's own view (what its recorder counted). */
  summary: LedgerSummary;
  expected?: LedgerSummary;
  mismatches: Mismatch[];
  truncated: boolean;
}

export interface ReplayFileResult extends ReplayFigures {
  file: string;
  agent?: string;
  /** A simulated tier's trace: each agent's ledger. */
  agents: { name: string; summary: LedgerSummary; expected?: LedgerSummary; mismatches: Mismatch[] }[];
}

/** Summed over the traces; summary and expected are the first trace's (the only one for `flume replay FILE`). */
export interface ReplayResult extends ReplayFigures {
  verdict: { held: boolean; line: string };
  files: ReplayFileResult[];
  /** Several agents (several traces, or a simulated tier's): the tier's ledger and the hops found. */
  tier?: { summary: LedgerSummary; verdict: { held: boolean; line: string }; hops: string[] };
}

const ID_HEADER = "trace.id";
const immediate: () => Promise<void> =
  typeof setImmediate === "function" ? () => new Promise((resolve) => setImmediate(resolve)) : () => new Promise((resolve) => setTimeout(resolve, 0));
const encoder = new TextEncoder();

export interface ReplayOptions {
  /** Called with a readable line per operation (--step). */
  step?: (line: string) => void;
  /** Scratch directory for durable channels (a temp dir by default). */
  workDir?: string;
}

export async function replayTrace(file: string, opts: ReplayOptions = {}): Promise<ReplayResult> {
  return replayTraces([file], opts);
}

export async function replayTraces(files: readonly string[], opts: ReplayOptions = {}): Promise<ReplayResult> {
  const traces = files.map((f, k) => new TraceFile(f, k, readFileSync(f, "utf8")));
  const several = traces.length > 1;
  const ownDir = opts.workDir === undefined;
  const workDir = opts.workDir ?? mkdtempSync(path.join(tmpdir(), "flume-replay-"));
  const clock = new VirtualClock(0, immediate);
  const channels: ReplayChannel[] = [];
  const ledger = new Ledger([]);
  const step = opts.step;
  /** Event ids: numbers as they are, strings interned; several traces key both apart. */
  const key = (id: EventId): number => ledger.index(several && typeof id === "number" ? `#${id}` : id);
  const hops: string[] = [];
  try {
    // Headers first: channels, start times, and the links between the traces.
    for (const tf of traces) {
      tf.advance();
      const n = tf.next;
      if (!n) throw new TraceError(tf.name, 1, "empty trace: no header line");
      if (!n.rec) throw new TraceError(tf.name, n.line, n.error as string);
      if (n.rec.flumeTrace !== 1) throw new TraceError(tf.name, n.line, 'not a Flume TS trace: the first line must be the header {"flumeTrace":1,...}');
      tf.header = n.rec as unknown as TraceHeader;
      tf.deliveries = tf.header.deliveries === "sink" ? "sink" : "take";
      const started = typeof tf.header.started === "string" ? Date.parse(tf.header.started) : NaN;
      tf.started = Number.isFinite(started) ? started : 0;
      tf.advance();
    }
    // Every header is known before channels are made: a channel's avro sinks may send to any trace.
    for (const tf of traces) {
      const list = Array.isArray(tf.header?.channels) ? (tf.header.channels as TraceChannelInfo[]) : [];
      for (const info of list) await addChannel(tf, info, 1);
    }
    const base = Math.min(...traces.map((t) => t.started));

    for (;;) {
      // The trace whose next operation comes first (ties: in the order given).
      let tf: TraceFile | null = null;
      let best = Infinity;
      for (const t of traces) {
        if (!t.next) continue;
        const at = t.timeOfNext(base);
        if (at < best) {
          best = at;
          tf = t;
        }
      }
      if (!tf) break;
      const n = tf.next as NonNullable<TraceFile["next"]>;
      tf.advance();
      await operation(tf, n, Math.max(0, best));
    }

    const fileResults: ReplayFileResult[] = [];
    for (const tf of traces) {
      // Transactions still open when the trace ended (a live agent stopped mid-batch) end unrecorded.
      for (const o of tf.txs.values()) {
        if (o.tx.state === "OPEN") await o.tx.rollback().catch(() => {});
      }
      const mine = channels.flatMap((c, k) => (c.file === tf.index ? [k] : []));
      // What is left must be what the ledger says is left (a truncated trace may end mid-commit).
      // An unfinished recording (no ledger line: the agent is still running or was killed) may end mid-commit too.
      for (const k of mine) {
        if (tf.truncated || tf.expected === undefined) break;
        const left = channels[k].channel.counter.values.ChannelSize;
        const held = ledger.held(k);
        if (left !== held) throw new TraceDivergence(tf.name, tf.lineNo, `replay diverged: channel ${channels[k].info.name} holds ${left} events at the end, the ledger says ${held}`);
      }
      // A simulated tier's trace counts as the tier; any other trace as its agent (forwards are deliveries).
      // (its channels name their agents; a Kafka sink's hop to a source of the run has no forwarders list).
      const tierTrace = mine.some((k) => (channels[k].info.forwarders?.length ?? 0) > 0) || new Set(mine.map((k) => channels[k].info.agent).filter((a) => a !== undefined)).size > 1;
      const summary = tierTrace ? ledger.summaryOver(mine, "tier") : ledger.summaryOf(mine);
      const agents = Object.entries(tf.expectedAgents ?? {}).map(([name, expected]) => {
        const own = mine.filter((k) => channels[k].agent === name);
        const s = ledger.summaryOf(own);
        return { name, summary: s, expected, mismatches: compare(expected, s) };
      });
      fileResults.push({ file: tf.name, agent: tf.header?.agent, operations: tf.operations, transactions: tf.begunAt.size, summary, expected: tf.expected, mismatches: compare(tf.expected, summary), truncated: tf.truncated, agents });
    }
    const first = fileResults[0];
    const agentsSeen = new Set(channels.map((c) => c.agent ?? ""));
    const tierSummary = ledger.summary();
    const tier = several || agentsSeen.size > 1 ? { summary: tierSummary, verdict: verdict(tierSummary, "tier at-least-once"), hops } : undefined;
    const mismatches = several ? fileResults.flatMap((f) => f.mismatches.map((m) => ({ ...m, key: `${f.agent ?? f.file}: ${m.key}` }))) : [...first.mismatches, ...first.agents.flatMap((a) => a.mismatches.map((m) => ({ ...m, key: `${a.name}: ${m.key}` })))];
    return {
      operations: fileResults.reduce((n, f) => n + f.operations, 0),
      transactions: fileResults.reduce((n, f) => n + f.transactions, 0),
      summary: first.summary,
      expected: first.expected,
      mismatches,
      truncated: fileResults.some((f) => f.truncated),
      verdict: verdict(first.summary),
      files: fileResults,
      tier,
    };
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

  /** The event the replay puts for a traced id. */
  function replayEvent(eid: EventId): Event {
    return { headers: { [ID_HEADER]: JSON.stringify(eid) }, body: encoder.encode(String(eid)) };
  }

  function compare(expected: LedgerSummary | undefined, summary: LedgerSummary): Mismatch[] {
    const out: Mismatch[] = [];
    if (expected) for (const k of SUMMARY_KEYS) if (expected[k] !== summary[k]) out.push({ key: k, expected: expected[k], replayed: summary[k] });
    return out;
  }

  /** Avro sinks of channel c that send to another trace's avro source: their takes are hops of the tier. */
  function link(c: ReplayChannel): void {
    if (!several) return;
    const wildcard = new Set(["0.0.0.0", "::", "[::]", ""]);
    for (const [sink, target] of Object.entries(c.info.forwardsTo ?? {})) {
      const colon = target.lastIndexOf(":");
      const host = target.slice(0, colon);
      const port = Number(target.slice(colon + 1));
      const to = traces.find((t) => t.index !== c.file && (t.header?.avroSources ?? []).some((s) => s.port === port && (s.bind === host || wildcard.has(s.bind))));
      if (!to) continue;
      c.forwarders.add(sink);
      hops.push(`${c.agent ?? traces[c.file].name}.${sink} -> ${to.header?.agent ?? to.name} (${target})`);
    }
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
    const ch = channels[o.ch].name;
    if (!o.by) return ch;
    return `${o.by} @ ${ch}`;
  }

  async function operation(tf: TraceFile, n: NonNullable<TraceFile["next"]>, at: number): Promise<void> {
    const file = tf.name;
    const lineNo = n.line;
    const fail = (reason: string): never => {
      throw new TraceError(file, lineNo, reason);
    };
    const diverge = (reason: string): never => {
      throw new TraceDivergence(file, lineNo, `replay diverged: ${reason}`);
    };
    if (!n.rec) return fail(n.error as string);
    const rec = n.rec;
    const op = rec.op;
    if (typeof op !== "string") fail('missing "op"');
    if (op === "channel") {
      await addChannel(tf, rec as unknown as TraceChannelInfo, lineNo);
      return;
    }
    if (op === "truncated") {
      tf.truncated = true;
      step?.(`  -- ${several ? `${file}: ` : ""}the trace was truncated here (its size bound); replay stops`);
      return;
    }
    if (op === "ledger") {
      tf.expected = readSummary(rec, fail, "ledger line");
      if (rec.agents !== undefined) {
        if (rec.agents === null || typeof rec.agents !== "object") fail('ledger line: "agents" must be an object of ledgers');
        tf.expectedAgents = {};
        for (const [name, v] of Object.entries(rec.agents as Record<string, unknown>)) {
          if (v === null || typeof v !== "object") fail(`ledger line: agent ${name} must be a ledger`);
          tf.expectedAgents[name] = readSummary(v as Record<string, unknown>, fail, `ledger line, agent ${name}`);
        }
      }
      return;
    }
    if (tf.truncated) return;
    const t = rec.t;
    if (typeof t !== "number" || !Number.isFinite(t)) fail(`"${op}" needs a time "t" in ms`);
    if ((t as number) < tf.lastT) fail(`time goes backwards (${t} after ${tf.lastT})`);
    tf.lastT = t as number;
    await clock.advanceTo(Math.max(clock.now(), at));
    tf.operations++;
    const when = `${formatTime(t as number).padStart(10)}${several ? `  ${tf.header?.agent ?? file}` : ""}`;
    if (op === "crash") {
      const agent = typeof rec.agent === "string" ? rec.agent : undefined;
      const hit = channels.flatMap((c, k) => (c.file === tf.index && (agent === undefined || c.agent === agent) ? [k] : []));
      if (agent !== undefined && hit.length === 0) fail(`crash of agent ${JSON.stringify(agent)}, which has no channel in this trace`);
      const hitSet = new Set(hit);
      for (const [id, o] of tf.txs) {
        if (!hitSet.has(o.ch)) continue;
        if (!o.closed) {
          tf.begunAt.delete(o.id);
          tf.vanished.add(o.id);
        }
        tf.txs.delete(id);
      }
      for (const k of hit) channels[k].epoch.alive = false;
      const { dropped: lost } = await crashChannels(
        ledger,
        hit.map((k) => ({ index: k, definition: channels[k].definition, instance: channels[k].channel })),
        (e) => key(JSON.parse(e.headers[ID_HEADER]) as EventId),
        { settle: settleIo },
      );
      for (const k of hit) await restart(k);
      step?.(`${when}  CRASH${agent ? ` of ${agent}` : ""}: open transactions vanish${lost.filter((l) => l.lost > 0).map((l) => `; ${l.channel} loses ${l.lost} events`).join("")}`);
      return;
    }
    if (op === "landed" || op === "brokerLost") {
      const k = tf.channelIndex.get(String(rec.ch));
      if (k === undefined) fail(`${op} in unknown channel ${JSON.stringify(rec.ch)}`);
      const v = rec.ids;
      if (!Array.isArray(v) || !v.every((x) => typeof x === "number" || typeof x === "string")) fail(`"${op}" needs "ids", an array of event ids`);
      const list = v as EventId[];
      const c = channels[k as number];
      const broker = c.channel instanceof ReplayedBrokerChannel ? c.channel : null;
      if (op === "landed") {
        ledger.committed(k as number, list.map(key), []);
        broker?.landed(list.map(replayEvent));
        step?.(`${when}  ${"".padEnd(9)} ${c.name.padEnd(14)} +${list.length} copies no commit counted (${String(rec.cause)}) ${describeIds(list)}`);
        return;
      }
      const counted = rec.counted;
      if (counted !== "held" && counted !== "delivered" && counted !== "forwarded") fail(`"brokerLost" needs "counted": "held", "delivered" or "forwarded"`);
      ledger.lostInBroker(k as number, list.map(key), counted as "held" | "delivered" | "forwarded");
      if (counted === "held") broker?.lost(list.map((eid) => JSON.stringify(eid)));
      step?.(`${when}  ${"".padEnd(9)} ${c.name.padEnd(14)} LOST ${list.length} acknowledged records in a failover (${String(counted)}) ${describeIds(list)}`);
      return;
    }
    if (op === "forward") {
      const k = tf.channelIndex.get(String(rec.ch));
      if (k === undefined) fail(`forward from unknown channel ${JSON.stringify(rec.ch)}`);
      const v = rec.ids;
      if (!Array.isArray(v) || !v.every((x) => typeof x === "number" || typeof x === "string")) fail(`"forward" needs "ids", an array of event ids`);
      ledger.forwarded(k as number, (v as EventId[]).map(key));
      step?.(`${when}  ${"".padEnd(9)} ${channels[k as number].name.padEnd(14)} forwarded ${(v as EventId[]).length} events: the next agent committed them`);
      return;
    }
    const txId = rec.tx;
    if (typeof txId !== "number" || !Number.isInteger(txId)) fail(`"${op}" needs a transaction number "tx"`);
    const id = txId as number;
    if (op === "begin") {
      const chName = rec.ch;
      const k = tf.channelIndex.get(String(chName));
      if (k === undefined) fail(`begin on unknown channel ${JSON.stringify(chName)}`);
      if (tf.begunAt.has(id)) fail(`transaction ${id} begun twice (first at line ${tf.begunAt.get(id)})`);
      const tx = channels[k as number].channel.getTransaction();
      tx.begin();
      const o: OpenTx = { id, ch: k as number, by: typeof rec.by === "string" ? rec.by : undefined, line: lineNo, tx, puts: [], takes: [], closed: false, commitFailed: false, pending: null };
      tf.txs.set(id, o);
      tf.begunAt.set(id, lineNo);
      tf.vanished.delete(id);
      step?.(`${when}  tx ${String(id).padEnd(6)} ${label(o).padEnd(14)} begin`);
      return;
    }
    const o = tf.txs.get(id);
    if (!o) {
      const what = tf.vanished.has(id) ? "vanished in a crash" : tf.begunAt.has(id) ? "was closed before the crash" : "was never begun";
      fail(`${op} on transaction ${id}, which ${what}: ${op === "take" || op === "put" ? `a ${op} must happen inside a transaction` : "begin it first"}`);
    }
    const cur = o as OpenTx;
    const tx = cur.tx;
    const stateError = (err: unknown): never => fail(`${op} on transaction ${id} (begun at line ${cur.line}) breaks the transaction rules: ${(err as Error).message}`);
    const ids = (): EventId[] => {
      const v = rec.ids;
      if (!Array.isArray(v) || !v.every((x) => typeof x === "number" || typeof x === "string")) return fail(`"${op}" needs "ids", an array of event ids`);
      return v as EventId[];
    };
    const rc = channels[cur.ch];
    const chName = rc.name;
    switch (op) {
      case "put": {
        const list = ids();
        try {
          for (const eid of list) {
            tx.put(replayEvent(eid));
            cur.puts.push(key(eid));
          }
        } catch (err) {
          stateError(err);
        }
        step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} put ${list.length} events ${describeIds(list)}`);
        break;
      }
      case "take": {
        const list = ids();
        const broker = rc.channel instanceof ReplayedBrokerChannel ? rc.channel : null;
        for (const want of list) {
          let e: Event | null;
          // A broker-kept channel takes what the trace names (the broker chose it).
          const takeNext = () => {
            if (broker) broker.wanted = JSON.stringify(want);
            return tx.take();
          };
          try {
            e = takeNext();
            // The event may come from a commit whose disk write is still running.
            if (e === null && [...tf.txs.values()].some((x) => x.pending && !x.pending.done)) {
              await settleIo();
              e = takeNext();
            }
          } catch (err) {
            return stateError(err);
          }
          if (e === null && broker) diverge(`transaction ${id} took event ${JSON.stringify(want)} from ${chName}, which holds no copy of it that another open take does not have`);
          if (e === null) diverge(`transaction ${id} took event ${JSON.stringify(want)} from ${chName}, but the replayed channel is empty`);
          const got = JSON.parse((e as Event).headers[ID_HEADER]) as EventId;
          if (got !== want) diverge(`transaction ${id} took event ${JSON.stringify(want)} from ${chName}, the replayed channel gave ${JSON.stringify(got)}`);
          cur.takes.push(key(got));
        }
        // "end" (the channel looked empty) is not checked: a commit whose disk write was
        // still running then may already be visible in the replay.
        step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} take ${list.length} events ${describeIds(list)}${rec.end === true ? (list.length ? " (then empty)" : "(channel empty)") : ""}`);
        break;
      }
      case "deliver": {
        const list = ids();
        const taken = new Set(cur.takes);
        const idx = list.map(key);
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
        const want = typeof rec.error === "string" ? rec.error : null;
        // A broker-kept channel's commit ends as the trace says (the broker decided).
        if (rc.channel instanceof ReplayedBrokerChannel) (tx as BrokerTransaction).settle?.(want);
        if (!p.done) await settleIo();
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
        if (rc.deliveries === "take" && cur.takes.length > 0) {
          if (cur.by !== undefined && rc.forwarders.has(cur.by)) ledger.forwarded(cur.ch, cur.takes);
          else ledger.delivered(cur.ch, cur.takes);
        }
        step?.(`${when}  tx ${String(id).padEnd(6)} ${"".padEnd(14)} commit${cur.puts.length ? ` +${cur.puts.length}` : ""}${cur.takes.length ? ` -${cur.takes.length}` : ""}  (${chName} holds ${rc.channel.counter.values.ChannelSize})`);
        break;
      }
      case "rollback": {
        try {
          await tx.rollback();
        } catch (err) {
          stateError(err);
        }
        ledger.rolledBack(cur.ch);
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

  /**
   * A fresh channel of the traced type, made by its definition as the agent builder makes it:
   * with the traced options (or the traced limits, for traces that did not record options),
   * its storage in a scratch directory.
   */
  function makeChannel(file: string, info: TraceChannelInfo, dir: string, epoch: Epoch, line: number, store?: BrokerStore): { channel: Channel; definition: AnyDefinition } {
    const definition = lookupComponent("channel", info.type);
    if (!definition) throw new TraceError(file, line, `channel ${info.name}: unknown channel type "${info.type}"`);
    // Kept by a broker: the trace says what the broker did (replay-broker-channel.ts).
    if (store) return { channel: new ReplayedBrokerChannel(info.name, store, (e) => e.headers[ID_HEADER]), definition };
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
    const ctx = { name: info.name, agentName: "replay", clock: epoch, logger: silentLogger, random: seededRandom(1, 9), storagePath: scratchStorage(dir), blockingIo: true, lookup: lookupComponent };
    return { channel: createComponent<Channel>(built.definition, built.options, ctx), definition: built.definition };
  }

  async function addChannel(tf: TraceFile, info: TraceChannelInfo, line: number): Promise<void> {
    if (info === null || typeof info !== "object" || typeof info.name !== "string") throw new TraceError(tf.name, line, "a channel needs a name");
    const dir = path.join(workDir, `ch${channels.length}`);
    const epoch = new Epoch(1, clock);
    const store = lookupComponent("channel", info.type)?.brokerLink?.channel ? new BrokerStore() : undefined;
    const { channel, definition } = makeChannel(tf.name, info, dir, epoch, line, store);
    await channel.start();
    const agent = typeof info.agent === "string" ? info.agent : typeof tf.header?.agent === "string" ? tf.header.agent : several ? path.basename(tf.name) : undefined;
    const name = several && info.agent === undefined && agent !== undefined ? `${agent}.${info.name}` : info.name;
    tf.channelIndex.set(info.name, channels.length);
    const c: ReplayChannel = { info, name, agent, file: tf.index, channel, definition, epoch, dir, forwarders: new Set(info.forwarders ?? []), deliveries: tf.deliveries, store };
    channels.push(c);
    ledger.addChannel({ name, durable: info.durable === true, agent });
    link(c);
  }

  /** A channel the crash left as killed, built again. */
  async function restart(k: number): Promise<void> {
    const c = channels[k];
    c.epoch = new Epoch(c.epoch.number + 1, clock);
    c.channel = makeChannel(traces[c.file].name, c.info, c.dir as string, c.epoch, 0, c.store).channel;
    await c.channel.start();
  }
}
