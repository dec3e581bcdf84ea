/** Helpers for the agent tests. */
import * as registry from "../../src/components/registry.ts";
import type { AgentConfig } from "../../src/config/flume-config.ts";
import { validateConfigText } from "../../src/config/validate.ts";

/** Validates a configuration text for agent a1 with every registered component; throws on errors. */
export function parseAgentConfig(text: string, file = "flume.conf"): AgentConfig {
  const r = validateConfigText(text, file, { agentName: "a1" }, registry);
  const errors = r.problems.filter((p) => p.severity === "error");
  if (errors.length > 0 || !r.config) throw new Error(errors.map((e) => e.message).join("; "));
  return r.config;
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
