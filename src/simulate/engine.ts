/**
 * The simulation loop. Every agent of the run (one, or a tier) is built by the agent builder
 * and runs its real core (channels, ChannelProcessor, selectors, interceptors, sink
 * processors, runners, and on links the real avro sink and source over the simulated
 * network) on one VirtualClock. The loop lets everything run to its next wait, then moves time
 * to the next timer. Time moves only when all work is done, so a run is the same on every
 * machine for the same seed (file channel I/O is awaited before time moves, too).
 * Its parts: agent-state.ts, fault-schedule.ts, sim-world.ts, event-notes.ts, collect-result.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Channel } from "../core/channel.ts";
import { ChannelException } from "../core/errors.ts";
import type { Event } from "../core/event.ts";
import { type BuiltAgent, buildAgent, createComponent } from "../agent/build.ts";
import type { AnySource } from "../core/source.ts";
import type { Sink } from "../core/sink.ts";
import { VirtualClock } from "../core/virtual-clock.ts";
import { type Cause, CAUSE_TEXT, DuplicateCauses } from "./causes.ts";
import { type CrashedChannel, crashChannels, givenBackOnCrash } from "./crash.ts";
import { Epoch, SimClient, SimSink, SimSource, type SimWorld } from "./components.ts";
import { Ledger } from "./ledger.ts";
import { SimNetwork } from "./network.ts";
import { type CrashSpec, formatTime, type SimulationOptions } from "./options.ts";
import { seededRandom } from "./rng.ts";
import { AgentState, type OpenTx, type SinkInfo, sinkInfos } from "./agent-state.ts";
import { type SharedRandoms, simWorld } from "./sim-world.ts";
import { EventNotes } from "./event-notes.ts";
import { simulationResult } from "./collect-result.ts";
import { crashSchedule, linkFaults } from "./fault-schedule.ts";
import { StreamClient } from "./stream-client.ts";
import { SimPeers } from "./peers.ts";
import type { CrashRecord, SimulationHooks, SimulationResult } from "./simulation-result.ts";
import { type ChannelPlan, CLIENT, type LinkPlan, type Topology, buildTopology } from "./topology.ts";
import { bothObservers, type ChannelObserver, channelInfo, FileTraceOutput, simIdOf, TraceRecorder, TracedChannel, type TracedTransaction, TraceTarget } from "./trace.ts";

/** Flume's sink runner backoff (SinkRunner: 1000 ms steps, at most 5000 ms). */
const SINK_RUNNER_BACKOFF = { backoffSleepIncrement: 1000, maxBackoffSleep: 5000 };

// The result's shape lives in simulation-result.ts; re-exported for the modules that import it from here.
export type { AgentResult, ChannelResult, CrashRecord, DuplicateCause, EventHistory, LinkResult, Progress, SimulationHooks, SimulationResult, SinkResult, SourceResult } from "./simulation-result.ts";

/** Whether a durable channel's real disk I/O is still running. */
function ioBusy(channel: Channel): boolean {
  if (!channel.ioBusy) throw new Error(`simulate: channel ${channel.name} cannot say whether its disk writes are done; the simulation would not be deterministic`);
  return channel.ioBusy();
}

/** One turn of the event loop after all pending microtasks (setImmediate is cheap: ~1 µs; setTimeout(0) is ~1 ms). */
const immediate: () => Promise<void> =
  typeof setImmediate === "function" ? () => new Promise((resolve) => setImmediate(resolve)) : () => new Promise((resolve) => setTimeout(resolve, 0));

export async function runSimulation(o: SimulationOptions, hooks: SimulationHooks = {}): Promise<SimulationResult> {
  const ownWorkDir = o.workDir === undefined;
  const workDir = o.workDir ?? mkdtempSync(path.join(tmpdir(), "flume-simulate-"));
  try {
    const topo = await buildTopology(o);
    return await new Simulation(o, topo, workDir, hooks).run();
  } finally {
    if (ownWorkDir) rmSync(workDir, { recursive: true, force: true });
  }
}

