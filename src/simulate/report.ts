/** The simulation report: text (with a compact timeline per agent) and JSON; html.ts draws the page. */
import type { AgentResult, CrashRecord, EventHistory, SimulationResult } from "./simulation-result.ts";
import { describeFailSpec, describeLink, formatTime, type LinkFaultSpec, type SimulationOptions } from "./options.ts";
import type { Column, Timeline } from "./timeline.ts";

export const fmt = (n: number) => n.toLocaleString("en-US");
const SPARK = " ▁▂▃▄▅▆▇█";

function describeLinkFault(f: LinkFaultSpec): string {
  const on = describeLink(f.link);
  if (f.kind === "fail") return `${on}: each request lost with the connection reset, probability ${f.rate}`;
  if (f.kind === "lose-answer") return `${on}: each answer lost after the receiver committed, probability ${f.rate}`;
  if (f.kind === "latency") return `${on}: ${formatTime(f.ms)} latency each way`;
  return `${on}: partitioned ${formatTime(f.from)} to ${formatTime(f.to)}`;
}

export function faultsLine(o: SimulationOptions): string {
  const parts: string[] = [];
  parts.push(`sink: ${o.failSink.kind === "none" ? "no failures" : `${describeFailSpec(o.failSink)} (part of a failing batch may get through first)`}`);
  parts.push(`put: ${o.failPut > 0 ? `each put transaction fails with probability ${o.failPut}` : "no injected failures"}`);
  const crashes = [...o.crashAt.map(formatTime), ...o.crashes.map((c) => `${c.agent ?? ""}@${formatTime(c.at)}${c.down > 0 ? ` (down ${formatTime(c.down)})` : ""}`)];
  parts.push(`crash: ${crashes.length > 0 ? crashes.join(", ") : "none"}`);
  for (const f of o.links) parts.push(`link ${describeLinkFault(f)}`);
  if (o.kafkaLoseAck > 0) parts.push(`kafka: each produce acknowledgement lost with probability ${o.kafkaLoseAck}`);
  for (const f of o.kafkaFailovers) parts.push(`kafka: leader of ${f.topic}${f.partition === undefined ? " (every partition)" : `-${f.partition}`} fails over at ${formatTime(f.at)}, election ${formatTime(f.election)}`);
  for (const w of o.nameNodeDown) parts.push(`hdfs: NameNode unavailable ${formatTime(w.from)} to ${formatTime(w.to)}`);
  if (o.hdfsFailClose > 0) parts.push(`hdfs: each close/rename fails with probability ${o.hdfsFailClose}`);
  if (o.hdfsTimeout > 0) parts.push(`hdfs: each write answers after callTimeout with probability ${o.hdfsTimeout}`);
  parts.push(`sink latency ${o.sinkLatency}ms`);
  parts.push(`rate ${o.rate > 0 ? `${fmt(o.rate)} events/s` : "unlimited"}`);
  return parts.join("; ");
}

function spark(value: number, max: number): string {
  if (max <= 0 || value <= 0) return SPARK[0];
  return SPARK[Math.max(1, Math.min(8, Math.ceil((value / max) * 8)))];
}

export const FAULT_LEGEND = "x sink batch failed, p put failed (--fail-put), f put refused (channel full), C crash";

function faultMark(c: Column): string {
  if (c.crashes > 0) return "C";
  if (c.sinkFailures > 0) return "x";
  if (c.putFailures > 0) return "p";
  if (c.putRefusals > 0) return "f";
  return "·";
}

