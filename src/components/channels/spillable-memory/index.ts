/**
 * `type = SPILLABLEMEMORY`: Flume's spillable memory channel, a memory queue with a file channel
 * as its overflow (see spillable-memory-channel.ts). The overflow takes the file channel's own
 * properties (checkpointDir, dataDirs, ...) and its code: this file only adds the memory part.
 */
import { DEFAULT_BYTE_CAPACITY } from "../../../core/memory-channel.ts";
import { defineComponent, type OptionsOfDefinition } from "../../component.ts";
import { builtIn } from "../../registry.ts";
import { definition as fileChannel, type FileChannel } from "../file/index.ts";
import { SpillableMemoryChannel } from "./spillable-memory-channel.ts";

type FileOptions = OptionsOfDefinition<typeof fileChannel>;
/** File channel properties this channel sets itself: capacity is overflowCapacity; keep-alive is its own. */
const OVERRIDDEN = ["capacity", "keep-alive"] as const;
type OverflowKey = Exclude<keyof FileOptions, (typeof OVERRIDDEN)[number] | "encryption">;
/** The declaration that parses into a V, so the options type says what the file channel's props hold. */
type PropFor<V> = undefined extends V
  ? { type: "path"; doc: string }
  : V extends number
    ? { type: "int"; default: number; doc: string }
    : V extends boolean
      ? { type: "boolean"; default: boolean; doc: string }
      : { type: "string"; default: string; doc: string };

/** The file channel's properties, as it declares them, for the overflow. */
const OVERFLOW_PROPS = Object.fromEntries(
  fileChannel.schema.props.filter((p) => !(OVERRIDDEN as readonly string[]).includes(p.key)).map(({ key, ...prop }) => [key, prop]),
) as unknown as { readonly [K in OverflowKey]: PropFor<FileOptions[K]> };
const ENCRYPTION = fileChannel.schema.prefixes?.find((g) => g.name === "encryption") ?? { prefix: "encryption.", doc: "Flume's data file encryption: not supported" };

export const definition = defineComponent({
  ...builtIn.spillableMemoryChannel,
  doc: "Events in memory while it has room, beyond it in a file channel on disk; after a crash only the overflowed events are back.",
  props: {
    memoryCapacity: { type: "int", default: 10000, min: 0, roles: ["capacity"], doc: "Maximum number of events in the memory queue; 0 keeps every event on disk" },
    overflowCapacity: { type: "int", default: 100000000, min: 0, roles: ["capacity"], doc: "Maximum number of events in the overflow on disk; 0 disables the overflow (a memory channel)" },
    overflowTimeout: { type: "int", default: 3, min: 0, doc: "Seconds a commit that does not fit in memory waits for room there before it spills to disk" },
    overflowDeactivationThreshold: { type: "int", default: 5, min: 0, max: 100, doc: "Percent of memory that must be free again before commits stop spilling at once" },
    byteCapacity: { type: "int", default: DEFAULT_BYTE_CAPACITY, min: 0, doc: "Maximum bytes of event bodies in memory (Flume: 80% of the JVM heap; here 1 GiB); 0 means unbounded" },
    byteCapacityBufferPercentage: { type: "int", default: 20, min: 0, max: 100, doc: "Percent of byteCapacity kept as headroom for headers" },
    avgEventSize: { type: "int", default: 500, min: 1, doc: "Estimated average event body size in bytes; memory use is counted in units of it" },
    "keep-alive": { type: "int", default: 3, min: 0, roles: ["keepAlive"], doc: "Seconds a commit waits for room when memory and overflow are both full, then fails" },
    ...OVERFLOW_PROPS,
  },
  groups: { encryption: { prefix: ENCRYPTION.prefix, doc: ENCRYPTION.doc } },
  durability: {
    crash: (channel: SpillableMemoryChannel) => channel.crash(),
    lostOnCrash: (channel) => channel.memoryEvents(),
    lostOnStop: (channel) => channel.lostOnStop(),
  },
  // The overflow's directories are the file channel's: held the same way.
  claims: (o, ctx) => (o.overflowCapacity > 0 ? (fileChannel.claims?.(overflowOptions(o), ctx) ?? []) : []),
  validate(o) {
    if (o.memoryCapacity === 0 && o.overflowCapacity === 0) {
      return [{ key: "overflowCapacity", message: "cannot be 0 when memoryCapacity is 0 too: the channel could hold no event (Flume would use 100000000)" }];
    }
    if (o.overflowCapacity === 0) return [];
    // The overflow's own checks; its transactionCapacity is checked against the sum of both capacities instead.
    return (fileChannel.validate?.(overflowOptions(o)) ?? []).filter((e) => e.key !== "transactionCapacity");
  },
  create(o, ctx) {
    const overflow = o.overflowCapacity > 0 ? (fileChannel.create(overflowOptions(o), ctx) as FileChannel) : null;
    const settings = {
      memoryCapacity: o.memoryCapacity,
      overflowCapacity: o.overflowCapacity,
      transactionCapacity: o.transactionCapacity,
      overflowTimeout: o.overflowTimeout,
      overflowDeactivationThreshold: o.overflowDeactivationThreshold,
      byteCapacity: o.byteCapacity,
      byteCapacityBufferPercentage: o.byteCapacityBufferPercentage,
      avgEventSize: o.avgEventSize,
      keepAlive: o["keep-alive"],
    };
    return new SpillableMemoryChannel(ctx.name, settings, overflow, { clock: ctx.clock, logger: ctx.logger });
  },
});

/**
 * The overflow's file channel options: ours, with capacity overflowCapacity and no wait of its
 * own (this channel waits); a transaction may hold the whole memory queue, which a clean stop
 * writes to the overflow in one transaction.
 */
function overflowOptions(o: { overflowCapacity: number; memoryCapacity: number; transactionCapacity: number } & Omit<FileOptions, "capacity" | "keep-alive">): FileOptions {
  return { ...o, capacity: o.overflowCapacity, "keep-alive": 0, transactionCapacity: Math.max(o.transactionCapacity, o.memoryCapacity) };
}
