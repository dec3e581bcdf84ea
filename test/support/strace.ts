/** Runs a child process under strace and reads what it did to the file system. */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";

/**
 * The file system calls (fsync, fdatasync, rename*, unlink*) of `bun script ...args`, as strace
 * prints them with -y (descriptors with their paths), one call a line. dir holds the trace.
 */
export function traced(dir: string, script: string, ...args: string[]): string[] {
  return tracedCalls(dir, "fsync,fdatasync,rename,renameat,renameat2,unlink,unlinkat", script, ...args);
}

/** As traced(), for the system calls named in `calls` (strace's -e trace= list). */
export function tracedCalls(dir: string, calls: string, script: string, ...args: string[]): string[] {
  const out = path.join(dir, "strace.txt");
  const r = spawnSync("strace", ["-f", "-qq", "-y", "-e", `trace=${calls}`, "-o", out, process.execPath, script, ...args], { encoding: "utf8", timeout: 20000 });
  if (r.error || r.status !== 0) throw new Error(`strace ${path.basename(script)} ${args.join(" ")} failed (${r.error?.message ?? r.status}): ${r.stderr}`);
  return readFileSync(out, "utf8").split("\n");
}

/** The index of the first line from `from` on that matches re, or -1. */
export function indexOf(lines: string[], re: RegExp, from = 0): number {
  for (let i = from; i < lines.length; i++) if (re.test(lines[i])) return i;
  return -1;
}

/** s as a literal in a RegExp. */
export const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
