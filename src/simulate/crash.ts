/**
 * What a crash does to channels, the same in `flume simulate` (engine.ts) and `flume replay`
 * (replay.ts): the ledger (Ledger.crash) drops what each channel loses (all of a channel that
 * keeps nothing, partialLosses() of one that keeps part, nothing of a durable one), then each
 * channel is left as a killed process leaves it (leaveAsKilled: its definition's
 * durability.crash; a file channel keeps its log and lets its locks go). And where both keep a
 * configured path's data: scratchStorage().
 */
import path from "node:path";
import type { AnyDefinition } from "../components/component.ts";
import type { Event } from "../core/event.ts";

/** A channel hit by a crash: its number in the ledger, its definition, the running instance. */
export interface CrashedChannel {
  index: number;
  definition: AnyDefinition;
  instance: unknown;
}

/**
 * What the channels that keep only part of their events (SPILLABLEMEMORY: its memory part)
 * lose in a crash, by ledger index: what Ledger.crash takes as `partial`.
 */
export function partialLosses(channels: readonly CrashedChannel[], idOf: (e: Event) => number): Map<number, number[]> {
  const partial = new Map<number, number[]>();
  for (const c of channels) {
    const lostOnCrash = c.definition.durability?.lostOnCrash;
    if (lostOnCrash) partial.set(c.index, lostOnCrash(c.instance).map(idOf));
  }
  return partial;
}

/** As after a real crash: no orderly stop; what survives is each definition's business. */
export async function leaveAsKilled(channels: readonly CrashedChannel[]): Promise<void> {
  for (const c of channels) await c.definition.durability?.crash(c.instance);
}

/**
 * Where the simulation keeps what a configured path names: one scratch directory per distinct
 * path under `dir`, the same across restarts of the simulated process (so a durable channel
 * finds its data).
 */
export function scratchStorage(dir: string): (configured: string) => string {
  const dirs = new Map<string, string>();
  return (configured) => {
    let d = dirs.get(configured);
    if (d === undefined) dirs.set(configured, (d = path.join(dir, `storage-${dirs.size + 1}`)));
    return d;
  };
}
