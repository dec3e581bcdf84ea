import { describe, expect, test } from "bun:test";
import { defineComponent } from "../../src/components/component.ts";
import { parseOptions } from "../../src/config/schema.ts";

/** A component with one group of each sort: typed numbers, an enum, and plain strings. */
const def = defineComponent({
  kind: "sink",
  type: "groups-example",
  doc: "Groups of every sort.",
  props: { batchSize: { type: "int", default: 10, doc: "Events per batch" } },
  groups: {
    weights: { prefix: "weight.", doc: "weight.<name> = 1..100", value: { type: "int", min: 1, max: 100 } },
    modes: { prefix: "mode.", doc: "mode.<name> = fast|safe", value: { type: "enum", values: ["fast", "safe"] } },
    settings: { prefix: "producer.", doc: "producer.<setting> = anything, passed on as written" },
  },
  create: () => null,
});

describe("typed groups", () => {
  test("values under a typed group's prefix are parsed by its value spec; an untyped group keeps the strings", () => {
    const { options, errors } = def.parse({ "weight.a": "5", "weight.b": "100", "mode.x": "SAFE", "producer.acks": "all", "producer.linger.ms": " 5" });
    expect(errors).toEqual([]);
    expect(options.weights).toEqual({ a: 5, b: 100 });
    expect(options.modes).toEqual({ x: "safe" });
    expect(options.settings).toEqual({ acks: "all", "linger.ms": " 5" });
    // The options are typed from the declaration: numbers for weights, the enum's values for modes.
    const total: number = Object.values(options.weights).reduce((a, b) => a + b, 0);
    const mode: "fast" | "safe" | undefined = options.modes.x;
    expect([total, mode]).toEqual([105, "safe"]);
  });

  test("a bad value is an error at its full key, as a property's, and stays out of the group", () => {
    const { options, errors } = def.parse({ "weight.a": "0", "weight.b": "lots", "mode.x": "slow", "weight.c": "7" });
    expect(errors).toEqual([
      { key: "weight.a", message: "must be at least 1, got 0" },
      { key: "weight.b", message: 'expected a whole number, got "lots"' },
      { key: "mode.x", message: 'expected one of fast, safe, got "slow"' },
    ]);
    expect(options.weights).toEqual({ c: 7 });
    expect(options.modes).toEqual({});
  });

  test("a group the configuration does not use is an empty record", () => {
    expect(parseOptions(def.schema, {}).options).toEqual({ batchSize: 10, weights: {}, modes: {}, settings: {} });
  });
});
