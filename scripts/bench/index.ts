// npm run bench [-- name ...]: runs the named benchmarks (all when none is named).
import { readdirSync } from "node:fs";
import path from "node:path";

/**
 * Cases `npm run bench -- footprint` runs after its own (issue 16): a benchmark's name, run as
 * `npm run bench -- <bench>` with `env` added to the environment.
 */
export const FOOTPRINT_CASES: { bench: string; label?: string; env?: Record<string, string> }[] = [];

const dir = import.meta.dir;
const available = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "index.ts" && !f.startsWith("_"))
  .map((f) => f.slice(0, -3))
  .sort();
const wanted = import.meta.main ? process.argv.slice(2) : [];
const names = wanted.length > 0 ? wanted : available;
for (const name of names) {
  if (!available.includes(name)) {
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
  const name = names[0];
  console.log(`\n== bench ${name} ==`);
  const mod = (await import(path.join(dir, `${name}.ts`))) as { run?: () => Promise<void> };
  if (typeof mod.run !== "function") {
    console.error(`scripts/bench/${name}.ts exports no run()`);
    process.exit(1);
  }
  await mod.run();
}
