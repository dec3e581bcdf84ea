import { DefaultSinkProcessor } from "../../core/sink-processors.ts";
import type { SinkProcessor } from "../../core/sink-processors.ts";
import type { Sink } from "../../core/sink.ts";
import { ConfigurationError } from "../../core/errors.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";

export const definition = defineComponent({
  ...builtIn.defaultSinkProcessor,
  doc: "A single sink, no failover or load balancing.",
  props: {},
  // Flume's DefaultSinkProcessor refuses more than one sink, and the group is dropped.
  validate: (_options, context) =>
    (context?.sinks?.length ?? 1) > 1 ? [{ key: "sinks", atOwner: true, message: `the default sink processor takes exactly one sink, got ${context?.sinks?.length}`, hint: "set {owner}processor.type = failover or load_balance" }] : [],
  create() {
    return (sinks: Sink[]): SinkProcessor => {
      if (sinks.length !== 1) throw new ConfigurationError("sinks", `the default sink processor takes exactly one sink, got ${sinks.length}; use failover or load_balance`);
      return new DefaultSinkProcessor(sinks[0]);
    };
  },
});