class Simulation {
  private readonly clock: VirtualClock;
  private readonly ledger: Ledger;
  private readonly causes: DuplicateCauses;
  private readonly recorder: TraceRecorder | null;
  private readonly network: SimNetwork;
  private readonly agents: AgentState[];
  private readonly channelAgent: AgentState[] = [];
  private readonly forwarderSets: Set<string>[];
  private readonly clients = new Map<string, SimClient>();
  /** The simulated Kafka broker and HDFS every agent's Kafka and hdfs components use. */
  private readonly peers: SimPeers;
  /** Clients of line sources, sending over the simulated network, by link index. */
  private readonly streams = new Map<number, StreamClient>();
  private readonly sinks = new Map<string, SinkInfo>();
  private readonly open = new Map<TracedTransaction, OpenTx>();
  /** Per event: 1 + the channel whose forwarding take last took it (0: none). */
  private inFlight: Int32Array;
  /**
   * Per event: the cause to give a commit by the next agent that comes after its forwarding
   * take ended (1 lost-answer: the sender gave up, e.g. its request-timeout; 2 crash-replay:
   * it crashed with a durable channel), since the sender will send it again.
   */
  private late: Uint8Array;
  /** Event objects an avro source committed into one of its channels (for multi-channel sources). */
  private committedObjects = new WeakSet<Event>();
  private forwardedObjects = new WeakSet<Event>();
  private readonly notes: EventNotes;
  private readonly stats = { produced: 0, clientAccepted: 0, deliveries: 0, sinkBatches: 0 };
  private readonly putRandom: Random;
  private readonly random: Random;
  private readonly peaks: number[];
  private readonly fills: number[];
  private epochNo = 0;
  private crashNo = 0;
  private readonly crashNumbers = new Map<CrashRecord, number>();

  constructor(
    private readonly o: SimulationOptions,
    private readonly topo: Topology,
    workDir: string,
    private readonly hooks: SimulationHooks,
  ) {
    this.agents = topo.agents.map((p, k) => new AgentState(p, k, workDir));
    for (const a of this.agents) for (const k of a.channelIndexes) this.channelAgent[k] = a;
    this.forwarderSets = topo.channels.map((c) => new Set(c.forwarders));
    const settle = async (): Promise<void> => {
      for (;;) {
        await immediate();
        if (!this.agents.some((a) => a.running && a.durable.some(ioBusy))) return;
      }
    };
    this.clock = new VirtualClock(0, settle);
    this.notes = new EventNotes(o.events, hooks.watch ?? [], this.clock, topo);
    this.causes = new DuplicateCauses(
      topo.channels.length,
      o.events,
      this.notes.watching ? (ch, i, cause) => this.notes.watchedNote(i, ch, `that delivery is a duplicate: ${cause === "unexplained" ? "of unknown cause" : CAUSE_TEXT[cause]}`) : undefined,
      this.notes.watching ? (ch, i, cause) => this.notes.watchedNote(i, ch, `that put made a second copy in ${this.topo.channels[ch].label}: ${CAUSE_TEXT[cause]}`) : undefined,
    );
    this.ledger = new Ledger(
      topo.channels.map((c) => ({ name: c.label, durable: c.durable, agent: c.agent })),
      o.events,
      this.causes,
    );
    this.inFlight = new Int32Array(o.events);
    this.late = new Uint8Array(o.events);
    this.recorder = hooks.traceFile
      ? new TraceRecorder(
          new FileTraceOutput(hooks.traceFile),
          topo.channels.map((c) => ({ ...channelInfo(c.model), name: c.label, ...(topo.tier ? { agent: c.agent } : {}), ...(c.forwarders.length > 0 ? { forwarders: c.forwarders } : {}) })),
          { clock: this.clock, idOf: simIdOf, deliveries: "sink", seed: o.seed },
        )
      : null;
    this.network = new SimNetwork(topo.links, (l) => linkFaults(o, l as LinkPlan), this.clock, o.seed);
    this.putRandom = seededRandom(o.seed, 2);
    this.random = seededRandom(o.seed, 9);
    this.peaks = topo.channels.map(() => 0);
    this.fills = topo.channels.map(() => 0);
    this.peers = new SimPeers(o, this.clock);
    this.makeClients();
    for (const a of this.agents) for (const info of sinkInfos(a)) this.sinks.set(`${a.name}/${info.result.name}`, info);
  }

  // ---- setup ------------------------------------------------------------------------

