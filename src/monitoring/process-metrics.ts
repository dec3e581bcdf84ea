/**
 * The process series every Prometheus client library exports (process_resident_memory_bytes,
 * process_cpu_seconds_total, process_open_fds, ...: the names dashboards and alerts expect) and
 * flume_build_info, which says what runs. A series the platform cannot give (file descriptors
 * outside Linux) is left out rather than reported as 0.
 */
import { readdirSync, readFileSync } from "node:fs";
import { FLUME_COMPAT, VERSION } from "../version.ts";
import { labelValue } from "./metrics.ts";

interface Sample {
  name: string;
  type: "counter" | "gauge";
  help: string;
  value: number;
  labels?: string;
}

/** Unix time the process started, in seconds: now minus its uptime, taken once. */
const START_TIME_SECONDS = Math.round(Date.now() - process.uptime() * 1000) / 1000;

/** The runtime and its version: bun, deno or node. */
export function runtimeInfo(): { runtime: string; version: string } {
  const g = globalThis as { Bun?: { version: string }; Deno?: { version: { deno: string } } };
  if (g.Bun) return { runtime: "bun", version: g.Bun.version };
  if (g.Deno) return { runtime: "deno", version: g.Deno.version.deno };
  return { runtime: "node", version: process.versions.node };
}

/** Undefined where /proc is missing or unreadable. */
function procText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

function openFds(): number | undefined {
  try {
    // The listing counts the descriptor that reads it.
    return Math.max(0, readdirSync("/proc/self/fd").length - 1);
  } catch {
    return undefined;
  }
}

/** The soft limit on open files ("Max open files" in /proc/self/limits); undefined when unlimited or unknown. */
export function maxFds(limits: string | undefined): number | undefined {
  const m = limits && /^Max open files\s+(\d+)/m.exec(limits);
  return m ? Number(m[1]) : undefined;
}

/** Virtual memory size in bytes: field 23 of /proc/self/stat (counted after the command name, which may hold spaces). */
export function virtualMemoryBytes(stat: string | undefined): number | undefined {
  if (!stat) return undefined;
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const v = Number(fields[20]);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

function samples(): Sample[] {
  const cpu = process.cpuUsage();
  const { runtime, version } = runtimeInfo();
  const all: (Omit<Sample, "value"> & { value: number | undefined })[] = [
    { name: "process_cpu_seconds_total", type: "counter", help: "User and system CPU time spent, in seconds", value: (cpu.user + cpu.system) / 1e6 },
    { name: "process_resident_memory_bytes", type: "gauge", help: "Resident memory size in bytes", value: process.memoryUsage.rss() },
    { name: "process_virtual_memory_bytes", type: "gauge", help: "Virtual memory size in bytes", value: virtualMemoryBytes(procText("/proc/self/stat")) },
    { name: "process_open_fds", type: "gauge", help: "Open file descriptors", value: openFds() },
    { name: "process_max_fds", type: "gauge", help: "Most open file descriptors allowed (the soft limit)", value: maxFds(procText("/proc/self/limits")) },
    { name: "process_start_time_seconds", type: "gauge", help: "When the process started, in seconds since the Unix epoch", value: START_TIME_SECONDS },
    {
      name: "flume_build_info",
      type: "gauge",
      help: "Always 1; the labels say which Flume TS runs, the Apache Flume release it follows and the runtime",
      value: 1,
      labels: `version="${labelValue(VERSION)}",flume_version="${labelValue(FLUME_COMPAT)}",runtime="${labelValue(runtime)}",runtime_version="${labelValue(version)}"`,
    },
  ];
  return all.filter((s): s is Sample => s.value !== undefined);
}

/** The process and build series in the Prometheus text exposition format (0.0.4). */
export function processMetricsText(): string {
  return samples()
    .map((s) => `# HELP ${s.name} ${s.help}\n# TYPE ${s.name} ${s.type}\n${s.name}${s.labels ? `{${s.labels}}` : ""} ${s.value}\n`)
    .join("");
}
