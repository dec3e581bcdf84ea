/** Helpers for the agent tests. */
import * as registry from "../../src/components/registry.ts";
import type { AgentConfig } from "../../src/config/flume-config.ts";
import { validateConfigText } from "../../src/config/validate.ts";

/** Validates a configuration text for agent a1 with every registered component; throws on errors. */
export function parseAgentConfig(text: string, file = "review.conf"): AgentConfig {
  const r = validateConfigText(text, file, { agentName: "a1" }, registry);
  const errors = r.problems.filter((p) => p.severity === "error");
  if (errors.length > 0 || !r.config) throw new Error(errors.map((e) => e.message).join("; "));
  return r.config;
}
