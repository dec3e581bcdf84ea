/** A small real disk for the tests that fill one up: a tmpfs (mounting needs root, see requires.ts). */
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { expect } from "bun:test";

/**
 * Mounts a tmpfs with the mount options (e.g. "size=8m") on dir/name, expecting the mount to
 * work; the returned function unmounts it.
 */
export function mountTmpfs(dir: string, name: string, options: string): { mnt: string; unmount: () => void } {
  const mnt = path.join(dir, name);
  mkdirSync(mnt);
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", mnt], { encoding: "utf8" });
  expect({ mount: r.status, stderr: r.stderr }).toEqual({ mount: 0, stderr: "" });
  return { mnt, unmount: () => void spawnSync("umount", ["-l", mnt]) };
}
