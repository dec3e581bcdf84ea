import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { allComponents, builtInNames, lookupComponent } from "../../src/components/registry.ts";

const ROOT = path.resolve(import.meta.dir, "../..");

describe("component registry", () => {
  test("each built-in entry's names are the ones its module declares", () => {
    const names = builtInNames();
    const byType = new Map(allComponents().map((d) => [`${d.schema.kind} ${d.schema.type}`, d]));
    for (const n of names) {
      const def = byType.get(`${n.kind} ${n.type}`);
      expect(def, `${n.kind} ${n.type}`).toBeDefined();
      expect([...(def?.schema.aliases ?? [])], `${n.kind} ${n.type}`).toEqual([...n.aliases]);
    }
    expect(names.length).toBe(byType.size);
  });

  test("lookups are case-insensitive and accept Flume's class names", () => {
    expect(lookupComponent("source", "NETCAT")?.schema.type).toBe("netcat");
    expect(lookupComponent("channel", "org.apache.flume.channel.MemoryChannel")?.schema.type).toBe("memory");
    expect(lookupComponent("sink", "no-such-sink")).toBeUndefined();
  });

  test("a configuration loads only the component modules it uses (TLS, HTTP, Avro stay unloaded)", () => {
    const script = `
      import { lookupComponent, builtInNames } from ${JSON.stringify(path.join(ROOT, "src/components/registry.ts"))};
      import { validateConfigText } from ${JSON.stringify(path.join(ROOT, "src/config/validate.ts"))};
      import * as registry from ${JSON.stringify(path.join(ROOT, "src/components/registry.ts"))};
      const text = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = netcat", "a1.sources.r1.bind = 127.0.0.1",
        "a1.sources.r1.port = 0", "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", "a1.sinks.k1.type = logger", "a1.sinks.k1.channel = c1", ""].join("\\n");
      const r = validateConfigText(text, "x.conf", { agentName: "a1" }, registry);
      const loaded = builtInNames().filter((n) => n.loaded).map((n) => n.kind + " " + n.type);
      const modules = Object.keys(require.cache).filter((k) => k.includes("/src/")).map((k) => k.slice(k.indexOf("/src/") + 1));
      console.log(JSON.stringify({ errors: r.problems.filter((p) => p.severity === "error").length, loaded, modules }));
    `;
    // A file: the modules it loads are the keys of require.cache.
    const file = path.join(mkdtempSync(path.join(tmpdir(), "flume-registry-")), "probe.ts");
    writeFileSync(file, script);
    const r = spawnSync(process.execPath, [file], { cwd: ROOT, encoding: "utf8" });
    rmSync(path.dirname(file), { recursive: true, force: true });
    expect(r.stderr).toBe("");
    const out = JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}") as { errors: number; loaded: string[]; modules: string[] };
    expect(out.errors).toBe(0);
    expect(out.loaded.sort()).toEqual(["channel memory", "selector replicating", "sink logger", "sinkprocessor default", "source netcat"]);
    expect(out.modules).toContain("src/components/sources/netcat.ts");
    for (const heavy of ["src/net/tls.ts", "src/monitoring/http-server.ts", "src/rpc/client.ts", "src/components/channels/file/file-channel.ts"]) expect(out.modules).not.toContain(heavy);
  });
});
