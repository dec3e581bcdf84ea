import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";

const cleanups = cleanupsAfterEach();

/**
 * The runner's file system calls, as strace prints them with -y (descriptors with their
 * paths), or null where strace is not installed.
 */
function traced(dir: string): string[] | null {
  const out = path.join(dir, "strace.txt");
  const runner = path.join(import.meta.dir, "review2-fsync-runner.ts");
  const r = spawnSync("strace", ["-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2,unlink,unlinkat", "-o", out, process.execPath, runner, dir], { encoding: "utf8", timeout: 20000 });
  if (r.error || r.status !== 0) {
    if (r.error && (r.error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new Error(`runner failed (${r.status}): ${r.stderr}`);
  }
  return readFileSync(out, "utf8").split("\n");
}

function indexOf(lines: string[], re: RegExp, from = 0): number {
  for (let i = from; i < lines.length; i++) if (re.test(lines[i])) return i;
  return -1;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

test("TAILDIR: the position and fingerprint files reach the disk before they replace the old ones, and the rename is made durable (fsync of the directory)", () => {
  const t = tempDir("flume-review2-fsync-t-");
  cleanups.push(t.cleanup);
  const lines = traced(t.dir);
  if (lines === null) return;
  const state = path.join(t.dir, "state");
  for (const name of ["pos.json", "pos.json.fingerprints"]) {
    const tmp = path.join(state, `${name}.tmp`);
    const synced = indexOf(lines, new RegExp(`^\\d+ +f(data)?sync\\(\\d+<${esc(tmp)}>\\)`));
    const renamed = indexOf(lines, new RegExp(`rename(at2?)?\\(.*"${esc(tmp)}".*"${esc(path.join(state, name))}"`));
    expect({ name, synced: synced >= 0 }).toEqual({ name, synced: true });
    expect(renamed).toBeGreaterThan(synced);
    const dirSynced = indexOf(lines, new RegExp(`f(data)?sync\\(\\d+<${esc(state)}>\\)`), renamed);
    expect({ name, dirSyncedAfterRename: dirSynced > renamed }).toEqual({ name, dirSyncedAfterRename: true });
  }
});

test("spooling directory: the meta file with the file's last position is on disk before the file is marked done, and the rename to .COMPLETED is made durable", () => {
  const t = tempDir("flume-review2-fsync-s-");
  cleanups.push(t.cleanup);
  const lines = traced(t.dir);
  if (lines === null) return;
  const tracker = path.join(t.dir, "tracker");
  const spool = path.join(t.dir, "spool");
  const completed = indexOf(lines, new RegExp(`rename(at2?)?\\(.*"${esc(path.join(spool, "in.log"))}".*"${esc(path.join(spool, "in.log.COMPLETED"))}"`));
  expect(completed).toBeGreaterThan(0);
  // The meta file (renamed into place per batch) was synced, and its directory, before the completion.
  const metaSynced = indexOf(lines, new RegExp(`f(data)?sync\\(\\d+<${esc(path.join(tracker, ".flumespool-main.meta.json"))}(\\.tmp)?>\\)`));
  expect(metaSynced).toBeGreaterThanOrEqual(0);
  expect(metaSynced).toBeLessThan(completed);
  const trackerSynced = indexOf(lines, new RegExp(`f(data)?sync\\(\\d+<${esc(tracker)}>\\)`), metaSynced);
  expect(trackerSynced).toBeGreaterThan(metaSynced);
  expect(trackerSynced).toBeLessThan(completed);
  const spoolSynced = indexOf(lines, new RegExp(`f(data)?sync\\(\\d+<${esc(spool)}>\\)`), completed);
  expect(spoolSynced).toBeGreaterThan(completed);
});
