import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { runCli, tempDir } from "../support/helpers.ts";

const tmp = tempDir("flume-review-cli-");
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

describe("flume channel inspect: clear messages and exit codes", () => {
  test("unknown option exits 2", () => {
    const r = runCli(["channel", "inspect", tmp.dir, "--bogus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('flume channel inspect: unknown option "--bogus"');
  });

  test("no directory given exits 2 with a message naming what is missing", () => {
    const r = runCli(["channel", "inspect"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("flume channel inspect: missing the data directory");
    const e = runCli(["channel", "inspect", ""]);
    expect(e.code).toBe(2);
    expect(e.stderr).toContain("missing the data directory");
  });

  test("a file given as the data directory is a clear error, not a stack trace", () => {
    const file = path.join(tmp.dir, "not-a-dir.txt");
    writeFileSync(file, "x");
    const r = runCli(["channel", "inspect", file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`flume channel inspect: not a directory: ${file}`);
    expect(r.stderr).not.toContain("ENOTDIR");
  });

  test("a missing --checkpointDir is reported, not silently used", () => {
    const missing = path.join(tmp.dir, "no-checkpoint");
    const r = runCli(["channel", "inspect", tmp.dir, "--checkpointDir", missing]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`no such directory: ${missing}`);
  });

  test("an empty directory is reported as holding no data, exit 0", () => {
    const r = runCli(["channel", "inspect", tmp.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("no data files");
  });
});

describe("flume avro-client: bad values are usage errors naming the option or file", () => {
  test("a port above 65535 exits 2 naming -p", () => {
    const r = runCli(["avro-client", "-H", "127.0.0.1", "-p", "70000"], { input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('flume avro-client: -p needs a port number from 1 to 65535, got "70000"');
  });

  test("a missing header file is named as the header file, exit 2, before connecting", () => {
    const missing = path.join(tmp.dir, "headers.properties");
    // port 1 on 127.0.0.1 refuses connections: the header file must be checked first
    const r = runCli(["avro-client", "-H", "127.0.0.1", "-p", "1", "-R", missing], { input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`flume avro-client: header file ${missing}: no such file`);
  });

  test("a missing input file is named, exit 2, before connecting", () => {
    const missing = path.join(tmp.dir, "input.txt");
    const r = runCli(["avro-client", "-H", "127.0.0.1", "-p", "1", "-F", missing], { input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`flume avro-client: input file ${missing}: no such file`);
  });

  test("a missing --dirname is named, exit 2, before connecting", () => {
    const missing = path.join(tmp.dir, "spool");
    const r = runCli(["avro-client", "-H", "127.0.0.1", "-p", "1", "--dirname", missing], { input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`flume avro-client: directory ${missing}: no such directory`);
  });
});
