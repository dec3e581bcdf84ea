/**
 * Gathers the figures of a finished simulation into its result: per agent, channel, sink,
 * source and link, the crashes with the events each lost, duplicate causes and histories.
 */
import { CAUSE_TEXT, CAUSES, type DuplicateCauses } from "./causes.ts";
import type { SimClient } from "./components.ts";
import type { AgentState, SinkInfo } from "./agent-state.ts";
import type { EventNotes } from "./event-notes.ts";
import { type Ledger, verdict } from "./ledger.ts";
import type { SimNetwork } from "./network.ts";
import type { SimulationOptions } from "./options.ts";
import type { AgentResult, ChannelResult, CrashRecord, DuplicateCause, EventHistory, LinkResult, SimulationResult } from "./simulation-result.ts";
import type { StreamClient } from "./stream-client.ts";
import type { LinkPlan, Topology } from "./topology.ts";
import type { TraceRecorder } from "./trace.ts";

/** What a simulation leaves when its run ends. */
export interface FinishedRun {
  o: SimulationOptions;
  topo: Topology;
  ledger: Ledger;
  causes: DuplicateCauses;
  notes: EventNotes;
  recorder: TraceRecorder | null;
  network: SimNetwork;
  agents: readonly AgentState[];
  sinks: ReadonlyMap<string, SinkInfo>;
  streams: ReadonlyMap<number, StreamClient>;
  clients: ReadonlyMap<string, SimClient>;
  stats: { produced: number; clientAccepted: number; deliveries: number; sinkBatches: number };
  peaks: readonly number[];
  fills: readonly number[];
  /** Each crash's number in the ledger. */
  crashNumbers: ReadonlyMap<CrashRecord, number>;
  /** The report lines of the simulated Kafka broker and HDFS. */
  peers: string[];
}

export function simulationResult(run: FinishedRun, end: number, completed: boolean, crashes: CrashRecord[], notReached: SimulationResult["crashesNotReached"]): SimulationResult {
  const topo = run.topo;
  const ledger = run.ledger;
  // Which crash each lost event is owed to.
  const byCrash = ledger.lostByCrash();
  for (const c of crashes) c.lost = byCrash.get(run.crashNumbers.get(c) ?? -1) ?? 0;
  const channels: ChannelResult[] = topo.channels.map((c) => ({ name: c.label, agent: c.agent, type: c.type, durable: c.durable, capacity: c.capacity, peak: run.peaks[c.index], end: run.fills[c.index] }));
  const agents: AgentResult[] = run.agents.map((a) => {
    const summary = ledger.summaryOf(a.channelIndexes);
    return {
      name: a.name,
      summary,
      verdict: verdict(summary, `agent ${a.name}`),
      channels: a.channelIndexes.map((k) => channels[k]),
      crashes: a.crashes,
      putFailures: a.putFailures,
      putRefusals: a.putRefusals,
      sinkFailures: a.sinkFailures,
      timeline: a.timeline,
    };
  });
  const sinks = [...run.sinks.values()].map((s) => s.result);
  const links: LinkResult[] = run.network.links.map((l) => {
    const plan = l.ends as LinkPlan;
    const sink = run.sinks.get(`${plan.from}/${plan.sink}`);
    const events = run.streams.get(plan.index)?.accepted ?? sink?.result.forwarded ?? 0;
    return { name: plan.name, from: plan.from, sink: plan.sink, to: plan.to, source: plan.source, address: `${plan.host}:${plan.port}`, faults: l.faults, stats: l.stats, events };
  });
  const summary = ledger.summary();
  const duplicateCauses: DuplicateCause[] = CAUSES.map((cause) => ({ cause, text: CAUSE_TEXT[cause], count: run.causes.count(cause), example: run.causes.examples.get(cause) }));
  if (run.causes.unexplained > 0) duplicateCauses.push({ cause: "unexplained", text: "no cause found (a bug of the simulator: please report it)", count: run.causes.unexplained, example: run.causes.examples.get("unexplained") });
  const fl = ledger.firstLost();
  const firstLost = fl ? { id: Number(fl.id), channel: fl.channel, agent: topo.channels.find((c) => c.label === fl.channel)?.agent ?? "", history: run.notes.lines.get(Number(fl.id)) ?? [] } : undefined;
  const histories: EventHistory[] = [...run.notes.lines.keys()].map((id) => run.notes.history(id, run.stats.produced, run.ledger));
  const traceSummary = run.recorder?.finish(topo.tier ? run.agents.map((a) => ({ name: a.name, channels: a.channelIndexes })) : undefined);
  return {
    tier: topo.tier,
    topology: topo.description,
    warnings: topo.warnings,
    events: run.o.events,
    seed: run.o.seed,
    produced: run.stats.produced,
    clientAccepted: run.stats.clientAccepted,
    summary,
    retries: [...run.clients.values()].reduce((n, c) => n + c.retries, 0),
    putFailures: agents.reduce((n, a) => n + a.putFailures, 0),
    putRefusals: agents.reduce((n, a) => n + a.putRefusals, 0),
    sinkBatches: run.stats.sinkBatches,
    sinkFailures: agents.reduce((n, a) => n + a.sinkFailures, 0),
    deliveries: run.stats.deliveries,
    crashes,
    crashesNotReached: notReached,
    channels,
    agents,
    links,
    sources: run.agents.flatMap((a) => [...a.plan.model.sources.values()].map((src) => ({ agent: a.name, name: src.name, entry: a.plan.entrySources.has(src.name), channels: src.channels }))),
    sinks,
    duplicateCauses,
    peers: run.peers,
    time: end,
    completed,
    verdict: verdict(summary, topo.tier ? "tier at-least-once" : "at-least-once"),
    firstLost,
    histories,
    timeline: run.agents[0].timeline,
    traceSummary,
  };
}
