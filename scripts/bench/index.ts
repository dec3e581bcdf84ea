// npm run bench [-- name ...]: runs the named benchmarks (all when none is named). A name is a
// file here (its run()) or "<file>:<case>" (its exported cases[case]).
import { readdirSync } from "node:fs";
import path from "node:path";

/**
 * Cases `npm run bench -- footprint` runs after its own (issue 16): a benchmark's name, run as
 * `npm run bench -- <bench>` with `env` added to the environment.
 */
export const FOOTPRINT_CASES: { bench: string; label?: string; env?: Record<string, string> }[] = [
  { bench: "taildir:files", label: "TAILDIR, 1,000 files" },
  { bench: "taildir:small-files", label: "TAILDIR, 4,000 files of one line" },
  { bench: "taildir:big-file", label: "TAILDIR, one 300 MB file" },
  { bench: "taildir:latency", label: "TAILDIR pickup latency" },
  { bench: "taildir:spooldir-latency", label: "spooldir pickup latency" },
  { bench: "taildir:spool-backlog", label: "spooldir, a backlog of 2,000 files" },
];

const dir = import.meta.dir;
const available = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "index.ts" && !f.startsWith("_"))
  .map((f) => f.slice(0, -3))
  .sort();
const wanted = import.meta.main ? process.argv.slice(2) : [];
const names = wanted.length > 0 ? wanted : available;
for (const name of names) {
  if (!available.includes(name.split(":")[0])) {
    console.error(`unknown benchmark "${name}"; available: ${available.join(", ")}`);
    process.exit(2);
  }
}
if (!import.meta.main) {
  // Imported for FOOTPRINT_CASES: nothing to run.
} else if (names.length > 1) {
  // One process per benchmark, so each one's peak RSS is its own.
  const { spawnSync } = await import("node:child_process");
  for (const name of names) {
    const r = spawnSync(process.execPath, [import.meta.path, name], { stdio: "inherit" });
    if (r.status !== 0) process.exitCode = 1;
  }
} else {
  const [file, kase] = names[0].split(":");
  console.log(`\n== bench ${names[0]} ==`);
  const mod = (await import(path.join(dir, `${file}.ts`))) as { run?: () => Promise<void>; cases?: Record<string, () => Promise<void>> };
  const fn = kase === undefined ? mod.run : mod.cases?.[kase];
  if (typeof fn !== "function") {
    console.error(kase === undefined ? `scripts/bench/${file}.ts exports no run()` : `scripts/bench/${file}.ts has no case "${kase}" (cases: ${Object.keys(mod.cases ?? {}).join(", ") || "none"})`);
    process.exit(1);
  }
  await fn();
}
