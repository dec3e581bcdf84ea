/**
 * What a simulation runs: the agents of a Flume properties file (a tier), or one of them
 * (`-n`), or the built-in demo (source -> channel -> sink). Each agent is validated as
 * `flume run -n <agent>` validates it, then built by the agent builder exactly as `flume run`
 * builds it, except:
 *
 * - a source no other agent of the file sends to is fed by a simulated client, and a sink that
 *   sends nowhere inside the file delivers to a simulated destination (both keep their
 *   configured batch sizes);
 * - an avro sink whose hostname:port names another agent's avro source (its bind, or a wildcard
 *   bind, and port) is a link: the real avro sink and avro source run, over the simulated
 *   network (network.ts). TLS, deflate and ipFilter are not simulated on links (a warning says so).
 */
import { readFileSync } from "node:fs";
import { defineComponent } from "../components/component.ts";
import * as registry from "../components/registry.ts";
import type { AnyDefinition } from "../components/component.ts";
import { type ComponentEntry, type Located, parseFlumeConfig, record, type ParseResult, parseEveryAgent } from "../config/flume-config.ts";
import type { AgentModel, ChannelModel } from "../config/model.ts";
import { formatProblem } from "../config/problems.ts";
import { capacityOf, keyWithRole, type Role } from "../config/schema.ts";
import { type ComponentRegistry, type LoadResult, withModel } from "../config/validate.ts";
import { CLIENT_TLS_PROPS, SERVER_TLS_PROPS } from "../net/tls.ts";
import { SimulationUsageError, type SimulationOptions } from "./options.ts";
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

/** An avro sink of one agent sending to an avro source of another. */
export interface LinkPlan {
  index: number;
  /** "edge1->collector" (with the sink when one agent has several links to the same one). */
  name: string;
  from: string;
  sink: string;
  to: string;
  source: string;
  host: string;
  port: number;
}

export interface AgentPlan {
  name: string;
  model: AgentModel;
  channels: ChannelPlan[];
  /** Sources fed by simulated clients (no agent of the tier sends to them). */
  entrySources: Set<string>;
  /** Sinks replaced by simulated destinations. */
  simulatedSinks: Set<string>;
  /** Avro sinks sending to another agent (the real component), by sink name. */
  links: Map<string, LinkPlan>;
}

export interface Topology {
  /** More than one agent. */
  tier: boolean;
  agents: AgentPlan[];
  links: LinkPlan[];
  /** Every channel of every agent, in ledger order. */
  channels: ChannelPlan[];
  /** One line per component, for the report. */
  description: string[];
  warnings: string[];
}

const DEMO_CAPACITY = 20_000;
const DEMO_TRANSACTION_CAPACITY = 1_000;
const DEMO_SINK_BATCH = 100;

const batchSizeProps = {
  batchSize: { type: "int", default: 100, min: 1, roles: ["batchSize"], doc: "Events per transaction" },
} as const;

/** Stand-ins the simulator builds in place of configured sources and sinks (see engine.ts). */
const simulatedSource = defineComponent({
  kind: "source",
  type: "simulated",
  doc: "A simulated client feeding numbered events to the agent.",
  props: batchSizeProps,
  create(): never {
    throw new Error("the simulator builds its sources itself");
  },
});
const simulatedSink = defineComponent({
  kind: "sink",
  type: "simulated",
  doc: "A simulated destination that records what it receives.",
  props: batchSizeProps,
  create(): never {
    throw new Error("the simulator builds its sinks itself");
  },
});

/** The registry with the stand-ins; every other type is the real one. */
const simRegistry: ComponentRegistry = {
  lookupComponent(kind, type) {
    if (type === "simulated" && kind === "source") return simulatedSource as AnyDefinition;
    if (type === "simulated" && kind === "sink") return simulatedSink as AnyDefinition;
    return registry.lookupComponent(kind, type);
  },
  allComponents: () => registry.allComponents(),
};

