import { FailoverSinkProcessor } from "../../core/sink-processors.ts";
import type { SinkProcessor } from "../../core/sink-processors.ts";
import type { Sink } from "../../core/sink.ts";
import { ConfigurationError } from "../../core/errors.ts";
import { defineComponent } from "../component.ts";

export const definition = defineComponent({
  kind: "sinkprocessor",
  type: "failover",
  aliases: ["org.apache.flume.sink.FailoverSinkProcessor"],
  doc: "Sends to the live sink of highest priority; failed sinks sit out an exponential penalty.",
  props: {maxpenalty: { type: "int", default: 30000, min: 0, doc: "Maximum time in ms a failed sink sits out" }},
  groups: {priority: { prefix: "priority.", doc: "priority.<sink> = a number; higher goes first" }},
  create(config, ctx) {
    const priorities: Record<string, number> = {};
    for (const [sink, value] of Object.entries(config.priority)) {
      const n = Number(value.trim());
      if (!Number.isInteger(n)) throw new ConfigurationError(`priority.${sink}`, `expected a whole number, got "${value}"`, ctx.name);
      priorities[sink] = n;
    }
    return (sinks: Sink[]): SinkProcessor => new FailoverSinkProcessor(sinks, { priorities, maxPenalty: config.maxpenalty }, ctx.clock, ctx.logger);
  },
  validate(config) {
    return Object.entries(config.priority)
      .filter(([, v]) => !/^[-+]?\d+$/.test(v.trim()))
      .map(([k, v]) => ({ key: `priority.${k}`, message: `expected a whole number, got "${v}"` }));
  },
});
