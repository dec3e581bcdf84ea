/**
 * What a simulation runs: the agents of a Flume properties file (a tier), or one of them
 * (`-n`), or the built-in demo (source -> channel -> sink). Each agent is loaded as `flume run
 * -n <agent>` loads it (config/load.ts: custom components included), then built by the agent
 * builder exactly as `flume run` builds it, except (through the build context, see engine.ts):
 *
 * - a source no other agent of the file sends to is fed by a simulated client, and a sink that
 *   sends nowhere inside the file delivers to a simulated destination (both keep their
 *   configured batch sizes: the property with the batchSize role);
 * - a sink whose definition declares an RPC link (ComponentDefinition.rpcLink: avro, thrift)
 *   and whose address names a source of the same protocol in another agent (its bind, or a
 *   wildcard bind, and port) is a link: the real sink and source run, over the simulated
 *   network (network.ts). What that network does not carry (TLS, compression, IP filters) is
 *   turned off on links, with a warning.
 */
import * as registry from "../components/registry.ts";
import type { AnyDefinition } from "../components/component.ts";
import { ConfigReadError, type Loaded, loadConfigText, loadEveryAgentText, readConfigFile } from "../config/load.ts";
import type { AgentModel, ChannelModel } from "../config/model.ts";
import { formatProblem } from "../config/problems.ts";
import { type AnyOptions, capacityOf, keyWithRole, type Role } from "../config/schema.ts";
import type { LoadResult } from "../config/validate.ts";
import { formatTime, SimulationUsageError, type SimulationOptions } from "./options.ts";
import type { FileSpec } from "./hdfs.ts";
import { channelStandIn } from "./stand-in.ts";

/** A channel as the simulation reports it. */
export interface ChannelPlan {
  agent: string;
  name: string;
  /** How reports and traces name it: "c1" in a one-agent run, "edge1.c1" in a tier. */
  label: string;
  /** Its number in the ledger (all channels of the tier). */
  index: number;
  /** The configured type. */
  type: string;
  /** The type built in its place, when its definition declares a stand-in. */
  standIn?: string;
  /** Its definition says committed events survive a crash. */
  durable: boolean;
  capacity: number;
  transactionCapacity?: number;
  /** Seconds a commit waits for space. */
  keepAlive?: number;
  model: ChannelModel;
  /** Sinks reading it that send to another agent of the tier (their committed takes are forwards). */
  forwarders: string[];
}

/** An RPC sink of one agent sending to a source of the same protocol in another. */
export interface LinkPlan {
  index: number;
  /** "edge1->collector" (with the sink when one agent has several links to the same one). */
  name: string;
  from: string;
  sink: string;
  to: string;
  source: string;
  /** The protocol both ends declare (avro, thrift). */
  protocol: string;
  host: string;
  port: number;
  /** A simulated client's connection to a line source (netcat, syslogtcp): what it sends, and whether the source answers. */
  feed?: { acks: boolean; line(text: string): string };
}

/** The sender of client links: the simulated clients of line sources. */
export const CLIENT = "client";

export interface AgentPlan {
  name: string;
  model: AgentModel;
  channels: ChannelPlan[];
  /** Sources fed by simulated clients (no agent of the tier sends to them), with the client's batch size. */
  entrySources: Map<string, number>;
  /** Of those, the real line sources (netcat, syslogtcp) whose client sends over the simulated network, by source name. */
  streams: Map<string, LinkPlan>;
  /** Sinks replaced by simulated destinations, with their batch size. */
  simulatedSinks: Map<string, number>;
  /** RPC sinks sending to another agent (the real component), by sink name. */
  links: Map<string, LinkPlan>;
  /** Sinks writing to the simulated Kafka broker (brokerLink role); hop: a source of the run reads the topic. */
  brokerSinks: Map<string, { topic: string; batchSize: number; idempotent: boolean; requestTimeoutMs: number; lossy: boolean; hop: boolean }>;
  /** Channels kept in a topic of the simulated Kafka broker (brokerLink.channel), by channel name. */
  brokerChannels: Map<string, BrokerChannelSpec>;
  /** Sources reading the simulated Kafka broker, with the topics they read. */
  brokerSources: Map<string, { topics: string[]; group: string; batchSize: number; batchDurationMs: number }>;
  /** Sinks writing rolled files into the simulated file system (fileStore role). */
  fileSinks: Map<string, FileSpec>;
}

