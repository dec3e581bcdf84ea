import { DEFAULT_BYTE_CAPACITY, MemoryChannel } from "../../core/memory-channel.ts";
import type { ComponentDefinition } from "../component.ts";

/** Flume's memory channel; the queue itself lives in the core. */
export const definition: ComponentDefinition<MemoryChannel> = {
  schema: {
    kind: "channel",
    type: "memory",
    aliases: ["org.apache.flume.channel.MemoryChannel"],
    doc: "Events in an in-memory queue: fast, lost when the process dies.",
    props: [
      { key: "capacity", type: "int", default: 100, min: 1, doc: "Maximum number of events stored in the channel" },
      { key: "transactionCapacity", type: "int", default: 100, min: 1, doc: "Maximum number of events per put or take transaction (at most capacity)" },
      {
        key: "byteCapacity",
        type: "int",
        default: DEFAULT_BYTE_CAPACITY,
        min: 0,
        doc: "Maximum total bytes of event bodies (Flume: 80% of the JVM heap; here 1 GiB); 0 means unbounded",
      },
      { key: "byteCapacityBufferPercentage", type: "int", default: 20, min: 0, max: 100, doc: "Percent of byteCapacity kept as headroom for headers" },
      { key: "keep-alive", type: "int", default: 3, min: 0, doc: "Seconds a commit waits for space before failing" },
    ],
  },
  create(config, ctx) {
    return new MemoryChannel(
      ctx.name,
      {
        capacity: config.int("capacity"),
        transactionCapacity: config.int("transactionCapacity"),
        byteCapacity: config.int("byteCapacity"),
        byteCapacityBufferPercentage: config.int("byteCapacityBufferPercentage"),
        keepAlive: config.int("keep-alive"),
      },
      ctx.clock,
      ctx.logger,
    );
  },
  validate(config) {
    if (config.int("transactionCapacity") > config.int("capacity")) {
      return [
        {
          key: "transactionCapacity",
          message: `transactionCapacity ${config.int("transactionCapacity")} is larger than capacity ${config.int("capacity")}; lower it or raise capacity`,
        },
      ];
    }
    return [];
  },
};
