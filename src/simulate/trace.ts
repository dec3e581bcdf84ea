/**
 * Transaction tracing: a Channel wrapper that reports every transaction operation to an
 * observer, and the recorder that writes those operations as JSON lines (`--trace FILE` of
 * `flume simulate` and `flume run`). `flume replay` reads the same format (see replay.ts).
 *
 * Line format, one JSON object per line:
 *   {"flumeTrace":1,"clock":"virtual"|"wall","deliveries":"sink"|"take","channels":[{name,type,durable,capacity,transactionCapacity}]}
 *   {"t":ms,"op":"begin","tx":n,"ch":"c1","by":"r1"}
 *   {"t":ms,"op":"put"|"take","tx":n,"ids":[...]}          consecutive puts (takes) of a transaction share a line
 *   {"t":ms,"op":"take","tx":n,"ids":[...],"end":true}     the last take found the channel empty
 *   {"t":ms,"op":"deliver","tx":n,"by":"k1","ids":[...]}   events a sink delivered (simulations)
 *   {"t":ms,"op":"commit","tx":n}                          commit called (its effects may land before it returns)
 *   {"t":ms,"op":"committed","tx":n}  or  ...,"error":"..."} commit returned, or failed (e.g. no space within keep-alive)
 *   {"t":ms,"op":"commit","tx":n,"refused":"..."}          a commit refused before it reached the channel (injected fault)
 *   {"t":ms,"op":"rollback","tx":n}   {"t":ms,"op":"close","tx":n}
 * Operations are written when they are called, so a line comes before anything its effects cause.
 *   {"t":ms,"op":"forward","ch":"edge1.c1","ids":[...]}     the next agent of a tier committed these events of ch's forwarding take
 *   {"t":ms,"op":"crash"}  or  ...,"agent":"edge1"}          the process (of that agent) died; its open transactions vanish
 *   {"t":ms,"op":"landed","ch":"c1","ids":[...],"cause":"lost-ack"}  a broker-kept channel (Kafka) holds copies no commit
 *                                                           counted: a failed or retried put, a crash, committed takes a crash gives back
 *   {"t":ms,"op":"brokerLost","ch":"c1","ids":[...],"counted":"held"|"delivered"|"forwarded"}  a failover lost these acknowledged
 *                                                           records (acks 0 or 1): from the channel's topic, or after a sink wrote them
 *   {"op":"truncated","bytes":n}                            the size bound was reached
 *   {"op":"ledger",...LedgerSummary,"agents"?:{name: LedgerSummary}}  the recorder's ledger at the end (a tier's, and each agent's)
 * In a tier, channels are named "agent.channel" and carry "agent"; "forwarders" lists the sinks
 * whose committed takes went to the next agent (forwards, not deliveries). A live trace's header
 * names its agent and avro sources, its channels the avro sinks' targets ("forwardsTo"), so that
 * `flume replay a.jsonl b.jsonl` can tell the hops of a live tier.
 */
import fs from "node:fs";
import type { AgentModel, ChannelModel } from "../config/model.ts";
import { type AnyOptions, capacityOf, keyWithRole, type Role } from "../config/schema.ts";
import type { Channel } from "../core/channel.ts";
import type { Clock } from "../core/clock.ts";
import type { ChannelCounter } from "../core/counters.ts";
import type { Event } from "../core/event.ts";
import type { LifecycleState } from "../core/lifecycle.ts";
import { takeEach, type Transaction, type TransactionState } from "../core/transaction.ts";
import { contentIdOf } from "./event-ids.ts";
import { Ledger, type LedgerSummary } from "./ledger.ts";

export type EventId = number | string;

/** What a TracedChannel reports. Calls come after the inner channel accepted the operation. */
export interface ChannelObserver {
  begin(tx: TracedTransaction): void;
  put(tx: TracedTransaction, event: Event): void;
  take(tx: TracedTransaction, event: Event | null): void;
  /** commit() was called and goes to the channel. */
  commitStart?(tx: TracedTransaction): void;
  /** commit() returned (error null) or failed; refused: the fault was injected before the channel saw it. */
  commit(tx: TracedTransaction, error: Error | null, refused?: boolean): void;
  rollback(tx: TracedTransaction): void;
  close(tx: TracedTransaction): void;
  /** A fault to inject instead of committing (simulated put failures), or null. */
  beforeCommit?(tx: TracedTransaction): Error | null;
}

