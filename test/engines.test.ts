/**
 * package.json's engines and the locked dependency set agree: every Node version that
 * package.json admits is admitted by every package in package-lock.json, so a fresh
 * `npm install` on any supported Node prints no EBADENGINE warning.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./support/helpers.ts";

type Version = [number, number, number];

/** "22.x", "0.11", "20.18.1" -> [major, minor, patch] (a wildcard or missing part is 0) */
function parseVersion(text: string): Version {
  const parts = text.replace(/^v/, "").split("-")[0]!.split(".");
  const num = (i: number) => (parts[i] === undefined || /^[xX*]$/.test(parts[i]!) ? 0 : Number(parts[i]));
  const v: Version = [num(0), num(1), num(2)];
  if (v.some(Number.isNaN)) throw new Error(`not a version: ${text}`);
  return v;
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** The lower bound of a range that has no upper bound (">=20.18.1"), which is the only shape package.json's engines may take. */
function lowerBoundOf(range: string): Version {
  const m = /^>=\s*(\S+)$/.exec(range.trim());
  if (!m) throw new Error(`package.json engines.node must be a ">=X.Y.Z" range, not "${range}"`);
  return parseVersion(m[1]!);
}

/**
 * Whether `range` admits every version from `floor` up: some "||" alternative must be made of
 * lower bounds only (an upper bound, ^ or ~ leaves out the newer versions) that `floor` meets.
 */
function admitsEverythingFrom(range: string, floor: Version): boolean {
  return range.split("||").some((alternative) => {
    const comparators = alternative.trim().replace(/(>=|>|=)\s+/g, "$1").split(/\s+/).filter((c) => c !== "");
    return comparators.every((c) => {
      if (c === "*" || c === "x") return true;
      const m = /^(>=|>)(\S+)$/.exec(c);
      if (!m) return false;
      const order = compare(floor, parseVersion(m[2]!));
      return m[1] === ">=" ? order >= 0 : order > 0;
    });
  });
}

/**
 * Packages only the agent loads, and the agent runs under Bun or Deno, never Node: their Node
 * engines cannot matter, but npm still warns about them on an older Node (the README says so).
 * The Kafka client (@platformatic/kafka, chosen by measurement, see the README's Kafka section)
 * and its two helpers want Node 22.
 */
const AGENT_ONLY = ["node_modules/@platformatic/kafka", "node_modules/@platformatic/dynamic-buffer", "node_modules/@platformatic/wasm-utils"];

interface LockedPackage {
  version?: string;
  engines?: { node?: string } | string[];
}

describe("package.json's engines and the locked dependencies agree", () => {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { engines: { node: string } };
  const lock = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, LockedPackage> };
  const floor = lowerBoundOf(manifest.engines.node);

  test("package.json's engines match the root entry of package-lock.json (npm ci reads the lock's)", () => {
    expect(lock.packages[""]?.engines).toEqual(manifest.engines);
  });

  test("every package in package-lock.json but the agent-only ones runs on every Node version package.json's engines admits (else a fresh npm install warns EBADENGINE)", () => {
    const refusing: string[] = [];
    for (const [where, pkg] of Object.entries(lock.packages)) {
      if (where === "" || AGENT_ONLY.includes(where)) continue;
      const node = Array.isArray(pkg.engines) ? undefined : pkg.engines?.node;
      if (node !== undefined && !admitsEverythingFrom(node, floor)) refusing.push(`${where}@${pkg.version} wants node ${node}`);
    }
    expect(refusing).toEqual([]);
  });

  test("every agent-only package is in the lock (an entry no longer needed is taken off the list)", () => {
    for (const where of AGENT_ONLY) expect({ where, locked: lock.packages[where] !== undefined }).toEqual({ where, locked: true });
  });

  test("the check refuses a package wanting a newer Node than the floor, or capping Node, and accepts lower floors", () => {
    expect(admitsEverythingFrom(">= 22.x", parseVersion("20.0.0"))).toBe(false);
    expect(admitsEverythingFrom(">=20.18.1", parseVersion("20.0.0"))).toBe(false);
    expect(admitsEverythingFrom("^20.0.0", parseVersion("20.0.0"))).toBe(false);
    expect(admitsEverythingFrom(">=14 <23", parseVersion("20.0.0"))).toBe(false);
    expect(admitsEverythingFrom(">=20.18.1", parseVersion("20.18.1"))).toBe(true);
    expect(admitsEverythingFrom(">= 18.x", parseVersion("20.18.1"))).toBe(true);
    expect(admitsEverythingFrom("^14.17.0 || >=16", parseVersion("20.18.1"))).toBe(true);
    expect(admitsEverythingFrom(">=0.11", parseVersion("20.18.1"))).toBe(true);
  });
});
