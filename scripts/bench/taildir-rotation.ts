/**
 * `npm run bench -- taildir-rotation`: issue 17's crash sweep at its real timings, many runs.
 *
 * For each rotation (copytruncate, rename) and channel (file, memory): BENCH_ROTATION_RUNS runs
 * (24) of test/support/taildir-rotation.ts, `flume run` SIGKILLed at seeded points from the
 * rotation to 3 s after the truncation (a third of them in the 20 ms after each write, where
 * the agent is busy), BENCH_ROTATION_PARALLEL (3) at a time; BENCH_ROTATION_SCALE (1) scales
 * the timings, BENCH_ROTATION_SEED (17) picks the points. Prints, per case, lines repeated and
 * lost per crash, and a VIOLATION line (exit code 1) for a run that repeated more than one
 * batch (100 lines), lost a line with the file channel, or lost a line written after the kill.
 */
import { type ChannelKind, killPoints, type Rotation, type RotationRunResult, rotationRun } from "../../test/support/taildir-rotation.ts";

const RUNS = Number(process.env.BENCH_ROTATION_RUNS ?? 24);
const PARALLEL = Number(process.env.BENCH_ROTATION_PARALLEL ?? 3);
const SCALE = Number(process.env.BENCH_ROTATION_SCALE ?? 1);
const SEED = Number(process.env.BENCH_ROTATION_SEED ?? 17);
const BATCH = 100;

function stats(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = values.reduce((a, b) => a + b, 0);
  return `max ${sorted[sorted.length - 1]}, mean ${(sum / values.length).toFixed(1)}, in ${values.filter((v) => v > 0).length} of ${values.length} runs`;
}

export async function run(): Promise<void> {
  let violations = 0;
  for (const rotation of ["copytruncate", "rename"] as Rotation[]) {
    for (const channel of ["file", "memory"] as ChannelKind[]) {
      const points = killPoints(RUNS, SCALE, SEED + (channel === "memory" ? 1 : 0));
      const results: RotationRunResult[] = [];
      const t0 = performance.now();
      for (let i = 0; i < points.length; i += PARALLEL) {
        results.push(...(await Promise.all(points.slice(i, i + PARALLEL).map((killAtMs) => rotationRun({ rotation, channel, killAtMs, scale: SCALE, batchSize: BATCH, sinkBatchSize: BATCH })))));
      }
      console.log(
        `${rotation}, ${channel} channel: ${results.length} crashes (kill ${Math.min(...points)}-${Math.max(...points)} ms after the rotation, ${((performance.now() - t0) / 1000).toFixed(0)} s): ` +
          `repeated lines per crash ${stats(results.map((r) => r.duplicated))}; lost lines per crash ${stats(results.map((r) => r.lost))}`,
      );
      for (const r of results) {
        const bad = r.duplicated > BATCH ? `repeated ${r.duplicated} lines (e.g. ${r.duplicatedSample})` : channel === "file" && r.lost > 0 ? `lost ${r.lost} lines (e.g. ${r.lostSample})` : r.lostAfterKill > 0 ? `lost ${r.lostAfterKill} lines written after the kill` : null;
        if (bad) {
          violations++;
          console.log(`VIOLATION ${rotation}, ${channel} channel, kill at ${r.killAtMs} ms: ${bad}`);
        }
      }
    }
  }
  if (violations > 0) process.exitCode = 1;
}

if (import.meta.main) await run();
