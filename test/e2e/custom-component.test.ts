// Custom components: a sink type that is a module path (or an npm package) is imported, checked by
// `flume validate` like a built-in component, and run by `flume run`; from the sources under Bun,
// from the compiled binary, and under Deno. The module is examples/jsonl-sink.ts, which imports
// its API from "flume-ts" as the README's "Custom components" says.
import { describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, CLI, freePort, ROOT, runCli, sendLines, tempDirFor, waitUntil } from "../support/helpers.ts";
import { precondition } from "../support/requires.ts";

const EXAMPLE = path.join(ROOT, "examples", "jsonl-sink.ts");
const DENO = path.join(ROOT, "node_modules", ".bin", "deno");
const needsDeno = precondition(() => existsSync(DENO), "needs deno from npm (npm install)");
const cleanups = cleanupsAfterEach();

/** A scratch folder with the example sink copied in, away from the repository (no node_modules, no package.json). */
function workspace(): string {
  const dir = tempDirFor(cleanups, "flume-custom-");
  copyFileSync(EXAMPLE, path.join(dir, "jsonl-sink.ts"));
  return dir;
}

function agentConf(dir: string, port: number, sinkType: string, extra: string[] = []): string {
  const file = path.join(dir, "agent.conf");
  writeFileSync(
    file,
    [
      "a1.sources = r1",
      "a1.channels = c1",
      "a1.sinks = k1",
      "a1.sources.r1.type = netcat",
      "a1.sources.r1.bind = 127.0.0.1",
      `a1.sources.r1.port = ${port}`,
      "a1.sources.r1.channels = c1",
      "a1.channels.c1.type = memory",
      `a1.sinks.k1.type = ${sinkType}`,
      `a1.sinks.k1.file = ${path.join(dir, "out.jsonl")}`,
      "a1.sinks.k1.batchSize = 10",
      "a1.sinks.k1.channel = c1",
      ...extra,
      "",
    ].join("\n"),
  );
  return file;
}

