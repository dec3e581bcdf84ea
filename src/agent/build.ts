/**
 * The one builder: turns an agent model into running parts (channels, sources with their
 * channel processors, sink runners). `flume run`, EmbeddedAgent, `flume simulate` and
 * `flume replay` all build here; they differ only in what they put in the BuildContext.
 */
import type { Channel } from "../core/channel.ts";
import { ChannelProcessor } from "../core/channel-processor.ts";
import type { Clock } from "../core/clock.ts";
import type { Interceptor } from "../core/interceptor.ts";
import type { Logger } from "../core/logger.ts";
import { SinkRunner, SourceRunner } from "../core/runners.ts";
import type { SinkProcessor } from "../core/sink-processors.ts";
import type { ChannelSelector } from "../core/selectors.ts";
import type { Sink } from "../core/sink.ts";
import type { AnySource } from "../core/source.ts";
import type { AnyDefinition, ComponentContext, Random } from "../components/component.ts";
import type { AgentModel, ChannelModel, PartModel, SinkModel, SourceModel } from "../config/model.ts";
import { ConfigurationError } from "../core/errors.ts";
import type { AnyOptions } from "../config/schema.ts";
import type { Network } from "../net/network.ts";
import { lookupComponent } from "../components/registry.ts";

/** What differs between the places that build agents. */
export interface BuildContext {
  agentName: string;
  clock: Clock;
  logger: (name: string) => Logger;
  /** Math.random in an agent; a seeded stream in the simulator. */
  random?: Random;
  /** Where a configured storage path lives (the simulator maps them to scratch directories). */
  storagePath?: (configured: string) => string;
  /** Wraps each new channel (`flume run --trace` records transactions this way). */
  wrapChannel?: (channel: Channel, model: ChannelModel) => Channel;
  /** The channel as one source or sink sees it (the simulator's traces say who ran a transaction). */
  view?: (channel: Channel, user: string) => Channel;
  /** Builds a channel instead of its definition (the simulator's Kafka channels on its broker). */
  channel?: (model: ChannelModel, ctx: ComponentContext) => Channel;
  /** Builds a source instead of its definition (the simulator's clients). */
  source?: (model: SourceModel, ctx: ComponentContext) => AnySource;
  /** Builds a sink instead of its definition (the simulator's sinks). */
  sink?: (model: SinkModel, ctx: ComponentContext) => Sink;
  /** The network each component talks through (the simulator's virtual one); absent: TCP. */
  network?: (component: string) => Network;
  /** Sink runner backoff (Flume's SinkRunner: 1000 ms steps up to 5000 ms). */
  runnerBackoff?: { backoffSleepIncrement: number; maxBackoffSleep: number };
  /** Disk I/O on the main thread, synchronously (the simulator: see ComponentContext.blockingIo). */
  blockingIo?: boolean;
}

