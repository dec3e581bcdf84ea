import { FailoverSinkProcessor } from "../../core/sink-processors.ts";
import type { SinkProcessor } from "../../core/sink-processors.ts";
import type { Sink } from "../../core/sink.ts";
import type { PropError } from "../../config/schema.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";

/**
 * Each sink's priority as Flume's FailoverSinkProcessor assigns them: the configured one, else
 * -1, -2, ... in the group's order.
 */
function priorities(configured: Readonly<Record<string, number>>, sinks: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  let next = 0;
  for (const s of sinks) if (!out.has(s)) out.set(s, configured[s] ?? --next);
  return out;
}

export const definition = defineComponent({
  ...builtIn.failoverSinkProcessor,
  doc: "Sends to the live sink of highest priority; failed sinks sit out an exponential penalty.",
  props: { maxpenalty: { type: "int", default: 30000, min: 0, doc: "Maximum time in ms a failed sink sits out" } },
  groups: { priority: { prefix: "priority.", doc: "priority.<sink> = a whole number; higher goes first", value: { type: "int" } } },
  create(config, ctx) {
    return (sinks: Sink[]): SinkProcessor => new FailoverSinkProcessor(sinks, { priorities: { ...config.priority }, maxPenalty: config.maxpenalty }, ctx.clock, ctx.logger);
  },
  validate(config, context) {
    const sinks = context?.sinks ?? [];
    const problems: PropError[] = [];
    for (const sink of Object.keys(config.priority)) {
      if (!sinks.includes(sink)) problems.push({ key: `priority.${sink}`, severity: "warning", message: `sink ${sink} is not in this group (${sinks.join(" ") || "none"})`, hint: "fix the sink name or add the sink to sinks" });
    }
    // Flume keeps one sink per priority: a sink whose priority another holds never runs.
    const holders = new Map<number, string>();
    for (const [sink, p] of priorities(config.priority, sinks)) {
      const holder = holders.get(p);
      if (holder === undefined) {
        holders.set(p, sink);
        continue;
      }
      // A priority Flume assigned is reported where the group lists the sink.
      const at = sink in config.priority ? { key: `priority.${sink}` } : { key: "sinks", atOwner: true };
      problems.push({ ...at, severity: "warning", message: `sink ${sink} has the same priority (${p}) as sink ${holder}, so the failover processor leaves it out and it never runs`, hint: `give each sink its own {owner}processor.priority.${sink}` });
    }
    return problems;
  },
});
