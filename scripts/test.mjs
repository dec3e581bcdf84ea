#!/usr/bin/env node
// Runs the bun:test suite and ends with the line CI reads: "N passed, N failed".
// bun test prints its summary on stderr in its own words, so we count from it here.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const bunBin = path.join(path.dirname(require.resolve("bun/package.json")), "bin", "bun.exe");
const args = ["test", "--timeout", "30000", ...process.argv.slice(2)];
const child = spawn(bunBin, args, { stdio: ["ignore", "inherit", "pipe"] });

let tail = "";
child.stderr.on("data", (chunk) => {
  process.stderr.write(chunk);
  tail = (tail + chunk.toString("utf8")).slice(-20000);
});
child.on("close", (code, signal) => {
  const count = (word) => {
    const m = tail.match(new RegExp(`^\\s*(\\d+) ${word}\\b`, "m"));
    return m ? Number(m[1]) : 0;
  };
  const passed = count("pass");
  const failed = count("fail");
  const errors = count("error") + (/(^|\n)error: /.test(tail) && failed === 0 && passed === 0 ? 1 : 0);
  console.log(`${passed} passed, ${failed + errors} failed`);
  if (signal) console.error(`bun test ended by ${signal}`);
  if (passed === 0) console.error("no test ran");
  process.exit(code !== 0 || failed > 0 || errors > 0 || passed === 0 ? 1 : 0);
});
