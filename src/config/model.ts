/**
 * The typed agent model: what a Flume properties file amounts to once parsed and checked.
 * Every later step (build, reload diff, EmbeddedAgent, simulate, replay) works from it and
 * never reads raw keys again. build-model.ts makes it from what validate.ts checked; a component with an error,
 * or one that depends on a dropped one, is not in it (Flume's way of dropping what is broken).
 */
import type { AnyDefinition } from "../components/component.ts";
import type { AnyOptions, ComponentKind } from "./schema.ts";

/**
 * A part a component's property names (`names` in its schema: a file_roll sink's serializer, an
 * http source's handler), with its settings parsed and checked when the configuration was
 * loaded: building it reads no raw key again.
 */
export interface NamedPart {
  definition: AnyDefinition;
  options: AnyOptions;
}

/** A part configured inside a component: a selector, an interceptor, a sink processor. */
export interface PartModel {
  kind: Extract<ComponentKind, "selector" | "interceptor" | "sinkprocessor">;
  name: string;
  /** The canonical type name. */
  type: string;
  definition: AnyDefinition;
  options: AnyOptions;
}

interface ComponentModelBase {
  name: string;
  /** The canonical type name (e.g. "memory" for org.apache.flume.channel.MemoryChannel). */
  type: string;
  definition: AnyDefinition;
  options: AnyOptions;
  /** The parts its properties name, by property key. */
  named?: ReadonlyMap<string, NamedPart>;
  /** Where the component is configured. */
  file: string;
  line: number;
  /**
   * Its settings without lines or wiring: equal fingerprints across a reload mean the same
   * configuration (its channels are compared by identity when the agent is built).
   */
  fingerprint: string;
}

export interface ChannelModel extends ComponentModelBase {
  kind: "channel";
}

export interface SourceModel extends ComponentModelBase {
  kind: "source";
  channels: string[];
  selector: PartModel;
  interceptors: PartModel[];
}

export interface SinkModel extends ComponentModelBase {
  kind: "sink";
  channel: string;
}

/** Sinks that share one runner: a configured sink group, or a sink on its own. */
export interface SinkGroupModel {
  name: string;
  sinks: string[];
  processor: PartModel;
  /** False for the implicit group of a sink that belongs to no configured group. */
  configured: boolean;
  fingerprint: string;
}

export interface AgentModel {
  agent: string;
  file: string;
  channels: Map<string, ChannelModel>;
  sources: Map<string, SourceModel>;
  sinks: Map<string, SinkModel>;
  /** Every sink runner: configured groups first, then one per ungrouped sink. */
  sinkGroups: Map<string, SinkGroupModel>;
  /** What was left out of the model and why (for --lenient runs, which start without them). */
  dropped: string[];
  /** The registry the model was checked with (custom modules included), for the parts components name (ComponentContext.lookup). */
  lookup?: (kind: ComponentKind, type: string) => AnyDefinition | undefined;
}

/** The options of a part as stable text, for fingerprints. */
export function fingerprintOf(...parts: unknown[]): string {
  return JSON.stringify(parts, (_key, value: unknown) => {
    if (value instanceof Map) return [...value.entries()];
    if (value && typeof value === "object" && !Array.isArray(value)) {
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(value as Record<string, unknown>).sort()) sorted[k] = (value as Record<string, unknown>)[k];
      return sorted;
    }
    return value;
  });
}

export function partFingerprint(p: PartModel): unknown {
  return [p.kind, p.name, p.type, p.options];
}