/** Rows of one agent's timeline: per channel its fill, then what left, then failures and crashes. */
function timelineRows(a: Pick<AgentResult, "channels" | "timeline">, end: number, width: number, prefix: string, outLabel: string, labelWidth: number): string[] {
  const cols = a.timeline.columns(end, width);
  const label = (s: string) => s.padEnd(labelWidth);
  const lines: string[] = [];
  a.channels.forEach((c, k) => {
    // Scaled to the peak, so a channel that never gets near its capacity still shows its shape.
    const row = cols.map((col) => spark(col.fill[k], c.peak)).join("");
    lines.push(`  ${label(`${c.name} fill`)}|${row}|  0 to peak ${fmt(c.peak)} (capacity ${fmt(c.capacity)})`);
  });
  const max = Math.max(...cols.map((c) => c.delivered));
  lines.push(`  ${label(`${prefix}${outLabel}`)}|${cols.map((col) => spark(col.delivered, max)).join("")}|`);
  lines.push(`  ${label(`${prefix}faults`)}|${cols.map(faultMark).join("")}|`);
  return lines;
}

/** A few lines per agent: its channels' fill, what left it, failures and crashes. */
export function textTimeline(r: SimulationResult, width = 64): string[] {
  const end = Math.max(1, r.time);
  const lines: string[] = [`timeline: 0 to ${formatTime(end)}, ${formatTime(Math.max(1, Math.round(end / width)))} per column; faults: ${FAULT_LEGEND}`];
  const labelWidth = Math.max(12, ...r.channels.map((c) => c.name.length + 6), ...r.agents.map((a) => (r.tier ? a.name.length + 1 : 0) + 10));
  for (const a of r.agents) {
    const forwards = r.sinks.some((s) => s.agent === a.name && s.link !== undefined);
    lines.push(...timelineRows(a, end, width, r.tier ? `${a.name}.` : "", forwards ? "sent on" : "delivered", labelWidth));
  }
  return lines;
}

/** "crash at 500ms" / "edge1 crash at 500ms" and what it did. */
export function crashRow(r: SimulationResult, c: CrashRecord): [string, string] {
  const dropped = c.dropped.filter((d) => d.events > 0);
  const what =
    dropped.length === 0
      ? "no committed event lost"
      : `${dropped.map((d) => `${d.channel} dropped ${fmt(d.events)}`).join(", ")}: ${c.lost === 0 ? "all of them had got through already" : `${fmt(c.lost)} lost (never delivered)`}`;
  return [`${r.tier ? `${c.agent} ` : ""}crash at ${formatTime(c.at)}${c.down > 0 ? ` (down ${formatTime(c.down)})` : ""}`, what];
}

/** The ledger's figures, as the text and HTML reports list them. */
export function ledgerRows(r: SimulationResult): [string, string][] {
  const s = r.summary;
  return [
    ["produced", fmt(r.produced)],
    ["accepted", fmt(s.accepted)],
    ["delivered unique", fmt(s.deliveredUnique)],
    ["duplicates", fmt(s.duplicates)],
    ["lost", fmt(s.lost)],
    ["still in channels", fmt(s.remaining)],
    ["rolled-back transactions", fmt(s.rolledBack)],
    ["client retries", fmt(r.retries)],
    ["put refusals (channel full)", fmt(r.putRefusals)],
  ];
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, k) => Math.max(h.length, ...rows.map((row) => row[k].length)));
  const line = (cells: string[]) => `  ${cells.map((c, k) => (k === 0 ? c.padEnd(widths[k]) : c.padStart(widths[k]))).join("  ")}`.trimEnd();
  return [line(header), ...rows.map(line)];
}

export function agentRows(r: SimulationResult): string[][] {
  return r.agents.map((a) => [a.name, fmt(a.summary.accepted), fmt(a.summary.deliveredUnique), fmt(a.summary.duplicates), fmt(a.summary.lost), fmt(a.summary.remaining), fmt(a.putRefusals), fmt(a.crashes.length), a.verdict.held ? "HELD" : "VIOLATED"]);
}
export const AGENT_HEADER = ["agent", "accepted", "sent on or delivered", "duplicates", "lost", "still in", "put refusals", "crashes", "at-least-once"];

export function linkRows(r: SimulationResult): string[][] {
  return r.links.map((l) => [l.name, fmt(l.events), fmt(l.stats.requests), fmt(l.stats.answers), fmt(l.stats.answersLost), fmt(l.stats.requestsFailed), fmt(l.stats.refused), fmt(l.stats.heldByPartition), fmt(l.stats.resets)]);
}
export const LINK_HEADER = ["link", "events", "requests", "answers", "answers lost", "requests lost", "refused", "held by partition", "resets"];

