import { describe, expect, test } from "bun:test";
import * as registry from "../../src/components/registry.ts";
import { validateConfigText } from "../../src/config/validate.ts";

const base = [
  "a1.sources = r1",
  "a1.channels = c1",
  "a1.sinks = k1 k2 k3",
  "a1.sources.r1.type = seq",
  "a1.sources.r1.channels = c1",
  "a1.channels.c1.type = memory",
  "a1.sinks.k1.type = null",
  "a1.sinks.k1.channel = c1",
  "a1.sinks.k2.type = null",
  "a1.sinks.k2.channel = c1",
  "a1.sinks.k3.type = null",
  "a1.sinks.k3.channel = c1",
  "a1.sinkgroups = g1",
  "a1.sinkgroups.g1.sinks = k1 k2 k3",
  "a1.sinkgroups.g1.processor.type = failover",
];

function problems(extra: string[]) {
  return validateConfigText([...base, ...extra].join("\n") + "\n", "f.conf", {}, registry).problems.map((p) => `${p.line} ${p.severity} ${p.component} ${p.key}: ${p.message}`);
}

describe("failover sink groups", () => {
  test("two sinks with the same priority: the one Flume drops (it never gets a batch) is reported", () => {
    const p = problems(["a1.sinkgroups.g1.processor.priority.k1 = 5", "a1.sinkgroups.g1.processor.priority.k2 = 5", "a1.sinkgroups.g1.processor.priority.k3 = 1"]);
    expect(p.filter((x) => x.includes("priority"))).toEqual([
      "17 warning sinkgroup g1 processor.priority.k2: sink k2 has the same priority (5) as sink k1, so the failover processor leaves it out and it never runs",
    ]);
  });

  test("a sink without priority gets -1, -2, ... (as Flume) and can collide with an explicit one", () => {
    const p = problems(["a1.sinkgroups.g1.processor.priority.k1 = -1"]);
    expect(p.filter((x) => x.includes("same priority"))).toEqual([
      "14 warning sinkgroup g1 sinks: sink k2 has the same priority (-1) as sink k1, so the failover processor leaves it out and it never runs",
    ]);
  });

  test("distinct priorities (explicit or implied) are fine", () => {
    expect(problems(["a1.sinkgroups.g1.processor.priority.k1 = 10", "a1.sinkgroups.g1.processor.priority.k2 = 5"]).filter((x) => x.includes("same priority"))).toEqual([]);
  });
});

describe("problem reports name each problem once, relative to its component", () => {
  test("an unresolved variable is one error, not also a bad value; a duplicate key's key is relative", async () => {
    const { validateConfigText } = await import("../../src/config/validate.ts");
    const registry = await import("../../src/components/registry.ts");
    const text = "a1.sources = r1\na1.channels = c1\na1.sources.r1.type = seq\na1.sources.r1.channels = c1\na1.channels.c1.type = memory\na1.channels.c1.capacity = ${env:FLUME_TS_SURELY_UNSET}\na1.channels.c1.keep-alive = 1\na1.channels.c1.keep-alive = 2\n";
    const r = validateConfigText(text, "x.conf", { env: {} }, registry);
    const capacity = r.problems.filter((p) => p.key === "capacity");
    expect(capacity.map((p) => p.code)).toEqual(["unresolved-variable"]);
    const dup = r.problems.find((p) => p.code === "duplicate-key");
    expect(dup).toMatchObject({ line: 8, component: "channel c1", key: "keep-alive" });
  });
});
