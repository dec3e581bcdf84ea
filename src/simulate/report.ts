/** The simulation report: text (with a compact timeline), JSON, and a self-contained HTML page. */
import type { SimulationResult } from "./engine.ts";
import { describeFailSpec, formatTime, type SimulationOptions } from "./options.ts";
import type { Column } from "./timeline.ts";

const fmt = (n: number) => n.toLocaleString("en-US");
const SPARK = " ▁▂▃▄▅▆▇█";

export function faultsLine(o: SimulationOptions): string {
  const parts: string[] = [];
  parts.push(`sink: ${o.failSink.kind === "none" ? "no failures" : `${describeFailSpec(o.failSink)} (part of a failing batch may get through first)`}`);
  parts.push(`put: ${o.failPut > 0 ? `each put transaction fails with probability ${o.failPut}` : "no failures"}`);
  parts.push(`crash: ${o.crashAt.length > 0 ? o.crashAt.map(formatTime).join(", ") : "none"}`);
  parts.push(`sink latency ${o.sinkLatency}ms`);
  parts.push(`rate ${o.rate > 0 ? `${fmt(o.rate)} events/s` : "unlimited"}`);
  return parts.join("; ");
}

function spark(value: number, max: number): string {
  if (max <= 0 || value <= 0) return SPARK[0];
  return SPARK[Math.max(1, Math.min(8, Math.ceil((value / max) * 8)))];
}

/** A few lines: per channel its fill, then deliveries, then failures and crashes. */
export function textTimeline(r: SimulationResult, width = 64): string[] {
  const end = Math.max(1, r.time);
  const cols = r.timeline.columns(end, width);
  const lines: string[] = [];
  const label = (s: string) => s.padEnd(12);
  lines.push(`timeline: 0 to ${formatTime(end)}, ${formatTime(Math.max(1, Math.round(end / width)))} per column`);
  r.channels.forEach((c, k) => {
    // Scaled to the peak, so a channel that never gets near its capacity still shows its shape.
    const row = cols.map((col) => spark(col.fill[k], c.peak)).join("");
    lines.push(`  ${label(`${c.name} fill`)}|${row}|  0 to peak ${fmt(c.peak)} (capacity ${fmt(c.capacity)})`);
  });
  const maxDelivered = Math.max(...cols.map((c) => c.delivered));
  lines.push(`  ${label("delivered")}|${cols.map((col) => spark(col.delivered, maxDelivered)).join("")}|`);
  lines.push(`  ${label("faults")}|${cols.map(faultMark).join("")}|  x sink batch failed, p put failed, C crash`);
  return lines;
}

function faultMark(c: Column): string {
  if (c.crashes > 0) return "C";
  if (c.sinkFailures > 0) return "x";
  if (c.putFailures > 0) return "p";
  return "·";
}

/** The ledger's figures, as the text and HTML reports list them. */
function ledgerRows(r: SimulationResult): [string, string][] {
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
  ];
}

export function textReport(o: SimulationOptions, r: SimulationResult, timeline = true): string {
  const out: string[] = [];
  out.push(`flume simulate: ${fmt(r.events)} events, seed ${r.seed}`);
  out.push("topology:");
  for (const t of r.topology) out.push(`  ${t}`);
  out.push(`faults: ${faultsLine(o)}`);
  for (const w of r.warnings) out.push(`warning: ${w}`);
  out.push("");
  if (timeline) {
    out.push(...textTimeline(r));
    out.push("");
  }
  const rows: [string, string][] = [
    ...ledgerRows(r),
    ["sink batches (failed)", `${fmt(r.sinkBatches)} (${fmt(r.sinkFailures)})`],
  ];
  for (const c of r.channels) rows.push([`channel peak fill ${c.name}`, `${fmt(c.peak)} of ${fmt(c.capacity)}`]);
  for (const c of r.crashes) {
    const lost = c.lost.filter((l) => l.lost > 0).map((l) => `${l.channel} lost ${fmt(l.lost)} events`);
    rows.push([`crash at ${formatTime(c.at)}`, lost.length > 0 ? lost.join(", ") : "no committed event lost"]);
  }
  rows.push(["virtual time", formatTime(r.time)]);
  const w = Math.max(...rows.map(([k]) => k.length)) + 2;
  for (const [k, v] of rows) out.push(`${k.padEnd(w)}${v.padStart(12)}`);
  out.push("");
  if (!r.completed) out.push(`note: stopped at ${formatTime(r.time)} of virtual time before every event was delivered (--max-time)`);
  if (r.channels.length > 1) out.push("(with several channels each channel's copy of an event counts: an event is lost when any copy was accepted and never delivered)");
  out.push(r.verdict.line);
  if (r.firstLost) {
    out.push(`first lost event: ${r.firstLost.id} (accepted into channel ${r.firstLost.channel}, never delivered from it)`);
    for (const h of r.firstLost.history) out.push(h);
  }
  return `${out.join("\n")}\n`;
}