function demoText(o: SimulationOptions): string {
  return [
    "a1.sources = r1",
    "a1.channels = c1",
    "a1.sinks = k1",
    "a1.sources.r1.type = simulated",
    "a1.sources.r1.channels = c1",
    `a1.sources.r1.batchSize = ${Math.min(o.batchSize, DEMO_TRANSACTION_CAPACITY)}`,
    `a1.channels.c1.type = ${o.channel}`,
    `a1.channels.c1.capacity = ${DEMO_CAPACITY}`,
    `a1.channels.c1.transactionCapacity = ${DEMO_TRANSACTION_CAPACITY}`,
    "a1.sinks.k1.type = simulated",
    "a1.sinks.k1.channel = c1",
    `a1.sinks.k1.batchSize = ${DEMO_SINK_BATCH}`,
    "",
  ].join("\n");
}

/** A whole number a located value holds, if it does. */
function wholeNumber(v: Located | undefined): number | undefined {
  const t = v?.value.trim();
  return t !== undefined && /^\d+$/.test(t) ? Number(t) : undefined;
}

/**
 * Replaces a configured source's or sink's own type and keys by the stand-in's, keeping its
 * wiring (channels, selector, interceptors, channel) and its batch size, whatever its type
 * calls it (the property with the batchSize role).
 */
function standIn(entry: ComponentEntry, kind: "source" | "sink", fallbackBatch: number): string {
  const original = entry.type?.value ?? "?";
  const def = entry.type ? registry.lookupComponent(kind, entry.type.value) : undefined;
  const key = def && keyWithRole(def.schema, "batchSize");
  const spec = key ? def?.schema.props.find((p) => p.key === key) : undefined;
  const configured = key ? (wholeNumber(entry.props[key]) ?? wholeNumber(spec?.aliases?.map((a) => entry.props[a]).find(Boolean))) : undefined;
  const batch = configured ?? (typeof spec?.default === "number" ? spec.default : fallbackBatch);
  const props = record<Located>();
  for (const [k, v] of Object.entries(entry.props)) {
    const wiring = kind === "source" ? k === "channels" || k === "interceptors" || k.startsWith("interceptors.") || k.startsWith("selector.") : k === "channel";
    if (wiring) props[k] = v;
  }
  const at = { file: entry.file, line: entry.line };
  props.batchSize = { value: String(batch), ...at };
  entry.props = props;
  entry.emptyProps = record();
  entry.type = { value: "simulated", ...at };
  return original;
}

/** Keys of a linked avro component the simulated network does not carry out (TLS, deflate, ipFilter). */
const NOT_ON_LINKS = new Set([...Object.keys(SERVER_TLS_PROPS), ...Object.keys(CLIENT_TLS_PROPS), "compression-type", "compression-level", "ipFilter", "ipFilterRules"]);

/** Drops those keys (and their aliases) from a linked component, saying what is not simulated. */
function plainLink(entry: ComponentEntry, kind: "source" | "sink", options: Record<string, unknown>, agent: string, warnings: string[]): void {
  const def = registry.lookupComponent(kind, entry.type?.value ?? "");
  if (!def) return;
  const drop = new Set<string>();
  for (const p of def.schema.props) {
    if (!NOT_ON_LINKS.has(p.key)) continue;
    drop.add(p.key);
    for (const a of p.aliases ?? []) drop.add(a);
  }
  for (const k of Object.keys(entry.props)) if (drop.has(k)) delete entry.props[k];
  const off = [options.ssl === true ? "TLS" : "", options["compression-type"] === "deflate" ? "deflate" : "", options.ipFilter === true ? "ipFilter" : ""].filter(Boolean);
  if (off.length > 0) warnings.push(`${agent}: ${kind} ${entry.name}: ${off.join(", ")} not simulated on the link (its frames travel plain)`);
}

function number(model: ChannelModel, role: Role): number | undefined {
  const key = keyWithRole(model.definition.schema, role);
  const v = key === undefined ? undefined : model.options[key];
  return typeof v === "number" ? v : undefined;
}

const WILDCARD_BINDS = new Set(["0.0.0.0", "::", "[::]", "*", ""]);

interface Listening {
  agent: string;
  source: string;
  bind: string;
  port: number;
}