  private makeClients(): void {
    const ids = { next: 0, total: this.o.events };
    const entries = this.agents.flatMap((a) => [...a.plan.entrySources].map(([s, batch]) => ({ a, s, batch })));
    const o = this.o;
    const feeds = entries.length + this.topo.outsideTopics.length;
    const interval = o.rate > 0 ? (batch: number) => Math.max(1, Math.round((batch * feeds * 1000) / o.rate)) : () => 0;
    for (const { a, s, batch } of entries) {
      const client = new SimClient(s, batch, interval(batch), ids);
      this.clients.set(`${a.name}/${s}`, client);
      const link = a.plan.streams.get(s);
      if (link) this.streams.set(link.index, new StreamClient(client, link, this.network.endpoint(CLIENT, link.sink), this.clock, this.worldOf(a)));
    }
    for (const topic of this.topo.outsideTopics) {
      const reader = this.agents.find((a) => [...a.plan.brokerSources.values()].some((r) => r.topics.includes(topic))) as AgentState;
      const client = new SimClient(`producer of ${topic}`, o.batchSize, interval(o.batchSize), ids);
      this.clients.set(`topic/${topic}`, client);
      this.peers.addProducer(topic, client, this.clock, this.worldOf(reader));
    }
  }

  // ---- the observer of every channel ------------------------------------------------

  private observer(): ChannelObserver {
    const ledger = this.ledger;
    const causes = this.causes;
    const channels = this.topo.channels;
    const sim: ChannelObserver = {
      begin: (tx) => {
        this.open.set(tx, { startSeq: causes.seq, delivered: [], wrote: [] });
      },
      put() {},
      take: (tx, e) => {
        if (e === null) return;
        const fw = this.forwarderSets[tx.target.index];
        if (fw.size > 0 && tx.by !== undefined && fw.has(tx.by)) {
          const id = simIdOf(e);
          if (id >= 0 && id < this.inFlight.length) this.inFlight[id] = tx.target.index + 1;
        }
      },
      close: (tx) => {
        this.open.delete(tx);
      },
      commit: (tx, error, refused) => {
        const ch = tx.target.index;
        const plan = channels[ch];
        const a = this.channelAgent[ch];
        if (error) {
          if (refused) this.injected.add(tx);
          if (tx.puts.length > 0) {
            if (refused) {
              a.putFailures++;
              a.timeline.putFailure(this.clock.now());
            }
            this.notes.eachWatched(tx.puts, (id) => this.notes.say(id, a.name, `put into channel ${plan.name} by ${tx.by ?? "?"} failed at commit (tx ${tx.id}): ${error.message}`));
          }
          return;
        }
        const puts = tx.puts.length > 0 ? tx.puts.map(simIdOf) : [];
        const takes = tx.takes.length > 0 ? tx.takes.map(simIdOf) : [];
        const hop = tx.by !== undefined && !a.plan.entrySources.has(tx.by);
        if (this.notes.watching) {
          this.notes.eachWatchedId(puts, (id) => this.notes.say(id, a.name, `committed into channel ${plan.name} by ${tx.by ?? "?"} (tx ${tx.id})${hop ? this.cameFrom(id) : ""}`));
          this.notes.eachWatchedId(takes, (id) => this.notes.say(id, a.name, `take by ${tx.by ?? "?"} committed: it left channel ${plan.name} (tx ${tx.id})`));
        }
        if (hop && puts.length > 0) this.lateCommits(puts);
        ledger.committed(ch, puts, takes);
        if (puts.length > 0) {
          causes.committedPuts(puts);
          if (tx.by !== undefined && !a.plan.entrySources.has(tx.by)) this.forwards(tx, puts);
        }
        if (takes.length > 0 && tx.by !== undefined) {
          const sink = this.sinks.get(`${a.name}/${tx.by}`);
          if (sink) sink.result.batches++;
        }
        this.open.delete(tx);
      },
      rollback: (tx) => {
        const ch = tx.target.index;
        const a = this.channelAgent[ch];
        const plan = channels[ch];
        ledger.rolledBack(ch);
        const o = this.open.get(tx);
        this.open.delete(tx);
        if (tx.puts.length > 0) this.putRolledBack(tx, a);
        if (tx.takes.length === 0) return;
        const sink = tx.by === undefined ? undefined : this.sinks.get(`${a.name}/${tx.by}`);
        if (sink) {
          sink.result.failed++;
          // Simulated destinations count their failures as they inject them (SimWorld.sinkFailed).
          if (sink.forwarder || sink.result.kind !== "simulated") {
            a.sinkFailures++;
            a.timeline.sinkFailure(this.clock.now());
          }
        }
        if (o) this.tagGotThrough(tx, o, sink, "partial-batch", "lost-answer");
        if (this.notes.watching) {
          const ids: number[] = [];
          this.notes.eachWatched(tx.takes, (id) => {
            ids.push(id);
            this.notes.say(id, a.name, `take by ${tx.by ?? "?"} rolled back: back in channel ${plan.name} (tx ${tx.id})`);
          });
          if (ids.length > 0 && tx.by !== undefined) a.why = { names: this.namesOf(a, tx.by), ids };
        }
      },
      beforeCommit: (tx) => {
        if (this.o.failPut > 0 && tx.puts.length > 0 && this.putRandom() < this.o.failPut) {
          return new ChannelException(`simulated put failure on channel ${tx.channel}`);
        }
        return null;
      },
    };
    return this.recorder ? bothObservers(sim, this.recorder) : sim;
  }

