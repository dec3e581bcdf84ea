import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { runCli, tempDir } from "../support/helpers.ts";

const tmp = tempDir("flume-cli-channel-");
afterAll(() => tmp.cleanup());

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
