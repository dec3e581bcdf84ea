import type { Channel } from "../core/channel.ts";
import { ChannelProcessor } from "../core/channel-processor.ts";
import type { Clock } from "../core/clock.ts";
import type { Interceptor } from "../core/interceptor.ts";
import type { Logger } from "../core/logger.ts";
import { MemoryChannel } from "../core/memory-channel.ts";
import { SinkRunner, SourceRunner } from "../core/runners.ts";
import type { SinkProcessor } from "../core/sink-processors.ts";
import type { ChannelSelector } from "../core/selectors.ts";
import type { Sink } from "../core/sink.ts";
import type { AnySource } from "../core/source.ts";
import type { ComponentContext, ComponentDefinition } from "../components/component.ts";
import { lookupComponent } from "../components/registry.ts";
import {
  type AgentConfig,
  type ComponentEntry,
  interceptorEntries,
  ownProps,
  rawValues,
  selectorProps,
  sinkChannel,
  sinkGroupSinks,
  sinkProcessorProps,
  sourceChannels,
  type SubComponent,
} from "../config/flume-config.ts";
import type { Problem } from "../config/problems.ts";
import { type ComponentKind, parseConfig } from "../config/schema.ts";
import { ConfigurationError } from "../core/errors.ts";

export interface BuildContext {
  agentName: string;
  clock: Clock;
  logger: (name: string) => Logger;
  /** Wraps each new channel (`flume run --trace` records transactions this way). */
  wrapChannel?: (channel: Channel, type: string) => Channel;
}

/** A built channel with what decides whether a reload may keep it. */
export interface BuiltChannel {
  name: string;
  type: string;
  fingerprint: string;
  channel: Channel;
  /**
   * A kept memory channel's new settings, applied by the reload once everything was built
   * and the old components that use it stopped (a failed build must leave it untouched).
   */
  resize?: () => Promise<void>;
}

export interface BuiltSource {
  name: string;
  fingerprint: string;
  source: AnySource;
  runner: SourceRunner;
  channels: string[];
}

/** A sink runner: a sink group or a sink of its own. */
export interface BuiltRunner {
  name: string;
  fingerprint: string;
  runner: SinkRunner;
  sinks: Sink[];
}

export interface BuiltAgent {
  channels: Map<string, BuiltChannel>;
  sources: Map<string, BuiltSource>;
  runners: Map<string, BuiltRunner>;
}

/** What may be reused from the agent that is running now. */
export interface Reuse {
  channels: Map<string, BuiltChannel>;
  sources: Map<string, BuiltSource>;
  runners: Map<string, BuiltRunner>;
}

