import { type Clock, systemClock } from "../core/clock.ts";
import type { Event } from "../core/event.ts";
import { ConfigurationError } from "../core/errors.ts";
import { type Logger, silentLogger } from "../core/logger.ts";
import type { AnyOptions, ComponentKind, ComponentSchema, Groups, OptionsOf, PropError, Props, ValidationContext } from "../config/schema.ts";
import { parseOptions, schemaOf } from "../config/schema.ts";
import type { Network } from "../net/network.ts";
import { lookupComponent } from "./registry.ts";

/** A source of randomness in [0, 1): Math.random in an agent, a seeded stream in the simulator. */
export type Random = () => number;

/**
 * What a component gets besides its own options. The builder fills it the same way for
 * `flume run`, EmbeddedAgent, `flume simulate` and `flume replay`; the simulator differs only
 * in what it puts here (virtual clock, seeded random, scratch directories).
 */
export interface ComponentContext {
  /** The component's name in the config (e.g. "r1"). */
  name: string;
  agentName: string;
  clock: Clock;
  logger: Logger;
  random: Random;
  /**
   * Where a configured storage path really lives: itself in an agent; a scratch directory in
   * the simulator, which never touches the configured directories.
   */
  storagePath(configured: string): string;
  /**
   * The network RPC components connect and listen through: absent in an agent (TCP); the
   * simulator's virtual network, on which the real avro sink and source run.
   */
  network?: Network;
  /**
   * Set by the simulator and replay: disk I/O runs synchronously on the main thread, so when
   * a write completes (the disk, the machine's load) can decide nothing, and the same seed
   * gives the same run. An agent leaves it unset.
   */
  blockingIo?: boolean;
  /**
   * The definition for a type name of a kind, from the registry the configuration was checked
   * with (custom modules included): how a component finds its parts (a serializer) named by a
   * property with `names` in its schema.
   */
  lookup(kind: ComponentKind, type: string): AnyDefinition | undefined;
  /**
   * The parts the component's properties name, parsed and checked with the configuration, by
   * property key (an agent's model has them; a component built by hand has none, and
   * createPart parses the settings it is given).
   */
  named?: ReadonlyMap<string, { definition: AnyDefinition; options: AnyOptions }>;
}

/**
 * A context for a component built outside an agent (tools, benchmarks, tests): the system
 * clock, Math.random, paths as configured, no logging, unless given.
 */
export function componentContext(name: string, over: Partial<ComponentContext> = {}): ComponentContext {
  return { name, agentName: "a1", clock: systemClock, logger: silentLogger, random: Math.random, storagePath: (p) => p, lookup: lookupComponent, ...over };
}

/**
 * One component type: its schema, a factory, and what is special about it. Each component
 * file exports one of these (made with defineComponent); src/components/registry.ts maps type
 * names and aliases to them.
 */
export interface ComponentDefinition<T = unknown, O extends AnyOptions = AnyOptions> {
  readonly schema: ComponentSchema;
  /** Parses raw properties into this component's options (defaults filled in). */
  parse(raw: Readonly<Record<string, string>>): { options: O; errors: PropError[] };
  create(options: O, ctx: ComponentContext): T;
  /**
   * The component's own checks, which the schema cannot express: across its properties and
   * groups, and against its wiring (`context`). Messages name the key; `flume validate` reports
   * them at its line.
   */
  validate?(options: O, context?: ValidationContext): PropError[];
  /**
   * Channels: present when committed events survive the process dying. crash(instance) leaves
   * the instance as a killed process would (the simulator and the channel conformance suite
   * crash channels this way).
   */
  readonly durability?: Durability<T>;
  /**
   * Channels without a capacity of their own (no property with the capacity role): what bounds
   * them instead. Their commits never wait for room.
   */
  readonly unbounded?: string;
  /**
   * Channels whose instances need more than the process (a server): how `flume simulate` and
   * `flume replay` run them instead. They build the channel type named by `standIn` in its
   * place, with this type's values for the properties that play a role (capacity,
   * transactionCapacity, keepAlive) and scratch storage. The stand-in must be as durable as
   * this type (declare durability alike), so a simulated crash keeps what a real one keeps.
   */
  readonly simulation?: ChannelSimulation;
  /**
   * Channels: applies changed options to a running instance on reload, keeping its events.
   * Returns the change to run once the reload has stopped the old users, or null when the
   * change needs a new instance. Without it a changed channel is replaced.
   */
  reconfigure?(instance: T, options: O): (() => Promise<void>) | null;
  /**
   * The lock files the component will hold while it runs (its data directories, its position
   * file): an agent checks them all before it starts anything, and refuses to start when
   * another live process holds one.
   */
  claims?(options: O, ctx: Pick<ComponentContext, "storagePath">): Claim[];
  /**
   * Sources and sinks that speak an RPC protocol through ctx.network (avro, thrift): how
   * `flume simulate` sees that a sink of one agent sends to a source of another agent of the
   * same file, and runs both on its virtual network. Nothing else links agents.
   */
  readonly rpcLink?: RpcLink<O>;
  /**
   * Sources that read lines from TCP clients through ctx.network (netcat, syslogtcp): `flume
   * simulate` runs the real source and feeds it lines from a simulated client over its virtual
   * network, where link faults apply.
   */
  readonly streamFeed?: StreamFeed<O>;
  /**
   * Sources and sinks that write to or read from a Kafka broker: `flume simulate` runs them
   * against its simulated broker (topics with partitions, leader failover, lost
   * acknowledgements), joining a sink and a source of the run over the same topic.
   */
  readonly brokerLink?: BrokerLink<O>;
  /**
   * Sinks that write rolled files into a distributed file system (hdfs): `flume simulate` runs
   * them against its simulated file system (latency, NameNode outages, failing closes and
   * renames), rolling and renaming files as the sink does.
   */
  readonly fileStore?: FileStore<O>;
}

