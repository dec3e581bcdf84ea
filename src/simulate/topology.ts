/**
 * What a simulation runs: the built-in demo (source -> channel -> sink), or an agent from a
 * Flume properties file whose channels, selectors, interceptors and sink groups are built as
 * configured while its sources and sinks are replaced by simulated ones. Each plan can build
 * its components again after a crash.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type { Channel } from "../core/channel.ts";
import { ChannelProcessor } from "../core/channel-processor.ts";
import { ConfigurationError } from "../core/errors.ts";
import type { Interceptor } from "../core/interceptor.ts";
import { silentLogger } from "../core/logger.ts";
import { MemoryChannel } from "../core/memory-channel.ts";
import { DefaultSinkProcessor, type SinkProcessor } from "../core/sink-processors.ts";
import { ReplicatingChannelSelector, type ChannelSelector } from "../core/selectors.ts";
import type { Sink } from "../core/sink.ts";
import type { ComponentContext } from "../components/component.ts";
import { FileChannel } from "../components/channels/file/index.ts";
import * as registry from "../components/registry.ts";
import {
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
import { formatProblem, type Problem } from "../config/problems.ts";
import { type ComponentKind, parseConfig } from "../config/schema.ts";
import { batchSizeKeys, validateConfigText } from "../config/validate.ts";
import type { Epoch } from "./components.ts";
import { SimulationUsageError, type SimulationOptions } from "./options.ts";

export interface ChannelPlan {
  name: string;
  type: string;
  durable: boolean;
  capacity: number;
  transactionCapacity?: number;
  /** Seconds a commit waits for space. */
  keepAlive: number;
  /** Directories a durable channel locks (their lock files go when the process crashes). */
  lockDirs: string[];
  create(epoch: Epoch): Channel;
}

export interface SourcePlan {
  name: string;
  channels: string[];
  batchSize: number;
  processor(channels: Channel[], epoch: Epoch): ChannelProcessor;
}

export interface SinkPlan {
  name: string;
  channel: string;
  batchSize: number;
}

export interface RunnerPlan {
  name: string;
  sinks: string[];
  processor(sinks: Sink[], epoch: Epoch): SinkProcessor;
}

export interface Topology {
  /** One line per component, for the report. */
  description: string[];
  channels: ChannelPlan[];
  sources: SourcePlan[];
  sinks: SinkPlan[];
  runners: RunnerPlan[];
  warnings: string[];
}

const DEMO_CAPACITY = 20_000;
const DEMO_TRANSACTION_CAPACITY = 1_000;
const DEMO_SINK_BATCH = 100;

function fileChannelPlan(name: string, dir: string, capacity: number, transactionCapacity: number, keepAlive: number, extra: Partial<ConstructorParameters<typeof FileChannel>[1]> = {}): ChannelPlan {
  const options = {
    checkpointDir: path.join(dir, "checkpoint"),
    dataDirs: [path.join(dir, "data")],
    useDualCheckpoints: false,
    capacity,
    transactionCapacity,
    checkpointInterval: 30_000,
    maxFileSize: 2146435071,
    minimumRequiredSpace: 1024 * 1024,
    keepAlive,
    checkpointOnClose: true,
    fsyncPerTransaction: true,
    fsyncInterval: 5,
    ...extra,
  };
  const lockDirs = [options.checkpointDir, ...options.dataDirs];
  if (options.useDualCheckpoints && options.backupCheckpointDir) lockDirs.push(options.backupCheckpointDir);
  return {
    name,
    type: "file",
    durable: true,
    capacity,
    transactionCapacity,
    keepAlive,
    lockDirs,
    create: (epoch) => new FileChannel(name, options, { clock: epoch, logger: silentLogger }),
  };
}

export function demoTopology(o: SimulationOptions, workDir: string): Topology {
  const channel: ChannelPlan =
    o.channel === "file"
      ? fileChannelPlan("c1", path.join(workDir, "c1"), DEMO_CAPACITY, DEMO_TRANSACTION_CAPACITY, 3)
      : {
          name: "c1",
          type: "memory",
          durable: false,
          capacity: DEMO_CAPACITY,
          transactionCapacity: DEMO_TRANSACTION_CAPACITY,
          keepAlive: 3,
          lockDirs: [],
          create: (epoch) => new MemoryChannel("c1", { capacity: DEMO_CAPACITY, transactionCapacity: DEMO_TRANSACTION_CAPACITY, keepAlive: 3 }, epoch),
        };
  const batch = Math.min(o.batchSize, DEMO_TRANSACTION_CAPACITY);
  return {
    description: [
      `source r1 (simulated client, batches of ${batch})`,
      `channel c1 (${channel.type}, capacity ${DEMO_CAPACITY.toLocaleString("en-US")}, transactionCapacity ${DEMO_TRANSACTION_CAPACITY})`,
      `sink k1 (simulated, batches of ${DEMO_SINK_BATCH})`,
    ],
    channels: [channel],
    sources: [{ name: "r1", channels: ["c1"], batchSize: batch, processor: (channels) => new ChannelProcessor(new ReplicatingChannelSelector(channels)) }],
    sinks: [{ name: "k1", channel: "c1", batchSize: DEMO_SINK_BATCH }],
    runners: [{ name: "k1", sinks: ["k1"], processor: (sinks) => new DefaultSinkProcessor(sinks[0]) }],
    warnings: [],
  };
}

