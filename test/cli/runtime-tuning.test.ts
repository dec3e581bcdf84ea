// `flume run` re-executes itself with its runtime profile's JSC settings (src/cli/runtime-tuning.ts): what
// it executes, and that a real agent runs with them (child processes of the CLI; JSC's own
// dumpOptions prints the options it runs with), keeps its pid, and leaves them out of the
// environment of the commands it runs.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ADDED_VARIABLE, profileOf, RUNTIME_PROFILES, tunedCommand } from "../../src/cli/runtime-tuning.ts";
import { parseRunArgs } from "../../src/cli/run.ts";
import { cleanupsAfterEach, startAgentCli, tempDir, waitUntil } from "../support/helpers.ts";
import { needsProc } from "../support/requires.ts";

const cleanups = cleanupsAfterEach();

describe("tunedCommand", () => {
  const compiled = { argv: ["bun", "/$bunfs/root/flume", "run", "-f", "a.conf"], execArgv: [], execPath: "/usr/local/bin/flume", env: { LANG: "C.UTF-8" } };

  test("the footprint profile is the default; --runtime-profile picks one in either spelling", () => {
    expect(profileOf(["run", "-f", "a.conf"])).toBe("footprint");
    expect(profileOf(["run", "--runtime-profile", "throughput", "-f", "a.conf"])).toBe("throughput");
    expect(profileOf(["run", "--runtime-profile=Throughput"])).toBe("throughput");
    expect(profileOf(["run", "--runtime-profile=fast"])).toBeNull();
    // The argument parser reports a bad value, without a re-execution first.
    expect(tunedCommand({ ...compiled, argv: [...compiled.argv, "--runtime-profile=fast"] })).toBeNull();
    expect(() => parseRunArgs(["-f", "a.conf", "--runtime-profile", "fast"])).toThrow('--runtime-profile needs one of footprint, throughput, got "fast"');
    expect(parseRunArgs(["-f", "a.conf", "--runtime-profile", "throughput"]).options.file).toBe("a.conf");
  });

  test("a compiled binary executes itself with its own arguments and the settings added", () => {
    const next = tunedCommand(compiled);
    expect(next?.file).toBe("/usr/local/bin/flume");
    expect(next?.args).toEqual(["/usr/local/bin/flume", "run", "-f", "a.conf"]);
    expect(next?.env).toEqual({ LANG: "C.UTF-8", BUN_JSC_useFTLJIT: "false", BUN_JSC_heapGrowthMaxIncrease: "1", [ADDED_VARIABLE]: "BUN_JSC_useFTLJIT,BUN_JSC_heapGrowthMaxIncrease" });
  });

  test("bun src/cli.ts keeps the runtime's flags and the script", () => {
    const next = tunedCommand({ argv: ["/opt/bun", "/repo/src/cli.ts", "run", "-f", "a.conf"], execArgv: ["--smol"], execPath: "/opt/bun", env: {} });
    expect(next?.args).toEqual(["/opt/bun", "--smol", "/repo/src/cli.ts", "run", "-f", "a.conf"]);
  });

  test("a BUN_JSC_ variable the user set wins, and is not named as added", () => {
    const next = tunedCommand({ ...compiled, env: { BUN_JSC_useFTLJIT: "true" } });
    expect(next?.env.BUN_JSC_useFTLJIT).toBe("true");
    expect(next?.env.BUN_JSC_heapGrowthMaxIncrease).toBe("1");
    expect(next?.env[ADDED_VARIABLE]).toBe("BUN_JSC_heapGrowthMaxIncrease");
    const all = Object.fromEntries(Object.keys(RUNTIME_PROFILES.footprint).map((k) => [`BUN_JSC_${k}`, "7"]));
    expect(tunedCommand({ ...compiled, env: all })).toBeNull();
  });

  test("nothing to do once re-executed, or with the throughput profile", () => {
    expect(tunedCommand({ ...compiled, env: { [ADDED_VARIABLE]: "BUN_JSC_useFTLJIT" } })).toBeNull();
    expect(tunedCommand({ ...compiled, argv: [...compiled.argv, "--runtime-profile", "throughput"] })).toBeNull();
  });
});