/** A channel kept in a topic of the simulated broker: its topic, its group, and its producer. */
export interface BrokerChannelSpec {
  topic: string;
  group: string;
  idempotent: boolean;
  requestTimeoutMs: number;
  lossy: boolean;
}

export interface Topology {
  /** More than one agent. */
  tier: boolean;
  agents: AgentPlan[];
  links: LinkPlan[];
  /** Every channel of every agent, in ledger order. */
  channels: ChannelPlan[];
  /** Topics sources of the run read and no sink of the run writes: a producer outside the run writes them. */
  outsideTopics: string[];
  /** One line per component, for the report. */
  description: string[];
  warnings: string[];
}

const DEMO_CAPACITY = 20_000;
const DEMO_TRANSACTION_CAPACITY = 1_000;
const DEMO_SINK_BATCH = 100;

/** The demo: a source and a sink of real types (both are replaced), with the run's batch size. */
function demoText(o: SimulationOptions): string {
  return [
    "a1.sources = r1",
    "a1.channels = c1",
    "a1.sinks = k1",
    "a1.sources.r1.type = seq",
    "a1.sources.r1.channels = c1",
    `a1.sources.r1.batchSize = ${Math.min(o.batchSize, DEMO_TRANSACTION_CAPACITY)}`,
    `a1.channels.c1.type = ${o.channel}`,
    `a1.channels.c1.capacity = ${DEMO_CAPACITY}`,
    `a1.channels.c1.transactionCapacity = ${DEMO_TRANSACTION_CAPACITY}`,
    "a1.sinks.k1.type = null",
    "a1.sinks.k1.channel = c1",
    `a1.sinks.k1.batchSize = ${DEMO_SINK_BATCH}`,
    "",
  ].join("\n");
}

/** The value of the property that plays `role` in a definition (defaults filled in), if it is a number. */
function numberWithRole(definition: AnyDefinition, options: AnyOptions, role: Role): number | undefined {
  const key = keyWithRole(definition.schema, role);
  const v = key === undefined ? undefined : options[key];
  return typeof v === "number" ? v : undefined;
}

const WILDCARD_BINDS = new Set(["0.0.0.0", "::", "[::]", "*", ""]);

/** A source or sink that declares an RPC link, where it listens or connects. */
interface RpcEnd {
  agent: string;
  name: string;
  protocol: string;
  host: string;
  port: number;
}

/** The sources or sinks of the agents that declare an RPC link. */
function rpcEnds(models: AgentModel[], kind: "sources" | "sinks"): RpcEnd[] {
  return models.flatMap((m) =>
    [...m[kind].values()].flatMap((c) => {
      const link = c.definition.rpcLink;
      return link ? [{ agent: m.agent, name: c.name, protocol: link.protocol, ...link.address(c.options) }] : [];
    }),
  );
}