/** Problems of replaced parts (a source's own type or keys) do not matter to a simulation. */
function ignorable(p: Problem): boolean {
  if (!p.ref || (p.ref.kind !== "source" && p.ref.kind !== "sink")) return false;
  if (p.key.startsWith("interceptors") || p.key.startsWith("selector.")) return false;
  return ["unknown-type", "missing-type", "unknown-property", "bad-value", "batch-exceeds-transaction"].includes(p.code);
}

function instantiate<T>(kind: ComponentKind, type: string, props: Record<string, { value: string; file: string; line: number }>, ctx: ComponentContext, overrides: Record<string, string> = {}): T {
  const def = registry.lookupComponent(kind, type);
  if (!def) throw new ConfigurationError("type", `unknown ${kind} type "${type}"`, `${kind} ${ctx.name}`);
  const { config, errors } = parseConfig(def.schema, { ...rawValues(props), ...overrides });
  if (errors.length > 0) throw new ConfigurationError(errors[0].key, errors[0].message, `${kind} ${ctx.name}`);
  return def.create(config, ctx) as T;
}

/** The configured batch size of a source or sink (whatever its schema calls it), if any. */
function configuredBatch(entry: ComponentEntry, kind: ComponentKind): number | undefined {
  const def = entry.type ? registry.lookupComponent(kind, entry.type.value) : undefined;
  if (!def) return undefined;
  for (const key of batchSizeKeys(def.schema)) {
    const v = entry.props[key]?.value;
    if (v !== undefined && /^\d+$/.test(v.trim())) return Number(v.trim());
  }
  for (const key of batchSizeKeys(def.schema)) {
    const d = def.schema.props.find((p) => p.key === key)?.default;
    if (typeof d === "number") return d;
  }
  return undefined;
}

