import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT, runCli } from "../support/helpers.ts";

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
