/**
 * Channel types whose instances need more than the process (a server) declare a stand-in in
 * their definition (ComponentDefinition.simulation). `flume simulate` and `flume replay` build
 * the stand-in type in their place: nothing here knows any type by name. The stand-in gets the
 * values of the properties that play a role (capacity, transactionCapacity, keepAlive) under
 * its own keys, and storage paths of its own (mapped to scratch directories by the caller's
 * storagePath); it must be as durable as the type it stands for, so a simulated crash keeps
 * exactly what a real one keeps.
 */
import type { AnyDefinition } from "../components/component.ts";
import { type AnyOptions, capacityOf, keysWithRole, keyWithRole, type Role } from "../config/schema.ts";
import { SimulationUsageError } from "./options.ts";

/** The properties whose values a stand-in takes over (and capacity), whatever either type calls them. */
const CARRIED: readonly Role[] = ["transactionCapacity", "keepAlive"];

/** What a channel type keeps through a crash and a clean stop, as its definition declares it. */
function survival(d: AnyDefinition): string {
  const durability = d.durability;
  if (!durability) return "loses committed events";
  if (durability.lostOnCrash) return durability.lostOnStop ? "keeps part of its committed events (in a stop too)" : "keeps part of its committed events";
  return durability.lostOnStop ? "keeps committed events (not in a stop)" : "keeps committed events";
}

export interface ChannelStandIn {
  /** The stand-in's type name. */
  type: string;
  definition: AnyDefinition;
  options: AnyOptions;
}

/**
 * The stand-in for channel `name` of this definition, or null when the type runs as it is.
 * Throws SimulationUsageError when the declared stand-in cannot stand in for it.
 */
export function channelStandIn(name: string, definition: AnyDefinition, options: AnyOptions, lookup: (type: string) => AnyDefinition | undefined): ChannelStandIn | null {
  const declared = definition.simulation;
  if (!declared) return null;
  const what = `channel ${name} (type ${definition.schema.type})`;
  const stand = lookup(declared.standIn);
  if (!stand || stand.schema.kind !== "channel") throw new SimulationUsageError(`${what} names "${declared.standIn}" as its simulated stand-in, which is not a channel type`);
  if (stand.simulation) throw new SimulationUsageError(`${what}: its stand-in ${stand.schema.type} needs a stand-in itself`);
  const keeps = survival(definition);
  if (survival(stand) !== keeps) {
    throw new SimulationUsageError(`${what} ${keeps} in a crash, its stand-in ${stand.schema.type} ${survival(stand)}: a simulation would misreport loss`);
  }
  const raw: Record<string, string> = {};
  // Capacity is the sum of the capacity properties (capacityOf); a stand-in takes it in one.
  const standCapacity = keysWithRole(stand.schema, "capacity");
  if (standCapacity.length > 1) throw new SimulationUsageError(`${what}: its stand-in ${stand.schema.type} splits capacity over ${standCapacity.join(" and ")}; a stand-in needs one capacity property`);
  const capacity = capacityOf(definition.schema, options);
  if (standCapacity.length === 1 && capacity !== undefined) raw[standCapacity[0]] = String(capacity);
  for (const role of CARRIED) {
    const from = keyWithRole(definition.schema, role);
    const to = keyWithRole(stand.schema, role);
    const value = from === undefined ? undefined : options[from];
    if (to !== undefined && typeof value === "number") raw[to] = String(value);
  }
  // One storage name per channel and property; the caller's storagePath maps each to a scratch directory.
  for (const p of stand.schema.props) if (p.type === "path" && p.default !== undefined) raw[p.key] = `stand-in/${name}/${p.key}`;
  const parsed = stand.parse(raw);
  const problems = [...parsed.errors, ...(stand.validate?.(parsed.options) ?? [])];
  if (problems.length > 0) {
    throw new SimulationUsageError(`${what} cannot be simulated by a ${stand.schema.type} channel: ${problems.map((p) => `${p.key} ${p.message}`).join("; ")}`);
  }
  return { type: stand.schema.type, definition: stand, options: parsed.options };
}
