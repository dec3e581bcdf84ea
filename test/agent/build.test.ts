import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { buildAgent } from "../../src/agent/build.ts";
import type { AnyDefinition } from "../../src/components/component.ts";
import * as registry from "../../src/components/registry.ts";
import { loadConfigText } from "../../src/config/load.ts";
import type { AgentModel } from "../../src/config/model.ts";
import { systemClock } from "../../src/core/clock.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { ROOT, tempDir } from "../support/helpers.ts";

/** A definition whose parse fails: building with it proves no configuration is read again. */
function sealed(def: AnyDefinition): AnyDefinition {
  return {
    ...def,
    parse: () => {
      throw new Error(`${def.schema.kind} ${def.schema.type}: configuration parsed again after the model was built`);
    },
  };
}

/** The model with every definition it holds (and every one it could look up) sealed. */
function seal(model: AgentModel): AgentModel {
  const lookup = model.lookup;
  const each = <M extends { definition: AnyDefinition }>(m: Map<string, M>) => new Map([...m].map(([k, v]) => [k, { ...v, definition: sealed(v.definition) }]));
  return {
    ...model,
    channels: each(model.channels),
    sources: each(model.sources),
    sinks: each(model.sinks),
    lookup: (kind, type) => {
      const def = lookup?.(kind, type);
      return def && sealed(def);
    },
  };
}

describe("building an agent from its model", () => {
  test("parts that properties name (a serializer, a handler, a deserializer) come parsed from the configuration's check, so the build reads no raw key again", async () => {
    const { dir, cleanup } = tempDir("build-sealed-");
    mkdirSync(path.join(dir, "spool"));
    mkdirSync(path.join(dir, "roll"));
    const text = [
      "a1.sources = r1 r2",
      "a1.channels = c1",
      "a1.sinks = k1 k2",
      "a1.channels.c1.type = memory",
      "a1.sources.r1.type = spooldir",
      `a1.sources.r1.spoolDir = ${path.join(dir, "spool")}`,
      "a1.sources.r1.deserializer = LINE",
      "a1.sources.r1.deserializer.maxLineLength = 100",
      "a1.sources.r1.channels = c1",
      "a1.sources.r2.type = http",
      "a1.sources.r2.port = 0",
      "a1.sources.r2.handler = org.apache.flume.source.http.BLOBHandler",
      "a1.sources.r2.handler.maxBlobLength = 10",
      "a1.sources.r2.channels = c1",
      "a1.sinks.k1.type = file_roll",
      `a1.sinks.k1.sink.directory = ${path.join(dir, "roll")}`,
      "a1.sinks.k1.sink.serializer = HEADER_AND_TEXT",
      "a1.sinks.k1.sink.serializer.appendNewline = false",
      "a1.sinks.k1.channel = c1",
      "a1.sinks.k2.type = hdfs",
      `a1.sinks.k2.hdfs.path = file://${path.join(dir, "hdfs")}`,
      "a1.sinks.k2.serializer = TEXT",
      "a1.sinks.k2.channel = c1",
    ].join("\n");
    const loaded = await loadConfigText(text, "sealed.conf", { agentName: "a1" }, registry);
    expect(loaded.problems.filter((p) => p.severity === "error")).toEqual([]);
    const model = loaded.model as AgentModel;
    expect([...(model.sinks.get("k1")?.named?.keys() ?? [])]).toEqual(["sink.serializer"]);
    expect(model.sinks.get("k1")?.named?.get("sink.serializer")?.options.appendNewline).toBe(false);
    expect([...(model.sources.get("r2")?.named?.keys() ?? [])]).toEqual(["handler"]);
    const built = buildAgent(seal(model), { agentName: "a1", clock: systemClock, logger: () => silentLogger });
    expect([...built.sources.keys()].sort()).toEqual(["r1", "r2"]);
    expect([...built.runners.values()].flatMap((r) => r.sinks.map((s) => s.name)).sort()).toEqual(["k1", "k2"]);
    cleanup();
  });

  test("the builder and the agent take the model as it is: from config/ they import types only", () => {
    for (const file of ["src/agent/build.ts", "src/agent/agent.ts"]) {
      const imports = readFileSync(path.join(ROOT, file), "utf8").match(/^import .* from "\.\.\/config\/[^"]+";$/gm) ?? [];
      expect(imports.length).toBeGreaterThan(0);
      expect(imports.filter((line) => !line.startsWith("import type "))).toEqual([]);
    }
  });
});
