import { DEFAULT_BYTE_CAPACITY, MemoryChannel } from "../../core/memory-channel.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";

/** Flume's memory channel; the queue itself lives in the core. */
export const definition = defineComponent({
  ...builtIn.memoryChannel,
  doc: "Events in an in-memory queue: fast, lost when the process dies.",
  props: {
    capacity: { type: "int", default: 100, min: 1, roles: ["capacity"], doc: "Maximum number of events stored in the channel" },
    transactionCapacity: { type: "int", default: 100, min: 1, roles: ["transactionCapacity"], doc: "Maximum number of events per put or take transaction (at most capacity)" },
    byteCapacity: {
      type: "int",
      default: DEFAULT_BYTE_CAPACITY,
      min: 0,
      doc: "Maximum total bytes of event bodies (Flume: 80% of the JVM heap; here 1 GiB); 0 means unbounded",
    },
    byteCapacityBufferPercentage: { type: "int", default: 20, min: 0, max: 100, doc: "Percent of byteCapacity kept as headroom for headers" },
    "keep-alive": { type: "int", default: 3, min: 0, roles: ["keepAlive"], doc: "Seconds a commit waits for space before failing" },
  },
  create(o, ctx) {
    return new MemoryChannel(ctx.name, settings(o), ctx.clock, ctx.logger);
  },
  // A reload resizes the queue in place: the events it holds stay.
  reconfigure: (channel, o) => () => channel.reconfigure(settings(o)),
});

function settings(o: { capacity: number; transactionCapacity: number; byteCapacity: number; byteCapacityBufferPercentage: number; "keep-alive": number }) {
  return {
    capacity: o.capacity,
    transactionCapacity: o.transactionCapacity,
    byteCapacity: o.byteCapacity,
    byteCapacityBufferPercentage: o.byteCapacityBufferPercentage,
    keepAlive: o["keep-alive"],
  };
}
