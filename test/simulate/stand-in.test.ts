// The simulator's stand-in trait, with channel types made up here: nothing in the simulator
// names a type, so any definition declaring a stand-in is handled the same way.
import { expect, test } from "bun:test";
import { type AnyDefinition, defineComponent } from "../../src/components/component.ts";
import { lookupComponent } from "../../src/components/registry.ts";
import { SimulationUsageError } from "../../src/simulate/options.ts";
import { channelStandIn } from "../../src/simulate/stand-in.ts";

const lookup = (type: string) => lookupComponent("channel", type);

function remote(standIn: string, durable: boolean): AnyDefinition {
  return defineComponent({
    kind: "channel",
    type: "remote",
    doc: "A channel kept by a server (made up for this test).",
    props: {
      url: { type: "string", required: true, doc: "Server" },
      size: { type: "int", default: 500, roles: ["capacity"], doc: "Most events" },
      batch: { type: "int", default: 50, roles: ["transactionCapacity"], doc: "Most events per transaction" },
      wait: { type: "int", default: 7, roles: ["keepAlive"], doc: "Seconds a commit waits" },
    },
    simulation: { standIn },
    ...(durable ? { durability: { crash() {} } } : {}),
    create(): never {
      throw new Error("needs a server");
    },
  }) as AnyDefinition;
}

test("a durable type standing in by the file channel: its role values under the file channel's keys, storage of its own per channel", () => {
  const def = remote("file", true);
  const { options } = def.parse({ url: "x://1", size: "900", batch: "30", wait: "2" });
  const a = channelStandIn("c1", def, options, lookup);
  const b = channelStandIn("c2", def, options, lookup);
  expect(a?.type).toBe("file");
  expect(a?.definition).toBe(lookup("file"));
  expect(a?.options).toMatchObject({ capacity: 900, transactionCapacity: 30, "keep-alive": 2 });
  expect(a?.options.checkpointDir).not.toBe(b?.options.checkpointDir);
  expect(a?.options.dataDirs).not.toBe(b?.options.dataDirs);
});

test("a type that runs as it is has no stand-in", () => {
  const memory = lookup("memory") as AnyDefinition;
  expect(channelStandIn("c1", memory, memory.parse({}).options, lookup)).toBeNull();
});

test("a stand-in that would change what a crash keeps, or is no channel type, is refused naming the channel", () => {
  const durableByMemory = remote("memory", true);
  expect(() => channelStandIn("c1", durableByMemory, durableByMemory.parse({ url: "u" }).options, lookup)).toThrow(SimulationUsageError);
  expect(() => channelStandIn("c1", durableByMemory, durableByMemory.parse({ url: "u" }).options, lookup)).toThrow(/channel c1 \(type remote\) keeps committed events in a crash, its stand-in memory loses committed events/);
  const volatileByFile = remote("file", false);
  expect(() => channelStandIn("c1", volatileByFile, volatileByFile.parse({ url: "u" }).options, lookup)).toThrow(/loses committed events in a crash, its stand-in file keeps committed events/);
  const partial = remote("SPILLABLEMEMORY", true);
  expect(() => channelStandIn("c1", partial, partial.parse({ url: "u" }).options, lookup)).toThrow(/its stand-in SPILLABLEMEMORY keeps part of its committed events/);
  const unknown = remote("nowhere", true);
  expect(() => channelStandIn("c1", unknown, unknown.parse({ url: "u" }).options, lookup)).toThrow(/names "nowhere" as its simulated stand-in, which is not a channel type/);
});

test("role values the stand-in refuses are a usage error naming the property", () => {
  const def = remote("file", true);
  const { options } = def.parse({ url: "u", size: "10", batch: "30" });
  expect(() => channelStandIn("c1", def, options, lookup)).toThrow(/cannot be simulated by a file channel: transactionCapacity/);
});

test("every registered channel type that declares a stand-in names a registered type as durable as itself", async () => {
  const { allComponents } = await import("../../src/components/registry.ts");
  const declaring = allComponents().filter((d) => d.schema.kind === "channel" && d.simulation);
  expect(declaring.map((d) => d.schema.type)).toContain("jetstream");
  for (const d of declaring) {
    const stand = lookup(d.simulation?.standIn ?? "");
    const traits = (x: typeof d | undefined) => ({ durable: x?.durability !== undefined, partly: x?.durability?.lostOnCrash !== undefined, stopLoses: x?.durability?.lostOnStop !== undefined });
    expect({ type: d.schema.type, standIn: stand?.schema.type, ...traits(stand) }).toEqual({ type: d.schema.type, standIn: d.simulation?.standIn, ...traits(d) });
  }
});
