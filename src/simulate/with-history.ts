import type { Cause } from "./causes.ts";
import { runSimulation } from "./engine.ts";
import type { SimulationOptions } from "./options.ts";
import type { SimulationHooks, SimulationResult } from "./simulation-result.ts";

/**
 * Runs the simulation; then, when something is worth telling (the first lost event, the
 * first duplicate of each cause, the events asked for with --explain), runs it again with the
 * same seed watching those events, to tell their histories (a run is deterministic, so the
 * second run is the same run).
 */
export async function simulateWithHistory(o: SimulationOptions, hooks: SimulationHooks = {}, explain: readonly number[] = []): Promise<SimulationResult> {
  const result = await runSimulation(o, hooks);
  const ids = new Set<number>(explain);
  if (result.firstLost) ids.add(result.firstLost.id);
  for (const d of result.duplicateCauses) if (d.example !== undefined) ids.add(d.example);
  if (ids.size === 0) return result;
  const again = await runSimulation(o, { watch: [...ids] });
  if (result.firstLost) result.firstLost.history = again.firstLost?.history ?? [];
  const causesOf = new Map<number, Cause[]>();
  for (const d of result.duplicateCauses) if (d.example !== undefined && d.cause !== "unexplained") causesOf.set(d.example, [...(causesOf.get(d.example) ?? []), d.cause]);
  result.histories = again.histories.map((h) => (causesOf.has(h.id) ? { ...h, causes: causesOf.get(h.id) } : h));
  return result;
}
