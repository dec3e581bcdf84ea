/**
 * The repository is self-contained: a fresh clone has everything its tests, benchmarks and
 * scripts read, so nothing in src/, test/ or scripts/ may name a path outside it.
 */
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { ROOT } from "./support/helpers.ts";
import { findOutsidePaths, formatOffender, scanRepository } from "./support/outside-paths.ts";
import { commandRuns, precondition } from "./support/requires.ts";

const needsGitCheckout = precondition(() => commandRuns("git", "-C", ROOT, "rev-parse", "--git-dir"), "needs a git checkout (git and the repository's .git)");

const at = (relative: string, text: string) => findOutsidePaths(path.join(ROOT, relative), text, ROOT).map(formatOffender);
// Built from pieces so that this file does not name the paths it checks for.
const dots = ".".repeat(2);
const up = (n: number) => Array(n).fill(dots).join("/");
/** n string arguments, each two dots (as path.join takes them) */
const upArgs = (n: number) => Array(n).fill(`"${dots}"`).join(", ");
const slash = "/";

describe("no file names a path outside the repository", () => {
  test("src/, test/ and scripts/ name no path outside the repository (each offender as file:line)", () => {
    expect(scanRepository(ROOT, ["src", "test", "scripts"]).map(formatOffender)).toEqual([]);
  });

  test("the shared folder beside the repository is an offender, reported with file and line", () => {
    const text = `const a = 1;\nconst F = path.join(ROOT, "${up(1)}${slash}shared/fixtures");\n`;
    expect(at("test/x.test.ts", text)).toEqual([expect.stringMatching(/^test\/x\.test\.ts:2: names the shared folder/), expect.stringMatching(/^test\/x\.test\.ts:2: .* leaves the repository/)]);
  });

  test("a ../ chain is resolved against the file's directory: out of the repository offends, inside does not", () => {
    expect(at("test/rpc/x.test.ts", `import { a } from "${up(2)}/src/a.ts";`)).toEqual([]);
    expect(at("test/rpc/x.test.ts", `const F = path.resolve(import.meta.dir, "${up(3)}/elsewhere/data");`)).toEqual([expect.stringMatching(/^test\/rpc\/x\.test\.ts:1: .*leaves the repository/)]);
    expect(at("test/rpc/x.test.ts", `const F = path.resolve(import.meta.dir, ${upArgs(2)});`)).toEqual([]);
    expect(at("test/rpc/x.test.ts", `const F = path.resolve(import.meta.dir, ${upArgs(3)}, "x");`)).toEqual([expect.stringMatching(/leaves the repository/)]);
    expect(at("scripts/bench/x.ts", `// reads ${up(3)}/notes.md`)).toEqual([expect.stringMatching(/^scripts\/bench\/x\.ts:1: .*leaves the repository/)]);
  });

  test("after ROOT a ../ chain is resolved against the repository root", () => {
    expect(at("test/a/b/x.test.ts", `path.join(ROOT, "${up(1)}/other")`)).toEqual([expect.stringMatching(/from the repository root leaves the repository/)]);
    expect(at("test/a/b/x.test.ts", `path.join(ROOT, "test/${up(1)}/src")`)).toEqual([]);
  });

  test("absolute paths of a machine offend; system paths do not", () => {
    for (const dir of ["work", "root", "home", "Users"]) expect(at("src/x.ts", `const p = "${slash}${dir}/me/data";`)).toEqual([expect.stringMatching(/^src\/x\.ts:1: names an absolute path of a machine/)]);
    for (const p of ["/tmp/x", "/dev/null", "/proc/self/fd", "/usr/bin/python3", "/etc/hosts", "/var/log/flume", "/bin/sh -c"]) expect(at("src/x.ts", `const p = "${p}";`)).toEqual([]);
    // URL paths and paths below other folders are not machine paths.
    expect(at("src/x.ts", `fetch("http://127.0.0.1:1/home"); const q = "a/home/b";`)).toEqual([]);
  });
});

describe("a clone holds files, not links to the machine it was made on", () => {
  needsGitCheckout.test("git tracks no symbolic link (one to node_modules or a folder beside the repository would break every other clone)", () => {
    const r = spawnSync("git", ["ls-files", "-s"], { cwd: ROOT, encoding: "utf8" });
    expect(r.status).toBe(0);
    // Mode 120000 is a symbolic link.
    const links = r.stdout.split("\n").filter((l) => l.startsWith("120000 ")).map((l) => l.split("\t")[1]);
    expect(links).toEqual([]);
  });
});
