import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { ComponentConfig, ComponentSchema } from "../config/schema.ts";

/** What a component gets besides its own configuration. */
export interface ComponentContext {
  /** The component's name in the config (e.g. "r1"). */
  name: string;
  agentName: string;
  clock: Clock;
  logger: Logger;
}

/**
 * One component type: its schema and a factory. Each component file exports one of these;
 * src/components/registry.ts maps type names and aliases to them.
 */
export interface ComponentDefinition<T> {
  schema: ComponentSchema;
  create(config: ComponentConfig, ctx: ComponentContext): T;
  /**
   * Channels: present when committed events survive the process dying. crash(instance) leaves
   * the instance as a killed process would (the simulator and the channel conformance suite
   * crash channels this way).
   */
  durability?: { crash(instance: T): void | Promise<void> };
  /** Cross-property checks the schema cannot express; messages name the key. */
  validate?(config: ComponentConfig): { key: string; message: string }[];
}
