import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT, runCli, tempDir } from "../support/helpers.ts";

describe("flume CLI shell", () => {
  test("version prints the package version and the Flume release it follows", () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
    const r = runCli(["version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`flume-ts ${pkg.version} (compatible with Apache Flume 1.11.0)`);
  });

  test("--help lists the subcommands", () => {
    const r = runCli(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("version");
  });
});

const tmp = tempDir("flume-cli-");
afterAll(() => tmp.cleanup());

describe("flume: unknown commands and options are usage errors (exit 2, message on stderr)", () => {
  test("an unknown command names it and exits 2", () => {
    const r = runCli(["bogus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "bogus"');
    expect(r.stderr).toContain("flume --help");
  });

  test("an unknown top-level option exits 2", () => {
    const r = runCli(["--bogus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown option "--bogus"');
  });

  test("no command at all shows the usage and exits 2", () => {
    const r = runCli([]);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toContain("COMMANDS");
    expect(r.stderr).toContain("no command given");
  });

  test("flume version rejects unknown options", () => {
    const r = runCli(["version", "--bogus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('flume version: unknown option "--bogus"');
  });

  test("flume describe rejects unknown options and extra arguments", () => {
    const a = runCli(["describe", "memory", "--bogus"]);
    expect(a.code).toBe(2);
    expect(a.stderr).toContain('flume describe: unknown option "--bogus"');
    expect(a.stdout).toBe("");
    const b = runCli(["describe", "memory", "file"]);
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('unexpected argument "file"');
    // the documented options still work, in both spellings
    expect(runCli(["describe", "--kind", "channel"]).code).toBe(0);
    expect(runCli(["describe", "--kind=channel", "memory"]).stdout).toContain("channel memory");
  });

  test("flume channel without a subcommand, or with an unknown one, exits 2", () => {
    const a = runCli(["channel"]);
    expect(a.code).toBe(2);
    expect(a.stderr).toContain("no command given");
    const b = runCli(["channel", "bogus"]);
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('unknown command "bogus"');
  });

  test("flume run --help shows -D as it is really spelled, and --define works too", () => {
    const help = runCli(["run", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).not.toContain("--D=");
    expect(help.stdout).toContain("-D, --define=<key=value>");
    // --define k=v is accepted: a missing file is then the reported problem, not the option
    const r = runCli(["run", "--define", "a=b", "-f", path.join(tmp.dir, "missing.conf")]);
    expect(r.stderr).not.toContain("unknown option");
    expect(r.code).toBe(2);
  });
});
