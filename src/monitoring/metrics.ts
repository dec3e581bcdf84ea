import type { CounterGroup } from "../core/counters.ts";

/** Anything that can list the counter groups to report (the running agent). */
export interface MetricsProvider {
  counterGroups(): Iterable<CounterGroup<string>>;
}

/** Flume's /metrics JSON: `{"TYPE.name": {"Counter": "value", ...}}`, every value a string. */
export function metricsJson(provider: MetricsProvider): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const group of provider.counterGroups()) out[`${group.type}.${group.name}`] = group.snapshot();
  return out;
}

function snake(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();
}

function labelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

/**
 * Flume attributes named like counters that are current values and go down again: typed as
 * Prometheus counters (`_total`), rate() would read each drop as a counter reset.
 */
const GAUGES_NAMED_COUNT = new Set(["OpenConnectionCount"]);

/** The same counters in the Prometheus text exposition format (version 0.0.4). */
export function prometheusText(provider: MetricsProvider): string {
  const series = new Map<string, { kind: "counter" | "gauge"; lines: string[] }>();
  for (const group of provider.counterGroups()) {
    const snap = group.snapshot();
    for (const [key, raw] of Object.entries(snap)) {
      if (key === "Type") continue;
      let value: number;
      if (raw === "true") value = 1;
      else if (raw === "false") value = 0;
      else value = Number(raw);
      if (!Number.isFinite(value)) continue;
      const isCounter = /(Count|Fail)$/.test(key) && !GAUGES_NAMED_COUNT.has(key);
      const name = `flume_${group.type.toLowerCase()}_${snake(key)}${isCounter ? "_total" : key.endsWith("Time") ? "_ms" : ""}`;
      let s = series.get(name);
      if (!s) series.set(name, (s = { kind: isCounter ? "counter" : "gauge", lines: [] }));
      s.lines.push(`${name}{component="${labelValue(group.name)}"} ${value}`);
    }
  }
  const out: string[] = [];
  for (const [name, s] of series) {
    out.push(`# TYPE ${name} ${s.kind}`);
    out.push(...s.lines);
  }
  return `${out.join("\n")}\n`;
}
