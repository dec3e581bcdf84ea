import { describe, expect, test } from "bun:test";
import { AGENT_FILE_ARGS, FLUME_NG_ARGS, int, keyValue, nonNegative, oneOf, parseCommandLine, port, UsageError } from "../../src/cli/args.ts";
import { parseRunArgs } from "../../src/cli/run.ts";
import { runCli } from "../support/helpers.ts";

const SPEC = {
  file: { type: "positional", description: "a file" },
  ...AGENT_FILE_ARGS,
  ...FLUME_NG_ARGS,
  port: { type: "string", alias: "p", parse: port(1), description: "a port" },
  level: { type: "string", parse: int(0, 9), default: "6", description: "a level" },
  wait: { type: "string", parse: nonNegative, description: "seconds" },
  mode: { type: "string", parse: oneOf("none", "deflate"), description: "a mode" },
  quiet: { type: "boolean", alias: "q", description: "quiet" },
  "no-reload-conf": { type: "boolean", description: "a switch spelled with no-" },
} as const;

function usageError(argv: string[]): string {
  try {
    parseCommandLine(argv, SPEC);
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  throw new Error(`${argv.join(" ")} was accepted`);
}

describe("one declaration parses every spelling", () => {
  test("long, =, short, short with the value attached, long aliases, positionals, defaults", () => {
    const a = parseCommandLine(["cfg", "--name=a1", "-p", "4141", "-q", "--wait", "0.5", "--mode", "DEFLATE"], SPEC);
    expect(a).toMatchObject({ file: "cfg", name: "a1", port: 4141, quiet: true, wait: 0.5, mode: "deflate", level: 6, define: [] });
    expect(parseCommandLine(["--file", "x.conf", "-na1"], SPEC)).toMatchObject({ "conf-file": "x.conf", name: "a1", quiet: false });
    expect(parseCommandLine(["-f", "x.conf"], SPEC)["conf-file"]).toBe("x.conf");
    // A value may start with a dash: it is the value of the option before it.
    expect(parseCommandLine(["--name", "-odd"], SPEC).name).toBe("-odd");
    // After --, every word is a positional.
    expect(parseCommandLine(["--", "-file-with-dash"], SPEC).file).toBe("-file-with-dash");
  });

  test("-D as Java spells it, repeatable in every form, and --no-reload-conf as its own switch", () => {
    const a = parseCommandLine(["-Dk=v", "-D", "a=b=c", "--define=x=1", "--define", "y=", "--no-reload-conf"], SPEC);
    expect(a.define).toEqual([["k", "v"], ["a", "b=c"], ["x", "1"], ["y", ""]]);
    expect(a["no-reload-conf"]).toBe(true);
  });

  test("bad usage names the option or word, as written", () => {
    expect(usageError(["--bogus"])).toBe('unknown option "--bogus"');
    expect(usageError(["-qZ"])).toBe('unknown option "-Z"');
    expect(usageError(["--no-quiet"])).toBe('unknown option "--no-quiet"');
    expect(usageError(["a", "b"])).toBe('unexpected argument "b"');
    expect(usageError(["--name"])).toBe("--name needs a value");
    expect(usageError(["--quiet=yes"])).toBe('--quiet takes no value, got "yes"');
    expect(usageError(["-p", "70000"])).toBe('-p needs a port number from 1 to 65535, got "70000"');
    expect(usageError(["--port=0"])).toBe('--port needs a port number from 1 to 65535, got "0"');
    expect(usageError(["--level", "1.5"])).toBe('--level needs a whole number from 0 to 9, got "1.5"');
    expect(usageError(["--wait", "-1"])).toBe('--wait needs a non-negative number, got "-1"');
    expect(usageError(["--mode", "gzip"])).toBe('--mode needs one of none, deflate, got "gzip"');
    expect(usageError(["-Dnovalue"])).toBe('-D needs key=value, got "novalue"');
    expect(keyValue.hint).toBe("key=value");
  });
});

describe("flume run: flume-ng's command line", () => {
  test("flume agent --conf-file FILE --name a1 -c conf -Dk=v -D k=v --no-reload-conf", () => {
    const { options, notes } = parseRunArgs(["--conf-file", "a.conf", "--name", "a1", "-c", "conf", "-Dk=v", "-D", "j=w", "--no-reload-conf"]);
    expect(options).toMatchObject({ file: "a.conf", name: "a1", sysProps: { k: "v", j: "w" }, reload: false, pollIntervalSec: 30, drainTimeoutMs: 5000 });
    expect(notes).toEqual(["-c conf ignored: Flume TS needs no conf directory (logging goes to stderr)"]);
  });

  test("-Dflume.monitoring.type=http serves metrics on -Dflume.monitoring.port, checked as a port", () => {
    expect(parseRunArgs(["-f", "a.conf", "-Dflume.monitoring.type=http", "-Dflume.monitoring.port=34545"]).options.metricsPort).toBe(34545);
    expect(parseRunArgs(["-f", "a.conf", "-Dflume.monitoring.type=HTTP"]).options.metricsPort).toBe(41414);
    expect(() => parseRunArgs(["-f", "a.conf", "-Dflume.monitoring.type=http", "-Dflume.monitoring.port=99999"])).toThrow('-Dflume.monitoring.port needs a port number from 0 to 65535, got "99999"');
    expect(() => parseRunArgs(["-f", "a.conf", "-Dflume.monitoring.type=ganglia"])).toThrow('only "http" monitoring is available');
  });
});

describe("--help", () => {
  test("is written without colour codes when stdout is not a terminal, even with NO_COLOR and CI unset", () => {
    for (const args of [["--help"], ["run", "--help"], ["channel", "inspect", "--help"], []]) {
      const r = runCli(args, { env: { NO_COLOR: "", CI: "", FORCE_COLOR: "" } });
      expect(r.stdout).toContain("USAGE");
      expect(r.stdout).not.toContain("\x1b[");
    }
  });

  test("shows each command's declared options, aliases, value hints and defaults", () => {
    const run = runCli(["run", "--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/-f, --conf-file=<conf_file> +The Flume properties file \(also --file\)/);
    expect(run.stdout).toMatch(/--poll-interval=<poll_interval> +Seconds between checks of the file for changes \(default 30\)/);
    expect(run.stdout).toContain("--no-reload-conf");
    const avro = runCli(["avro-client", "--help"]);
    expect(avro.stdout).toMatch(/--compression=<none\|deflate> +.*\(also --compression-type\)/);
    expect(avro.stdout).toContain("-p, --port=<port>");
    const validate = runCli(["validate", "--help"]);
    expect(validate.stdout).toContain("USAGE flume validate [OPTIONS] [FILE]");
  });
});