/** An agent whose exec source runs `env` once (then a last line to wait for): its lines (the command's environment) go to a file_roll sink in dir/out. */
function envAgent(dir: string): string {
  const file = path.join(dir, "a1.conf");
  writeFileSync(
    file,
    `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = exec
a1.sources.r1.shell = /bin/sh -c
a1.sources.r1.command = env; echo END-OF-ENV
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = file_roll
a1.sinks.k1.sink.directory = ${path.join(dir, "out")}
a1.sinks.k1.sink.batchSize = 1
a1.sinks.k1.channel = c1
`,
  );
  return file;
}

async function commandEnvironment(dir: string): Promise<string> {
  const out = path.join(dir, "out");
  let text = "";
  await waitUntil(() => {
    try {
      text = readdirSync(out).map((f) => readFileSync(path.join(out, f), "utf8")).join("");
    } catch {
      return false;
    }
    return /^END-OF-ENV$/m.test(text);
  }, "the exec source's `env` output in the sink's files");
  return text;
}

describe("flume run under Bun", () => {
  needsProc.test("runs with the footprint profile's JSC settings in the process that was started, and the commands it runs don't inherit them", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const agent = await startAgentCli(cleanups, ["run", "-f", envAgent(tmp.dir), "-n", "a1", "--quiet", "--no-reload-conf", "--log-level", "debug"], undefined, { env: { BUN_JSC_dumpOptions: "1", MARKER_FOR_TEST: "kept" } });
    // JSC prints the options it was started with: the first process with none of the agent's, the re-executed one with both.
    expect(agent.stderr).toMatch(/Modified JSC options:\n\s+dumpOptions=1 \(default: 0\)\n[\s\S]*Modified JSC options:[\s\S]*heapGrowthMaxIncrease=1 \(default: \d+\)[\s\S]*useFTLJIT=false \(default: true\)/);
    expect(agent.stderr).toContain("runtime profile footprint: runs with BUN_JSC_useFTLJIT=false BUN_JSC_heapGrowthMaxIncrease=1 (--runtime-profile throughput for Bun's own settings)");
    // The same pid: a service manager's or a pid file's process is the agent.
    const environ = readFileSync(`/proc/${agent.child.pid}/environ`, "utf8").split("\0");
    expect(environ).toContain("BUN_JSC_useFTLJIT=false");
    const env = await commandEnvironment(tmp.dir);
    expect(env).toContain("MARKER_FOR_TEST=kept");
    expect(env).toContain("BUN_JSC_dumpOptions=1");
    expect(env).not.toContain("BUN_JSC_useFTLJIT");
    expect(env).not.toContain("BUN_JSC_heapGrowthMaxIncrease");
    expect(env).not.toContain(ADDED_VARIABLE);
  }, 90_000);

  needsProc.test("--runtime-profile throughput runs with Bun's defaults; a setting the user gave is kept, and inherited by its commands", async () => {
    const off = tempDir();
    cleanups.push(off.cleanup);
    const plain = await startAgentCli(cleanups, ["run", "-f", envAgent(off.dir), "-n", "a1", "--quiet", "--no-reload-conf", "--log-level", "debug", "--runtime-profile", "throughput"], undefined, { env: { BUN_JSC_dumpOptions: "1" } });
    expect(plain.stderr).not.toContain("useFTLJIT");
    expect(plain.stderr).not.toContain("heapGrowthMaxIncrease");
    expect(plain.stderr.match(/Modified JSC options:/g)?.length).toBe(1);
    expect(plain.stderr).not.toContain("runtime profile");

    const own = tempDir();
    cleanups.push(own.cleanup);
    const agent = await startAgentCli(cleanups, ["run", "-f", envAgent(own.dir), "-n", "a1", "--quiet", "--no-reload-conf", "--log-level", "debug"], undefined, { env: { BUN_JSC_dumpOptions: "1", BUN_JSC_heapGrowthMaxIncrease: "2" } });
    expect(agent.stderr).toMatch(/Modified JSC options:[\s\S]*Modified JSC options:[\s\S]*heapGrowthMaxIncrease=2 \(default: \d+\)[\s\S]*useFTLJIT=false/);
    expect(agent.stderr).toContain("runtime profile footprint: runs with BUN_JSC_useFTLJIT=false (");
    const env = await commandEnvironment(own.dir);
    expect(env).toContain("BUN_JSC_heapGrowthMaxIncrease=2");
    expect(env).not.toContain("BUN_JSC_useFTLJIT");
  }, 90_000);
});
