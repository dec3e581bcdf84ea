import { DefaultSinkProcessor } from "../../core/sink-processors.ts";
import type { SinkProcessor } from "../../core/sink-processors.ts";
import type { Sink } from "../../core/sink.ts";
import { ConfigurationError } from "../../core/errors.ts";
import type { ComponentDefinition } from "../component.ts";

export const definition: ComponentDefinition<(sinks: Sink[]) => SinkProcessor> = {
  schema: {
    kind: "sinkprocessor",
    type: "default",
    aliases: ["org.apache.flume.sink.DefaultSinkProcessor"],
    doc: "A single sink, no failover or load balancing.",
    props: [],
  },
  create() {
    return (sinks) => {
      if (sinks.length !== 1) throw new ConfigurationError("sinks", `the default sink processor takes exactly one sink, got ${sinks.length}; use failover or load_balance`);
      return new DefaultSinkProcessor(sinks[0]);
    };
  },
};
