/** Helpers for the agent tests. */
import * as registry from "../../src/components/registry.ts";
import type { AgentModel, ChannelModel } from "../../src/config/model.ts";
import { validateConfigText } from "../../src/config/validate.ts";

/** Validates a configuration text for agent a1 with every registered component; throws on errors. */
export function parseAgentConfig(text: string, file = "flume.conf"): AgentModel {
  const r = validateConfigText(text, file, { agentName: "a1" }, registry);
  const errors = r.problems.filter((p) => p.severity === "error");
  if (errors.length > 0 || !r.model) throw new Error(errors.map((e) => e.message).join("; "));
  return r.model;
}

/** Agent a1: a seq source r1 of total events into channel c1 (its lines), drained by sink k1 (its lines but the channel). */
export function seqConf(total: number, { channel = "a1.channels.c1.type = memory", sink = "a1.sinks.k1.type = null" } = {}): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = ${total}
a1.sources.r1.channels = c1
${channel}
${sink}
a1.sinks.k1.channel = c1
`;
}

/** The model of channel c1 of the given type and properties, as the validator makes it. */
export function channelModel(type: string, props: Record<string, string> = {}): ChannelModel {
  const lines = [`a1.channels.c1.type = ${type}`, ...Object.entries(props).map(([k, v]) => `a1.channels.c1.${k} = ${v}`)];
  return parseAgentConfig(seqConf(1, { channel: lines.join("\n") })).channels.get("c1") as ChannelModel;
}
