/** Flume TS as a library: the core engine, the agent, and the embedded agent. */
export * from "./core/index.ts";
export { Agent } from "./agent/agent.ts";
export type { AgentOptions } from "./agent/agent.ts";
export { EmbeddedAgent } from "./agent/embedded.ts";
export { lookupComponent, allComponents, registerComponent } from "./components/registry.ts";
export type { ComponentDefinition, ComponentContext } from "./components/component.ts";
export { parseFlumeConfig } from "./config/flume-config.ts";
export { validateConfigText } from "./config/validate.ts";
export { VERSION } from "./version.ts";
