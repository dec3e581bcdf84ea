import { componentContext } from "../../src/components/component.ts";
import type { ComponentContext, ComponentDefinition } from "../../src/components/component.ts";
import type { Clock } from "../../src/core/clock.ts";
import { systemClock } from "../../src/core/clock.ts";
import { MemoryLogger } from "../../src/core/logger.ts";

/** Builds a component from raw properties, as the agent would, failing on config errors. */
export function build<T>(def: ComponentDefinition<T>, raw: Record<string, string>, clock: Clock = systemClock): { component: T; logger: MemoryLogger } {
  const { options: config, errors } = def.parse(raw);
  const all = [...errors, ...(def.validate?.(config) ?? [])];
  if (all.length) throw new Error(all.map((e) => `${e.key}: ${e.message}`).join("; "));
  const logger = new MemoryLogger();
  const ctx: ComponentContext = componentContext("c1", { agentName: "a1", clock, logger });
  return { component: def.create(config, ctx), logger };
}

/** The validation errors (schema + validate) for raw properties. */
export function configErrors<T>(def: ComponentDefinition<T>, raw: Record<string, string>): string[] {
  const { options: config, errors } = def.parse(raw);
  return [...errors, ...(def.validate?.(config) ?? [])].map((e) => `${e.key}: ${e.message}`);
}