/** The avro source an avro sink names: its bind (or a wildcard bind) and port, in another agent. */
function linkTarget(from: string, sink: string, host: string, port: number, listening: Listening[]): Listening | undefined {
  const onPort = listening.filter((l) => l.port === port && l.agent !== from);
  const exact = onPort.filter((l) => l.bind === host || l.agent === host);
  const candidates = exact.length > 0 ? exact : onPort.filter((l) => WILDCARD_BINDS.has(l.bind));
  if (candidates.length > 1) {
    throw new SimulationUsageError(`${from}: sink ${sink} sends to ${host}:${port}, where several agents of the file listen (${candidates.map((c) => `${c.agent}'s ${c.source} on ${c.bind}:${c.port}`).join(", ")}); give their avro sources distinct bind addresses or ports`);
  }
  return candidates[0];
}

function readText(o: SimulationOptions): string {
  if (!o.configFile) return demoText(o);
  try {
    return readFileSync(o.configFile, "utf8");
  } catch (err) {
    throw new SimulationUsageError(`cannot read ${o.configFile}: ${(err as Error).message}`);
  }
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

export function buildTopology(o: SimulationOptions): Topology {
  const file = o.configFile ?? "<demo>";
  const text = readText(o);
  const demo = o.configFile === undefined;
  const parseAgents = (): ParseResult[] => (o.agentName !== undefined || demo ? [parseFlumeConfig(text, file, { agentName: o.agentName })] : parseEveryAgent(text, file));
  const warnings: string[] = [];

  // 1. Every agent as `flume run` checks it (the demo's stand-ins are not real types).
  const real = demo ? [] : parseAgents().map((p) => withModel(p, registry));
  refuseErrors(file, real);
  const tier = real.length > 1;

  // 2. Links: avro sinks naming another agent's avro source.
  const listening: Listening[] = [];
  for (const r of real) {
    const m = r.model as AgentModel;
    for (const s of m.sources.values()) if (s.type === "avro") listening.push({ agent: m.agent, source: s.name, bind: String(s.options.bind), port: Number(s.options.port) });
  }
  const links: LinkPlan[] = [];
  const outside = new Map<string, string>();
  for (const r of real) {
    const m = r.model as AgentModel;
    for (const k of m.sinks.values()) {
      if (k.type !== "avro") continue;
      const host = String(k.options.hostname);
      const port = Number(k.options.port);
      const target = tier ? linkTarget(m.agent, k.name, host, port, listening) : undefined;
      if (!target) {
        outside.set(`${m.agent}/${k.name}`, `${host}:${port}`);
        continue;
      }
      links.push({ index: links.length, name: `${m.agent}->${target.agent}`, from: m.agent, sink: k.name, to: target.agent, source: target.source, host, port });
    }
  }
  for (const l of links) if (links.some((x) => x !== l && x.name === l.name)) l.name = `${l.from}.${l.sink}->${l.to}`;

  // 3. The simulated agents: stand-ins where nothing of the tier is at the other end.
  const agents: AgentPlan[] = [];
  const channels: ChannelPlan[] = [];
  const description: string[] = [];
  const realByAgent = new Map(real.map((r) => [r.model?.agent as string, r.model as AgentModel]));
  for (const parsed of parseAgents()) {
    const config = parsed.config;
    const agentName = config?.agent ?? "?";
    const original = realByAgent.get(agentName);
    const entrySources = new Set<string>();
    const simulatedSinks = new Set<string>();
    const agentLinks = new Map(links.filter((l) => l.from === agentName).map((l) => [l.sink, l]));
    const linkedSources = new Set(links.filter((l) => l.to === agentName).map((l) => l.source));
    /** The configured type of each replaced source and sink, for the report. */
    const replaced = new Map<string, string>();
    if (config) {
      for (const e of config.sources.values()) {
        if (linkedSources.has(e.name)) plainLink(e, "source", original?.sources.get(e.name)?.options ?? {}, agentName, warnings);
        else {
          entrySources.add(e.name);
          replaced.set(`source ${e.name}`, standIn(e, "source", o.batchSize));
        }
      }
      for (const e of config.sinks.values()) {
        if (agentLinks.has(e.name)) plainLink(e, "sink", original?.sinks.get(e.name)?.options ?? {}, agentName, warnings);
        else {
          simulatedSinks.add(e.name);
          replaced.set(`sink ${e.name}`, standIn(e, "sink", DEMO_SINK_BATCH));
        }
      }
    }
    const result = withModel(parsed, simRegistry);
    refuseErrors(file, [result]);
    const model = result.model as AgentModel;
    // Channel types that need more than the process run as the stand-in their definition names.
    const standIns = new Map<string, string>();
    for (const [name, m] of model.channels) {
      const s = channelStandIn(name, m.definition, m.options, (t) => registry.lookupComponent("channel", t));
      if (!s) continue;
      standIns.set(name, m.type);
      model.channels.set(name, { ...m, type: s.type, definition: s.definition, options: s.options });
    }
    // A simulated client's batches must fit every channel its source writes to.
    for (const s of model.sources.values()) {
      if (!entrySources.has(s.name)) continue;
      const limit = Math.min(...s.channels.map((c) => number(model.channels.get(c) as ChannelModel, "transactionCapacity") ?? Infinity));
      const batch = s.options.batchSize as number;
      if (batch > limit) (s.options as { batchSize: number }).batchSize = limit;
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
    agents.push({ name: agentName, model, channels: plans, entrySources, simulatedSinks, links: agentLinks });
    description.push(...describeAgent(model, plans, { tier, file: o.configFile, replaced, entrySources, agentLinks, linkedSources, outside }));
    const read = new Set([...model.sinks.values()].map((s) => s.channel));
    for (const c of plans) if (!read.has(c.name)) warnings.push(`no sink reads channel ${c.label}: its events can only wait there`);
  }
  for (const l of links) description.push(`link ${l.name}: sink ${l.sink} (avro, ${l.host}:${l.port}) -> source ${l.source} of ${l.to}; the real avro sink and source over the simulated network`);
  if (agents.every((a) => a.entrySources.size === 0)) throw new SimulationUsageError(`${file}: ${tier ? "no agent has a source that no other agent sends to" : "the agent has no source"} to simulate`);
  return { tier, agents, links, channels, description, warnings };
}

function describeAgent(
  model: AgentModel,
  plans: ChannelPlan[],
  c: { tier: boolean; file?: string; replaced: Map<string, string>; entrySources: Set<string>; agentLinks: Map<string, LinkPlan>; linkedSources: Set<string>; outside: Map<string, string> },
): string[] {
  const was = (kind: string, name: string) => {
    const t = c.replaced.get(`${kind} ${name}`);
    return c.file && t ? `${t} ` : "";
  };
  const pre = c.tier ? `${model.agent}: ` : "";
  const out: string[] = [];
  if (c.file && !c.tier) out.push(`agent ${model.agent} from ${c.file}`);
  if (c.tier) out.push(`agent ${model.agent} from ${c.file}`);
  for (const p of plans) {
    const where = p.standIn ? `${p.type}, simulated by a ${p.standIn} channel${p.durable ? " on a scratch directory" : ""}` : p.durable ? `${p.type} on a scratch directory` : p.type;
    out.push(`${pre}channel ${p.name} (${where}, capacity ${p.capacity.toLocaleString("en-US")}, transactionCapacity ${p.transactionCapacity ?? "unbounded"})`);
  }
  for (const s of model.sources.values()) {
    const extras = [s.selector.type !== "replicating" ? `${s.selector.type} selector` : "", s.interceptors.length ? `interceptors ${s.interceptors.map((i) => i.name).join(" ")}` : ""].filter(Boolean);
    const how = c.entrySources.has(s.name) ? `${was("source", s.name)}replaced by a simulated client, batches of ${s.options.batchSize}` : "the real avro source, on the simulated network";
    out.push(`${pre}source ${s.name} -> ${s.channels.join(" ")} (${how}${extras.length ? `; ${extras.join(", ")}` : ""})`);
  }
  for (const k of model.sinks.values()) {
    const link = c.agentLinks.get(k.name);
    const away = c.outside.get(`${model.agent}/${k.name}`);
    const how = link ? `the real avro sink, to ${link.to} over the simulated network, batches of ${k.options["batch-size"]}` : `${was("sink", k.name)}replaced by a simulated sink${away && c.tier ? ` (no agent of the file listens on ${away})` : ""}, batches of ${k.options.batchSize}`;
    out.push(`${pre}sink ${k.name} <- ${k.channel} (${how})`);
  }
  for (const g of model.sinkGroups.values()) if (g.configured) out.push(`${pre}sinkgroup ${g.name}: ${g.processor.type} over ${g.sinks.join(" ")}`);
  return out;
}
