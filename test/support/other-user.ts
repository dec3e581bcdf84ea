/**
 * Child processes run as user nobody, so that file permissions apply to them (they do not bind
 * root). nobody must reach what it runs: in a clone under a private folder (mode 700, as root's
 * home or `mktemp -d` give) neither the runner's sources nor the Bun in node_modules are within
 * its reach. So the runner is bundled into one file and, when nobody cannot run this Bun where
 * it is, Bun is copied beside it, both in a folder of the test's (world-readable) temp dir.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";

export const NOBODY = 65534;

/** What to spawn as nobody: the command and the arguments that run the bundled runner. */
export interface NobodyRunner {
  command: string;
  args: string[];
}

/** Bundles `runner` (a test/support/runners file) into `<dir>/nobody/` with a Bun nobody can run. */
export function runnerForNobody(runner: string, dir: string): NobodyRunner {
  const out = path.join(dir, "nobody");
  mkdirSync(out, { recursive: true, mode: 0o755 });
  chmodSync(out, 0o755);
  const bundle = path.join(out, `${path.basename(runner, ".ts")}.js`);
  const built = spawnSync(process.execPath, ["build", runner, "--target", "bun", "--outfile", bundle], { encoding: "utf8" });
  if (built.status !== 0) throw new Error(`bun build ${runner} failed (${built.status}): ${built.stderr}`);
  chmodSync(bundle, 0o644);
  return { command: runsAsNobody(process.execPath) ? process.execPath : copiedBun(out), args: [bundle] };
}

function runsAsNobody(executable: string): boolean {
  const r = spawnSync(executable, ["--version"], { uid: NOBODY, gid: NOBODY, cwd: "/", encoding: "utf8" });
  return r.error === undefined && r.status === 0;
}

function copiedBun(dir: string): string {
  const bun = path.join(dir, "bun");
  copyFileSync(process.execPath, bun);
  chmodSync(bun, 0o755);
  return bun;
}
