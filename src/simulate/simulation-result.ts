/**
 * What `flume simulate` gives back: the run's figures per agent, channel, sink, source and
 * link, its crashes, duplicate causes and event histories (see engine.ts, which fills them,
 * and report.ts / html.ts, which show them).
 */
import type { Cause } from "./causes.ts";
import type { LedgerSummary } from "./ledger.ts";
import type { LinkFaults, LinkStats } from "./network.ts";
import type { Timeline } from "./timeline.ts";

export interface SimulationHooks {
  /** Write the transaction trace here. */
  traceFile?: string;
  /** Record the history of these event ids. */
  watch?: readonly number[];
  /** Called now and then with the progress (for a progress bar). */
  onProgress?(p: Progress): void;
}

export interface Progress {
  time: number;
  produced: number;
  delivered: number;
  total: number;
}

export interface CrashRecord {
  agent: string;
  at: number;
  /** Virtual ms the agent stayed down. */
  down: number;
  /** Events the crash took out of each non-durable channel (some may have got through already). */
  dropped: { channel: string; events: number }[];
  /** Of those, the events that were never delivered: what the verdict counts as lost because of this crash. */
  lost: number;
}

export interface ChannelResult {
  name: string;
  agent: string;
  type: string;
  durable: boolean;
  capacity: number;
  peak: number;
  end: number;
}

export interface SinkResult {
  agent: string;
  name: string;
  /** The configured sink group and its processor, when the sink is in one. */
  group?: { name: string; processor: string };
  /** "simulated": a simulated destination; else the protocol of the link (avro, thrift) its real sink sends on. */
  kind: string;
  /** The link's name, for a sink on a link. */
  link?: string;
  channel: string;
  /** Events delivered to its destination (simulated sinks; a failing batch may deliver some). */
  delivered: number;
  /** Events the next agent committed from its batches (sinks on links). */
  forwarded: number;
  /** Take transactions it committed with events, and those rolled back. */
  batches: number;
  failed: number;
}

export interface SourceResult {
  agent: string;
  name: string;
  /** Fed by a simulated client (else: the real avro source of a link). */
  entry: boolean;
  channels: string[];
}

export interface LinkResult {
  name: string;
  from: string;
  sink: string;
  to: string;
  source: string;
  address: string;
  faults: LinkFaults;
  stats: LinkStats;
  /** Events the receiving agent committed from this link's requests. */
  events: number;
}

export interface AgentResult {
  name: string;
  summary: LedgerSummary;
  verdict: { held: boolean; line: string };
  channels: ChannelResult[];
  crashes: CrashRecord[];
  /** Put transactions refused by an injected fault (--fail-put). */
  putFailures: number;
  /** Put transactions refused by the channel (full, or over its transaction capacity). */
  putRefusals: number;
  sinkFailures: number;
  timeline: Timeline;
}

export type HistoryKind = "lost" | "duplicated" | "clean" | "still in a channel" | "not accepted" | "never produced";

export interface EventHistory {
  id: number;
  kind: HistoryKind;
  /** What made the duplicates, for duplicated events. */
  causes?: Cause[];
  lines: string[];
}

export interface DuplicateCause {
  cause: Cause | "unexplained";
  text: string;
  count: number;
  /** The first event this cause duplicated. */
  example?: number;
}

export interface SimulationResult {
  tier: boolean;
  topology: string[];
  warnings: string[];
  events: number;
  seed: number;
  produced: number;
  /** Events the clients had accepted by a source (after retries). */
  clientAccepted: number;
  /** The tier's ledger (for one agent, the agent's). */
  summary: LedgerSummary;
  retries: number;
  putFailures: number;
  putRefusals: number;
  sinkBatches: number;
  sinkFailures: number;
  /** Deliveries to destinations (duplicates included). */
  deliveries: number;
  crashes: CrashRecord[];
  /** Crashes asked for that never happened: after the run had ended, or while the agent was down. */
  crashesNotReached: { agent: string; at: number; why: string }[];
  channels: ChannelResult[];
  agents: AgentResult[];
  links: LinkResult[];
  sources: SourceResult[];
  sinks: SinkResult[];
  duplicateCauses: DuplicateCause[];
  /** One line per simulated peer (a Kafka topic, the HDFS): what it holds and the faults it went through. */
  peers: string[];
  /** Virtual time at the end (ms). */
  time: number;
  /** True when every produced event was accepted and every channel drained before maxTime. */
  completed: boolean;
  verdict: { held: boolean; line: string };
  firstLost?: { id: number; channel: string; agent: string; history: string[] };
  /** Histories of watched events (--explain, and the examples the report tells). */
  histories: EventHistory[];
  /** The first agent's timeline (one-agent runs). */
  timeline: Timeline;
  /** The trace recorder's own ledger (when tracing): must equal summary. */
  traceSummary?: LedgerSummary;
}
