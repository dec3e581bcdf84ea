/**
 * The log-rotation crash harness (test/support/taildir-rotation.ts) at a tenth of its timings: `flume run` with TAILDIR (filegroup
 * `app\.log.*`) -> file or memory channel -> file_roll, logrotate-style rotation (copytruncate:
 * copy to app.log.1, truncate 50 ms later, 1,000 more lines; rename: app.log -> app.log.1, 100
 * more lines through the open descriptor, a new app.log with 1,000 lines), SIGKILL at seeded
 * points from the rotation to 300 ms after the truncation, restart. scripts/bench/
 * taildir-rotation.ts sweeps the real timings with many more runs.
 */
import { describe, expect, test } from "bun:test";
import { killPoints, type RotationRunResult, rotationRun } from "../support/taildir-rotation.ts";

const SEED = Number(process.env.FLUME_CRASH_SEED ?? 17);
const RUNS = 6;
const SCALE = 0.1;
/** file_roll's sink.batchSize and TAILDIR's batchSize in the harness. */
const BATCH = 100;

function summary(results: RotationRunResult[]): string {
  return results.map((r) => `kill at ${r.killAtMs} ms: ${r.lost} lost (${r.lostAfterKill} written after the kill), ${r.duplicated} repeated`).join("; ");
}

describe("TAILDIR across a rotation, the agent SIGKILLed at any moment and restarted", () => {
  for (const rotation of ["copytruncate", "rename"] as const) {
    test(`${rotation}, file channel: nothing lost, at most one sink batch repeated per crash (seed ${SEED})`, async () => {
      const results = await Promise.all(killPoints(RUNS, SCALE, SEED).map((killAtMs) => rotationRun({ rotation, channel: "file", killAtMs, scale: SCALE, batchSize: BATCH, sinkBatchSize: BATCH })));
      if (process.env.DEBUG_TAILDIR) console.log(summary(results));
      for (const r of results) {
        expect({ killAtMs: r.killAtMs, lost: r.lost, lostSample: r.lostSample }).toEqual({ killAtMs: r.killAtMs, lost: 0, lostSample: [] });
        expect({ killAtMs: r.killAtMs, duplicated: r.duplicated <= BATCH ? "at most one batch" : `${r.duplicated}, e.g. ${r.duplicatedSample}` }).toEqual({ killAtMs: r.killAtMs, duplicated: "at most one batch" });
      }
    }, 60_000);

    test(`${rotation}, memory channel: a crash loses only lines read before it, repeats at most one batch (seed ${SEED})`, async () => {
      const results = await Promise.all(killPoints(RUNS, SCALE, SEED + 1).map((killAtMs) => rotationRun({ rotation, channel: "memory", killAtMs, scale: SCALE, batchSize: BATCH, sinkBatchSize: BATCH })));
      if (process.env.DEBUG_TAILDIR) console.log(summary(results));
      for (const r of results) {
        expect({ killAtMs: r.killAtMs, lostAfterKill: r.lostAfterKill }).toEqual({ killAtMs: r.killAtMs, lostAfterKill: 0 });
        expect({ killAtMs: r.killAtMs, duplicated: r.duplicated <= BATCH ? "at most one batch" : `${r.duplicated}, e.g. ${r.duplicatedSample}` }).toEqual({ killAtMs: r.killAtMs, duplicated: "at most one batch" });
      }
    }, 60_000);
  }
});
