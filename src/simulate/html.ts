/**
 * The HTML report: one self-contained page (no scripts, no external resources) with the
 * topology (agents, their sources, channels and sinks, the links between agents with their
 * counts) and a timeline per agent (channel fill, what left, failures, crashes), then the
 * figures and the event histories. SVG elements carry classes and data- attributes (agent,
 * channel, sink, link) so a test can read the drawing back from the DOM.
 */
import type { AgentResult, SimulationResult } from "./simulation-result.ts";
import { formatTime, type SimulationOptions } from "./options.ts";
import { AGENT_HEADER, agentRows, crashRow, faultsLine, fmt, historyLines, LINK_HEADER, ledgerRows, linkRows, SINK_HEADER, sinkRows } from "./report.ts";

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const COLORS = ["#2563eb", "#7c3aed", "#0891b2", "#ca8a04", "#db2777"];
/** Solid colours the screenshot test looks for. */
export const AGENT_HEAD_COLOR = "#1e3a8a";
export const LINK_COLOR = "#0f766e";
const CRASH_COLOR = "#dc2626";

/** Axis labels: 250ms, 11.7s, 1m46s. */
function shortTime(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`;
  const m = Math.floor(ms / 60_000);
  return `${m}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, "0")}s`;
}

/** 1, 2 or 5 times a power of ten, at least v. */
function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const AW = 360;
const GAP = 230;
/** Width of a source, channel or sink box inside an agent. */
const PW = 100;
const RH = 46;
const HEAD = 30;

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Agents by column: an agent stands right of every agent that sends to it. */
function columns(r: SimulationResult): string[][] {
  const depth = new Map(r.agents.map((a) => [a.name, 0]));
  for (let pass = 0; pass < r.agents.length; pass++) {
    for (const l of r.links) depth.set(l.to, Math.max(depth.get(l.to) ?? 0, (depth.get(l.from) ?? 0) + 1));
  }
  const cols: string[][] = [];
  for (const a of r.agents) {
    const d = Math.min(depth.get(a.name) ?? 0, r.agents.length);
    (cols[d] ??= []).push(a.name);
  }
  return cols.filter(Boolean);
}

/** The topology: agent boxes with their sources, channels and sinks; links between them. */
export function topologySvg(r: SimulationResult): string {
  const cols = columns(r);
  const boxes = new Map<string, Box>();
  const parts = new Map<string, Box>();
  const svg: string[] = [];
  let height = 0;
  cols.forEach((names, c) => {
    let y = 20;
    for (const name of names) {
      const a = r.agents.find((x) => x.name === name) as AgentResult;
      const model = agentParts(r, a);
      const rows = Math.max(1, model.sources.length, model.channels.length, model.sinks.length);
      const box = { x: 20 + c * (AW + GAP), y, w: AW, h: HEAD + rows * RH + 10 };
      boxes.set(name, box);
      y += box.h + 30;
      height = Math.max(height, y);
    }
  });
  const width = 40 + cols.length * AW + (cols.length - 1) * GAP + 40;
  svg.push(`<svg xmlns="http://www.w3.org/2000/svg" class="topology" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, sans-serif" font-size="12">`);
  svg.push(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${LINK_COLOR}"/></marker></defs>`);
  svg.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#fff"/>`);
  for (const a of r.agents) {
    const box = boxes.get(a.name) as Box;
    const p = agentParts(r, a);
    svg.push(`<g class="agent" data-agent="${escapeHtml(a.name)}" data-verdict="${a.verdict.held ? "HELD" : "VIOLATED"}">`);
    svg.push(`<rect x="${box.x}" y="${box.y}" width="${box.w}" height="${box.h}" rx="6" fill="#f8fafc" stroke="#334155"/>`);
    svg.push(`<rect x="${box.x}" y="${box.y}" width="${box.w}" height="24" rx="6" fill="${AGENT_HEAD_COLOR}"/>`);
    svg.push(`<text x="${box.x + 10}" y="${box.y + 16}" fill="#fff" font-weight="600">${escapeHtml(a.name)}</text>`);
    svg.push(`<text x="${box.x + box.w - 10}" y="${box.y + 16}" fill="${a.verdict.held ? "#bbf7d0" : "#fecaca"}" text-anchor="end">${a.verdict.held ? "HELD" : `VIOLATED (${fmt(a.summary.lost)} lost)`}${a.crashes.length > 0 ? ` · ${a.crashes.length} crash${a.crashes.length > 1 ? "es" : ""}` : ""}</text>`);
    const slot = (k: number) => box.y + HEAD + k * RH;
    p.sources.forEach((s, k) => {
      const b = { x: box.x + 10, y: slot(k), w: PW, h: RH - 8 };
      parts.set(`${a.name}/source/${s.name}`, b);
      svg.push(`<g class="source" data-source="${escapeHtml(s.name)}"><rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" rx="4" fill="#ecfdf5" stroke="#059669"/>`);
      svg.push(`<text x="${b.x + 6}" y="${b.y + 15}" font-weight="600">${escapeHtml(s.name)}</text><text x="${b.x + 6}" y="${b.y + 30}" fill="#475569" font-size="10">${s.entry ? "simulated client" : "linked source"}</text></g>`);
    });
    p.channels.forEach((ch, k) => {
      const b = { x: box.x + 20 + PW, y: slot(k), w: PW, h: RH - 8 };
      parts.set(`${a.name}/channel/${ch.local}`, b);
      const frac = ch.capacity > 0 && Number.isFinite(ch.capacity) ? Math.min(1, ch.peak / ch.capacity) : 0;
      svg.push(`<g class="channel" data-channel="${escapeHtml(ch.name)}" data-peak="${ch.peak}"><rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" rx="4" fill="#eff6ff" stroke="#2563eb"/>`);
      svg.push(`<rect x="${b.x + 4}" y="${b.y + b.h - 8}" width="${((b.w - 8) * frac).toFixed(1)}" height="4" fill="#2563eb"><title>peak ${fmt(ch.peak)} of ${fmt(ch.capacity)}</title></rect>`);
      svg.push(`<text x="${b.x + 6}" y="${b.y + 14}"><tspan font-weight="600">${escapeHtml(ch.local)}</tspan><tspan fill="#475569" font-size="10"> ${escapeHtml(ch.type)}</tspan></text><text x="${b.x + 6}" y="${b.y + 26}" fill="#475569" font-size="10">peak ${fmt(ch.peak)}</text></g>`);
    });
    p.sinks.forEach((s, k) => {
      const b = { x: box.x + 30 + 2 * PW, y: slot(k), w: PW, h: RH - 8 };
      parts.set(`${a.name}/sink/${s.name}`, b);
      const count = s.link !== undefined ? `sent ${fmt(s.forwarded)}` : `delivered ${fmt(s.delivered)}`;
      svg.push(`<g class="sink" data-sink="${escapeHtml(s.name)}" data-delivered="${s.delivered}" data-forwarded="${s.forwarded}"><rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" rx="4" fill="#fff7ed" stroke="#ea580c"/>`);
      svg.push(`<text x="${b.x + 6}" y="${b.y + 15}" font-weight="600">${escapeHtml(s.name)}${s.group ? ` (${escapeHtml(s.group.name)})` : ""}</text><text x="${b.x + 6}" y="${b.y + 30}" fill="#475569" font-size="10">${count}</text></g>`);
    });
    // Wiring inside the agent.
    for (const s of p.sources) {
      const from = parts.get(`${a.name}/source/${s.name}`) as Box;
      for (const c of s.channels) {
        const to = parts.get(`${a.name}/channel/${c}`);
        if (to) svg.push(`<line x1="${from.x + from.w}" y1="${from.y + from.h / 2}" x2="${to.x}" y2="${to.y + to.h / 2}" stroke="#64748b"/>`);
      }
    }
    for (const s of p.sinks) {
      const to = parts.get(`${a.name}/sink/${s.name}`) as Box;
      const from = parts.get(`${a.name}/channel/${s.channel}`);
      if (from) svg.push(`<line x1="${from.x + from.w}" y1="${from.y + from.h / 2}" x2="${to.x}" y2="${to.y + to.h / 2}" stroke="#64748b"/>`);
    }
    svg.push(`</g>`);
  }
  for (const l of r.links) {
    const from = parts.get(`${l.from}/sink/${l.sink}`);
    const to = parts.get(`${l.to}/source/${l.source}`);
    if (!from || !to) continue;
    const x1 = from.x + from.w;
    const y1 = from.y + from.h / 2;
    const x2 = to.x;
    const y2 = to.y + to.h / 2;
    const mx = x1 + (x2 - x1) * 0.6;
    const faults = [l.stats.answersLost > 0 ? `${fmt(l.stats.answersLost)} answers lost` : "", l.stats.requestsFailed > 0 ? `${fmt(l.stats.requestsFailed)} requests lost` : "", l.stats.heldByPartition > 0 ? "partitioned" : "", l.stats.resets > 0 ? `${fmt(l.stats.resets)} resets` : ""].filter(Boolean);
    svg.push(`<g class="link" data-link="${escapeHtml(l.name)}" data-events="${l.events}" data-requests="${l.stats.requests}" data-answers-lost="${l.stats.answersLost}">`);
    svg.push(`<path d="M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 2},${y2}" fill="none" stroke="${LINK_COLOR}" stroke-width="3" marker-end="url(#arrow)"/>`);
    // Labels next to the sending end: links converging on one source keep theirs apart.
    const fromBox = boxes.get(l.from) as Box;
    const lx = fromBox.x + fromBox.w + 8;
    svg.push(`<text x="${lx}" y="${y1 - 22}" fill="${LINK_COLOR}" font-weight="600">${escapeHtml(l.name)}: ${fmt(l.events)} events</text>`);
    svg.push(`<text x="${lx}" y="${y1 - 9}" fill="#475569" font-size="10">${fmt(l.stats.requests)} requests, ${fmt(l.stats.answers)} answers</text>`);
    if (faults.length > 0) svg.push(`<text x="${lx}" y="${y1 + 16}" fill="${CRASH_COLOR}" font-size="10">${escapeHtml(faults.join(", "))}</text>`);
    svg.push(`</g>`);
  }
  svg.push(`</svg>`);
  return svg.join("\n");
}

