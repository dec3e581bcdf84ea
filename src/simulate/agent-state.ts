/**
 * One agent of a simulated run and its current process (epoch, built agent, traced channels),
 * with its counters and timeline across crashes and restarts.
 */
import path from "node:path";
import type { BuiltAgent } from "../agent/build.ts";
import type { Channel } from "../core/channel.ts";
import type { Epoch } from "./components.ts";
import { scratchStorage } from "./crash.ts";
import type { CrashRecord, SinkResult } from "./simulation-result.ts";
import { Timeline } from "./timeline.ts";
import type { AgentPlan } from "./topology.ts";
import type { TraceTarget } from "./trace.ts";

/** What a simulation keeps of a transaction while it is open. */
export interface OpenTx {
  /** Commits with puts before this transaction began (what got through since is newer). */
  startSeq: number;
  /** Events a simulated sink delivered from it. */
  delivered: number[];
  /** Events a simulated sink wrote to a topic a source of the run reads (a hop). */
  wrote: number[];
}

/** A sink of the run: its figures, its agent, and whether it forwards to the next agent. */
export interface SinkInfo {
  result: SinkResult;
  agent: AgentState;
  forwarder: boolean;
}

/** One agent of the run and its current process. */
export class AgentState {
  epoch: Epoch | null = null;
  built: BuiltAgent | null = null;
  targets: TraceTarget[] = [];
  durable: Channel[] = [];
  crashes: CrashRecord[] = [];
  putFailures = 0;
  putRefusals = 0;
  sinkFailures = 0;
  readonly channelIndexes: number[];
  readonly timeline: Timeline;
  readonly storagePath: (configured: string) => string;
  /** A watched take rolled back: the next error its sink (or group) logs says why. */
  why: { names: Set<string>; ids: number[] } | null = null;

  constructor(
    readonly plan: AgentPlan,
    readonly index: number,
    workDir: string,
  ) {
    this.channelIndexes = plan.channels.map((c) => c.index);
    this.timeline = new Timeline(plan.channels.map((c) => ({ name: c.label, capacity: c.capacity })));
    this.storagePath = scratchStorage(path.join(workDir, plan.name));
  }

  get name(): string {
    return this.plan.name;
  }

  get running(): boolean {
    return this.epoch !== null && this.epoch.alive;
  }
}

/** The sinks of an agent with their (empty) figures: what each is in the run, its group, its link. */
export function sinkInfos(a: AgentState): SinkInfo[] {
  const m = a.plan.model;
  const groupOf = new Map<string, { name: string; processor: string }>();
  for (const g of m.sinkGroups.values()) if (g.configured) for (const s of g.sinks) groupOf.set(s, { name: g.name, processor: g.processor.type });
  return [...m.sinks.values()].map((k) => {
    const link = a.plan.links.get(k.name);
    const topic = a.plan.brokerSinks.get(k.name);
    const kind = link ? link.protocol : topic ? "kafka" : a.plan.fileSinks.has(k.name) ? "hdfs" : "simulated";
    const result: SinkResult = { agent: a.name, name: k.name, kind, channel: k.channel, delivered: 0, forwarded: 0, batches: 0, failed: 0 };
    const group = groupOf.get(k.name);
    if (group) result.group = group;
    if (link) result.link = link.name;
    else if (topic?.hop) result.link = `topic ${topic.topic}`;
    return { result, agent: a, forwarder: link !== undefined };
  });
}