/** The source an RPC sink names: same protocol, its bind (or a wildcard bind) and port, in another agent. */
function linkTarget(sink: RpcEnd, sources: RpcEnd[]): RpcEnd | undefined {
  const onPort = sources.filter((l) => l.port === sink.port && l.protocol === sink.protocol && l.agent !== sink.agent);
  const exact = onPort.filter((l) => l.host === sink.host || l.agent === sink.host);
  const candidates = exact.length > 0 ? exact : onPort.filter((l) => WILDCARD_BINDS.has(l.host));
  if (candidates.length > 1) {
    throw new SimulationUsageError(`${sink.agent}: sink ${sink.name} sends to ${sink.host}:${sink.port}, where several agents of the file listen (${candidates.map((c) => `${c.agent}'s ${c.name} on ${c.host}:${c.port}`).join(", ")}); give their ${sink.protocol} sources distinct bind addresses or ports`);
  }
  return candidates[0];
}

/** Every agent of the run, each loaded as `flume run -n <agent>` loads it. */
async function loadAgents(o: SimulationOptions): Promise<{ file: string; results: Loaded[] }> {
  if (!o.configFile) return { file: "<demo>", results: [await loadConfigText(demoText(o), "<demo>", {}, registry)] };
  const file = o.configFile;
  let text: string;
  try {
    text = readConfigFile(file);
  } catch (err) {
    throw new SimulationUsageError(err instanceof ConfigReadError ? err.message : `cannot read ${file}: ${(err as Error).message}`);
  }
  return { file, results: o.agentName !== undefined ? [await loadConfigText(text, file, { agentName: o.agentName }, registry)] : await loadEveryAgentText(text, file, {}, registry) };
}

function refuseErrors(file: string, results: LoadResult[]): void {
  const lines: string[] = [];
  let count = 0;
  for (const r of results) {
    const fatal = r.problems.filter((p) => p.severity === "error");
    if (fatal.length === 0 && r.model) continue;
    count += fatal.length;
    lines.push(...(fatal.length > 0 ? fatal.map(formatProblem) : [`${file}: ${r.config?.agent ?? "the file"} could not be read as an agent`]));
  }
  if (lines.length > 0) throw new SimulationUsageError(`${file} has ${count || "unrecoverable"} error(s):\n${lines.join("\n")}`);
}

/** The links of a tier: RPC sinks naming a source of the same protocol in another agent; `outside` gets the other RPC sinks' addresses. */
function findLinks(models: AgentModel[], tier: boolean, outside: Map<string, string>): LinkPlan[] {
  const sources = rpcEnds(models, "sources");
  const links: LinkPlan[] = [];
  for (const k of rpcEnds(models, "sinks")) {
    const target = tier ? linkTarget(k, sources) : undefined;
    if (!target) outside.set(`${k.agent}/${k.name}`, `${k.host}:${k.port}`);
    else links.push({ index: links.length, name: `${k.agent}->${target.agent}`, from: k.agent, sink: k.name, to: target.agent, source: target.name, protocol: k.protocol, host: k.host, port: k.port });
  }
  for (const l of links) if (links.some((x) => x !== l && x.name === l.name)) l.name = `${l.from}.${l.sink}->${l.to}`;
  return links;
}

/** A linked source or sink with what the simulated network does not carry turned off, saying so. */
function plainOnLink<M extends { name: string; definition: AnyDefinition; options: AnyOptions }>(m: M, kind: "source" | "sink", agent: string, warnings: string[]): M {
  const plain = m.definition.rpcLink?.plain(m.options);
  if (!plain) return m;
  if (plain.off.length > 0) warnings.push(`${agent}: ${kind} ${m.name}: ${plain.off.join(", ")} not simulated on the link (its frames travel plain)`);
  return { ...m, options: plain.options };
}

/** The topics every broker sink of the run writes, and the topics each broker source reads (a regex matches the written ones). */
function brokerTopics(models: AgentModel[]): { written: Set<string>; reads: Map<string, string[]>; channels: Set<string> } {
  const written = new Set<string>();
  for (const m of models) for (const k of m.sinks.values()) {
    const p = k.definition.brokerLink?.produces?.(k.options);
    if (p) written.add(p.topic);
  }
  const reads = new Map<string, string[]>();
  for (const m of models) for (const s of m.sources.values()) {
    const c = s.definition.brokerLink?.consumes?.(s.options);
    if (!c) continue;
    const regex = c.regex === undefined ? undefined : new RegExp(c.regex);
    const topics = regex ? [...written].filter((t) => regex.test(t)) : [...c.topics];
    if (topics.length === 0) throw new SimulationUsageError(`${m.agent}: source ${s.name} reads topics matching ${c.regex}, and no sink of the run writes one`);
    reads.set(`${m.agent}/${s.name}`, topics);
  }
  // A channel's topic is its own: another channel, sink or source of the run on it would mix the ledger's copies.
  const channelTopics = new Map<string, string>();
  for (const m of models) for (const c of m.channels.values()) {
    const t = c.definition.brokerLink?.channel?.(c.options)?.topic;
    if (t === undefined) continue;
    const other = channelTopics.get(t) ?? (written.has(t) || [...reads.values()].some((r) => r.includes(t)) ? "a Kafka sink or source of the run" : undefined);
    if (other) throw new SimulationUsageError(`${m.agent}: channel ${c.name} keeps its events in topic ${t}, which ${other} uses too; the simulation gives each Kafka channel a topic of its own`);
    channelTopics.set(t, `${m.agent}'s channel ${c.name}`);
  }
  return { written, reads, channels: new Set(channelTopics.keys()) };
}

export async function buildTopology(o: SimulationOptions): Promise<Topology> {
  const { file, results } = await loadAgents(o);
  refuseErrors(file, results);
  const models = results.map((r) => r.model as AgentModel);
  const tier = models.length > 1;
  const warnings: string[] = [];
  const outside = new Map<string, string>();
  const links = findLinks(models, tier, outside);
  const topics = brokerTopics(models);
  const readTopics = new Set([...topics.reads.values()].flat());

  const agents: AgentPlan[] = [];
  const channels: ChannelPlan[] = [];
  const description: string[] = [];
  for (const model of models) {
    const agentName = model.agent;
    const entrySources = new Map<string, number>();
    const simulatedSinks = new Map<string, number>();
    const agentLinks = new Map(links.filter((l) => l.from === agentName).map((l) => [l.sink, l]));
    const linkedSources = new Map(links.filter((l) => l.to === agentName).map((l) => [l.source, l.protocol]));
    const streams = new Map<string, LinkPlan>();
    const brokerSinks: AgentPlan["brokerSinks"] = new Map();
    const brokerSources: AgentPlan["brokerSources"] = new Map();
    const fileSinks = new Map<string, FileSpec>();
    for (const s of model.sources.values()) {
      const consumes = s.definition.brokerLink?.consumes?.(s.options);
      if (consumes) {
        brokerSources.set(s.name, { topics: topics.reads.get(`${agentName}/${s.name}`) ?? [], group: consumes.group, batchSize: consumes.batchSize, batchDurationMs: consumes.batchDurationMs });
        continue;
      }
      if (linkedSources.has(s.name)) model.sources.set(s.name, plainOnLink(s, "source", agentName, warnings));
      else entrySources.set(s.name, numberWithRole(s.definition, s.options, "batchSize") ?? o.batchSize);
      const feed = linkedSources.has(s.name) ? undefined : s.definition.streamFeed;
      if (!feed) continue;
      const plain = feed.plain(s.options);
      if (plain.off.length > 0) warnings.push(`${agentName}: source ${s.name}: ${plain.off.join(", ")} not simulated (its client's lines travel plain)`);
      model.sources.set(s.name, { ...s, options: plain.options });
      const address = feed.address(plain.options);
      const link: LinkPlan = { index: links.length, name: `${CLIENT}->${agentName}`, from: CLIENT, sink: s.name, to: agentName, source: s.name, protocol: s.type, host: address.host, port: address.port, feed: { acks: feed.acks(plain.options), line: feed.line } };
      links.push(link);
      streams.set(s.name, link);
    }
    for (const l of links) if (l.from === CLIENT && links.some((x) => x !== l && x.name === l.name)) l.name = `${CLIENT}.${l.source}->${l.to}`;
    for (const k of model.sinks.values()) {
      const produces = k.definition.brokerLink?.produces?.(k.options);
      const files = k.definition.fileStore?.files(k.options);
      if (produces) brokerSinks.set(k.name, { ...produces, hop: readTopics.has(produces.topic) });
      else if (files) fileSinks.set(k.name, files);
      else if (agentLinks.has(k.name)) model.sinks.set(k.name, plainOnLink(k, "sink", agentName, warnings));
      else simulatedSinks.set(k.name, numberWithRole(k.definition, k.options, "batchSize") ?? DEMO_SINK_BATCH);
    }
    // Channels kept in a broker's topic run on the simulated broker; other types that need more
    // than the process run as the stand-in their definition names.
    const brokerChannels: AgentPlan["brokerChannels"] = new Map();
    const standIns = new Map<string, string>();
    for (const [name, m] of model.channels) {
      const kept = m.definition.brokerLink?.channel?.(m.options);
      if (kept) {
        brokerChannels.set(name, kept);
        continue;
      }
      const s = channelStandIn(name, m.definition, m.options, (t) => registry.lookupComponent("channel", t));
      if (!s) continue;
      standIns.set(name, m.type);
      model.channels.set(name, { ...m, type: s.type, definition: s.definition, options: s.options });
    }
    // A simulated client's batches must fit every channel its source writes to.
    for (const [name, batch] of entrySources) {
      const source = model.sources.get(name);
      const limit = Math.min(...(source?.channels ?? []).map((c) => number(model.channels.get(c) as ChannelModel, "transactionCapacity") ?? Infinity));
      if (batch > limit) entrySources.set(name, limit);
    }
    for (const [name, spec] of brokerSources) {
      const limit = Math.min(...(model.sources.get(name)?.channels ?? []).map((c) => number(model.channels.get(c) as ChannelModel, "transactionCapacity") ?? Infinity));
      if (spec.batchSize > limit) spec.batchSize = limit;
    }
    const plans: ChannelPlan[] = [...model.channels.values()].map((m) => ({
      agent: agentName,
      name: m.name,
      label: tier ? `${agentName}.${m.name}` : m.name,
      index: channels.length + [...model.channels.keys()].indexOf(m.name),
      type: standIns.get(m.name) ?? m.type,
      standIn: standIns.has(m.name) ? m.type : undefined,
      durable: m.definition.durability !== undefined,
      capacity: capacityOf(m.definition.schema, m.options) ?? Infinity,
      transactionCapacity: number(m, "transactionCapacity"),
      keepAlive: number(m, "keepAlive"),
      model: m,
      forwarders: [...model.sinks.values()].filter((k) => k.channel === m.name && agentLinks.has(k.name)).map((k) => k.name),
    }));
    channels.push(...plans);
    agents.push({ name: agentName, model, channels: plans, entrySources, streams, simulatedSinks, links: agentLinks, brokerSinks, brokerChannels, brokerSources, fileSinks });
    description.push(...describeAgent(model, plans, { tier, file: o.configFile, entrySources, streams, simulatedSinks, agentLinks, linkedSources, outside, brokerSinks, brokerChannels, brokerSources, fileSinks }));
    const read = new Set([...model.sinks.values()].map((s) => s.channel));
    for (const c of plans) if (!read.has(c.name)) warnings.push(`no sink reads channel ${c.label}: its events can only wait there`);
  }
  for (const l of links) if (l.from !== CLIENT) description.push(`link ${l.name}: sink ${l.sink} (${l.protocol}, ${l.host}:${l.port}) -> source ${l.source} of ${l.to}; the real ${l.protocol} sink and source over the simulated network`);
  const outsideTopics = [...readTopics].filter((t) => !topics.written.has(t)).sort();
  for (const t of outsideTopics) description.push(`topic ${t}: written by a simulated producer outside the run (no sink of the run writes it), ${o.kafkaPartitions} partitions`);
  for (const t of [...topics.written].sort()) description.push(`topic ${t}: on the simulated Kafka broker, ${o.kafkaPartitions} partitions${readTopics.has(t) ? ", read by sources of the run" : ", read by no source of the run (what is written there is delivered)"}`);
  for (const t of [...topics.channels].sort()) description.push(`topic ${t}: on the simulated Kafka broker, ${o.kafkaPartitions} partitions, holding a Kafka channel's events`);
  for (const f of o.kafkaFailovers) {
    if (!topics.written.has(f.topic) && !readTopics.has(f.topic) && !topics.channels.has(f.topic)) throw new SimulationUsageError(`--kafka-failover: no Kafka sink, source or channel of the run uses topic ${f.topic}`);
    if (f.partition !== undefined && f.partition >= o.kafkaPartitions) throw new SimulationUsageError(`--kafka-failover: topic ${f.topic} has partitions 0 to ${o.kafkaPartitions - 1} (--kafka-partitions), not ${f.partition}`);
  }
  if (agents.every((a) => a.entrySources.size === 0) && outsideTopics.length === 0) throw new SimulationUsageError(`${file}: ${tier ? "no agent has a source that no other agent sends to" : "the agent has no source"} to simulate`);
  return { tier, agents, links, channels, outsideTopics, description, warnings };
}

function number(model: ChannelModel, role: Role): number | undefined {
  return numberWithRole(model.definition, model.options, role);
}

function describeAgent(
  model: AgentModel,
  plans: ChannelPlan[],
  c: {
    tier: boolean;
    file?: string;
    entrySources: Map<string, number>;
    streams: Map<string, LinkPlan>;
    simulatedSinks: Map<string, number>;
    agentLinks: Map<string, LinkPlan>;
    linkedSources: Map<string, string>;
    outside: Map<string, string>;
    brokerSinks: AgentPlan["brokerSinks"];
    brokerChannels: AgentPlan["brokerChannels"];
    brokerSources: AgentPlan["brokerSources"];
    fileSinks: Map<string, FileSpec>;
  },
): string[] {
  const was = (type: string) => (c.file ? `${type} ` : "");
  const pre = c.tier ? `${model.agent}: ` : "";
  const out: string[] = [];
  if (c.file) out.push(`agent ${model.agent} from ${c.file}`);
  for (const p of plans) {
    const kept = c.brokerChannels.get(p.name);
    if (kept) {
      out.push(`${pre}channel ${p.name} (${p.type}, kept in topic ${kept.topic} of the simulated Kafka broker, group ${kept.group}${kept.idempotent ? ", idempotent producer" : kept.lossy ? ", acks 0 or 1" : ""}; put commit = records acknowledged, take commit = offsets committed)`);
      continue;
    }
    const where = p.standIn ? `${p.type}, simulated by a ${p.standIn} channel${p.durable ? " on a scratch directory" : ""}` : p.durable ? `${p.type} on a scratch directory` : p.type;
    out.push(`${pre}channel ${p.name} (${where}, capacity ${p.capacity.toLocaleString("en-US")}, transactionCapacity ${p.transactionCapacity ?? "unbounded"})`);
  }
  for (const s of model.sources.values()) {
    const extras = [s.selector.type !== "replicating" ? `${s.selector.type} selector` : "", s.interceptors.length ? `interceptors ${s.interceptors.map((i) => i.name).join(" ")}` : ""].filter(Boolean);
    const batch = c.entrySources.get(s.name);
    const stream = c.streams.get(s.name);
    const reads = c.brokerSources.get(s.name);
    const how = reads
      ? `${was(s.type)}reads topic ${reads.topics.join(",")} of the simulated Kafka broker in group ${reads.group}, batches of ${reads.batchSize}, offsets committed after the channel commit`
      : stream
      ? `the real ${s.type} source, fed by a simulated client over link ${stream.name}, ${stream.feed?.acks ? "answered" : "unanswered"} lines in batches of ${batch}`
      : batch !== undefined
        ? `${was(s.type)}replaced by a simulated client, batches of ${batch}`
        : `the real ${c.linkedSources.get(s.name)} source, on the simulated network`;
    out.push(`${pre}source ${s.name} -> ${s.channels.join(" ")} (${how}${extras.length ? `; ${extras.join(", ")}` : ""})`);
  }
  for (const k of model.sinks.values()) {
    const link = c.agentLinks.get(k.name);
    const away = c.outside.get(`${model.agent}/${k.name}`);
    const topic = c.brokerSinks.get(k.name);
    const files = c.fileSinks.get(k.name);
    const how = topic
      ? `${was(k.type)}writes topic ${topic.topic} of the simulated Kafka broker${topic.idempotent ? " (idempotent producer)" : ""}, batches of ${topic.batchSize}, request timeout ${formatTime(topic.requestTimeoutMs)}`
      : files
        ? `${was(k.type)}writes files ${files.directory}/${files.prefix}.N${files.suffix} (in use: ${files.inUsePrefix}NAME${files.inUseSuffix}) on the simulated HDFS, batches of ${files.batchSize}, rolled at ${[files.rollCount > 0 ? `${files.rollCount} events` : "", files.rollSize > 0 ? `${files.rollSize} bytes` : "", files.rollIntervalMs > 0 ? formatTime(files.rollIntervalMs) : ""].filter(Boolean).join(" or ") || "never"}${files.idleTimeoutMs > 0 ? `, closed after ${formatTime(files.idleTimeoutMs)} idle` : ""}`
        : link
      ? `the real ${link.protocol} sink, to ${link.to} over the simulated network, batches of ${numberWithRole(k.definition, k.options, "batchSize")}`
      : `${was(k.type)}replaced by a simulated sink${away && c.tier ? ` (no agent of the file listens on ${away})` : ""}, batches of ${c.simulatedSinks.get(k.name)}`;
    out.push(`${pre}sink ${k.name} <- ${k.channel} (${how})`);
  }
  for (const g of model.sinkGroups.values()) if (g.configured) out.push(`${pre}sinkgroup ${g.name}: ${g.processor.type} over ${g.sinks.join(" ")}`);
  return out;
}