/** The shared part of a traced channel: the real channel, its observer, its transaction numbers. */
export class TraceTarget {
  /** Set when the process that owned the channel crashed: late calls are ignored. */
  dead = false;
  constructor(
    readonly inner: Channel,
    readonly index: number,
    readonly observer: ChannelObserver,
    readonly nextTx: { n: number },
  ) {}
}

/**
 * A channel seen through a tracer. Each component may get its own view (`by`), so the trace
 * says which source or sink ran a transaction; all views share the real channel.
 */
export class TracedChannel implements Channel {
  /** Present only when the real channel has it (ChannelProcessor.maxBatchSize relies on that). */
  readonly getTransactionCapacity?: () => number;
  /** Forwarded so sink runners still wake when events arrive (tracing must not change behaviour). */
  readonly onPutsCommitted?: (listener: () => void) => () => void;

  constructor(
    readonly target: TraceTarget,
    readonly by?: string,
  ) {
    const inner = target.inner;
    if (inner.getTransactionCapacity) this.getTransactionCapacity = () => (inner.getTransactionCapacity as () => number).call(inner);
    if (inner.onPutsCommitted) {
      const subscribe = inner.onPutsCommitted;
      this.onPutsCommitted = (listener) => subscribe.call(inner, () => {
        if (!target.dead) listener();
      });
    }
  }

  get inner(): Channel {
    return this.target.inner;
  }
  get name(): string {
    return this.target.inner.name;
  }
  get counter(): ChannelCounter<string> {
    return this.target.inner.counter;
  }
  get durable(): boolean | undefined {
    return this.target.inner.durable;
  }
  /** Another view of the same channel for component `by`. */
  view(by: string): TracedChannel {
    return new TracedChannel(this.target, by);
  }
  getTransaction(): TracedTransaction {
    return new TracedTransaction(this.target, this.target.inner.getTransaction(), this.target.nextTx.n++, this.by);
  }
  sourcePosition(source: string): string | undefined {
    return this.target.inner.sourcePosition?.(source);
  }
  start(): void | Promise<void> {
    return this.target.inner.start();
  }
  stop(): void | Promise<void> {
    return this.target.inner.stop();
  }
  getLifecycleState(): LifecycleState {
    return this.target.inner.getLifecycleState();
  }
}

export class TracedTransaction implements Transaction {
  /** Events put and taken so far (for observers that act at commit). */
  readonly puts: Event[] = [];
  readonly takes: Event[] = [];

  constructor(
    readonly target: TraceTarget,
    readonly inner: Transaction,
    /** Trace-wide transaction number (not the core's id, which is process-wide). */
    readonly id: number,
    readonly by: string | undefined,
  ) {}

  get state(): TransactionState {
    return this.inner.state;
  }
  get channel(): string {
    return this.target.inner.name;
  }

  begin(): void {
    this.inner.begin();
    if (!this.target.dead) this.target.observer.begin(this);
  }

  put(event: Event): void {
    this.inner.put(event);
    this.puts.push(event);
    if (!this.target.dead) this.target.observer.put(this, event);
  }

  take(): Event | null {
    const e = this.inner.take();
    if (e !== null) this.takes.push(e);
    if (!this.target.dead) this.target.observer.take(this, e);
    return e;
  }

  putAll(events: readonly Event[]): void {
    // One by one: the trace records each operation.
    for (let i = 0; i < events.length; i++) this.put(events[i]);
  }

  takeInto(out: Event[], max: number): number {
    // One by one: the trace records each operation.
    return takeEach(() => this.take(), out, max);
  }