export function configTopology(o: SimulationOptions, workDir: string): Topology {
  const file = o.configFile as string;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new SimulationUsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const result = validateConfigText(text, file, { agentName: o.agentName }, registry);
  const fatal = result.problems.filter((p) => p.severity === "error" && !ignorable(p));
  if (!result.config || fatal.length > 0) {
    throw new SimulationUsageError(`${file} has ${fatal.length || "unrecoverable"} error(s):\n${fatal.map(formatProblem).join("\n")}`);
  }
  const config = result.config;
  const agentName = config.agent;
  const warnings: string[] = [];
  const description: string[] = [`agent ${agentName} from ${file}`];
  const ctxOf = (name: string, epoch: Epoch): ComponentContext => ({ name, agentName, clock: epoch, logger: silentLogger });

  const channels: ChannelPlan[] = [];
  for (const [name, entry] of config.channels) {
    const type = entry.type?.value ?? "";
    const def = registry.lookupComponent("channel", type);
    if (!def) throw new SimulationUsageError(`channel ${name}: unknown type "${type}"`);
    const props = ownProps(entry);
    const { config: parsed } = parseConfig(def.schema, rawValues(props));
    const capacity = parsed.int("capacity");
    const transactionCapacity = parsed.int("transactionCapacity");
    if (def.schema.type === "file") {
      // Never touch the configured directories: the simulation works on scratch copies.
      const dir = path.join(workDir, name);
      const dual = parsed.boolean("useDualCheckpoints");
      channels.push(
        fileChannelPlan(name, dir, capacity, transactionCapacity, parsed.int("keep-alive"), {
          checkpointInterval: parsed.int("checkpointInterval"),
          fsyncPerTransaction: parsed.boolean("fsyncPerTransaction"),
          fsyncInterval: parsed.int("fsyncInterval"),
          useDualCheckpoints: dual,
          backupCheckpointDir: dual ? path.join(dir, "backup") : undefined,
        }),
      );
      description.push(`channel ${name} (file on a scratch directory, capacity ${capacity.toLocaleString("en-US")}, transactionCapacity ${transactionCapacity})`);
      continue;
    }
    const probe = instantiate<Channel>("channel", type, props, { name, agentName, clock: { now: () => 0, setTimeout: () => ({ id: 0 }), clearTimeout() {}, sleep: () => Promise.resolve() }, logger: silentLogger });
    if (probe.durable) {
      // Another durable channel (one kept by a server) survives a crash as a file channel does;
      // a file channel on a scratch directory stands in for it, and the real one is never touched.
      const cap = capacity > 0 ? capacity : 1_000_000;
      const tc = transactionCapacity > 0 ? Math.min(transactionCapacity, cap) : cap;
      channels.push(fileChannelPlan(name, path.join(workDir, name), cap, tc, parsed.int("keep-alive")));
      description.push(`channel ${name} (${def.schema.type}, durable: simulated by a file channel on a scratch directory, capacity ${cap.toLocaleString("en-US")}, transactionCapacity ${tc})`);
      continue;
    }
    channels.push({
      name,
      type: def.schema.type,
      durable: false,
      capacity,
      transactionCapacity,
      keepAlive: parsed.int("keep-alive"),
      lockDirs: [],
      create: (epoch) => instantiate<Channel>("channel", type, props, ctxOf(name, epoch)),
    });
    description.push(`channel ${name} (${def.schema.type}, capacity ${capacity.toLocaleString("en-US")}, transactionCapacity ${transactionCapacity})`);
  }
  const txCap = new Map(channels.map((c) => [c.name, c.transactionCapacity ?? Infinity]));

  const sources: SourcePlan[] = [];
  for (const [name, entry] of config.sources) {
    const chans = sourceChannels(entry);
    const selector = selectorProps(entry);
    const interceptors = interceptorEntries(entry);
    const limit = Math.min(...chans.map((c) => txCap.get(c) ?? Infinity));
    const batchSize = Math.max(1, Math.min(configuredBatch(entry, "source") ?? o.batchSize, limit));
    const selectorType = selector.type?.value ?? "replicating";
    sources.push({
      name,
      channels: chans,
      batchSize,
      processor: (channelViews, epoch) => {
        const ctx = ctxOf(name, epoch);
        const sel = instantiate<(c: Channel[]) => ChannelSelector>("selector", selectorType, selector.props, ctx)(channelViews);
        const chain = interceptors.map((i: SubComponent) => instantiate<Interceptor>("interceptor", i.type?.value ?? "", i.props, { ...ctx, name: `${name}.${i.name}` }));
        return new ChannelProcessor(sel, chain, silentLogger);
      },
    });
    const extras = [selectorType !== "replicating" ? `${selectorType} selector` : "", interceptors.length ? `interceptors ${interceptors.map((i) => i.name).join(" ")}` : ""].filter(Boolean);
    description.push(`source ${name} -> ${chans.join(" ")} (${entry.type?.value ?? "?"} replaced by a simulated client, batches of ${batchSize}${extras.length ? `; ${extras.join(", ")}` : ""})`);
  }

  const sinks: SinkPlan[] = [];
  for (const [name, entry] of config.sinks) {
    const ch = sinkChannel(entry) as string;
    const batchSize = Math.max(1, Math.min(configuredBatch(entry, "sink") ?? 100, txCap.get(ch) ?? Infinity));
    sinks.push({ name, channel: ch, batchSize });
    description.push(`sink ${name} <- ${ch} (${entry.type?.value ?? "?"} replaced by a simulated sink, batches of ${batchSize})`);
  }

  const runners: RunnerPlan[] = [];
  const grouped = new Set<string>();
  for (const [name, group] of config.sinkgroups) {
    const members = sinkGroupSinks(group);
    for (const s of members) grouped.add(s);
    const proc = sinkProcessorProps(group);
    const type = proc.type?.value ?? "default";
    runners.push({ name, sinks: members, processor: (built, epoch) => instantiate<(s: Sink[]) => SinkProcessor>("sinkprocessor", type, proc.props, ctxOf(name, epoch))(built) });
    description.push(`sinkgroup ${name}: ${type} over ${members.join(" ")}`);
  }
  for (const s of sinks) if (!grouped.has(s.name)) runners.push({ name: s.name, sinks: [s.name], processor: (built) => new DefaultSinkProcessor(built[0]) });

  const read = new Set(sinks.map((s) => s.channel));
  for (const c of channels) if (!read.has(c.name)) warnings.push(`no sink reads channel ${c.name}: its events can only wait there`);
  for (const p of result.problems) if (p.severity === "error" && ignorable(p)) warnings.push(`ignored (the part is simulated): ${formatProblem(p)}`);
  return { description, channels, sources, sinks, runners, warnings };
}

export function buildTopology(o: SimulationOptions, workDir: string): Topology {
  return o.configFile ? configTopology(o, workDir) : demoTopology(o, workDir);
}