/** See ComponentDefinition.brokerLink. */
export interface BrokerLink<O> {
  readonly protocol: "kafka";
  /** A sink: the topic it writes, how many events it sends per batch, and how its producer answers (lossy: acks 0 or 1). */
  produces?(options: O): { topic: string; batchSize: number; idempotent: boolean; requestTimeoutMs: number; lossy: boolean };
  /**
   * A channel kept in a topic: a put commit writes the records with its producer, a take reads
   * them in the consumer group, a take commit commits the group's offsets.
   */
  channel?(options: O): { topic: string; group: string; idempotent: boolean; requestTimeoutMs: number; lossy: boolean };
  /** A source: the topics it reads, in which consumer group, and its batches. */
  consumes?(options: O): { topics: readonly string[]; regex?: string; group: string; batchSize: number; batchDurationMs: number };
  /**
   * A header that carries topic names, for `flume validate`. A source: the header it sets on
   * each event to the topic it read it from; a sink: the header whose value it sends an event
   * to. null when it does neither. `name` is the property naming the header, `off` the boolean
   * one that turns it off. A source's header read by a sink of its channels, on the same
   * brokers, sends every event back to where it was read: an endless loop.
   */
  topicHeader?(options: O): { header: string; brokers: readonly string[]; name: string; off: string } | null;
}

/** See ComponentDefinition.fileStore. */
export interface FileStore<O> {
  /** Where and how the sink writes and rolls its files (counts and sizes 0: not rolled by that). */
  files(options: O): { directory: string; prefix: string; suffix: string; inUsePrefix: string; inUseSuffix: string; batchSize: number; rollCount: number; rollSize: number; rollIntervalMs: number; idleTimeoutMs: number; callTimeoutMs: number; retryIntervalMs: number };
}

/** See ComponentDefinition.streamFeed. */
export interface StreamFeed<O> {
  /** Where the source listens (the first port of several). */
  address(options: O): { host: string; port: number };
  /** Whether the source answers every line (netcat's OK): the client then resends what was not answered OK. */
  acks(options: O): boolean;
  /** The line a client sends for a message text (no newline). */
  line(text: string): string;
  /** The options with what the virtual network does not carry turned off (TLS), and the names of what was on. */
  plain(options: O): { options: O; off: string[] };
}

/** See ComponentDefinition.rpcLink. */
export interface RpcLink<O> {
  /** A sink links only to a source of the same protocol. */
  readonly protocol: string;
  /** Where a source listens (its bind address) or a sink connects (its host name). */
  address(options: O): { host: string; port: number };
  /** The options with what the virtual network does not carry turned off (TLS, compression, IP filters), and the names of what was on. */
  plain(options: O): { options: O; off: string[] };
}

/**
 * RpcLink.plain as most write it: each feature the virtual network does not carry, whether it
 * is on, and the settings that turn it off.
 */
export function plainLink<O>(options: O, features: readonly { name: string; on: boolean; off: Partial<O> }[]): { options: O; off: string[] } {
  const on = features.filter((f) => f.on);
  return { options: Object.assign({}, options, ...on.map((f) => f.off)) as O, off: on.map((f) => f.name) };
}

/** TLS as a plainLink feature (components with Flume's ssl property). */
export function tlsFeature<O extends { ssl: boolean }>(options: O): { name: string; on: boolean; off: Partial<O> } {
  return { name: "TLS", on: options.ssl, off: { ssl: false } as Partial<O> };
}

/** Deflate compression as a plainLink feature (the avro sink's and source's compression-type). */
export function deflateFeature<O extends { "compression-type": string }>(options: O): { name: string; on: boolean; off: Partial<O> } {
  return { name: "deflate", on: options["compression-type"] === "deflate", off: { "compression-type": "none" } as Partial<O> };
}

/** A lock file a component holds, and what it guards (for messages). */
export interface Claim {
  file: string;
  what: string;
}

