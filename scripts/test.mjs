#!/usr/bin/env node
// Runs the bun:test suite and ends with the line CI reads: "N passed, N failed, N skipped".
// bun test prints its summary on stderr in its own words, so we count from it here.
//
// Failures are the failing tests bun lists ("(fail) ...") plus bun's errors: a test file that
// does not load, an error thrown while a file is collected, an unhandled error or rejection
// between tests. bun counts a file that does not load as a failed test *and* an error, and an
// error in a describe callback as an error only, so the count is max(fail, listed + errors).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const bunBin = path.join(path.dirname(require.resolve("bun/package.json")), "bin", "bun.exe");
// The per-test timeout as in bunfig.toml (see there why 90 s).
const args = ["test", "--timeout", "90000", ...process.argv.slice(2)];
const child = spawn(bunBin, args, { stdio: ["ignore", "inherit", "pipe"] });

let tail = "";
let partial = "";
let listedFailures = 0;
// After the run bun lists the failed tests once more under "N tests failed:"; those are not counted again.
let recap = false;
const countLine = (line) => {
  if (/^\d+ tests? failed:$/.test(line)) recap = true;
  else if (!recap && line.startsWith("(fail) ")) listedFailures++;
};
child.stderr.on("data", (chunk) => {
  process.stderr.write(chunk);
  const text = chunk.toString("utf8");
  tail = (tail + text).slice(-20000);
  const lines = (partial + text).split("\n");
  partial = lines.pop() ?? "";
  for (const line of lines) countLine(line);
});
child.on("close", (code, signal) => {
  countLine(partial);
  // The summary: " 12 pass", " 1 skip", " 2 todo", " 3 fail", " 1 error" / " 2 errors".
  // The last such line counts: test output earlier in the tail may look alike.
  const count = (word) => {
    const all = [...tail.matchAll(new RegExp(`^\\s*(\\d+) ${word}$`, "gm"))];
    return all.length > 0 ? Number(all[all.length - 1][1]) : 0;
  };
  const summarised = /^Ran \d+ tests? across \d+ files?/m.test(tail);
  const passed = count("pass");
  const skipped = count("skip") + count("todo");
  const errors = count("errors?");
  let failed = Math.max(count("fail"), listedFailures + errors);
  const reasons = [];
  if (signal) reasons.push(`bun test ended by ${signal}`);
  else if (code !== 0 && failed === 0) reasons.push(`bun test exited with code ${code} and reported no failure`);
  if (!summarised) reasons.push("bun test printed no summary");
  if (reasons.length > 0 && failed === 0) failed = 1;
  if (passed === 0 && failed === 0) reasons.push("no test ran");
  for (const r of reasons) console.error(r);
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  process.exit(code !== 0 || failed > 0 || passed === 0 ? 1 : 0);
});
