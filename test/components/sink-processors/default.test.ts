import { expect, test } from "bun:test";
import * as registry from "../../../src/components/registry.ts";
import { validateConfigText } from "../../../src/config/validate.ts";

const BASE = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1 k2", "a1.sources.r1.type = seq", "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", "a1.sinks.k1.type = null", "a1.sinks.k1.channel = c1", "a1.sinks.k2.type = null", "a1.sinks.k2.channel = c1", "a1.sinkgroups = g1"];

test("a group of two sinks with the default processor (named or not) is an error where the group lists them, and the group is dropped as Flume drops it", () => {
  for (const processor of [[], ["a1.sinkgroups.g1.processor.type = default"]]) {
    const r = validateConfigText([...BASE, "a1.sinkgroups.g1.sinks = k1 k2", ...processor, ""].join("\n"), "d.conf", {}, registry);
    expect(r.problems.map((p) => `${p.line} ${p.severity} ${p.component} ${p.key}: ${p.message} (${p.hint})`)).toEqual([
      "12 error sinkgroup g1 sinks: the default sink processor takes exactly one sink, got 2 (set a1.sinkgroups.g1.processor.type = failover or load_balance)",
    ]);
    expect(r.model?.dropped).toEqual(["dropping sinkgroup g1: the default sink processor takes exactly one sink, got 2"]);
  }
});

test("a group of one sink with the default processor is fine", () => {
  const r = validateConfigText([...BASE, "a1.sinkgroups.g1.sinks = k1", ""].join("\n"), "d.conf", {}, registry);
  expect(r.problems).toEqual([]);
  expect(r.model?.sinkGroups.get("group:g1")).toMatchObject({ name: "g1", sinks: ["k1"], configured: true });
});