export function sinkRows(r: SimulationResult): string[][] {
  return r.sinks.map((s) => [
    `${r.tier ? `${s.agent}.` : ""}${s.name}`,
    s.group ? `${s.group.processor} ${s.group.name}` : "-",
    s.link !== undefined ? `${s.kind} to ${s.link}` : s.kind,
    fmt(s.link !== undefined ? s.forwarded : s.delivered),
    fmt(s.batches),
    fmt(s.failed),
  ]);
}
export const SINK_HEADER = ["sink", "group", "kind", "delivered/sent", "batches", "rolled back"];

export function historyLines(h: EventHistory): string[] {
  return [`event ${h.id}: ${h.kind}${h.causes ? ` (${h.causes.join(", ")})` : ""}`, ...h.lines];
}

export function textReport(o: SimulationOptions, r: SimulationResult, timeline = true, explain: readonly number[] = []): string {
  const out: string[] = [];
  out.push(`flume simulate: ${fmt(r.events)} events, seed ${r.seed}${r.tier ? `, a tier of ${r.agents.length} agents` : ""}`);
  out.push("topology:");
  for (const t of r.topology) out.push(`  ${t}`);
  out.push(`faults: ${faultsLine(o)}`);
  for (const w of r.warnings) out.push(`warning: ${w}`);
  out.push("");
  if (timeline) {
    out.push(...textTimeline(r));
    out.push("");
  }
  const rows: [string, string][] = [...ledgerRows(r)];
  if (o.failPut > 0) rows.push(["injected put failures", fmt(r.putFailures)]);
  rows.push(["sink batches (failed)", `${fmt(r.sinkBatches)} (${fmt(r.sinkFailures)})`]);
  for (const c of r.channels) rows.push([`channel peak fill ${c.name}`, `${fmt(c.peak)} of ${fmt(c.capacity)}`]);
  for (const c of r.crashes) rows.push(crashRow(r, c));
  for (const c of r.crashesNotReached) rows.push([`${r.tier ? `${c.agent} ` : ""}crash at ${formatTime(c.at)}`, `did not happen: ${c.why}`]);
  rows.push(["virtual time", formatTime(r.time)]);
  const w = Math.max(...rows.map(([k]) => k.length)) + 2;
  for (const [k, v] of rows) out.push(`${k.padEnd(w)}${v.padStart(12)}`);
  out.push("");
  if (r.peers.length > 0) out.push("simulated peers:", ...r.peers.map((l) => `  ${l}`), "");
  if (r.tier) out.push("agents:", ...table(AGENT_HEADER, agentRows(r)), "");
  if (r.links.length > 0) out.push("links:", ...table(LINK_HEADER, linkRows(r)), "");
  if (r.tier || r.sinks.length > 1) out.push("sinks:", ...table(SINK_HEADER, sinkRows(r)), "");
  if (r.summary.duplicates > 0) {
    out.push("duplicates by cause:");
    for (const d of r.duplicateCauses) if (d.count > 0) out.push(`  ${d.cause.padEnd(14)}${fmt(d.count).padStart(10)}  ${d.text}${d.example !== undefined ? ` (e.g. event ${d.example})` : ""}`);
    out.push("");
  }
  if (!r.completed) out.push(`note: stopped at ${formatTime(r.time)} of virtual time before every event was delivered (--max-time)`);
  if (r.channels.length > 1 && !r.tier) out.push("(with several channels each channel's copy of an event counts: an event is lost when any copy was accepted and never delivered)");
  out.push(r.verdict.line);
  if (r.tier) for (const a of r.agents) out.push(`  ${a.verdict.line}`);
  const told = new Set<number>();
  const byId = new Map(r.histories.map((h) => [h.id, h]));
  if (r.firstLost) {
    out.push("", `first lost event: ${r.firstLost.id} (accepted into channel ${r.firstLost.channel}, never delivered from it)`);
    for (const h of r.firstLost.history) out.push(h);
    told.add(r.firstLost.id);
  }
  for (const d of r.duplicateCauses) {
    if (d.example === undefined || told.has(d.example) || explain.includes(d.example)) continue;
    const h = byId.get(d.example);
    if (!h) continue;
    told.add(d.example);
    out.push("", `a duplicate from ${d.cause}: event ${d.example}`, ...h.lines);
  }
  for (const id of explain) {
    const h = byId.get(id);
    if (h) out.push("", ...historyLines(h));
  }
  return `${out.join("\n")}\n`;
}

