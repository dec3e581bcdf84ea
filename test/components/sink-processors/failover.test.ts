import { describe, expect, test } from "bun:test";
import { definition as failover } from "../../../src/components/sink-processors/failover.ts";
import * as registry from "../../../src/components/registry.ts";
import { validateConfigText } from "../../../src/config/validate.ts";

/** seq -> memory -> null sinks k1 k2 in failover group g1, with `extra` lines (from line 14). */
function load(extra: string[]) {
  const lines = [
    "a1.sources = r1",
    "a1.channels = c1",
    "a1.sinks = k1 k2",
    "a1.sources.r1.type = seq",
    "a1.sources.r1.channels = c1",
    "a1.channels.c1.type = memory",
    "a1.sinks.k1.type = null",
    "a1.sinks.k1.channel = c1",
    "a1.sinks.k2.type = null",
    "a1.sinks.k2.channel = c1",
    "a1.sinkgroups = g1",
    "a1.sinkgroups.g1.sinks = k1 k2",
    "a1.sinkgroups.g1.processor.type = failover",
    ...extra,
  ];
  return validateConfigText(lines.join("\n") + "\n", "f.conf", {}, registry);
}

function problems(extra: string[]): string[] {
  return load(extra).problems.map((p) => `${p.file}:${p.line} ${p.severity} ${p.component} ${p.key}: ${p.message}${p.hint ? ` (${p.hint})` : ""}`);
}

describe("failover priorities: a typed group of the schema", () => {
  test("each priority is read as a whole number: the processor gets numbers", () => {
    const { options, errors } = failover.parse({ "priority.k1": "10", "priority.k2": " -5 " });
    expect(errors).toEqual([]);
    expect(options.priority).toEqual({ k1: 10, k2: -5 });
  });

  test("a priority that is no whole number is an error at its own line, and the group is dropped as Flume drops it", () => {
    const bad = ["a1.sinkgroups.g1.processor.priority.k1 = high", "a1.sinkgroups.g1.processor.priority.k2 = 5"];
    expect(problems(bad)).toEqual(['f.conf:14 error sinkgroup g1 processor.priority.k1: expected a whole number, got "high"']);
    expect(load(bad).model?.dropped).toEqual(['dropping sinkgroup g1: expected a whole number, got "high"']);
  });

  test("its own checks against the group's sinks, declared in failover.ts: a priority for a sink outside the group, two sinks on one priority", () => {
    expect(problems(["a1.sinkgroups.g1.processor.priority.k3 = 1", "a1.sinkgroups.g1.processor.priority.k1 = 7", "a1.sinkgroups.g1.processor.priority.k2 = 7"])).toEqual([
      "f.conf:14 warning sinkgroup g1 processor.priority.k3: sink k3 is not in this group (k1 k2) (fix the sink name or add the sink to sinks)",
      "f.conf:16 warning sinkgroup g1 processor.priority.k2: sink k2 has the same priority (7) as sink k1, so the failover processor leaves it out and it never runs (give each sink its own a1.sinkgroups.g1.processor.priority.k2)",
    ]);
  });

  test("distinct priorities, configured or assigned, are fine", () => {
    expect(problems(["a1.sinkgroups.g1.processor.priority.k1 = 10", "a1.sinkgroups.g1.processor.priority.k2 = 5"])).toEqual([]);
    expect(problems([])).toEqual([]);
  });

  test("a priority Flume assigns (-1, -2, ... in the group's order) that collides is reported where the group lists the sink", () => {
    expect(problems(["a1.sinkgroups.g1.processor.priority.k1 = -1"])).toEqual([
      "f.conf:12 warning sinkgroup g1 sinks: sink k2 has the same priority (-1) as sink k1, so the failover processor leaves it out and it never runs (give each sink its own a1.sinkgroups.g1.processor.priority.k2)",
    ]);
  });
});