/** What survives a process crash, for a channel that keeps committed events. */
export interface Durability<T> {
  /** Leaves the instance as a killed process would: nothing more is written. */
  crash(instance: T): void | Promise<void>;
  /**
   * Present when only part of the committed events survive (SPILLABLEMEMORY keeps its overflow
   * on disk, not its memory queue): the events a crash now would lose, queued or taken by open
   * transactions. Absent: a crash loses no committed event.
   */
  lostOnCrash?(instance: T): readonly Event[];
  /**
   * Present when a clean stop may lose committed events too: those a stop now would lose.
   * Absent: a stopped and restarted channel has every committed, untaken event.
   */
  lostOnStop?(instance: T): readonly Event[];
  /**
   * Present when a crash may deliver committed, taken events again (at least once: the
   * jetstream channel acknowledges a batch message only once all its events are committed):
   * the events a crash now would bring back. Absent: none comes back.
   */
  repeatedOnCrash?(instance: T): readonly Event[];
  /** The same for a clean stop. */
  repeatedOnStop?(instance: T): readonly Event[];
}

/** What a component file writes: the schema in record form, the factory, the traits. */
export interface ComponentDeclaration<T, P extends Props, G extends Groups> {
  kind: ComponentKind;
  type: string;
  aliases?: readonly string[];
  doc: string;
  props: P;
  groups?: G;
  create(options: OptionsOf<P, G>, ctx: ComponentContext): T;
  validate?(options: OptionsOf<P, G>, context?: ValidationContext): PropError[];
  durability?: Durability<T>;
  unbounded?: string;
  simulation?: ChannelSimulation;
  reconfigure?(instance: T, options: OptionsOf<P, G>): (() => Promise<void>) | null;
  claims?(options: OptionsOf<P, G>, ctx: Pick<ComponentContext, "storagePath">): Claim[];
  rpcLink?: RpcLink<OptionsOf<P, G>>;
  streamFeed?: StreamFeed<OptionsOf<P, G>>;
  brokerLink?: BrokerLink<OptionsOf<P, G>>;
  fileStore?: FileStore<OptionsOf<P, G>>;
}

/** See ComponentDefinition.simulation. */
export interface ChannelSimulation {
  /** The channel type (Flume type name) built in this one's place by the simulator and replay. */
  readonly standIn: string;
}

/** Declares a component: its options type is inferred from the props it lists. */
export function defineComponent<T, const P extends Props, const G extends Groups = Record<never, never>>(decl: ComponentDeclaration<T, P, G>): ComponentDefinition<T, OptionsOf<P, G>> {
  const schema = schemaOf(decl);
  return {
    schema,
    parse: (raw) => parseOptions(schema, raw) as { options: OptionsOf<P, G>; errors: PropError[] },
    create: decl.create,
    validate: decl.validate,
    durability: decl.durability,
    unbounded: decl.unbounded,
    simulation: decl.simulation,
    reconfigure: decl.reconfigure,
    claims: decl.claims,
    rpcLink: decl.rpcLink,
    streamFeed: decl.streamFeed,
    brokerLink: decl.brokerLink,
    fileStore: decl.fileStore,
  };
}

/**
 * Builds the part a property names (`names` in its schema: a file_roll sink's serializer, an
 * http source's handler): in an agent, from what the configuration's check parsed
 * (ctx.named); built by hand, from the registry of the run with its settings (the group under
 * `<key>.`) parsed and checked by the part's schema and its own checks. `over` replaces options
 * (a legacy property of the owner that sets one of the part's).
 */
export function createPart<T>(ctx: ComponentContext, kind: ComponentKind, key: string, type: string, settings: Readonly<Record<string, string>>, over: AnyOptions = {}): T {
  const ready = ctx.named?.get(key);
  if (ready) return ready.definition.create({ ...ready.options, ...over }, ctx) as T;
  const def = ctx.lookup(kind, type);
  if (!def) throw new ConfigurationError(key, `unknown ${kind} "${type}"`, ctx.name);
  const parsed = def.parse(settings);
  const options = { ...parsed.options, ...over };
  const problem = [...parsed.errors, ...(def.validate?.(options) ?? [])].find((e) => e.severity !== "warning");
  if (problem) throw new ConfigurationError(`${key}.${problem.key}`, problem.message, ctx.name);
  return def.create(options, ctx) as T;
}

/** A definition's options with its defaults, then `over` (for code and tests that build one component type by hand). */
export function optionsOf<O extends AnyOptions>(definition: ComponentDefinition<unknown, O>, over: Partial<O> = {}): O {
  return { ...definition.parse({}).options, ...over };
}

/** The options type of a definition (for code that builds one component type by hand). */
export type OptionsOfDefinition<D> = D extends ComponentDefinition<unknown, infer O> ? O : never;

/** A definition seen from code that handles every type alike (registry, builder, validator). */
// Methods are bivariant in their parameters, so every definition is one of these.
export type AnyDefinition = ComponentDefinition<unknown, AnyOptions>;
