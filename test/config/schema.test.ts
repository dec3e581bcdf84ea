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

/** A group of records: `route.<id>.<field>`. */
const routes = defineComponent({
  kind: "sink",
  type: "records-example",
  doc: "A group of records.",
  props: {},
  groups: {
    routes: {
      prefix: "route.",
      doc: "route.<id>.target (required), .weight (1..10, default 1)",
      fields: { target: { type: "string", required: true, doc: "Where to" }, weight: { type: "int", min: 1, max: 10, default: 1, doc: "How much" } },
    },
  },
  create: () => null,
});

describe("groups of records", () => {
  test("one typed record per id, defaults filled in", () => {
    const { options, errors } = routes.parse({ "route.a.target": "x", "route.a.weight": "3", "route.b.target": "y" });
    expect(errors).toEqual([]);
    expect(options.routes).toEqual({ a: { target: "x", weight: 3 }, b: { target: "y", weight: 1 } });
    const weight: number = options.routes.a.weight;
    expect(weight).toBe(3);
  });

  test("a bad field is an error at its key, a missing required one at its would-be key, an unknown one a warning with what the record takes", () => {
    const { options, errors } = routes.parse({ "route.a.weight": "11", "route.b.target": "y", "route.b.wieght": "2", "route.c": "z" });
    expect(errors).toEqual([
      { key: "route.b.wieght", severity: "warning", message: "is not a setting of route.<id>, so it is ignored", hint: "route.<id> takes: target, weight" },
      { key: "route.c", severity: "warning", message: "is not a setting of route.<id>, so it is ignored", hint: "route.<id> takes: target, weight" },
      { key: "route.a.target", message: "is required: Where to" },
      { key: "route.a.weight", message: "must be at most 10, got 11" },
    ]);
    expect(Object.keys(options.routes)).toEqual(["a", "b"]);
    expect(options.routes.a.weight).toBe(1);
  });
});