  async commit(): Promise<void> {
    const o = this.target.observer;
    const fault = this.target.dead ? null : (o.beforeCommit?.(this) ?? null);
    if (fault) {
      o.commit(this, fault, true);
      throw fault;
    }
    if (!this.target.dead) o.commitStart?.(this);
    try {
      await this.inner.commit();
    } catch (err) {
      if (!this.target.dead) o.commit(this, err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
    if (!this.target.dead) o.commit(this, null);
  }

  async rollback(): Promise<void> {
    // Reported first: the taken events are back in the channel before rollback() returns.
    if (this.inner.state === "OPEN" && !this.target.dead) this.target.observer.rollback(this);
    await this.inner.rollback();
  }

  close(): void {
    const was = this.inner.state;
    this.inner.close();
    if (was !== "CLOSED" && !this.target.dead) this.target.observer.close(this);
  }

  setSourcePosition(source: string, position: string): void {
    this.inner.setSourcePosition(source, position);
  }
}

// Event ids live in event-ids.ts; re-exported for the modules that import them from here.
export { contentIdOf, SIM_ID_HEADER, simIdOf } from "./event-ids.ts";

// ---- the recorder ---------------------------------------------------------------------

export interface TraceChannelInfo {
  name: string;
  type: string;
  durable: boolean;
  capacity?: number;
  transactionCapacity?: number;
  /** Seconds a commit waits for space (replay waits the same). */
  keepAlive?: number;
  /** The channel's options, so replay builds the same channel through its definition. */
  options?: AnyOptions;
  /** The agent that owns it (tiers). */
  agent?: string;
  /** Sinks of it that send to the next agent of the traced tier. */
  forwarders?: string[];
  /** Avro sinks of it and the host:port each sends to (live traces). */
  forwardsTo?: Record<string, string>;
}

/** What a trace records of a channel, from its model: type, durability, limits by role, options. */
export function channelInfo(model: ChannelModel): TraceChannelInfo {
  const byRole = (role: Role): number | undefined => {
    const key = keyWithRole(model.definition.schema, role);
    const v = key === undefined ? undefined : model.options[key];
    return typeof v === "number" ? v : undefined;
  };
  return {
    name: model.name,
    type: model.type,
    durable: model.definition.durability !== undefined,
    capacity: capacityOf(model.definition.schema, model.options),
    transactionCapacity: byRole("transactionCapacity"),
    keepAlive: byRole("keepAlive"),
    options: model.options,
  };
}

export interface TraceHeader {
  flumeTrace: 1;
  clock: "virtual" | "wall";
  /** "sink": deliveries are the deliver lines; "take": a committed take counts as the delivery. */
  deliveries: "sink" | "take";
  channels: TraceChannelInfo[];
  /** Wall-clock start of a live recording (ISO 8601). */
  started?: string;
  seed?: number;
  /** The agent recorded (live traces). */
  agent?: string;
  /** Its avro sources, so a tier's traces can be joined where an avro sink sends to one. */
  avroSources?: { name: string; bind: string; port: number }[];
}

/** Where trace lines go: a file with buffered writes, or memory (tests). */
export interface TraceOutput {
  write(text: string): void;
  close(): void;
}

export class FileTraceOutput implements TraceOutput {
  private readonly fd: number;
  private buf: string[] = [];
  private pending = 0;
  constructor(
    readonly file: string,
    /** Bytes buffered before a write; small for live agents, so a killed agent leaves most of its trace. */
    private readonly flushAt = 1 << 20,
  ) {
    this.fd = fs.openSync(file, "w");
  }
  write(text: string): void {
    this.buf.push(text);
    this.pending += text.length;
    if (this.pending >= this.flushAt) this.flush();
  }
  flush(): void {
    if (this.buf.length === 0) return;
    fs.writeSync(this.fd, this.buf.join(""));
    this.buf = [];
    this.pending = 0;
  }
  close(): void {
    this.flush();
    fs.closeSync(this.fd);
  }
}

export interface RecorderOptions {
  clock: Clock;
  idOf: (event: Event) => EventId;
  deliveries: "sink" | "take";
  /** Stop recording (with a "truncated" line) after this many bytes; 0 = no bound. */
  maxBytes?: number;
  seed?: number;
  /** Header fields of a live recording. */
  agent?: string;
  avroSources?: TraceHeader["avroSources"];
}

/** Pending run of puts or takes of one transaction, written as one line. */
interface Run {
  t: number;
  tx: number;
  op: "put" | "take";
  ids: EventId[];
  end: boolean;
}

/**
 * Writes every operation of traced channels as JSON lines and keeps a ledger of them, written
 * as the last line, that `flume replay` must reach again.
 */
export class TraceRecorder implements ChannelObserver {
  readonly ledger: Ledger;
  private readonly targets: TraceTarget[] = [];
  private readonly t0: number;
  private run: Run | null = null;
  private bytes = 0;
  private truncated = false;
  private closed = false;
  private readonly txCounter = { n: 1 };

  constructor(
    private readonly out: TraceOutput,
    channels: TraceChannelInfo[],
    private readonly options: RecorderOptions,
  ) {
    this.t0 = options.clock.now();
    this.ledger = new Ledger(channels.map((c) => ({ name: c.name, durable: c.durable })));
    const header: TraceHeader = {
      flumeTrace: 1,
      clock: options.seed === undefined ? "wall" : "virtual",
      deliveries: options.deliveries,
      channels,
    };
    if (options.seed !== undefined) header.seed = options.seed;
    else header.started = new Date(this.t0).toISOString();
    if (options.agent !== undefined) header.agent = options.agent;
    if (options.avroSources && options.avroSources.length > 0) header.avroSources = options.avroSources;
    this.emit(JSON.stringify(header));
    this.channelNames = channels.map((c) => c.name);
    this.forwarders = channels.map((c) => new Set(c.forwarders ?? []));
  }

  private channelNames: string[];
  /** Per channel, sinks whose committed takes are forwards. */
  private forwarders: Set<string>[];

  /** Wraps channel number `index` (the order given to the constructor). */
  wrap(channel: Channel, index: number, observer: ChannelObserver = this): TracedChannel {
    const target = new TraceTarget(channel, index, observer, this.txCounter);
    this.targets[index] = target;
    return new TracedChannel(target);
  }

  /** Shares this recorder's transaction numbering with a wrapper made elsewhere. */
  get transactionCounter(): { n: number } {
    return this.txCounter;
  }

  private now(): number {
    return this.options.clock.now() - this.t0;
  }

  private emit(line: string): void {
    if (this.truncated || this.closed) return;
    const max = this.options.maxBytes ?? 0;
    if (max > 0 && this.bytes + line.length + 1 > max) {
      this.truncated = true;
      this.out.write(`{"op":"truncated","bytes":${this.bytes}}\n`);
      return;
    }
    this.bytes += line.length + 1;
    this.out.write(line + "\n");
  }

  private flushRun(): void {
    const r = this.run;
    if (!r) return;
    this.run = null;
    this.emit(`{"t":${r.t},"op":"${r.op}","tx":${r.tx},"ids":${JSON.stringify(r.ids)}${r.end ? ',"end":true' : ""}}`);
  }

  private line(op: string, tx: number, extra = ""): void {
    this.flushRun();
    this.emit(`{"t":${this.now()},"op":"${op}","tx":${tx}${extra}}`);
  }

  private key(id: EventId): number {
    if (typeof id === "number") return id;
    return this.ledger.index(id);
  }

  private addToRun(tx: TracedTransaction, op: "put" | "take", id: EventId | null): void {
    const r = this.run;
    if (r && r.tx === tx.id && r.op === op && !r.end) {
      if (id === null) r.end = true;
      else r.ids.push(id);
      return;
    }
    this.flushRun();
    this.run = { t: this.now(), tx: tx.id, op, ids: id === null ? [] : [id], end: id === null };
  }

  begin(tx: TracedTransaction): void {
    this.line("begin", tx.id, `,"ch":${JSON.stringify(this.channelNames[tx.target.index] ?? tx.channel)}${tx.by ? `,"by":${JSON.stringify(tx.by)}` : ""}`);
  }

  put(tx: TracedTransaction, event: Event): void {
    this.addToRun(tx, "put", this.options.idOf(event));
  }

  take(tx: TracedTransaction, event: Event | null): void {
    this.addToRun(tx, "take", event === null ? null : this.options.idOf(event));
  }

  commitStart(tx: TracedTransaction): void {
    this.line("commit", tx.id);
  }

  commit(tx: TracedTransaction, error: Error | null, refused = false): void {
    if (error) {
      const text = JSON.stringify(`${error.name}: ${error.message}`);
      this.line(refused ? "commit" : "committed", tx.id, `,"${refused ? "refused" : "error"}":${text}`);
      return;
    }
    this.line("committed", tx.id);
    // Past the size bound the ledger stops too, so it matches what the file holds.
    if (this.truncated) return;
    const idOf = this.options.idOf;
    const puts = tx.puts.map((e) => this.key(idOf(e)));
    const takes = tx.takes.map((e) => this.key(idOf(e)));
    this.ledger.committed(tx.target.index, puts, takes);
    if (this.options.deliveries === "take" && takes.length > 0) {
      const forward = tx.by !== undefined && this.forwarders[tx.target.index]?.has(tx.by);
      if (forward) this.ledger.forwarded(tx.target.index, takes);
      else this.ledger.delivered(tx.target.index, takes);
    }
  }

  rollback(tx: TracedTransaction): void {
    this.line("rollback", tx.id);
    if (!this.truncated) this.ledger.rolledBack(tx.target.index);
  }

  close(tx: TracedTransaction): void {
    this.line("close", tx.id);
  }

  /** Events a sink delivered from transaction tx (simulations; a failed batch may deliver some). */
  deliver(tx: TracedTransaction, by: string, ids: EventId[]): void {
    this.flushRun();
    this.emit(`{"t":${this.now()},"op":"deliver","tx":${tx.id},"by":${JSON.stringify(by)},"ids":${JSON.stringify(ids)}}`);
    if (this.truncated) return;
    this.ledger.delivered(
      tx.target.index,
      ids.map((id) => this.key(id)),
    );
  }

  /** The next agent committed these events of channel ch's forwarding take (simulated tiers). */
  forward(ch: number, ids: EventId[]): void {
    this.flushRun();
    this.emit(`{"t":${this.now()},"op":"forward","ch":${JSON.stringify(this.channelNames[ch])},"ids":${JSON.stringify(ids)}}`);
    if (this.truncated) return;
    this.ledger.forwarded(
      ch,
      ids.map((id) => this.key(id)),
    );
  }

  /** The broker holds copies in channel ch that no commit counted (a Kafka channel's topic; simulations). */
  landed(ch: number, ids: readonly EventId[], cause: string): void {
    this.flushRun();
    this.emit(`{"t":${this.now()},"op":"landed","ch":${JSON.stringify(this.channelNames[ch])},"ids":${JSON.stringify(ids)},"cause":${JSON.stringify(cause)}}`);
    if (this.truncated) return;
    this.ledger.committed(
      ch,
      ids.map((id) => this.key(id)),
      [],
    );
  }

  /** A failover lost acknowledged records counted as held in channel ch, or as delivered or forwarded from it (simulations). */
  brokerLost(ch: number, ids: readonly EventId[], counted: "delivered" | "forwarded" | "held"): void {
    this.flushRun();
    this.emit(`{"t":${this.now()},"op":"brokerLost","ch":${JSON.stringify(this.channelNames[ch])},"ids":${JSON.stringify(ids)},"counted":"${counted}"}`);
    if (this.truncated) return;
    this.ledger.lostInBroker(
      ch,
      ids.map((id) => this.key(id)),
      counted,
    );
  }

  /**
   * The process (of `agent`, owning `channels`) crashed: open transactions vanish, non-durable
   * channels lose their events, and a channel in `partial` (by index) loses the events listed for it.
   */
  crash(channels?: number[], agent?: string, partial?: ReadonlyMap<number, readonly EventId[]>): void {
    this.flushRun();
    this.emit(`{"t":${this.now()},"op":"crash"${agent !== undefined ? `,"agent":${JSON.stringify(agent)}` : ""}}`);
    if (this.truncated) return;
    const keyed = partial && new Map([...partial].map(([k, ids]) => [k, ids.map((id) => this.key(id))]));
    this.ledger.crash(channels, undefined, keyed);
  }

  /** A channel made after the header was written (a live agent's reload): announced by a "channel" line. */
  addChannel(info: TraceChannelInfo): number {
    const index = this.ledger.addChannel({ name: info.name, durable: info.durable });
    this.channelNames[index] = info.name;
    this.forwarders[index] = new Set(info.forwarders ?? []);
    this.flushRun();
    this.emit(JSON.stringify({ op: "channel", ...info }));
    return index;
  }

  /** Writes the ledger line (the tier's, and each agent's when given) and closes the output. */
  finish(agents?: { name: string; channels: number[] }[]): LedgerSummary {
    const summary = this.ledger.summary();
    if (this.closed) return summary;
    this.flushRun();
    const wasTruncated = this.truncated;
    this.truncated = false;
    const perAgent = agents ? { agents: Object.fromEntries(agents.map((a) => [a.name, this.ledger.summaryOf(a.channels)])) } : {};
    this.out.write(JSON.stringify({ op: "ledger", ...summary, ...perAgent, ...(wasTruncated ? { truncated: true } : {}) }) + "\n");
    this.closed = true;
    this.out.close();
    return summary;
  }
}

/** Observers called one after the other (a simulation's ledger and a trace recorder). */
export function bothObservers(a: ChannelObserver, b: ChannelObserver): ChannelObserver {
  return {
    begin: (tx) => (a.begin(tx), b.begin(tx)),
    put: (tx, e) => (a.put(tx, e), b.put(tx, e)),
    take: (tx, e) => (a.take(tx, e), b.take(tx, e)),
    commitStart: (tx) => (a.commitStart?.(tx), b.commitStart?.(tx)),
    commit: (tx, err, refused) => (a.commit(tx, err, refused), b.commit(tx, err, refused)),
    rollback: (tx) => (a.rollback(tx), b.rollback(tx)),
    close: (tx) => (a.close(tx), b.close(tx)),
    beforeCommit: (tx) => a.beforeCommit?.(tx) ?? b.beforeCommit?.(tx) ?? null,
  };
}

/**
 * Trace file of a live agent (`flume run --trace FILE`): wraps every channel buildAgent makes.
 * Given the agent's model, the header names the agent and its avro sources, and each channel
 * the avro sinks that read it with their host:port, so the traces of a tier's agents can be
 * replayed together (`flume replay a.jsonl b.jsonl`).
 */
export function liveTracer(file: string, clock: Clock, maxBytes: number, agent?: AgentModel): { wrapChannel: (channel: Channel, model: ChannelModel) => Channel; finish: () => LedgerSummary } {
  // Sources and sinks that link agents declare it (ComponentDefinition.rpcLink); the header keeps Flume TS's first name for them.
  const avroSources = agent
    ? [...agent.sources.values()].flatMap((s) => {
        const address = s.definition.rpcLink?.address(s.options);
        return address ? [{ name: s.name, bind: address.host, port: address.port }] : [];
      })
    : undefined;
  const recorder = new TraceRecorder(new FileTraceOutput(file, 64 * 1024), [], { clock, idOf: contentIdOf, deliveries: "take", maxBytes, agent: agent?.agent, avroSources });
  const forwardsTo = (channel: string): Record<string, string> | undefined => {
    const sinks = agent ? [...agent.sinks.values()].filter((k) => k.channel === channel).flatMap((k) => {
          const address = k.definition.rpcLink?.address(k.options);
          return address ? [[k.name, `${address.host}:${address.port}`]] : [];
        }) : [];
    return sinks.length > 0 ? Object.fromEntries(sinks) : undefined;
  };
  return {
    wrapChannel(channel: Channel, model: ChannelModel): Channel {
      const to = forwardsTo(model.name);
      return recorder.wrap(channel, recorder.addChannel({ ...channelInfo(model), ...(to ? { forwardsTo: to } : {}) }));
    },
    finish: () => recorder.finish(),
  };
}
