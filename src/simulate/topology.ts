/**
 * What a simulation runs: an agent model, from a Flume properties file or the built-in demo
 * (source -> channel -> sink), whose channels, selectors, interceptors and sink groups are
 * built by the agent builder exactly as `flume run` builds them. Sources and sinks are
 * replaced (by simulated clients and sinks), keeping their configured batch sizes; a channel
 * type whose definition declares a stand-in (one that needs a server) runs as that stand-in.
 */
import { readFileSync } from "node:fs";
import { defineComponent } from "../components/component.ts";
import * as registry from "../components/registry.ts";
import type { AnyDefinition } from "../components/component.ts";
import { type AgentConfig, type ComponentEntry, type Located, parseFlumeConfig, record } from "../config/flume-config.ts";
import type { AgentModel, ChannelModel } from "../config/model.ts";
import { formatProblem } from "../config/problems.ts";
import { capacityOf, keyWithRole, type Role } from "../config/schema.ts";
import { type ComponentRegistry, withModel } from "../config/validate.ts";
import { SimulationUsageError, type SimulationOptions } from "./options.ts";
import { channelStandIn } from "./stand-in.ts";

/** A channel as the simulation reports it. */
export interface ChannelPlan {
  name: string;
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
}

export interface Topology {
  model: AgentModel;
  /** One line per component, for the report. */
  description: string[];
  channels: ChannelPlan[];
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

function number(model: ChannelModel, role: Role): number | undefined {
  const key = keyWithRole(model.definition.schema, role);
  const v = key === undefined ? undefined : model.options[key];
  return typeof v === "number" ? v : undefined;
}

export function buildTopology(o: SimulationOptions): Topology {
  const file = o.configFile ?? "<demo>";
  let text: string;
  if (o.configFile) {
    try {
      text = readFileSync(o.configFile, "utf8");
    } catch (err) {
      throw new SimulationUsageError(`cannot read ${o.configFile}: ${(err as Error).message}`);
    }
  } else text = demoText(o);
  const parsed = parseFlumeConfig(text, file, { agentName: o.agentName });
  const config: AgentConfig | undefined = parsed.config;
  const warnings: string[] = [];
  /** The configured type of each replaced source and sink, for the report. */
  const replaced = new Map<string, string>();
  if (config) {
    for (const e of config.sources.values()) replaced.set(`source ${e.name}`, standIn(e, "source", o.batchSize));
    for (const e of config.sinks.values()) replaced.set(`sink ${e.name}`, standIn(e, "sink", DEMO_SINK_BATCH));
  }
  const was = (kind: string, name: string) => {
    const t = replaced.get(`${kind} ${name}`);
    return o.configFile && t ? `${t} ` : "";
  };
  const result = withModel(parsed, simRegistry);
  const fatal = result.problems.filter((p) => p.severity === "error");
  if (!result.model || fatal.length > 0) {
    throw new SimulationUsageError(`${file} has ${fatal.length || "unrecoverable"} error(s):\n${fatal.map(formatProblem).join("\n")}`);
  }
  const model = result.model;
  // Channel types that need more than the process run as the stand-in their definition names.
  const standIns = new Map<string, string>();
  for (const [name, m] of model.channels) {
    const s = channelStandIn(name, m.definition, m.options, (t) => registry.lookupComponent("channel", t));
    if (!s) continue;
    standIns.set(name, m.type);
    model.channels.set(name, { ...m, type: s.type, definition: s.definition, options: s.options });
  }
  // A source's batches must fit every channel it writes to.
  for (const s of model.sources.values()) {
    const limit = Math.min(...s.channels.map((c) => number(model.channels.get(c) as ChannelModel, "transactionCapacity") ?? Infinity));
    const batch = s.options.batchSize as number;
    if (batch > limit) (s.options as { batchSize: number }).batchSize = limit;
  }
  const channels: ChannelPlan[] = [...model.channels.values()].map((m) => ({
    name: m.name,
    type: standIns.get(m.name) ?? m.type,
    standIn: standIns.has(m.name) ? m.type : undefined,
    durable: m.definition.durability !== undefined,
    capacity: capacityOf(m.definition.schema, m.options) ?? Infinity,
    transactionCapacity: number(m, "transactionCapacity"),
    keepAlive: number(m, "keepAlive"),
  }));
  const description: string[] = o.configFile ? [`agent ${model.agent} from ${o.configFile}`] : [];
  for (const c of channels) {
    const where = c.standIn ? `${c.type}, simulated by a ${c.standIn} channel${c.durable ? " on a scratch directory" : ""}` : c.durable ? `${c.type} on a scratch directory` : c.type;
    description.push(`channel ${c.name} (${where}, capacity ${c.capacity.toLocaleString("en-US")}, transactionCapacity ${c.transactionCapacity ?? "unbounded"})`);
  }
  for (const s of model.sources.values()) {
    const extras = [s.selector.type !== "replicating" ? `${s.selector.type} selector` : "", s.interceptors.length ? `interceptors ${s.interceptors.map((i) => i.name).join(" ")}` : ""].filter(Boolean);
    description.push(`source ${s.name} -> ${s.channels.join(" ")} (${was("source", s.name)}replaced by a simulated client, batches of ${s.options.batchSize}${extras.length ? `; ${extras.join(", ")}` : ""})`);
  }
  for (const k of model.sinks.values()) description.push(`sink ${k.name} <- ${k.channel} (${was("sink", k.name)}replaced by a simulated sink, batches of ${k.options.batchSize})`);
  for (const g of model.sinkGroups.values()) if (g.configured) description.push(`sinkgroup ${g.name}: ${g.processor.type} over ${g.sinks.join(" ")}`);
  const read = new Set([...model.sinks.values()].map((s) => s.channel));
  for (const c of channels) if (!read.has(c.name)) warnings.push(`no sink reads channel ${c.name}: its events can only wait there`);
  if (model.sources.size === 0) throw new SimulationUsageError(`${file}: the agent has no source to simulate`);
  return { model, description, channels, warnings };
}