  /** " (sent by edge1 from channel c1)" for an event a forwarding take holds. */
  private cameFrom(id: number): string {
    const x = id < this.inFlight.length ? this.inFlight[id] : 0;
    if (x === 0) return "";
    const c = this.topo.channels[x - 1];
    return `, sent by ${c.agent}'s ${c.forwarders.length === 1 ? `sink ${c.forwarders[0]}` : "avro sink"} from its channel ${c.name}`;
  }

  /** The next agent commits events whose sender had already given up on them: the resend will copy them. */
  private lateCommits(puts: number[]): void {
    for (const id of puts) {
      const late = id >= 0 && id < this.late.length ? this.late[id] : 0;
      if (late === 0) continue;
      this.late[id] = 0;
      this.causes.gotThrough(id, late === 1 ? "lost-answer" : "crash-replay");
    }
  }

  /** The sink and the sink group that logs its failures. */
  private namesOf(a: AgentState, sink: string): Set<string> {
    const names = new Set([sink]);
    for (const g of a.plan.model.sinkGroups.values()) if (g.sinks.includes(sink)) names.add(g.name);
    return names;
  }

  /** The next agent committed events of a forwarding take: they count as forwarded from its channel. */
  private forwards(tx: TracedTransaction, puts: number[]): void {
    const multi = tx.puts.length > 0 && this.channelAgent[tx.target.index].plan.model.sources.get(tx.by as string)?.channels.length !== 1;
    const byChannel = new Map<number, number[]>();
    for (let k = 0; k < puts.length; k++) {
      const id = puts[k];
      const x = id >= 0 && id < this.inFlight.length ? this.inFlight[id] : 0;
      if (x === 0) continue;
      if (multi) {
        const e = tx.puts[k];
        this.committedObjects.add(e);
        if (this.forwardedObjects.has(e)) continue;
        this.forwardedObjects.add(e);
      }
      let list = byChannel.get(x - 1);
      if (!list) byChannel.set(x - 1, (list = []));
      list.push(id);
    }
    for (const [ch, ids] of byChannel) {
      this.ledger.forwarded(ch, ids);
      this.recorder?.forward(ch, ids);
      const from = this.channelAgent[ch];
      from.timeline.delivered(this.clock.now(), ids.length);
      for (const name of this.topo.channels[ch].forwarders) {
        // Which of the channel's forwarders sent them: the one whose open take holds the first event.
        const sink = this.sinks.get(`${from.name}/${name}`);
        if (sink && this.holdsOpenTake(name, ch, ids[0])) {
          sink.result.forwarded += ids.length;
          break;
        }
      }
    }
  }

  private holdsOpenTake(sink: string, ch: number, id: number): boolean {
    if (this.topo.channels[ch].forwarders.length === 1) return true;
    for (const tx of this.open.keys()) {
      if (tx.target.index !== ch || tx.by !== sink) continue;
      if (tx.takes.some((e) => simIdOf(e) === id)) return true;
    }
    return false;
  }