/** Starts `command args run -f conf`, sends two lines, returns the JSON lines the sink wrote; stops the agent. */
async function runAndSend(command: string, args: string[], dir: string, conf: string, port: number, whileRunning?: (pid: number) => void): Promise<unknown[]> {
  const child = spawn(command, [...args, "run", "-f", conf, "--no-reload-conf", "--quiet"], { cwd: dir, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  try {
    await waitUntil(() => /agent a1 started/.test(err) || child.exitCode !== null, "the agent to start", 30000);
    expect(err).toContain("agent a1 started");
    whileRunning?.(child.pid as number);
    expect(await sendLines(port, "hello\nwörld\n", 2000, 2)).toBe("OK\nOK\n");
    const out = path.join(dir, "out.jsonl");
    const lines = () => (existsSync(out) ? readFileSync(out, "utf8").split("\n").filter(Boolean) : []);
    await waitUntil(() => lines().length >= 2, `two lines in ${out}`);
    return lines().map((l) => JSON.parse(l));
  } finally {
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }
}

/** Runs `flume run -f conf` in dir while `fn` runs, then stops it (it must exit cleanly). */
async function whileAgentRuns(dir: string, conf: string, fn: () => Promise<void>): Promise<void> {
  const child = spawn(process.execPath, [CLI, "run", "-f", conf, "--no-reload-conf", "--quiet"], { cwd: dir, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  try {
    await waitUntil(() => /agent a1 started/.test(err) || child.exitCode !== null, "the agent to start", 30000);
    await fn();
  } finally {
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }
}

/** A custom serializer module: each body in capitals, then `repeat` marks, then a newline. */
const SHOUT_SERIALIZER = `import { defineComponent } from "flume-ts";
const encoder = new TextEncoder();
export default defineComponent({
  kind: "serializer",
  type: "shout",
  doc: "Each body in capitals, then a mark, then a newline.",
  props: { mark: { type: "string", default: "!", doc: "What follows each body" }, repeat: { type: "int", default: 1, min: 1, doc: "How many marks" } },
  create: (o) => ({
    type: "shout",
    open: async (out) => ({
      afterCreate() {},
      afterReopen() {},
      write(e) {
        out.write(encoder.encode(new TextDecoder().decode(e.body).toUpperCase() + o.mark.repeat(o.repeat) + "\\n"));
      },
      flush() {},
      beforeClose() {},
      supportsReopen: () => false,
    }),
  }),
});
`;

/** What a file_roll or hdfs sink wrote to dir/out, all files in name order. */
const rolledFiles = (dir: string) =>
  readdirSync(path.join(dir, "out"))
    .sort()
    .map((f) => readFileSync(path.join(dir, "out", f), "utf8"))
    .join("");

const HELLO = [
  { headers: {}, body: "hello" },
  { headers: {}, body: "wörld" },
];

describe("a custom sink from a module path", () => {
  test("flume run: netcat -> memory -> ./jsonl-sink.ts (relative to the config): the events arrive as JSON lines", async () => {
    const dir = workspace();
    const port = await freePort();
    const conf = agentConf(dir, port, "./jsonl-sink.ts");
    expect(await runAndSend(process.execPath, [CLI], dir, conf, port)).toEqual(HELLO);
  }, 90_000);

  test("flume validate checks the module's properties with file:line; Java class names and missing modules are explained", () => {
    const dir = workspace();
    const conf = path.join(dir, "bad.conf");
    writeFileSync(
      conf,
      [
        "a1.sources = r1",
        "a1.channels = c1",
        "a1.sinks = k1 k2 k3 k4 k5",
        "a1.sources.r1.type = ./jsonl-sink.ts",
        "a1.sources.r1.channels = c1",
        "a1.channels.c1.type = memory",
        "a1.sinks.k1.type = ./jsonl-sink.ts",
        "a1.sinks.k1.batchSize = many",
        "a1.sinks.k1.bodi = base64",
        "a1.sinks.k1.channel = c1",
        "a1.sinks.k2.type = com.example.MySink",
        "a1.sinks.k2.channel = c1",
        "a1.sinks.k3.type = ./not-there.js",
        "a1.sinks.k3.channel = c1",
        "a1.sinks.k4.type = ./broken.ts",
        "a1.sinks.k4.channel = c1",
        "a1.sinks.k5.type = ./empty.js",
        "a1.sinks.k5.channel = c1",
        "",
      ].join("\n"),
    );
    writeFileSync(path.join(dir, "broken.ts"), "export default {{;\n");
    writeFileSync(path.join(dir, "empty.js"), "export const x = 1;\n");
    const r = runCli(["validate", conf, "--json"]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { errors: { line: number; component: string; key: string; message: string }[]; warnings: { line: number; key: string; message: string }[] };
    const errors = report.errors.map((e) => `${e.line} ${e.component} ${e.key}: ${e.message}`);
    expect(errors).toContainEqual(expect.stringMatching(/^4 source r1 type: .*jsonl-sink\.ts defines a sink \(type jsonl\), but is configured as a source/));
    expect(errors).toContain("7 sink k1 file: is required: The file the lines are appended to (add a1.sinks.k1.file = ...)");
    expect(errors).toContain('8 sink k1 batchSize: expected a whole number, got "many" (a whole number, at least 1; default 100)');
    expect(errors).toContainEqual(expect.stringMatching(/^11 sink k2 type: "com\.example\.MySink" is a Java class: Java components cannot run in Flume TS \(port it .* README\.md, "Custom components"\)\)$/));
    expect(errors).toContainEqual(expect.stringMatching(/^13 sink k3 type: cannot find the sink module \.\/not-there\.js/));
    expect(errors).toContainEqual(expect.stringMatching(/^15 sink k4 type: cannot load the sink module .*broken\.ts: /));
    expect(errors).toContainEqual(expect.stringMatching(/^17 sink k5 type: the module .*empty\.js exports no component definition \(export default defineComponent/));
    expect(report.warnings.map((w) => `${w.line} ${w.key}: ${w.message}`)).toContain("9 bodi: is not a property of sink type jsonl, so it is ignored (did you mean body?)");
  });

  // The same serializer module through each sink that takes one: file_roll's sink.serializer and hdfs's serializer (a file:// path).
  for (const sink of [
    { type: "file_roll", key: "sink.serializer", lines: (out: string) => [`a1.sinks.k1.sink.directory = ${out}`, "a1.sinks.k1.sink.rollInterval = 0"] },
    { type: "hdfs", key: "serializer", lines: (out: string) => [`a1.sinks.k1.hdfs.path = file://${out}`, "a1.sinks.k1.hdfs.fileType = DataStream"] },
  ]) {
    test(`a custom serializer module named by the ${sink.type} sink's ${sink.key}: its settings checked at their lines, then every event written through it`, async () => {
      const dir = workspace();
      writeFileSync(path.join(dir, "shout.ts"), SHOUT_SERIALIZER);
      const port = await freePort();
      const conf = (extra: string[]) => {
        const file = path.join(dir, "serializer.conf");
        const lines = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = netcat", "a1.sources.r1.bind = 127.0.0.1", `a1.sources.r1.port = ${port}`, "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory"];
        writeFileSync(file, [...lines, `a1.sinks.k1.type = ${sink.type}`, ...sink.lines(path.join(dir, "out")), "a1.sinks.k1.channel = c1", `a1.sinks.k1.${sink.key} = ./shout.ts`, ...extra, ""].join("\n"));
        return file;
      };
      const bad = conf([`a1.sinks.k1.${sink.key}.repeat = 0`, `a1.sinks.k1.${sink.key}.marks = ?`]);
      const v = runCli(["validate", bad]);
      expect(v.code).toBe(1);
      expect(v.stdout).toContain(`${bad}:14: error: sink k1: ${sink.key}.repeat: must be at least 1, got 0`);
      expect(v.stdout).toContain(`${bad}:15: warning: sink k1: ${sink.key}.marks: is not a property of serializer type shout, so it is ignored (did you mean ${sink.key}.mark?)`);
      mkdirSync(path.join(dir, "out"));
      const good = conf([`a1.sinks.k1.${sink.key}.mark = ?`, `a1.sinks.k1.${sink.key}.repeat = 2`]);
      await whileAgentRuns(dir, good, async () => {
        expect(await sendLines(port, "hello\nwörld\n", 2000, 2)).toBe("OK\nOK\n");
        await waitUntil(() => rolledFiles(dir) === "HELLO??\nWÖRLD??\n", "both events in the file, through the serializer");
      });
    }, 30000);
  }

  test("a custom HTTP source handler module named by the http source's handler: its settings checked at their lines, then every request read through it", async () => {
    const dir = workspace();
    writeFileSync(
      path.join(dir, "lines-handler.ts"),
      `import { defineComponent, HttpBadRequestError } from "flume-ts";
export default defineComponent({
  kind: "httphandler",
  type: "lines",
  doc: "Each line of the body is one event, tagged.",
  props: { tag: { type: "string", default: "", doc: "Put before each line" }, maxLines: { type: "int", default: 100, min: 1, doc: "Most lines in one request" } },
  create: (o) => ({
    getEvents(request) {
      const lines = new TextDecoder().decode(request.body).split("\\n").filter(Boolean);
      if (lines.length > o.maxLines) throw new HttpBadRequestError(\`\${lines.length} lines, at most \${o.maxLines}\`);
      return lines.map((l) => ({ headers: {}, body: new TextEncoder().encode(o.tag + l) }));
    },
  }),
});
`,
    );
    const port = await freePort();
    const conf = (extra: string[]) => {
      const file = path.join(dir, "handler.conf");
      const lines = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = http", "a1.sources.r1.bind = 127.0.0.1", `a1.sources.r1.port = ${port}`, "a1.sources.r1.channels = c1", "a1.sources.r1.handler = ./lines-handler.ts"];
      writeFileSync(file, [...lines, ...extra, "a1.channels.c1.type = memory", "a1.sinks.k1.type = file_roll", `a1.sinks.k1.sink.directory = ${path.join(dir, "out")}`, "a1.sinks.k1.sink.rollInterval = 0", "a1.sinks.k1.channel = c1", ""].join("\n"));
      return file;
    };
    const bad = conf(["a1.sources.r1.handler.maxLines = 0", "a1.sources.r1.handler.tags = x"]);
    const v = runCli(["validate", bad]);
    expect(v.code).toBe(1);
    expect(v.stdout).toContain(`${bad}:9: error: source r1: handler.maxLines: must be at least 1, got 0`);
    expect(v.stdout).toContain(`${bad}:10: warning: source r1: handler.tags: is not a property of httphandler type lines, so it is ignored (did you mean handler.tag?)`);
    mkdirSync(path.join(dir, "out"));
    const good = conf(["a1.sources.r1.handler.tag = web:", "a1.sources.r1.handler.maxLines = 2"]);
    expect(runCli(["validate", good]).code).toBe(0);
    await whileAgentRuns(dir, good, async () => {
      const post = (body: string) => fetch(`http://127.0.0.1:${port}/`, { method: "POST", body });
      expect((await post("hello\nwörld\n")).status).toBe(200);
      const refused = await post("a\nb\nc\n");
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain("3 lines, at most 2");
      await waitUntil(() => rolledFiles(dir) === "web:hello\nweb:wörld\n", "both lines of the accepted request in the file, through the handler");
    });
  }, 30000);

  test("a custom deserializer module named by the spooldir source's deserializer: its settings checked at their lines, then every file read through it", async () => {
    const dir = workspace();
    writeFileSync(
      path.join(dir, "csv-deserializer.ts"),
      `import { defineComponent } from "flume-ts";
export default defineComponent({
  kind: "deserializer",
  type: "csv",
  doc: "Each comma-separated field of the file is one event.",
  props: { separator: { type: "string", default: ",", doc: "Between fields" }, upper: { type: "boolean", default: false, doc: "Bodies in capitals" } },
  create: (o) => ({
    open(f) {
      let done = false;
      return {
        async read() {
          if (done) return { events: [], endPos: f.size, atEnd: true };
          done = true;
          const buf = new Uint8Array(f.size - f.pos);
          await f.handle.read(buf, 0, buf.length, f.pos);
          const fields = new TextDecoder().decode(buf).trim().split(o.separator);
          return { events: fields.map((x) => ({ headers: {}, body: new TextEncoder().encode(o.upper ? x.toUpperCase() : x) })), endPos: f.size, atEnd: true };
        },
      };
    },
  }),
});
`,
    );
    mkdirSync(path.join(dir, "spool"));
    const conf = (extra: string[]) => {
      const file = path.join(dir, "spool.conf");
      const lines = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = spooldir", `a1.sources.r1.spoolDir = ${path.join(dir, "spool")}`, "a1.sources.r1.pollDelay = 50", "a1.sources.r1.channels = c1", "a1.sources.r1.deserializer = ./csv-deserializer.ts"];
      writeFileSync(file, [...lines, ...extra, "a1.channels.c1.type = memory", "a1.sinks.k1.type = file_roll", `a1.sinks.k1.sink.directory = ${path.join(dir, "out")}`, "a1.sinks.k1.sink.rollInterval = 0", "a1.sinks.k1.channel = c1", ""].join("\n"));
      return file;
    };
    const bad = conf(["a1.sources.r1.deserializer.upper = yes", "a1.sources.r1.deserializer.seperator = ;"]);
    const v = runCli(["validate", bad]);
    expect(v.code).toBe(1);
    expect(v.stdout).toContain(`${bad}:9: error: source r1: deserializer.upper: expected true or false, got "yes"`);
    expect(v.stdout).toContain(`${bad}:10: warning: source r1: deserializer.seperator: is not a property of deserializer type csv, so it is ignored (did you mean deserializer.separator?)`);
    mkdirSync(path.join(dir, "out"));
    const good = conf(["a1.sources.r1.deserializer.upper = true", "a1.sources.r1.deserializer.separator = ;"]);
    expect(runCli(["validate", good]).code).toBe(0);
    writeFileSync(path.join(dir, "spool", "a.csv"), "one;two;three\n");
    await whileAgentRuns(dir, good, async () => {
      await waitUntil(() => rolledFiles(dir) === "ONE\nTWO\nTHREE\n", "the file's three fields in the output, through the deserializer");
      await waitUntil(() => existsSync(path.join(dir, "spool", "a.csv.COMPLETED")), "the file completed");
    });
  }, 30000);

  test("examples/jsonl-sink.conf, the README's example, is valid", () => {
    const r = runCli(["validate", path.join(ROOT, "examples", "jsonl-sink.conf")], { cwd: "/" });
    expect(r.stdout).toContain("agent a1 is valid");
    expect(r.code).toBe(0);
  });

  test("an npm package name resolvable from the config's folder works as a type", () => {
    const dir = workspace();
    const pkg = path.join(dir, "node_modules", "flume-jsonl-sink");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "flume-jsonl-sink", type: "module", exports: { ".": { import: "./index.ts" } } }));
    copyFileSync(EXAMPLE, path.join(pkg, "index.ts"));
    const conf = agentConf(dir, 1, "flume-jsonl-sink", ["a1.sinks.k1.body = hex"]);
    const r = runCli(["validate", conf]);
    expect(r.stdout).toContain(`${conf}:13: error: sink k1: body: expected one of text, base64, got "hex"`);
    expect(r.code).toBe(1);
  });

  test("the compiled binary loads it too: its import of \"flume-ts\" is the binary's own API", async () => {
    const dir = workspace();
    const binary = path.join(dir, "flume");
    // Built as npm run build builds it (scripts/build.ts): code splitting, bytecode.
    const build = spawnSync(process.execPath, [path.join(ROOT, "scripts", "build.ts"), binary], { cwd: ROOT, encoding: "utf8", timeout: 60000 });
    expect(build.status).toBe(0);
    const port = await freePort();
    const conf = agentConf(dir, port, path.join(dir, "jsonl-sink.ts"));
    const v = spawnSync(binary, ["validate", conf], { cwd: dir, encoding: "utf8" });
    expect(v.stdout).toContain("agent a1 is valid");
    // The binary re-executed itself (same pid) with the default runtime profile's JSC settings (src/cli/runtime-tuning.ts).
    const environ = (pid: number) => expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toContain("BUN_JSC_useFTLJIT=false");
    expect(await runAndSend(binary, [], dir, conf, port, environ)).toEqual(HELLO);
  }, 60000);

  needsDeno.test("under Deno: validate and run with the module (deno.json maps \"flume-ts\")", async () => {
    const dir = workspace();
    const port = await freePort();
    const conf = agentConf(dir, port, "./jsonl-sink.ts", ["a1.sinks.k1.batchSize = 0"]);
    const v = spawnSync(DENO, ["run", "-A", CLI, "validate", conf], { cwd: dir, encoding: "utf8", timeout: 60000, env: { ...process.env, NO_COLOR: "1" } });
    expect(v.stdout).toContain(`${conf}:13: error: sink k1: batchSize: must be at least 1, got 0`);
    const good = agentConf(dir, port, "./jsonl-sink.ts");
    expect(await runAndSend(DENO, ["run", "-A", CLI], dir, good, port)).toEqual(HELLO);
  }, 60000);
});