function fingerprintOf(type: string, props: Record<string, { value: string }>, extra: unknown = null): string {
  const entries = Object.entries(props)
    .map(([k, v]) => [k, v.value] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([type.toLowerCase(), entries, extra]);
}

function definitionFor(kind: ComponentKind, type: string | undefined, label: string): ComponentDefinition<unknown> {
  if (!type) throw new ConfigurationError("type", "is missing", label);
  const def = lookupComponent(kind, type);
  if (!def) throw new ConfigurationError("type", `unknown ${kind} type "${type}"`, label);
  return def;
}

function instantiate<T>(kind: ComponentKind, type: string | undefined, props: Record<string, { value: string }>, ctx: ComponentContext): { value: T; def: ComponentDefinition<unknown> } {
  const def = definitionFor(kind, type, `${kind} ${ctx.name}`);
  const { config, errors } = parseConfig(def.schema, rawValues(props as Record<string, { value: string; file: string; line: number }>));
  if (errors.length > 0) throw new ConfigurationError(errors[0].key, errors[0].message, `${kind} ${ctx.name}`);
  return { value: def.create(config, ctx) as T, def };
}

// An identity for each channel instance, so a source or sink is kept only if its channels are
// the same objects. Module-wide: an id must mean the same instance in every build, or a reload
// compares fingerprints numbered differently (restarting unchanged components, or keeping one
// whose channel was replaced).
const channelIds = new WeakMap<Channel, number>();
let nextChannelId = 1;
function idOf(c: Channel): number {
  let id = channelIds.get(c);
  if (id === undefined) channelIds.set(c, (id = nextChannelId++));
  return id;
}

/**
 * Builds the components of a validated agent configuration. With `reuse`, components whose
 * configuration did not change are taken over from the running agent instead of built anew;
 * a memory channel whose settings changed is kept with a `resize` for the caller to apply.
 */
export async function buildAgent(config: AgentConfig, bc: BuildContext, reuse?: Reuse): Promise<BuiltAgent> {
  const ctxFor = (name: string): ComponentContext => ({ name, agentName: bc.agentName, clock: bc.clock, logger: bc.logger(name) });
  const built: BuiltAgent = { channels: new Map(), sources: new Map(), runners: new Map() };

  for (const [name, entry] of config.channels) {
    const type = entry.type?.value ?? "";
    const def = definitionFor("channel", type, `channel ${name}`);
    const fingerprint = fingerprintOf(def.schema.type, ownProps(entry));
    const old = reuse?.channels.get(name);
    if (old && old.type === def.schema.type) {
      if (old.fingerprint === fingerprint) {
        built.channels.set(name, old);
        continue;
      }
      const oldInner = (old.channel as { inner?: Channel }).inner ?? old.channel;
      if (oldInner instanceof MemoryChannel) {
        const { config: parsed, errors } = parseConfig(def.schema, rawValues(ownProps(entry)));
        if (errors.length > 0) throw new ConfigurationError(errors[0].key, errors[0].message, `channel ${name}`);
        const settings = {
          capacity: parsed.int("capacity"),
          transactionCapacity: parsed.int("transactionCapacity"),
          byteCapacity: parsed.int("byteCapacity"),
          byteCapacityBufferPercentage: parsed.int("byteCapacityBufferPercentage"),
          keepAlive: parsed.int("keep-alive"),
        };
        built.channels.set(name, { ...old, fingerprint, resize: () => oldInner.reconfigure(settings) });
        continue;
      }
    }
    const { value } = instantiate<Channel>("channel", type, ownProps(entry), ctxFor(name));
    const channel = bc.wrapChannel ? bc.wrapChannel(value, def.schema.type) : value;
    built.channels.set(name, { name, type: def.schema.type, fingerprint, channel });
  }

  const channelRef = (name: string): Channel => {
    const c = built.channels.get(name)?.channel;
    if (!c) throw new ConfigurationError("channels", `channel "${name}" is not configured`);
    return c;
  };

  for (const [name, entry] of config.sources) {
    const channelNames = sourceChannels(entry);
    const channels = channelNames.map(channelRef);
    const fingerprint = fingerprintOf(entry.type?.value ?? "", entry.props, channels.map(idOf));
    const old = reuse?.sources.get(name);
    if (old && old.fingerprint === fingerprint) {
      built.sources.set(name, old);
      continue;
    }
    const ctx = ctxFor(name);
    const { value: source } = instantiate<AnySource>("source", entry.type?.value, ownProps(entry), ctx);
    const selector = buildSelector(selectorProps(entry), channels, ctx);
    const interceptors = interceptorEntries(entry).map((i) => buildInterceptor(i, ctx));
    source.setChannelProcessor(new ChannelProcessor(selector, interceptors, ctx.logger));
    built.sources.set(name, { name, fingerprint, source, runner: new SourceRunner(source, bc.clock, ctx.logger), channels: channelNames });
  }

  const grouped = new Set<string>();
  const sinkFingerprint = (entry: ComponentEntry) => {
    const channel = sinkChannel(entry);
    return fingerprintOf(entry.type?.value ?? "", entry.props, channel ? idOf(channelRef(channel)) : null);
  };
  const buildSink = (entry: ComponentEntry): Sink => {
    const ctx = ctxFor(entry.name);
    const { value: sink } = instantiate<Sink>("sink", entry.type?.value, ownProps(entry), ctx);
    const channel = sinkChannel(entry);
    if (!channel) throw new ConfigurationError("channel", "is missing", `sink ${entry.name}`);
    sink.setChannel(channelRef(channel));
    return sink;
  };
  const runnerOptions = { backoffSleepIncrement: 1000, maxBackoffSleep: 5000 };

  for (const [name, group] of config.sinkgroups) {
    const sinkNames = sinkGroupSinks(group);
    const entries = sinkNames.map((s) => {
      const e = config.sinks.get(s);
      if (!e) throw new ConfigurationError("sinks", `sink "${s}" is not configured`, `sinkgroup ${name}`);
      return e;
    });
    const fingerprint = JSON.stringify([fingerprintOf("group", group.props), entries.map(sinkFingerprint)]);
    for (const s of sinkNames) grouped.add(s);
    const old = reuse?.runners.get(`group:${name}`);
    if (old && old.fingerprint === fingerprint) {
      built.runners.set(`group:${name}`, old);
      continue;
    }
    const sinks = entries.map(buildSink);
    const ctx = ctxFor(name);
    const processor = buildSinkProcessor(sinkProcessorProps(group), sinks, ctx);
    built.runners.set(`group:${name}`, { name, fingerprint, runner: new SinkRunner(name, processor, bc.clock, ctx.logger, runnerOptions), sinks });
  }

  for (const [name, entry] of config.sinks) {
    if (grouped.has(name)) continue;
    const fingerprint = sinkFingerprint(entry);
    const old = reuse?.runners.get(`sink:${name}`);
    if (old && old.fingerprint === fingerprint) {
      built.runners.set(`sink:${name}`, old);
      continue;
    }
    const sink = buildSink(entry);
    const ctx = ctxFor(name);
    const processor = buildSinkProcessor({ name: "processor", props: {}, prefix: "processor.", line: entry.line }, [sink], ctx);
    built.runners.set(`sink:${name}`, { name, fingerprint, runner: new SinkRunner(name, processor, bc.clock, ctx.logger, runnerOptions), sinks: [sink] });
  }
  return built;
}

function buildSelector(sub: SubComponent, channels: Channel[], ctx: ComponentContext): ChannelSelector {
  const { value } = instantiate<(channels: Channel[]) => ChannelSelector>("selector", sub.type?.value ?? "replicating", sub.props, ctx);
  return value(channels);
}

function buildInterceptor(sub: SubComponent, ctx: ComponentContext): Interceptor {
  const { value } = instantiate<Interceptor>("interceptor", sub.type?.value, sub.props, { ...ctx, name: `${ctx.name}.${sub.name}` });
  return value;
}

function buildSinkProcessor(sub: SubComponent, sinks: Sink[], ctx: ComponentContext): SinkProcessor {
  const { value } = instantiate<(sinks: Sink[]) => SinkProcessor>("sinkprocessor", sub.type?.value ?? "default", sub.props, ctx);
  return value(sinks);
}

/**
 * Removes the components that have errors (and what depends on them), as Flume does, for
 * `flume run --lenient`. Returns the warnings to print for each one dropped.
 */
export function dropBroken(config: AgentConfig, problems: Problem[]): string[] {
  const dropped: string[] = [];
  const drop = (kind: "source" | "channel" | "sink" | "sinkgroup", name: string, why: string) => {
    const map = kind === "source" ? config.sources : kind === "channel" ? config.channels : kind === "sink" ? config.sinks : config.sinkgroups;
    if (map.delete(name)) dropped.push(`dropping ${kind} ${name}: ${why}`);
  };
  for (const p of problems) if (p.severity === "error" && p.ref) drop(p.ref.kind, p.ref.name, p.message);
  let changed = true;
  while (changed) {
    changed = false;
    const before = dropped.length;
    for (const [name, s] of config.sources) {
      const chans = sourceChannels(s);
      if (chans.length === 0 || chans.some((c) => !config.channels.has(c))) drop("source", name, "one of its channels was dropped");
    }
    for (const [name, s] of config.sinks) {
      const c = sinkChannel(s);
      if (!c || !config.channels.has(c)) drop("sink", name, "its channel was dropped");
    }
    for (const [name, g] of config.sinkgroups) {
      if (sinkGroupSinks(g).some((s) => !config.sinks.has(s))) drop("sinkgroup", name, "one of its sinks was dropped");
    }
    changed = dropped.length !== before;
  }
  return dropped;
}
