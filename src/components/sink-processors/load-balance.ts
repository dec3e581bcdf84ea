import { LoadBalancingSinkProcessor } from "../../core/sink-processors.ts";
import type { SinkProcessor, SinkSelectorPolicy } from "../../core/sink-processors.ts";
import type { Sink } from "../../core/sink.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";

export const definition = defineComponent({
  ...builtIn.loadBalanceSinkProcessor,
  doc: "Spreads batches over the group's sinks; a failing sink is skipped (and backed off).",
  props: {
    selector: { type: "enum", values: ["round_robin", "random"], default: "round_robin", doc: "Order in which sinks are tried" },
    backoff: { type: "boolean", default: false, doc: "Exclude a failed sink for an exponentially growing time" },
    "selector.maxTimeOut": { type: "int", default: 30000, min: 0, doc: "Upper bound in ms of a sink's backoff" },
  },
  create(config, ctx) {
    return (sinks: Sink[]): SinkProcessor =>
      new LoadBalancingSinkProcessor(
        sinks,
        { selector: config.selector as SinkSelectorPolicy, backoff: config.backoff, maxTimeOut: config["selector.maxTimeOut"], random: ctx.random },
        ctx.clock,
        ctx.logger,
      );
  },
});