function agentParts(r: SimulationResult, a: AgentResult) {
  const prefix = r.tier ? `${a.name}.` : "";
  const channels = a.channels.map((c) => ({ ...c, local: c.name.slice(prefix.length) }));
  const sinks = r.sinks.filter((s) => s.agent === a.name);
  const sources = r.sources.filter((s) => s.agent === a.name);
  return { channels, sinks, sources };
}

/** One agent's timeline: channel fill, what left it, failures, crashes with what they cost. */
export function timelineSvg(r: SimulationResult, a: AgentResult): string {
  const W = 1100;
  const left = 70;
  const right = 20;
  const plotW = W - left - right;
  const fillTop = 30;
  const fillH = 150;
  const delTop = fillTop + fillH + 36;
  const delH = 60;
  const faultTop = delTop + delH + 26;
  const H = faultTop + 64;
  const end = Math.max(1, r.time);
  const n = Math.min(plotW, 400);
  const cols = a.timeline.columns(end, n);
  const colW = plotW / n;
  const x = (t: number) => left + (t / end) * plotW;
  const svg: string[] = [];
  svg.push(`<svg xmlns="http://www.w3.org/2000/svg" class="timeline" data-agent="${escapeHtml(a.name)}" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="system-ui, sans-serif" font-size="12">`);
  svg.push(`<rect x="0" y="0" width="${W}" height="${H}" fill="#fff"/>`);
  // Fill panel, scaled to the highest peak (a capacity far above it would flatten the curve).
  const peak = Math.max(1, ...a.channels.map((c) => c.peak));
  const maxCap = niceCeil(peak * 1.1);
  const yFill = (v: number) => fillTop + fillH - (Math.min(v, maxCap) / maxCap) * fillH;
  svg.push(`<text x="${left}" y="${fillTop - 10}" font-weight="600">${r.tier ? `${escapeHtml(a.name)}: ` : ""}channel fill (events)</text>`);
  for (let g = 0; g <= 4; g++) {
    const v = (maxCap * g) / 4;
    const y = yFill(v);
    svg.push(`<line x1="${left}" x2="${W - right}" y1="${y}" y2="${y}" stroke="#e5e7eb"/>`);
    svg.push(`<text x="${left - 6}" y="${y + 4}" text-anchor="end" fill="#6b7280">${fmt(Math.round(v))}</text>`);
  }
  a.channels.forEach((c, k) => {
    const color = COLORS[k % COLORS.length];
    const pts = cols.map((col, i) => `${(left + (i + 0.5) * colW).toFixed(1)},${yFill(col.fill[k]).toFixed(1)}`);
    svg.push(`<polygon points="${left},${yFill(0)} ${pts.join(" ")} ${W - right},${yFill(0)}" fill="${color}" fill-opacity="0.15"/>`);
    svg.push(`<polyline class="fill" data-channel="${escapeHtml(c.name)}" points="${pts.join(" ")}" fill="none" stroke="${color}" stroke-width="1.5"/>`);
    if (c.capacity <= maxCap) {
      svg.push(`<line x1="${left}" x2="${W - right}" y1="${yFill(c.capacity)}" y2="${yFill(c.capacity)}" stroke="${color}" stroke-dasharray="4 3"/>`);
      svg.push(`<text x="${W - right - 4}" y="${yFill(c.capacity) - 4}" text-anchor="end" fill="${color}">capacity of ${escapeHtml(c.name)}</text>`);
    }
  });
  let legendX = left + 230;
  a.channels.forEach((c, k) => {
    const text = `■ ${c.name} (${c.type}, peak ${fmt(c.peak)} of ${fmt(c.capacity)})`;
    svg.push(`<text x="${legendX}" y="${fillTop - 10}" fill="${COLORS[k % COLORS.length]}">${escapeHtml(text)}</text>`);
    legendX += text.length * 7 + 16;
  });
  // What left the agent: deliveries, or events the next agent committed.
  const forwards = r.sinks.some((s) => s.agent === a.name && s.link !== undefined);
  const maxDel = Math.max(1, ...cols.map((c) => c.delivered));
  svg.push(`<text x="${left}" y="${delTop - 10}" font-weight="600">${forwards ? "sent on" : "deliveries"} per ${formatTime(Math.max(1, Math.round(end / n)))} (max ${fmt(maxDel)})</text>`);
  svg.push(`<line x1="${left}" x2="${W - right}" y1="${delTop + delH}" y2="${delTop + delH}" stroke="#9ca3af"/>`);
  cols.forEach((col, i) => {
    if (col.delivered === 0) return;
    const h = (col.delivered / maxDel) * delH;
    svg.push(`<rect x="${(left + i * colW).toFixed(1)}" y="${(delTop + delH - h).toFixed(1)}" width="${Math.max(0.8, colW - 0.3).toFixed(1)}" height="${h.toFixed(1)}" fill="#16a34a"/>`);
  });
  // Faults rows.
  svg.push(`<text x="${left}" y="${faultTop - 8}" font-weight="600">failures</text>`);
  svg.push(`<text x="${left - 6}" y="${faultTop + 14}" text-anchor="end" fill="#6b7280">sink</text>`);
  svg.push(`<text x="${left - 6}" y="${faultTop + 34}" text-anchor="end" fill="#6b7280">put</text>`);
  cols.forEach((col, i) => {
    const cx = (left + (i + 0.5) * colW).toFixed(1);
    if (col.sinkFailures > 0) svg.push(`<circle cx="${cx}" cy="${faultTop + 10}" r="3.5" fill="#ea580c"><title>${col.sinkFailures} sink batch failure(s) at ${formatTime(Math.round(col.from))}</title></circle>`);
    if (col.putFailures > 0) svg.push(`<rect x="${(Number(cx) - 3).toFixed(1)}" y="${faultTop + 27}" width="6" height="6" fill="#a16207"><title>${col.putFailures} injected put failure(s) at ${formatTime(Math.round(col.from))}</title></rect>`);
    else if (col.putRefusals > 0) svg.push(`<rect x="${(Number(cx) - 3).toFixed(1)}" y="${faultTop + 27}" width="6" height="6" fill="none" stroke="#a16207"><title>${col.putRefusals} put(s) refused by a full channel at ${formatTime(Math.round(col.from))}</title></rect>`);
  });
  // Crashes across all panels; the label says what the verdict counts.
  a.crashes.forEach((c, i) => {
    const cx = x(c.at).toFixed(1);
    svg.push(`<line class="crash" x1="${cx}" x2="${cx}" y1="${fillTop}" y2="${faultTop + 40}" stroke="${CRASH_COLOR}" stroke-width="2"/>`);
    const dropped = c.dropped.reduce((s, d) => s + d.events, 0);
    const label = dropped === 0 ? "nothing lost" : `${fmt(dropped)} dropped, ${fmt(c.lost)} lost`;
    // Labels of nearby crashes go one under the other.
    svg.push(`<text class="crash-label" x="${Number(cx) + 4}" y="${fillTop + 14 + (i % 8) * 15}" fill="${CRASH_COLOR}" font-weight="600">crash ${formatTime(c.at)} (${label})</text>`);
  });
  // Time axis.
  const axisY = H - 8;
  for (let g = 0; g <= 10; g++) {
    const t = (end * g) / 10;
    svg.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${fillTop + fillH}" y2="${fillTop + fillH + 4}" stroke="#9ca3af"/>`);
    svg.push(`<text x="${x(t)}" y="${axisY}" text-anchor="${g === 0 ? "start" : g === 10 ? "end" : "middle"}" fill="#6b7280">${shortTime(t)}</text>`);
  }
  svg.push(`</svg>`);
  return svg.join("\n");
}

