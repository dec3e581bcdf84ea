import { describe, expect, test } from "bun:test";
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import * as registry from "../../src/components/registry.ts";
import { ConfigReadError, loadConfigFile, loadConfigMap, loadConfigText, loadEveryAgentText, readConfigFile } from "../../src/config/load.ts";
import { ROOT, tempDir } from "../support/helpers.ts";

const PIPELINE = ["sources = r1", "channels = c1", "sinks = k1", "sources.r1.type = seq", "sources.r1.channels = c1", "channels.c1.type = memory", "sinks.k1.type = null", "sinks.k1.channel = c1"];
const agent = (name: string, extra: string[] = []) => [...PIPELINE, ...extra].map((l) => `${name}.${l}`);

async function withDir(f: (dir: string) => void | Promise<void>): Promise<void> {
  const { dir, cleanup } = tempDir("flume-load-");
  try {
    await f(dir);
  } finally {
    cleanup();
  }
}

describe("reading a configuration file", () => {
  test("UTF-8 is read as UTF-8; bytes that are not UTF-8 are ISO-8859-1, as Java reads properties files", () =>
    withDir((dir) => {
      const utf8 = path.join(dir, "utf8.conf");
      const latin1 = path.join(dir, "latin1.conf");
      writeFileSync(utf8, "a1.sinks.k1.x = grün\n", "utf8");
      writeFileSync(latin1, Buffer.from("a1.sinks.k1.x = grün\n", "latin1"));
      expect(readConfigFile(utf8)).toBe("a1.sinks.k1.x = grün\n");
      expect(readConfigFile(latin1)).toBe("a1.sinks.k1.x = grün\n");
    }));

  test("a missing file is a ConfigReadError naming the file and why", () => {
    const missing = path.join(ROOT, "no-such-dir", "flume.conf");
    expect(() => readConfigFile(missing)).toThrow(ConfigReadError);
    expect(() => loadConfigFile(missing, {}, registry)).toThrow(`cannot read ${missing}: no such file`);
  });
});

describe("loading a configuration into the typed model", () => {
  test("variables are substituted and the model holds typed options with defaults filled in", () => {
    const loaded = loadConfigText(agent("a1", ["sinks.k1.batchSize = ${sys:batch}"]).join("\n"), "f.conf", { sysProps: { batch: "42" } }, registry);
    if (loaded instanceof Promise) throw new Error("a configuration without modules loads synchronously");
    expect(loaded.problems).toEqual([]);
    expect(loaded.model?.sinks.get("k1")?.options).toEqual({ batchSize: 42 });
    expect(loaded.model?.channels.get("c1")?.options.capacity).toBe(100);
  });

  test("every agent of a file, each checked as flume run -n checks it", () => {
    const loaded = loadEveryAgentText([...agent("edge"), ...agent("collector", ["sinks.k1.batchSize = 0"])].join("\n"), "tier.conf", {}, registry);
    if (loaded instanceof Promise) throw new Error("a configuration without modules loads synchronously");
    expect(loaded.map((l) => l.config?.agent)).toEqual(["edge", "collector"]);
    expect(loaded[0].problems).toEqual([]);
    expect(loaded[1].problems.map((p) => `${p.line} ${p.component} ${p.key}`)).toEqual(["17 sink k1 batchSize"]);
  });

  test("a type naming a module is imported next to the file before validation; the registry that checked it comes with the result", async () =>
    withDir(async (dir) => {
      copyFileSync(path.join(ROOT, "examples", "jsonl-sink.ts"), path.join(dir, "jsonl-sink.ts"));
      const file = path.join(dir, "agent.conf");
      writeFileSync(file, [...agent("a1").filter((l) => !l.includes("k1.type")), "a1.sinks.k1.type = ./jsonl-sink.ts", `a1.sinks.k1.file = ${path.join(dir, "out.jsonl")}`].join("\n"));
      const { loaded } = loadConfigFile(file, {}, registry);
      expect(loaded).toBeInstanceOf(Promise);
      const result = await loaded;
      expect(result.problems).toEqual([]);
      expect(result.model?.sinks.get("k1")?.type).toBe("jsonl");
      expect([...result.registry.custom.keys()]).toEqual(["./jsonl-sink.ts"]);
    }));

  test("a key/value map (the embedded agent's) loads without a file; a module type there is an unknown type", () => {
    const ok = loadConfigMap(new Map(agent("a1").map((l) => l.split(" = ") as [string, string])), "<embedded>", {}, registry);
    expect(ok.problems).toEqual([]);
    expect([...(ok.model?.sinks.keys() ?? [])]).toEqual(["k1"]);
    const custom = loadConfigMap({ ...Object.fromEntries(agent("a1").map((l) => l.split(" = "))), "a1.sinks.k1.type": "./jsonl-sink.ts" }, "<embedded>", {}, registry);
    expect(custom.problems.map((p) => `${p.component} ${p.key}: ${p.message}`)).toEqual([expect.stringMatching(/^sink k1 type: unknown sink type "\.\/jsonl-sink\.ts"/)]);
  });
});

test("src/config loads no module outside itself: it imports only its own files and Node's at run time (definitions' types aside)", () => {
  const dir = path.join(ROOT, "src", "config");
  const offenders: string[] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".ts"))) {
    readFileSync(path.join(dir, name), "utf8")
      .split("\n")
      .forEach((line, i) => {
        const from = /^import\s+(?!type\b)[^;]*from\s+"([^"]+)"/.exec(line)?.[1] ?? /\bimport\(\s*"([^"]+)"\s*\)/.exec(line)?.[1];
        if (from !== undefined && !from.startsWith("./") && !from.startsWith("node:")) offenders.push(`src/config/${name}:${i + 1}: ${from}`);
      });
  }
  expect(offenders).toEqual([]);
});