export function jsonReport(o: SimulationOptions, r: SimulationResult): string {
  const s = r.summary;
  return `${JSON.stringify(
    {
      events: r.events,
      seed: r.seed,
      topology: r.topology,
      faults: {
        failSink: o.failSink.kind === "none" ? null : o.failSink.kind === "rate" ? o.failSink.rate : o.failSink.text,
        failPut: o.failPut,
        crashAt: o.crashAt,
        sinkLatency: o.sinkLatency,
        rate: o.rate,
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
      sinkBatches: r.sinkBatches,
      sinkFailures: r.sinkFailures,
      deliveries: r.deliveries,
      crashes: r.crashes,
      channels: r.channels,
      virtualTimeMs: r.time,
      completed: r.completed,
      verdict: r.verdict.held ? "HELD" : "VIOLATED",
      verdictLine: r.verdict.line,
      firstLost: r.firstLost ?? null,
      timeline: jsonTimeline(r),
    },
    null,
    2,
  )}\n`;
}

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

/** The text timeline's columns as data. */
function jsonTimeline(r: SimulationResult, width = 64) {
  const end = Math.max(1, r.time);
  return r.timeline.columns(end, width).map((c) => ({
    from: Math.round(c.from),
    fill: Object.fromEntries(r.channels.map((ch, k) => [ch.name, c.fill[k]])),
    delivered: c.delivered,
    sinkFailures: c.sinkFailures,
    putFailures: c.putFailures,
    crashes: c.crashes,
  }));
}

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const COLORS = ["#2563eb", "#7c3aed", "#0891b2", "#ca8a04", "#db2777"];

