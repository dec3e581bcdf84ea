/** Flume TS as a library: the core engine, the agent, and the embedded agent. */
export * from "./core/index.ts";
export { Agent } from "./agent/agent.ts";
export type { AgentOptions } from "./agent/agent.ts";
export { EmbeddedAgent } from "./agent/embedded.ts";
export { AgentService, ConfigRejectedError, EXIT, ServiceStartError, startAgentService } from "./agent/service.ts";
export type { AgentServiceEvents, AgentServiceOptions, ReloadOutcome, ServiceConfigFile, StartFromTextOptions } from "./agent/service.ts";
export { installSignalHandlers } from "./agent/signals.ts";
export { lookupComponent, allComponents, registerComponent } from "./components/registry.ts";
export type { ComponentDefinition, ComponentContext, ComponentDeclaration, Durability, OptionsOfDefinition, Random } from "./components/component.ts";
// What a component module is written with (built-in components and custom ones alike).
export { defineComponent, componentContext } from "./components/component.ts";
export type { ComponentKind, Group, Groups, OptionsOf, Prop, PropError, Props, PropType, Role } from "./config/schema.ts";
export { HttpBadRequestError } from "./components/sources/http-handlers/handler.ts";
export type { HttpRequestData, HttpSourceHandler } from "./components/sources/http-handlers/handler.ts";
export type { Cut, Deserializer, DeserializerFactory, DeserializerInput } from "./components/sources/spooldir/deserializers.ts";
export { loadCustomComponents } from "./config/custom-components.ts";
export { ConfigReadError, loadConfigFile, loadConfigText, readConfigFile } from "./config/load.ts";
export { parseFlumeConfig } from "./config/flume-config.ts";
export { validateConfigText } from "./config/validate.ts";
export { VERSION } from "./version.ts";