  /** A put transaction ended without its commit: refused by the channel, or by an injected fault. */
  private putRolledBack(tx: TracedTransaction, a: AgentState): void {
    const injected = this.injected.has(tx);
    if (!injected) {
      a.putRefusals++;
      a.timeline.putRefusal(this.clock.now());
    }
    // An avro source's batch that other channels of the source committed got through in part:
    // the sender gets FAILED and sends it again.
    if (tx.by !== undefined && !a.plan.entrySources.has(tx.by)) {
      for (const e of tx.puts) if (this.committedObjects.has(e)) this.causes.gotThrough(simIdOf(e), "partial-batch");
    }
  }

  private readonly injected = new WeakSet<TracedTransaction>();

  /**
   * A take that rolled back or vanished in a crash: what of it had already got through (to a
   * simulated destination, or committed by the next agent) will be sent again.
   */
  private tagGotThrough(tx: TracedTransaction, o: OpenTx, sink: SinkInfo | undefined, delivered: Cause, forwarded: Cause): void {
    if (!sink) return;
    if (sink.forwarder) {
      const late = forwarded === "lost-answer" ? 1 : 2;
      for (const e of tx.takes) {
        const id = simIdOf(e);
        if (this.causes.committedSince(id, o.startSeq)) this.causes.gotThrough(id, forwarded);
        // The request may still be on its way, or waiting at the next agent: if that commits it now, it is a copy too.
        else if (id >= 0 && id < this.late.length) this.late[id] = late;
      }
    } else {
      for (const id of o.delivered) this.causes.delivered(tx.target.index, id, delivered);
      // Written to a topic a source of the run reads: its next copy in a channel is the duplicate.
      for (const id of o.wrote) this.causes.gotThrough(id, delivered);
    }
  }

  // ---- agents -----------------------------------------------------------------------

  private sharedRandoms: SharedRandoms | null = null;
  private readonly worlds = new Map<AgentState, SimWorld>();

  private worldOf(a: AgentState): SimWorld {
    let world = this.worlds.get(a);
    if (!world) {
      const o = this.o;
      const sinkRandom = seededRandom(o.seed, 1);
      const partialRandom = seededRandom(o.seed, 3);
      const shared = this.sharedRandoms ?? (this.sharedRandoms = { sinkRandom, partialRandom });
      const host = { o, stats: this.stats, notes: this.notes, ledger: this.ledger, causes: this.causes, recorder: this.recorder, clock: this.clock, open: this.open, sinks: this.sinks };
      this.worlds.set(a, (world = simWorld(host, a, shared)));
    }
    return world;
  }

  /** Builds the agent with the one builder, as `flume run` does, and starts its channels. */
  private async build(a: AgentState, observer: ChannelObserver, txCounter: { n: number }): Promise<void> {
    const epoch = new Epoch(++this.epochNo, this.clock);
    const targets: TraceTarget[] = [];
    const w = this.worldOf(a);
    const plan = a.plan;
    const local = new Map(plan.channels.map((c) => [c.name, c]));
    const streamed = (name: string) => plan.streams.has(name);
    const built = buildAgent(plan.model, {
      agentName: plan.name,
      clock: epoch,
      logger: (name) => this.notes.loggerFor(a, name),
      random: a.index === 0 ? this.random : seededRandom(this.o.seed, 100 + a.index),
      storagePath: a.storagePath,
      runnerBackoff: SINK_RUNNER_BACKOFF,
      // Real I/O completing must not reach virtual time: file channels write synchronously.
      blockingIo: true,
      network: (component) => this.network.endpoint(plan.name, component),
      wrapChannel: (channel, m) => {
        const c = local.get(m.name) as ChannelPlan;
        const target = new TraceTarget(channel, c.index, observer, txCounter);
        targets.push(target);
        return new TracedChannel(target);
      },
      view: (channel, user) => new TracedChannel((channel as TracedChannel).target, user),
      channel: (m, ctx): Channel => this.peers.channel(plan, m.name, epoch, w) ?? createComponent<Channel>(m.definition, m.options, ctx),
      source: (m, ctx): AnySource =>
        this.peers.source(plan, m.name, epoch, w) ??
        (plan.entrySources.has(m.name) && !streamed(m.name) ? new SimSource(m.name, this.clients.get(`${plan.name}/${m.name}`) as SimClient, epoch, w) : createComponent<AnySource>(m.definition, m.options, ctx)),
      sink: (m, ctx): Sink => {
        const peer = this.peers.sink(plan, m.name, epoch, w);
        if (peer) return peer;
        const batch = plan.simulatedSinks.get(m.name);
        return batch !== undefined ? new SimSink(m.name, batch, this.o.sinkLatency, epoch, w) : createComponent<Sink>(m.definition, m.options, ctx);
      },
    });
    a.epoch = epoch;
    a.built = built;
    a.targets = targets;
    a.durable = [...built.channels.values()].filter((c) => c.model.definition.durability !== undefined).map((c) => c.instance as Channel);
    for (const c of built.channels.values()) await (c.instance as Channel).start();
  }

