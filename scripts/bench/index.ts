// npm run bench [-- name ...]: runs the named benchmarks (all when none is named). A name is a
// file here (its run()), "<file>:<case>" (its exported cases[case]) or a group below.
import { readdirSync } from "node:fs";
import path from "node:path";

/** Groups of benchmarks run by one name. */
const GROUPS: Record<string, string[]> = {
  footprint: ["taildir:files", "taildir:big-file", "taildir:latency", "taildir:spooldir-latency"],
};

const dir = import.meta.dir;
const available = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "index.ts" && !f.startsWith("_"))
  .map((f) => f.slice(0, -3))
  .sort();
const wanted = process.argv.slice(2).flatMap((n) => GROUPS[n] ?? [n]);
const names = wanted.length > 0 ? wanted : available;
for (const name of names) {
  if (!available.includes(name.split(":")[0])) {
    console.error(`unknown benchmark "${name}"; available: ${[...available, ...Object.keys(GROUPS)].join(", ")}`);
    process.exit(2);
  }
}
if (names.length > 1) {
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