/** A built channel with what decides whether a reload may keep it. */
export interface BuiltChannel {
  name: string;
  model: ChannelModel;
  /** What sources and sinks use: the instance, or its wrapper. */
  channel: Channel;
  /** The instance the definition made (under any wrapper). */
  instance: unknown;
  /**
   * A kept channel's new settings, applied by the reload once everything was built and the
   * old components that use it stopped (a failed build must leave it untouched).
   */
  reconfigure?: () => Promise<void>;
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
export type Reuse = BuiltAgent;

const FLUME_RUNNER_BACKOFF = { backoffSleepIncrement: 1000, maxBackoffSleep: 5000 };

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

/** Creates one component from its definition and options, naming the component in errors. */
export function createComponent<T>(definition: AnyDefinition, options: AnyOptions, ctx: ComponentContext): T {
  try {
    return definition.create(options, ctx) as T;
  } catch (err) {
    if (err instanceof ConfigurationError && err.component === undefined) throw new ConfigurationError(err.key, err.detail, `${definition.schema.kind} ${ctx.name}`);
    throw err;
  }
}

/**
 * Builds the components of an agent model. With `reuse`, components whose configuration did
 * not change are taken over from the running agent instead of built anew; a channel whose
 * definition can change it in place is kept with a `reconfigure` for the caller to apply.
 */
export function buildAgent(model: AgentModel, bc: BuildContext, reuse?: Reuse): BuiltAgent {
  const random = bc.random ?? Math.random;
  const storagePath = bc.storagePath ?? ((p: string) => p);
  const lookup = model.lookup ?? lookupComponent;
  const ctxFor = (name: string, named?: SourceModel["named"]): ComponentContext => ({ name, agentName: bc.agentName, clock: bc.clock, logger: bc.logger(name), random, storagePath, network: bc.network?.(name), blockingIo: bc.blockingIo, lookup, named });
  const built: BuiltAgent = { channels: new Map(), sources: new Map(), runners: new Map() };

  for (const [name, m] of model.channels) {
    const old = reuse?.channels.get(name);
    if (old && old.model.type === m.type) {
      if (old.model.fingerprint === m.fingerprint) {
        built.channels.set(name, old);
        continue;
      }
      const change = m.definition.reconfigure?.(old.instance, m.options);
      if (change) {
        built.channels.set(name, { ...old, model: m, reconfigure: change });
        continue;
      }
    }
    const ctx = ctxFor(name, m.named);
    const instance = bc.channel ? bc.channel(m, ctx) : createComponent<Channel>(m.definition, m.options, ctx);
    const channel = bc.wrapChannel ? bc.wrapChannel(instance, m) : instance;
    built.channels.set(name, { name, model: m, channel, instance });
  }

  const channelRef = (name: string): Channel => {
    const c = built.channels.get(name)?.channel;
    if (!c) throw new ConfigurationError("channels", `channel "${name}" is not configured`);
    return c;
  };

  const viewFor = (c: Channel, user: string) => (bc.view ? bc.view(c, user) : c);

  for (const [name, m] of model.sources) {
    const channels = m.channels.map(channelRef);
    const fingerprint = JSON.stringify([m.fingerprint, channels.map(idOf)]);
    const old = reuse?.sources.get(name);
    if (old && old.fingerprint === fingerprint) {
      built.sources.set(name, old);
      continue;
    }
    const ctx = ctxFor(name, m.named);
    const source = bc.source ? bc.source(m, ctx) : createComponent<AnySource>(m.definition, m.options, ctx);
    const selector = part<(c: Channel[]) => ChannelSelector>(m.selector, ctx)(channels.map((c) => viewFor(c, name)));
    const interceptors = m.interceptors.map((i) => part<Interceptor>(i, { ...ctx, named: undefined, name: `${name}.${i.name}`, logger: bc.logger(`${name}.${i.name}`) }));
    source.setChannelProcessor(new ChannelProcessor(selector, interceptors, ctx.logger));
    built.sources.set(name, { name, fingerprint, source, runner: new SourceRunner(source, bc.clock, ctx.logger), channels: m.channels });
  }

  const sinkFingerprint = (m: SinkModel) => JSON.stringify([m.fingerprint, idOf(channelRef(m.channel))]);
  const buildSink = (m: SinkModel): Sink => {
    const ctx = ctxFor(m.name, m.named);
    const sink = bc.sink ? bc.sink(m, ctx) : createComponent<Sink>(m.definition, m.options, ctx);
    sink.setChannel(viewFor(channelRef(m.channel), m.name));
    return sink;
  };

  for (const [key, group] of model.sinkGroups) {
    const members = group.sinks.map((s) => model.sinks.get(s) as SinkModel);
    const fingerprint = JSON.stringify([group.fingerprint, members.map(sinkFingerprint)]);
    const old = reuse?.runners.get(key);
    if (old && old.fingerprint === fingerprint) {
      built.runners.set(key, old);
      continue;
    }
    const sinks = members.map(buildSink);
    const ctx = ctxFor(group.name);
    const processor = part<(sinks: Sink[]) => SinkProcessor>(group.processor, ctx)(sinks);
    built.runners.set(key, { name: group.name, fingerprint, runner: new SinkRunner(group.name, processor, bc.clock, ctx.logger, bc.runnerBackoff ?? FLUME_RUNNER_BACKOFF), sinks });
  }
  return built;
}

function part<T>(p: PartModel, ctx: ComponentContext): T {
  return createComponent<T>(p.definition, p.options, ctx);
}