/** The text timeline's columns as data, per agent. */
function jsonTimeline(t: Timeline, channels: { name: string }[], time: number, width = 64) {
  const end = Math.max(1, time);
  return t.columns(end, width).map((c) => ({
    from: Math.round(c.from),
    fill: Object.fromEntries(channels.map((ch, k) => [ch.name, c.fill[k]])),
    delivered: c.delivered,
    sinkFailures: c.sinkFailures,
    putFailures: c.putFailures,
    putRefusals: c.putRefusals,
    crashes: c.crashes,
  }));
}

export function jsonReport(o: SimulationOptions, r: SimulationResult): string {
  const s = r.summary;
  return `${JSON.stringify(
    {
      events: r.events,
      seed: r.seed,
      tier: r.tier,
      topology: r.topology,
      faults: {
        failSink: o.failSink.kind === "none" ? null : o.failSink.kind === "rate" ? o.failSink.rate : o.failSink.text,
        failPut: o.failPut,
        crashAt: o.crashAt,
        crashes: o.crashes,
        links: o.links,
        sinkLatency: o.sinkLatency,
        rate: o.rate,
        kafkaLoseAck: o.kafkaLoseAck,
        kafkaFailovers: o.kafkaFailovers,
        nameNodeDown: o.nameNodeDown,
        hdfsFailClose: o.hdfsFailClose,
        hdfsTimeout: o.hdfsTimeout,
      },
      warnings: r.warnings,
      produced: r.produced,
      accepted: s.accepted,
      deliveredUnique: s.deliveredUnique,
      duplicates: s.duplicates,
      lost: s.lost,
      remaining: s.remaining,
      rolledBack: s.rolledBack,
      retries: r.retries,
      putFailures: r.putFailures,
      putRefusals: r.putRefusals,
      sinkBatches: r.sinkBatches,
      sinkFailures: r.sinkFailures,
      deliveries: r.deliveries,
      peers: r.peers,
      duplicateCauses: Object.fromEntries(r.duplicateCauses.map((d) => [d.cause, { count: d.count, example: d.example ?? null, text: d.text }])),
      crashes: r.crashes,
      crashesNotReached: r.crashesNotReached,
      channels: r.channels,
      agents: r.agents.map((a) => ({ name: a.name, ...a.summary, putFailures: a.putFailures, putRefusals: a.putRefusals, sinkFailures: a.sinkFailures, crashes: a.crashes.length, verdict: a.verdict.held ? "HELD" : "VIOLATED", verdictLine: a.verdict.line })),
      links: r.links.map((l) => ({ name: l.name, from: l.from, sink: l.sink, to: l.to, source: l.source, address: l.address, events: l.events, ...l.stats, faults: l.faults })),
      sinks: r.sinks,
      virtualTimeMs: r.time,
      completed: r.completed,
      verdict: r.verdict.held ? "HELD" : "VIOLATED",
      verdictLine: r.verdict.line,
      firstLost: r.firstLost ?? null,
      histories: r.histories,
      timeline: r.tier ? Object.fromEntries(r.agents.map((a) => [a.name, jsonTimeline(a.timeline, a.channels, r.time)])) : jsonTimeline(r.timeline, r.channels, r.time),
    },
    null,
    2,
  )}\n`;
}
