/**
 * `npm run build`: the one binary, dist/flume (or the path given), with `bun build --compile`.
 * Measured for issue 16 (scripts/bench/footprint.ts):
 * - --splitting: each component module is a chunk of its own, loaded when a configuration
 *   uses it (src/components/registry.ts), so an agent pays only for what it runs;
 * - --bytecode (ES module format): start to listening about 40 -> 18 ms, the binary ~5 MB larger;
 * - --compile-jit-policy=8: code that runs once at start stays interpreted (the agent sets the
 *   normal policy once it runs), about 2.5 MB less RSS;
 * - --minify is not used: ~2 MB smaller binary, no measurable start or memory gain, and
 *   minified names in stack traces.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "..");

export const BUILD_FLAGS = ["--compile", "--splitting", "--bytecode", "--format=esm", "--compile-jit-policy=8"];

/** Builds the binary at `outfile`; returns bun build's exit status and output. */
export function build(outfile: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, ["build", ...BUILD_FLAGS, path.join(ROOT, "src", "cli.ts"), "--outfile", outfile], { cwd: ROOT, encoding: "utf8", timeout: 120000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

if (import.meta.main) {
  const out = path.resolve(process.argv[2] ?? path.join(ROOT, "dist", "flume"));
  const r = build(out);
  process.stdout.write(r.output);
  process.exit(r.status ?? 1);
}
