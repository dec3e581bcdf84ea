/**
 * What a crash does to channels, one driver for `flume simulate` (engine.ts) and `flume replay`
 * (replay.ts), crashChannels(): the ledger (Ledger.crash) drops what each channel loses (all of
 * a channel that keeps nothing, partialLosses() of one that keeps part, nothing of a durable
 * one), then each channel is left as a killed process leaves it (leaveAsKilled: its
 * definition's durability.crash; a file channel keeps its log and lets its locks go). And where
 * both keep a configured path's data: scratchStorage().
 */
import path from "node:path";
import type { AnyDefinition } from "../components/component.ts";
import type { Event } from "../core/event.ts";
import type { Ledger } from "./ledger.ts";

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

/**
 * Committed takes a channel gives back after a crash (a Kafka channel whose group offset could
 * not move past a record another take still held), by ledger index.
 */
export function givenBackOnCrash(channels: readonly CrashedChannel[], idOf: (e: Event) => number): Map<number, number[]> {
  const back = new Map<number, number[]>();
  for (const c of channels) {
    const repeated = c.definition.durability?.repeatedOnCrash?.(c.instance);
    if (repeated && repeated.length > 0) back.set(c.index, repeated.map(idOf));
  }
  return back;
}

/** What a crash did: the ledger's drops per channel, and the partial losses by ledger index. */
export interface CrashOutcome {
  dropped: { channel: string; lost: number }[];
  partial: Map<number, number[]>;
}

/**
 * The one crash of `flume simulate` and `flume replay`: the partial losses are found, `told`
 * hears them (the simulator's event histories), the ledger drops what the channels lose (crash
 * number `crash`), `settle` lets pending disk writes end, and every channel is left as a killed
 * process leaves it. The caller builds the channels again.
 */
export async function crashChannels(
  ledger: Ledger,
  channels: readonly CrashedChannel[],
  idOf: (e: Event) => number,
  opts: { crash?: number; told?: (partial: Map<number, number[]>) => void; settle?: () => Promise<void> } = {},
): Promise<CrashOutcome> {
  const partial = partialLosses(channels, idOf);
  opts.told?.(partial);
  const dropped = ledger.crash(
    channels.map((c) => c.index),
    opts.crash,
    partial,
  );
  await opts.settle?.();
  await leaveAsKilled(channels);
  return { dropped, partial };
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
