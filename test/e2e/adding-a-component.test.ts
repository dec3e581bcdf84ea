// The README's "Adding a component", followed to the letter in a copy of src/: its component
// file written where its first line says, its registry line added to BUILT_IN_BY_KEY, and the
// new sink then described, validated and run by that copy's CLI.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, freePort, ROOT, sendLines, startCli, tempDirFor, waitUntil } from "../support/helpers.ts";

const cleanups = cleanupsAfterEach();

/** The TypeScript blocks of the README's "Adding a component", unindented. */
function readmeBlocks(): string[] {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("## Adding a component");
  const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
  return [...section.matchAll(/^( *)```ts\n([^]*?)^\1```/gm)].map(([, indent, body]) => body.replace(new RegExp(`^${indent}`, "gm"), ""));
}

/** A copy of the repository's src/ (and what runs it) with the README's component added. */
function copyWithComponent(): { dir: string; cli: string; type: string } {
  const dir = tempDirFor(cleanups, "flume-add-component-");
  cpSync(path.join(ROOT, "src"), path.join(dir, "src"), { recursive: true });
  for (const f of ["package.json", "tsconfig.json", "bunfig.toml"]) if (existsSync(path.join(ROOT, f))) cpSync(path.join(ROOT, f), path.join(dir, f));
  symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  const [component, registration] = readmeBlocks();
  // Step 1: the file its first line names.
  const file = /^\/\/ (src\/\S+\.ts)\n/.exec(component)?.[1];
  if (!file) throw new Error(`the README's component block does not start with its path: ${component.split("\n")[0]}`);
  mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  writeFileSync(path.join(dir, file), component);
  // Step 2: its line in the registry's BUILT_IN_BY_KEY.
  const registry = path.join(dir, "src", "components", "registry.ts");
  const list = "const BUILT_IN_BY_KEY = {\n";
  const text = readFileSync(registry, "utf8");
  if (!text.includes(list)) throw new Error("src/components/registry.ts has no BUILT_IN_BY_KEY table");
  writeFileSync(registry, text.replace(list, `${list}  ${registration.trim()}\n`));
  const type = /lazy\("\w+", "([^"]+)"/.exec(registration)?.[1] as string;
  return { dir, cli: path.join(dir, "src", "cli.ts"), type };
}

function agentConf(dir: string, port: number, type: string, sinkLines: string[]): string {
  const conf = path.join(dir, "agent.conf");
  const lines = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = netcat", "a1.sources.r1.bind = 127.0.0.1", `a1.sources.r1.port = ${port}`, "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", `a1.sinks.k1.type = ${type}`, "a1.sinks.k1.channel = c1"];
  writeFileSync(conf, [...lines, ...sinkLines, ""].join("\n"));
  return conf;
}

describe("adding a component as the README says", () => {
  test("the README's sink, added to a copy of src/ in its two steps, is described, validated with file:line, simulated and run by flume run", async () => {
    const { dir, cli, type } = copyWithComponent();
    const run = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { cwd: dir, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" }, timeout: 20000 });

    const described = run(["describe", type]);
    expect(described.status).toBe(0);
    expect(described.stdout).toContain("Appends the body of each event to a file, one line each.");
    expect(described.stdout).toContain("batchSize");

    const port = await freePort();
    const out = path.join(dir, "out.txt");
    const misspelt = agentConf(dir, port, type, ["a1.sinks.k1.batchSise = 10"]);
    const invalid = run(["validate", misspelt]);
    expect(invalid.status).toBe(1);
    // Line 9 declares the sink's type; line 11 is the misspelt key.
    expect(invalid.stdout).toContain(`${misspelt}:9: error: sink k1: file: is required: The file the lines are appended to`);
    expect(invalid.stdout).toContain(`${misspelt}:11: warning: sink k1: batchSise: is not a property of sink type lines, so it is ignored (did you mean batchSize?)`);

    const conf = agentConf(dir, port, type, [`a1.sinks.k1.file = ${out}`, "a1.sinks.k1.batchSize = 10"]);
    expect(run(["validate", conf]).status).toBe(0);
    const simulated = run(["simulate", "-f", conf, "--events", "500"]);
    expect(simulated.status).toBe(0);
    expect(simulated.stdout).toContain(`sink k1 <- c1 (${type} replaced by a simulated sink, batches of 10)`);
    const agent = startCli(["run", "-f", conf, "--no-reload-conf", "--quiet"], { cwd: dir, cli });
    try {
      await agent.waitFor(/agent a1 started/, 30000);
      expect(await sendLines(port, "hello\nwörld\n", 2000, 2)).toBe("OK\nOK\n");
      await waitUntil(() => existsSync(out) && readFileSync(out, "utf8") === "hello\nwörld\n", `both lines in ${out}`);
    } finally {
      agent.child.kill("SIGTERM");
      expect(await agent.exited()).toBe(0);
    }
  }, 60_000);
});