/** One page, no external resources: an SVG chart of channel fill, deliveries, failures and crashes. */
export function htmlReport(o: SimulationOptions, r: SimulationResult): string {
  const W = 1100;
  const left = 70;
  const right = 20;
  const plotW = W - left - right;
  const fillTop = 30;
  const fillH = 260;
  const delTop = fillTop + fillH + 40;
  const delH = 110;
  const faultTop = delTop + delH + 30;
  const H = faultTop + 70;
  const end = Math.max(1, r.time);
  const n = Math.min(plotW, 400);
  const cols = r.timeline.columns(end, n);
  const colW = plotW / n;
  const x = (t: number) => left + (t / end) * plotW;
  const svg: string[] = [];
  svg.push(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="system-ui, sans-serif" font-size="12">`);
  svg.push(`<rect x="0" y="0" width="${W}" height="${H}" fill="#fff"/>`);
  // Fill panel, scaled to the highest peak (a capacity far above it would flatten the curve).
  const peak = Math.max(1, ...r.channels.map((c) => c.peak));
  const maxCap = niceCeil(peak * 1.1);
  const yFill = (v: number) => fillTop + fillH - (Math.min(v, maxCap) / maxCap) * fillH;
  svg.push(`<text x="${left}" y="${fillTop - 10}" font-weight="600">channel fill (events)</text>`);
  for (let g = 0; g <= 4; g++) {
    const v = (maxCap * g) / 4;
    const y = yFill(v);
    svg.push(`<line x1="${left}" x2="${W - right}" y1="${y}" y2="${y}" stroke="#e5e7eb"/>`);
    svg.push(`<text x="${left - 6}" y="${y + 4}" text-anchor="end" fill="#6b7280">${fmt(Math.round(v))}</text>`);
  }
  r.channels.forEach((c, k) => {
    const color = COLORS[k % COLORS.length];
    const pts = cols.map((col, i) => `${(left + (i + 0.5) * colW).toFixed(1)},${yFill(col.fill[k]).toFixed(1)}`);
    svg.push(`<polygon points="${left},${yFill(0)} ${pts.join(" ")} ${W - right},${yFill(0)}" fill="${color}" fill-opacity="0.15"/>`);
    svg.push(`<polyline points="${pts.join(" ")}" fill="none" stroke="${color}" stroke-width="1.5"/>`);
    if (c.capacity <= maxCap) {
      svg.push(`<line x1="${left}" x2="${W - right}" y1="${yFill(c.capacity)}" y2="${yFill(c.capacity)}" stroke="${color}" stroke-dasharray="4 3"/>`);
      svg.push(`<text x="${W - right - 4}" y="${yFill(c.capacity) - 4}" text-anchor="end" fill="${color}">capacity of ${escapeHtml(c.name)}</text>`);
    }
  });
  let legendX = left + 170;
  r.channels.forEach((c, k) => {
    const text = `■ ${c.name} (${c.type}, peak ${fmt(c.peak)} of ${fmt(c.capacity)})`;
    svg.push(`<text x="${legendX}" y="${fillTop - 10}" fill="${COLORS[k % COLORS.length]}">${escapeHtml(text)}</text>`);
    legendX += text.length * 7 + 16;
  });
  // Deliveries panel.
  const maxDel = Math.max(1, ...cols.map((c) => c.delivered));
  svg.push(`<text x="${left}" y="${delTop - 10}" font-weight="600">deliveries per ${formatTime(Math.max(1, Math.round(end / n)))} (max ${fmt(maxDel)})</text>`);
  svg.push(`<line x1="${left}" x2="${W - right}" y1="${delTop + delH}" y2="${delTop + delH}" stroke="#9ca3af"/>`);
  cols.forEach((col, i) => {
    if (col.delivered === 0) return;
    const h = (col.delivered / maxDel) * delH;
    svg.push(`<rect x="${(left + i * colW).toFixed(1)}" y="${(delTop + delH - h).toFixed(1)}" width="${Math.max(0.8, colW - 0.3).toFixed(1)}" height="${h.toFixed(1)}" fill="#16a34a"/>`);
  });
  // Faults row.
  svg.push(`<text x="${left}" y="${faultTop - 10}" font-weight="600">failures</text>`);
  svg.push(`<text x="${left - 6}" y="${faultTop + 14}" text-anchor="end" fill="#6b7280">sink</text>`);
  svg.push(`<text x="${left - 6}" y="${faultTop + 34}" text-anchor="end" fill="#6b7280">put</text>`);
  cols.forEach((col, i) => {
    const cx = (left + (i + 0.5) * colW).toFixed(1);
    if (col.sinkFailures > 0) svg.push(`<circle cx="${cx}" cy="${faultTop + 10}" r="3.5" fill="#ea580c"><title>${col.sinkFailures} sink batch failure(s) at ${formatTime(Math.round(col.from))}</title></circle>`);
    if (col.putFailures > 0) svg.push(`<rect x="${(Number(cx) - 3).toFixed(1)}" y="${faultTop + 27}" width="6" height="6" fill="#a16207"><title>${col.putFailures} put failure(s) at ${formatTime(Math.round(col.from))}</title></rect>`);
  });
  // Crashes across all panels.
  r.crashes.forEach((c, i) => {
    const cx = x(c.at).toFixed(1);
    svg.push(`<line x1="${cx}" x2="${cx}" y1="${fillTop}" y2="${faultTop + 40}" stroke="#dc2626" stroke-width="2"/>`);
    const lost = c.lost.reduce((a, l) => a + l.lost, 0);
    // Labels of nearby crashes go one under the other.
    svg.push(`<text x="${Number(cx) + 4}" y="${fillTop + 14 + (i % 8) * 15}" fill="#dc2626" font-weight="600">crash ${formatTime(c.at)}${lost > 0 ? ` (${fmt(lost)} lost)` : " (nothing lost)"}</text>`);
  });
  // Time axis.
  const axisY = H - 14;
  for (let g = 0; g <= 10; g++) {
    const t = (end * g) / 10;
    svg.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${fillTop + fillH}" y2="${fillTop + fillH + 4}" stroke="#9ca3af"/>`);
    svg.push(`<text x="${x(t)}" y="${axisY}" text-anchor="${g === 0 ? "start" : g === 10 ? "end" : "middle"}" fill="#6b7280">${shortTime(t)}</text>`);
  }
  svg.push(`</svg>`);

  const rows: [string, string][] = [...ledgerRows(r), ["virtual time", formatTime(r.time)]];
  const color = r.verdict.held ? "#15803d" : "#b91c1c";
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>flume simulate: ${escapeHtml(r.verdict.line)}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#111827}h1{font-size:20px;margin:0 0 4px}p{margin:4px 0;color:#374151}
table{border-collapse:collapse;margin-top:12px}td{padding:2px 16px 2px 0}td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-size:18px;font-weight:700;color:${color};margin:12px 0}pre{background:#f3f4f6;padding:8px;font-size:12px}</style></head>
<body>
<h1>flume simulate: ${fmt(r.events)} events, seed ${r.seed}</h1>
<p>${r.topology.map(escapeHtml).join(" &middot; ")}</p>
<p>faults: ${escapeHtml(faultsLine(o))}</p>
<div class="verdict">${escapeHtml(r.verdict.line)}</div>
${svg.join("\n")}
<table>${rows.map(([k, v]) => `<tr><td>${k}</td><td class="n">${v}</td></tr>`).join("")}</table>
${r.firstLost ? `<p>first lost event: ${r.firstLost.id} (channel ${escapeHtml(r.firstLost.channel)})</p><pre>${escapeHtml(r.firstLost.history.join("\n"))}</pre>` : ""}
</body></html>
`;
}
