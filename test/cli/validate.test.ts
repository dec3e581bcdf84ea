import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { CLI, ROOT, runCli, tempDir } from "../support/helpers.ts";

const { dir, cleanup } = tempDir("flume-validate-");
afterAll(cleanup);

function write(name: string, lines: string[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

const VALID = [
  "a1.sources = r1", // 1
  "a1.channels = c1", // 2
  "a1.sinks = k1", // 3
  "a1.sources.r1.type = seq", // 4
  "a1.sources.r1.channels = c1", // 5
  "a1.channels.c1.type = memory", // 6
  "a1.channels.c1.capacity = ${sys:cap:-1000}", // 7
  "a1.sinks.k1.type = null", // 8
  "a1.sinks.k1.channel = c1", // 9
];

const valid = write("valid.conf", VALID);
const withWarning = write("warning.conf", [...VALID, "a1.channels.c1.capasity = 5"]);
const broken = write("broken.conf", [...VALID.map((l) => l.replace("type = memory", "type = memroy")), "a1.sinks.k1.batchSize = -1"]);
const twoAgents = write("two.conf", [...VALID, "b1.channels = x"]);

function json(stdout: string) {
  return JSON.parse(stdout) as { valid: boolean; errors: Record<string, unknown>[]; warnings: Record<string, unknown>[] };
}

describe("flume validate", () => {
  test("a valid file: exit 0 and a one-line verdict", () => {
    const r = runCli(["validate", valid]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${valid}: agent a1 is valid\n`);
  });

  test("errors: exit 1, each as file:line: error: component: key: message (hint)", () => {
    const r = runCli(["validate", broken]);
    expect(r.code).toBe(1);
    expect(r.stdout.split("\n")).toEqual([
      `${broken}:6: error: channel c1: type: unknown channel type "memroy" (did you mean "memory"?)`,
      `${broken}:10: error: sink k1: batchSize: must be at least 1, got -1 (a whole number, at least 1; default 100)`,
      `${broken}: agent a1 is invalid: 2 errors, 0 warnings`,
      "",
    ]);
  });

  test("warnings alone keep exit 0; --strict makes them errors", () => {
    const r = runCli(["validate", withWarning]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${withWarning}:10: warning: channel c1: capasity: is not a property of channel type memory, so it is ignored (did you mean capacity?)`);
    expect(r.stdout).toContain("agent a1 is valid (1 warning)");
    const s = runCli(["validate", "--strict", withWarning]);
    expect(s.code).toBe(1);
    expect(s.stdout).toContain(`${withWarning}:10: error: channel c1: capasity:`);
  });

  test("--json prints exactly valid, errors and warnings", () => {
    const r = runCli(["validate", broken, "--json"]);
    expect(r.code).toBe(1);
    const doc = json(r.stdout);
    expect(Object.keys(doc)).toEqual(["valid", "errors", "warnings"]);
    expect(doc.valid).toBe(false);
    expect(doc.warnings).toEqual([]);
    expect(doc.errors).toEqual([
      { file: broken, line: 6, component: "channel c1", key: "type", message: 'unknown channel type "memroy" (did you mean "memory"?)' },
      { file: broken, line: 10, component: "sink k1", key: "batchSize", message: "must be at least 1, got -1 (a whole number, at least 1; default 100)" },
    ]);
  });

  test("--json with warnings, and with --strict", () => {
    const r = runCli(["validate", "--json", withWarning]);
    expect(r.code).toBe(0);
    const doc = json(r.stdout);
    expect(doc.valid).toBe(true);
    expect(doc.errors).toEqual([]);
    expect(doc.warnings.map((w) => [w.line, w.key])).toEqual([[10, "capasity"]]);
    const s = runCli(["validate", "--json", "--strict", withWarning]);
    expect(s.code).toBe(1);
    const strict = json(s.stdout);
    expect(strict.valid).toBe(false);
    expect(strict.errors.map((w) => [w.line, w.key])).toEqual([[10, "capasity"]]);
    expect(strict.warnings).toEqual([]);
  });

  test("-D sets ${sys:...}: -Dk=v and -D k=v", () => {
    const tight = write("tight.conf", [...VALID, "a1.channels.c1.transactionCapacity = ${sys:tc}"]);
    expect(runCli(["validate", tight, "-Dtc=50"]).code).toBe(1); // null's batchSize 100 > 50
    expect(runCli(["validate", tight, "-D", "tc=100"]).code).toBe(0);
    expect(runCli(["validate", tight, "--define", "tc=100"]).code).toBe(0);
    const unset = runCli(["validate", tight]);
    expect(unset.code).toBe(1);
    expect(unset.stdout).toContain(`${tight}:10: error: channel c1: transactionCapacity: system property tc is not set (pass -Dtc=... on the command line, or write \${sys:tc:-default})`);
    const small = runCli(["validate", valid, "-Dcap=10", "--json"]);
    expect(json(small.stdout).errors.map((e) => e.message)).toContain("transactionCapacity 100 (the default) is larger than capacity 10 (lower transactionCapacity to at most 10 or raise capacity)");
  });

  test("-n picks the agent; several agents without -n is a usage error naming them", () => {
    expect(runCli(["validate", twoAgents, "-n", "a1"]).code).toBe(0);
    expect(runCli(["validate", twoAgents, "--name=b1"]).code).toBe(1);
    const r = runCli(["validate", twoAgents]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("the file configures several agents (a1, b1) (pick one with -n, e.g. -n a1)");
  });

  test("usage errors exit 2: no file, missing file, unknown agent, unknown option", () => {
    const none = runCli(["validate"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("missing the configuration file");
    const missing = runCli(["validate", path.join(dir, "nope.conf")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("cannot read the file: no such file");
    const agent = runCli(["validate", valid, "-n", "a2"]);
    expect(agent.code).toBe(2);
    expect(agent.stderr).toContain("no agent named a2 in this file; it configures a1 (did you mean -n a1?)");
    const agentJson = runCli(["validate", valid, "-n", "a2", "--json"]);
    expect(agentJson.code).toBe(2);
    expect(json(agentJson.stdout).valid).toBe(false);
    const option = runCli(["validate", valid, "--bogus"]);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain('flume validate: unknown option "--bogus"');
  });

  test("flume-ng spellings: -f / --conf-file, --name, -c (ignored)", () => {
    expect(runCli(["validate", "--conf-file", valid, "--name", "a1"]).code).toBe(0);
    expect(runCli(["validate", "-f", valid]).code).toBe(0);
    expect(runCli(["validate", "-c", "conf", "-f", valid, "-n", "a1"]).code).toBe(0);
  });

  test("validate never loads avsc (it must start fast)", () => {
    const preload = path.join(ROOT, "test", "support", "forbid-avsc.ts");
    const r = spawnSync(process.execPath, ["--preload", preload, CLI, "validate", valid], { cwd: ROOT, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  });

  test("thrift: a json protocol and kerberos are errors at their lines; a sink's odd protocol value is accepted", () => {
    const file = path.join(dir, "thrift.conf");
    const conf = `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = thrift
a1.sources.r1.bind = 0.0.0.0
a1.sources.r1.port = 4141
a1.sources.r1.protocol = json
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = thrift
a1.sinks.k1.hostname = 10.0.0.1
a1.sinks.k1.port = 4545
a1.sinks.k1.protocol = BINARY
a1.sinks.k1.kerberos = true
a1.sinks.k1.channel = c1
`;
    writeFileSync(file, conf);
    const r = runCli(["validate", "-f", file, "-n", "a1"]);
    expect(r.code).not.toBe(0);
    const text = r.stdout + r.stderr;
    expect(text).toMatch(/thrift\.conf:7: error: source r1: protocol: must be binary or compact/);
    expect(text).toMatch(/thrift\.conf:14: error: sink k1: kerberos: = true \(Kerberos SASL\/GSSAPI authentication\) is not supported by Flume TS/);
    expect(text).toContain("2 errors");
  });
});
