/**
 * Scheduling of the faults a simulation injects: crashes of agents (--crash, --crash-at) and
 * faults of links between agents (--link ...).
 */
import type { AgentState } from "./agent-state.ts";
import type { LinkFaults } from "./network.ts";
import { type CrashSpec, describeLink, formatTime, type SimulationOptions, SimulationUsageError } from "./options.ts";
import type { LinkPlan, Topology } from "./topology.ts";

/** The faults the --link options give one link. */
export function linkFaults(o: SimulationOptions, l: LinkPlan): LinkFaults {
  const f: LinkFaults = { failRate: 0, loseAnswerRate: 0, latency: 0, partitions: [] };
  for (const spec of o.links) {
    if (!matches(spec.link, l)) continue;
    if (spec.kind === "fail") f.failRate = spec.rate;
    else if (spec.kind === "lose-answer") f.loseAnswerRate = spec.rate;
    else if (spec.kind === "latency") f.latency = spec.ms;
    else f.partitions.push({ from: spec.from, to: spec.to });
  }
  f.partitions.sort((a, b) => a.from - b.from);
  return f;
}

/**
 * The crashes to inject, in time order, each with the agent it hits; refuses crash and link
 * options that name no agent or link of the run.
 */
export function crashSchedule(o: SimulationOptions, topo: Topology, agents: readonly AgentState[]): (CrashSpec & { state: AgentState })[] {
  const specs: CrashSpec[] = [...o.crashes];
  if (o.crashAt.length > 0) {
    if (topo.tier) throw new SimulationUsageError(`--crash-at crashes the agent of a one-agent run; this file has ${agents.length} agents: name the one to crash, e.g. --crash ${agents[0].name}@${formatTime(o.crashAt[0])}`);
    for (const at of o.crashAt) specs.push({ at, down: 0 });
  }
  const out = specs.map((s) => {
    const name = s.agent ?? agents[0].name;
    const state = agents.find((a) => a.name === name);
    if (!state) throw new SimulationUsageError(`--crash: no agent ${name} in this run (agents: ${agents.map((a) => a.name).join(", ")})`);
    return { ...s, agent: name, state };
  });
  for (const spec of o.links) {
    if (topo.links.some((l) => matches(spec.link, l))) continue;
    const known = topo.links.map((l) => l.name);
    throw new SimulationUsageError(`link fault on ${describeLink(spec.link)}: ${known.length > 0 ? `no such link; the links are ${known.join(", ")}` : "this run has no links between agents (they come from an avro or thrift sink naming a source of the same protocol in another agent of the file)"}`);
  }
  return out.sort((x, y) => x.at - y.at);
}

function matches(sel: { from: string; to: string }, l: { from: string; to: string }): boolean {
  return (sel.from === "*" || sel.from === l.from) && (sel.to === "*" || sel.to === l.to);
}
