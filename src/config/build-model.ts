/**
 * Builds the typed agent model from a checked configuration: what the validator (validate.ts)
 * found runnable, with every component left out for an error, or for depending on one, listed
 * in `dropped`.
 */
import type { AnyDefinition } from "../components/component.ts";
import { type AgentConfig, type ComponentEntry, interceptorEntries, sinkChannel, sinkGroupSinks, sourceChannels } from "./flume-config.ts";
import { type AgentModel, type ChannelModel, fingerprintOf, type NamedPart, type PartModel, partFingerprint, type SinkGroupModel, type SinkModel, type SourceModel } from "./model.ts";
import type { EntryKind, Problem } from "./problems.ts";
import type { AnyOptions, ComponentSchema } from "./schema.ts";
import type { ComponentRegistry } from "./validate.ts";

/** The sink processor Flume uses when none is configured. */
export const DEFAULT_SINK_PROCESSOR_TYPE = "default";

/** A component whose type resolved, with its parsed configuration. */
export interface Checked {
  entry: ComponentEntry;
  definition: AnyDefinition;
  schema: ComponentSchema;
  options: AnyOptions;
  /** The parts its properties name, parsed (see NamedPart). */
  named?: ReadonlyMap<string, NamedPart>;
}

/** What validation leaves for building the model. */
export interface CheckedConfig {
  config: AgentConfig;
  registry: ComponentRegistry;
  problems: readonly Problem[];
  /** By "kind name". */
  checked: ReadonlyMap<string, Checked>;
  /** Selectors, interceptors and sink processors, by "kind name prefix" of their owner. */
  parts: ReadonlyMap<string, PartModel>;
  /** Components Flume would build: listed and configured. */
  active(kind: EntryKind): ComponentEntry[];
}

/**
 * What can run: every active component without an error whose wiring is intact. A component
 * left out for its own error, or because something it needs was left out, is listed in
 * `dropped` (Flume drops such components silently; `flume run --lenient` logs these).
 */
export function buildAgentModel(c: CheckedConfig): AgentModel {
  const model: AgentModel = { agent: c.config.agent, file: c.config.file, channels: new Map(), sources: new Map(), sinks: new Map(), sinkGroups: new Map(), dropped: [], lookup: (kind, type) => c.registry.lookupComponent(kind, type) };
  const errorOf = new Map<string, string>();
  for (const p of c.problems) if (p.severity === "error" && p.ref && !errorOf.has(`${p.ref.kind} ${p.ref.name}`)) errorOf.set(`${p.ref.kind} ${p.ref.name}`, p.message);
  const usable = (entry: ComponentEntry): Checked | undefined => {
    const why = errorOf.get(`${entry.kind} ${entry.name}`);
    const checked = c.checked.get(`${entry.kind} ${entry.name}`);
    if (why !== undefined || !checked) {
      model.dropped.push(`dropping ${entry.kind} ${entry.name}: ${why ?? "it could not be checked"}`);
      return undefined;
    }
    return checked;
  };
  const base = (k: Checked) => ({ name: k.entry.name, type: k.schema.type, definition: k.definition, options: k.options, named: k.named, file: k.entry.file, line: k.entry.line });

  for (const entry of c.active("channel")) {
    const k = usable(entry);
    if (k) model.channels.set(entry.name, { kind: "channel", ...base(k), fingerprint: fingerprintOf(k.schema.type, k.options) } satisfies ChannelModel);
  }
  for (const entry of c.active("source")) {
    const k = usable(entry);
    if (!k) continue;
    const channels = sourceChannels(entry);
    if (channels.some((ch) => !model.channels.has(ch))) {
      model.dropped.push(`dropping source ${entry.name}: one of its channels was dropped`);
      continue;
    }
    const selector = c.parts.get(`source ${entry.name} selector.`) as PartModel;
    const interceptors = interceptorEntries(entry).map((i) => c.parts.get(`source ${entry.name} ${i.prefix}`) as PartModel);
    const fingerprint = fingerprintOf(k.schema.type, k.options, channels, partFingerprint(selector), interceptors.map(partFingerprint));
    model.sources.set(entry.name, { kind: "source", ...base(k), channels, selector, interceptors, fingerprint } satisfies SourceModel);
  }
  for (const entry of c.active("sink")) {
    const k = usable(entry);
    if (!k) continue;
    const channel = sinkChannel(entry) as string;
    if (!model.channels.has(channel)) {
      model.dropped.push(`dropping sink ${entry.name}: its channel was dropped`);
      continue;
    }
    model.sinks.set(entry.name, { kind: "sink", ...base(k), channel, fingerprint: fingerprintOf(k.schema.type, k.options, channel) } satisfies SinkModel);
  }
  const grouped = new Set<string>();
  for (const entry of c.active("sinkgroup")) {
    if (errorOf.has(`sinkgroup ${entry.name}`)) {
      model.dropped.push(`dropping sinkgroup ${entry.name}: ${errorOf.get(`sinkgroup ${entry.name}`)}`);
      continue;
    }
    const sinks = sinkGroupSinks(entry);
    if (sinks.some((s) => !model.sinks.has(s))) {
      model.dropped.push(`dropping sinkgroup ${entry.name}: one of its sinks was dropped`);
      continue;
    }
    const processor = c.parts.get(`sinkgroup ${entry.name} processor.`) as PartModel;
    for (const s of sinks) grouped.add(s);
    const fingerprint = fingerprintOf(partFingerprint(processor), sinks.map((s) => model.sinks.get(s)?.fingerprint));
    model.sinkGroups.set(`group:${entry.name}`, { name: entry.name, sinks, processor, configured: true, fingerprint } satisfies SinkGroupModel);
  }
  const defaultProcessor = c.registry.lookupComponent("sinkprocessor", DEFAULT_SINK_PROCESSOR_TYPE);
  for (const sink of model.sinks.values()) {
    if (grouped.has(sink.name) || !defaultProcessor) continue;
    const processor: PartModel = { kind: "sinkprocessor", name: "processor", type: defaultProcessor.schema.type, definition: defaultProcessor, options: defaultProcessor.parse({}).options };
    model.sinkGroups.set(`sink:${sink.name}`, { name: sink.name, sinks: [sink.name], processor, configured: false, fingerprint: fingerprintOf(sink.fingerprint) });
  }
  return model;
}