function htmlTable(header: string[] | null, rows: string[][]): string {
  const head = header ? `<tr>${header.map((h) => `<th>${escapeHtml(h)}</th>`).join("")}</tr>` : "";
  return `<table>${head}${rows.map((row) => `<tr>${row.map((c, k) => `<td${k > 0 ? ' class="n"' : ""}>${escapeHtml(c)}</td>`).join("")}</tr>`).join("")}</table>`;
}

/** One page, no external resources. */
export function htmlReport(o: SimulationOptions, r: SimulationResult): string {
  const rows: [string, string][] = [...ledgerRows(r), ...r.crashes.map((c) => crashRow(r, c)), ...r.crashesNotReached.map((c): [string, string] => [`crash at ${formatTime(c.at)}`, `did not happen: ${c.why}`]), ["virtual time", formatTime(r.time)]];
  const color = r.verdict.held ? "#15803d" : "#b91c1c";
  const causes = r.duplicateCauses.filter((d) => d.count > 0).map((d) => [d.cause, fmt(d.count), d.text, d.example !== undefined ? String(d.example) : ""]);
  const histories = r.histories.map((h) => `<h3>event ${h.id}: ${escapeHtml(h.kind)}${h.causes ? ` (${escapeHtml(h.causes.join(", "))})` : ""}</h3><pre>${escapeHtml(historyLines(h).slice(1).join("\n"))}</pre>`).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>flume simulate: ${escapeHtml(r.verdict.line)}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#111827}h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 6px}h3{font-size:13px;margin:10px 0 2px}p{margin:4px 0;color:#374151}
table{border-collapse:collapse;margin-top:8px}td,th{padding:2px 14px 2px 0;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}th{font-weight:600;color:#374151}
.verdict{font-size:18px;font-weight:700;color:${color};margin:12px 0}pre{background:#f3f4f6;padding:8px;font-size:12px;white-space:pre-wrap}svg{display:block;margin:8px 0}</style></head>
<body>
<h1>flume simulate: ${fmt(r.events)} events, seed ${r.seed}${r.tier ? `, a tier of ${r.agents.length} agents` : ""}</h1>
<p>${r.topology.map(escapeHtml).join(" &middot; ")}</p>
<p>faults: ${escapeHtml(faultsLine(o))}</p>
${r.warnings.map((w) => `<p>warning: ${escapeHtml(w)}</p>`).join("\n")}
<div class="verdict">${escapeHtml(r.verdict.line)}</div>
${r.tier ? `<p>${r.agents.map((a) => escapeHtml(a.verdict.line)).join(" &middot; ")}</p>` : ""}
<h2>topology</h2>
${topologySvg(r)}
<h2>timeline${r.tier ? " per agent" : ""}</h2>
${r.agents.map((a) => timelineSvg(r, a)).join("\n")}
<h2>ledger</h2>
${htmlTable(null, rows)}
${r.peers.length > 0 ? `<h2>simulated peers</h2>\n${r.peers.map((l) => `<p>${escapeHtml(l)}</p>`).join("\n")}` : ""}
${r.tier ? `<h2>agents</h2>${htmlTable(AGENT_HEADER, agentRows(r))}<h2>links</h2>${htmlTable(LINK_HEADER, linkRows(r))}` : ""}
<h2>sinks</h2>
${htmlTable(SINK_HEADER, sinkRows(r))}
${causes.length > 0 ? `<h2>duplicates by cause</h2>${htmlTable(["cause", "duplicates", "what happened", "e.g. event"], causes)}` : ""}
${r.firstLost ? `<p>first lost event: ${r.firstLost.id} (channel ${escapeHtml(r.firstLost.channel)})</p>` : ""}
${histories ? `<h2>event histories</h2>\n${histories}` : ""}
</body></html>
`;
}