  private async startSources(a: AgentState): Promise<void> {
    for (const s of (a.built as BuiltAgent).sources.values()) await s.runner.start();
  }

  /** Sink runners start without being awaited: an avro sink's connect waits for virtual time. */
  private startSinks(a: AgentState): void {
    for (const r of (a.built as BuiltAgent).runners.values()) {
      r.runner.start().catch((err: unknown) => {
        if (a.running) this.topo.warnings.push(`${a.name}: sink runner ${r.name} did not start: ${(err as Error).message}`);
      });
    }
  }

  private async crash(a: AgentState, spec: CrashSpec): Promise<CrashRecord> {
    const epoch = a.epoch as Epoch;
    epoch.alive = false;
    for (const t of a.targets) t.dead = true;
    this.network.crash(a.name);
    // Open takes of durable channels come back after the restart: what had got through goes again.
    const mine = new Set(a.channelIndexes);
    for (const [tx, o] of this.open) {
      if (!mine.has(tx.target.index)) continue;
      this.open.delete(tx);
      if (!this.topo.channels[tx.target.index].durable || tx.takes.length === 0) continue;
      const sink = tx.by === undefined ? undefined : this.sinks.get(`${a.name}/${tx.by}`);
      this.tagGotThrough(tx, o, sink, "crash-replay", "crash-replay");
      this.notes.eachWatched(tx.takes, (id) => this.notes.say(id, a.name, `CRASH with the take of ${tx.by ?? "?"} open: the file channel ${this.topo.channels[tx.target.index].name} gives it back`));
    }
    const crashed: CrashedChannel[] = [...(a.built as BuiltAgent).channels.values()].map((c) => ({ index: (a.plan.channels.find((p) => p.name === c.model.name) as ChannelPlan).index, definition: c.model.definition, instance: c.instance }));
    // Back in the channel, and their next delivery is a copy.
    for (const [index, back] of givenBackOnCrash(crashed, simIdOf)) {
      this.notes.eachWatchedId(back, (id) => this.notes.say(id, a.name, `CRASH: channel ${this.topo.channels[index].name} will give it back (its take committed, its offset was not)`));
      for (const id of back) this.causes.gotThrough(id, "crash-replay");
      this.ledger.committed(index, back, []);
      this.recorder?.landed(index, back, "crash-replay");
    }
    const crashNo = ++this.crashNo;
    const { dropped, partial } = await crashChannels(this.ledger, crashed, simIdOf, { crash: crashNo, told: (p) => this.notes.crashFates(a, p, this.ledger, spec.down) });
    this.recorder?.crash(a.channelIndexes, this.topo.tier ? a.name : undefined, partial);
    a.timeline.crash(this.clock.now());
    a.epoch = null;
    a.built = null;
    a.durable = [];
    const record: CrashRecord = { agent: a.name, at: this.clock.now(), down: spec.down, dropped: dropped.map((d) => ({ channel: d.channel, events: d.lost })), lost: 0 };
    this.crashNumbers.set(record, crashNo);
    a.crashes.push(record);
    return record;
  }

  private sample(): void {
    const held = this.ledger.heldIn;
    for (let k = 0; k < held.length; k++) {
      const f = held[k];
      this.fills[k] = f;
      if (f > this.peaks[k]) this.peaks[k] = f;
    }
    const now = this.clock.now();
    for (const a of this.agents) a.timeline.fill(now, a.channelIndexes.map((k) => this.fills[k]));
  }

