import { readFileSync } from "node:fs";

/** Peak resident set size of a process in MB (VmHWM), from /proc. */
export function peakRssMb(pid: number | "self" = "self"): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = /VmHWM:\s+(\d+) kB/.exec(status);
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}
