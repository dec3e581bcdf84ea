#!/usr/bin/env node
// Runs the whole suite (scripts/test.mjs, CI=true) several times in a row with a busy loop on
// every core beside it, the way a loaded CI machine runs it: waits in tests must follow events,
// not fixed sleeps, and this shows whether they do. Usage: npm run test:loaded [-- RUNS]
// Prints each run's closing line and wall time; exits 1 if any run failed.
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const runs = Number(process.argv[2] ?? 3);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`usage: npm run test:loaded [-- RUNS]: RUNS must be a positive integer, got '${process.argv[2]}'`);
  process.exit(2);
}
const testScript = path.join(path.dirname(fileURLToPath(import.meta.url)), "test.mjs");
const cores = os.availableParallelism();
const busy = Array.from({ length: cores }, () =>
  spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }),
);
const stopBusy = () => {
  for (const child of busy) child.kill("SIGKILL");
};
process.on("SIGINT", () => {
  stopBusy();
  process.exit(130);
});

const runOnce = () =>
  new Promise((resolve) => {
    const started = Date.now();
    let last = "";
    const child = spawn(process.execPath, [testScript], {
      env: { ...process.env, CI: "true" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    child.stdout.on("data", (chunk) => {
      process.stdout.write(chunk);
      const lines = chunk.toString("utf8").trim().split("\n");
      last = lines[lines.length - 1] || last;
    });
    child.on("close", (code) => resolve({ code, line: last, seconds: Math.round((Date.now() - started) / 1000) }));
  });

const results = [];
for (let i = 1; i <= runs; i++) {
  console.log(`\n== loaded run ${i} of ${runs}: ${cores} busy loops beside the suite ==`);
  results.push(await runOnce());
}
stopBusy();
console.log(`\n== ${runs} loaded runs, ${cores} busy loops beside each ==`);
results.forEach((r, i) => console.log(`run ${i + 1}: "${r.line}", ${r.seconds} s${r.code === 0 ? "" : " (FAILED)"}`));
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