  private allClientsDone(): boolean {
    for (const c of this.clients.values()) if (!c.exhausted) return false;
    for (const c of this.streams.values()) if (!c.finished) return false;
    return true;
  }

  // ---- the run ----------------------------------------------------------------------

  async run(): Promise<SimulationResult> {
    const o = this.o;
    const topo = this.topo;
    const schedule = crashSchedule(o, topo, this.agents);
    const observer = this.observer();
    const txCounter = this.recorder?.transactionCounter ?? { n: 1 };
    for (const a of this.agents) await this.build(a, observer, txCounter);
    for (const a of this.agents) await this.startSources(a);
    for (const a of this.agents) this.startSinks(a);
    for (const c of this.streams.values()) c.start();
    this.peers.start();

    // Channels no sink reads can only keep their events: the run ends when the others are empty.
    const read = topo.channels.map((c) => [...(this.agents.find((a) => a.name === c.agent) as AgentState).plan.model.sinks.values()].some((s) => s.channel === c.name));
    const drained = () => (this.ledger.heldTotal === 0 || this.ledger.heldIn.every((n, k) => n === 0 || !read[k])) && this.peers.drained;
    const crashes: CrashRecord[] = [];
    const restarts: { at: number; agent: AgentState }[] = [];
    const skipped: SimulationResult["crashesNotReached"] = [];
    let completed = false;
    let steps = 0;
    let lastProgress = -1;
    for (;;) {
      await this.clock.flush();
      this.sample();
      if (this.allClientsDone() && drained()) {
        completed = true;
        break;
      }
      const next = this.clock.nextTimerAt();
      const due = Math.min(schedule[0]?.at ?? Infinity, restarts[0]?.at ?? Infinity);
      if (due <= o.maxTime && (next === undefined || next >= due)) {
        await this.clock.advanceTo(due);
        this.sample();
        if (restarts[0]?.at === due) {
          const { agent } = restarts.shift() as { at: number; agent: AgentState };
          await this.restart(agent, observer, txCounter);
          continue;
        }
        const spec = schedule.shift() as CrashSpec & { state: AgentState };
        const a = spec.state;
        if (!a.running) {
          skipped.push({ agent: a.name, at: due, why: `${a.name} was down (crashed before)` });
          continue;
        }
        crashes.push(await this.crash(a, spec));
        if (spec.down > 0) {
          restarts.push({ at: due + spec.down, agent: a });
          restarts.sort((x, y) => x.at - y.at);
        } else await this.restart(a, observer, txCounter);
        continue;
      }
      if (next === undefined || next > o.maxTime) break;
      await this.clock.step();
      if (++steps % 4096 === 0) this.network.sweep();
      if (this.hooks.onProgress && steps % 512 === 0 && this.stats.deliveries !== lastProgress) {
        lastProgress = this.stats.deliveries;
        this.hooks.onProgress({ time: this.clock.now(), produced: this.stats.produced, delivered: this.stats.deliveries, total: o.events });
      }
    }
    const end = this.clock.now();
    this.sample();
    for (const a of this.agents) {
      if (!a.running) continue;
      (a.epoch as Epoch).alive = false;
      for (const t of a.targets) {
        t.dead = true;
        await t.inner.stop();
      }
    }
    this.network.shutdown();
    return this.result(end, completed, crashes, [...skipped, ...schedule.map((c) => ({ agent: c.state.name, at: c.at, why: `the run ended at ${formatTime(end)}` }))]);
  }

  private async restart(a: AgentState, observer: ChannelObserver, txCounter: { n: number }): Promise<void> {
    await this.build(a, observer, txCounter);
    await this.startSources(a);
    this.startSinks(a);
  }

  private result(end: number, completed: boolean, crashes: CrashRecord[], notReached: SimulationResult["crashesNotReached"]): SimulationResult {
    return simulationResult({ agents: this.agents, causes: this.causes, clients: this.clients, crashNumbers: this.crashNumbers, fills: this.fills, ledger: this.ledger, network: this.network, notes: this.notes, o: this.o, peaks: this.peaks, recorder: this.recorder, sinks: this.sinks, stats: this.stats, streams: this.streams, topo: this.topo, peers: this.peers.describe() }, end, completed, crashes, notReached);
  }

}

type Random = () => number;
