import { LoadBalancingSinkProcessor } from "../../core/sink-processors.ts";
import type { SinkProcessor, SinkSelectorPolicy } from "../../core/sink-processors.ts";
import type { Sink } from "../../core/sink.ts";
import type { ComponentDefinition } from "../component.ts";

export const definition: ComponentDefinition<(sinks: Sink[]) => SinkProcessor> = {
  schema: {
    kind: "sinkprocessor",
    type: "load_balance",
    aliases: ["org.apache.flume.sink.LoadBalancingSinkProcessor"],
    doc: "Spreads batches over the group's sinks; a failing sink is skipped (and backed off).",
    props: [
      { key: "selector", type: "enum", values: ["round_robin", "random"], default: "round_robin", doc: "Order in which sinks are tried" },
      { key: "backoff", type: "boolean", default: false, doc: "Exclude a failed sink for an exponentially growing time" },
      { key: "selector.maxTimeOut", type: "int", default: 30000, min: 0, doc: "Upper bound in ms of a sink's backoff" },
    ],
  },
  create(config, ctx) {
    return (sinks) =>
      new LoadBalancingSinkProcessor(
        sinks,
        { selector: config.string("selector") as SinkSelectorPolicy, backoff: config.boolean("backoff"), maxTimeOut: config.int("selector.maxTimeOut") },
        ctx.clock,
        ctx.logger,
      );
  },
};
