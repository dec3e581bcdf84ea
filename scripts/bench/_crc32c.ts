// npx bun scripts/bench/_crc32c.ts [runtime ...]: CRC32C throughput (MB/s, best of 12 rounds) at
// 64 B, 512 B (an HDFS chunk), 16 KB and 110 KB (a Kafka record batch as the source fetches it),
// of src/io/crc32c.ts's tables and of the CPU instruction it takes under Bun on x86-64
// (src/io/crc32c-sse42.ts), the slicing-by-8 it was before (test/support/crc32c-slicing-by-8.ts),
// and the WebAssembly ones of packages: the Kafka client's (@platformatic/wasm-utils) and hash-wasm's
// when it is installed (not a dependency: `npm install --no-save hash-wasm` to compare).
// Runtimes: bun, bun-agent (BUN_JSC_useFTLJIT=false, as the compiled agent runs), node (this file
// bundled for it), deno; all four when none is named. Each candidate runs in a process of its own
// (JSC compiled a WebAssembly module slower when several instances had been made before it).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { crc32cTables } from "../../src/io/crc32c.ts";
import { loadSse42Crc32c } from "../../src/io/crc32c-sse42.ts";
import { crc32cSlicingBy8 } from "../../test/support/crc32c-slicing-by-8.ts";

type Crc = (bytes: Uint8Array, from: number, to: number) => number;

const SIZES = [64, 512, 16384, 110_000];
const CANDIDATES = ["src/io/crc32c.ts (tables)", "CPU instruction (SSE 4.2)", "slicing-by-8 (before)", "Kafka client's wasm", "hash-wasm"];

/** A candidate's function, or null when its package is not installed. */
async function candidate(name: string): Promise<Crc | null> {
  switch (name) {
    case "src/io/crc32c.ts (tables)":
      return crc32cTables;
    case "CPU instruction (SSE 4.2)":
      // Bun on x86-64 Linux only: null (shown as not installed) elsewhere.
      return loadSse42Crc32c();
    case "slicing-by-8 (before)":
      return crc32cSlicingBy8;
    case "Kafka client's wasm": {
      // The package itself, not the tsconfig `paths` stand-in (src/kafka/wasm-codecs.ts) Bun would pick.
      const spec = "@platformatic/wasm-utils/bundled";
      const m = (await import(spec).catch(() => null)) as { crc32c(b: Uint8Array): number } | null;
      return m && ((b, from, to) => m.crc32c(b.subarray(from, to)) >>> 0);
    }
    case "hash-wasm": {
      const spec = "hash-wasm";
      type Hasher = { init(): Hasher; update(b: Uint8Array): Hasher; digest(f: "binary"): Uint8Array };
      const m = (await import(spec).catch(() => null)) as { createCRC32(poly: number): Promise<Hasher> } | null;
      if (!m) return null;
      const h = await m.createCRC32(0x82f63b78);
      return (b, from, to) => {
        const d = h.init().update(b.subarray(from, to)).digest("binary");
        return ((d[0] << 24) | (d[1] << 16) | (d[2] << 8) | d[3]) >>> 0;
      };
    }
  }
  throw new Error(`unknown candidate ${name}`);
}

/** MB/s at each of SIZES, after a warm-up (the JITs' top tiers), checked against slicing-by-8 first. */
function measure(fn: Crc): number[] {
  const data = new Uint8Array(120_000);
  for (let i = 0; i < data.length; i++) data[i] = Math.imul(i, 0x9e3779b1) >>> 24;
  for (const size of SIZES) {
    if (fn(data, 3, 3 + size) !== crc32cSlicingBy8(data, 3, 3 + size)) throw new Error(`wrong CRC on ${size} bytes`);
  }
  let sink = 0;
  for (let t0 = performance.now(), k = 0; performance.now() - t0 < 300; k++) sink ^= fn(data, k & 7, (k & 7) + 16384);
  const rates = SIZES.map((size) => {
    const calls = Math.max(1, Math.floor(4e6 / size));
    let best = 0;
    for (let round = 0; round < 12; round++) {
      const t0 = performance.now();
      for (let k = 0; k < calls; k++) sink ^= fn(data, k & 7, (k & 7) + size);
      best = Math.max(best, (calls * size) / 1e3 / (performance.now() - t0));
    }
    return best;
  });
  if (sink === 0.5) console.log(sink);
  return rates;
}

const childAt = process.argv.indexOf("--candidate");
if (childAt >= 0) {
  const fn = await candidate(process.argv[childAt + 1]);
  console.log(JSON.stringify(fn ? measure(fn) : null));
} else {
  const root = path.join(import.meta.dirname, "..", "..");
  const bin = (name: string) => path.join(root, "node_modules", ".bin", name);
  // Inside node_modules, so that the bundle for node finds the packages it imports.
  const cache = path.join(root, "node_modules", ".cache");
  mkdirSync(cache, { recursive: true });
  const tmp = mkdtempSync(path.join(cache, "crc32c-bench-"));
  const self = path.join(import.meta.dirname, "_crc32c.ts");
  const runtimes: Record<string, () => { cmd: string; args: string[]; env?: Record<string, string> }> = {
    bun: () => ({ cmd: process.execPath, args: [self] }),
    "bun-agent": () => ({ cmd: process.execPath, args: [self], env: { BUN_JSC_useFTLJIT: "false" } }),
    node: () => {
      const out = path.join(tmp, "crc32c-bench.mjs");
      const built = spawnSync(process.execPath, ["build", self, "--target=node", `--outfile=${out}`], { encoding: "utf8" });
      if (built.status !== 0) throw new Error(`bun build for node failed: ${built.stderr}`);
      return { cmd: "node", args: [out] };
    },
    deno: () => ({ cmd: bin("deno"), args: ["run", "--allow-read", "--allow-env", self] }),
  };
  const wanted = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(runtimes);
  try {
    for (const name of wanted) {
      if (!runtimes[name]) throw new Error(`unknown runtime ${name}; known: ${Object.keys(runtimes).join(", ")}`);
      const { cmd, args, env } = runtimes[name]();
      const version = spawnSync(cmd, ["--version"], { encoding: "utf8" }).stdout.split("\n")[0];
      console.log(`\n${name} (${version.trim()}${env ? `, ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(" ")}` : ""}): MB/s`);
      console.log(`  ${"".padEnd(28)}${SIZES.map((s) => `${s} B`.padStart(10)).join("")}`);
      for (const c of CANDIDATES) {
        const r = spawnSync(cmd, [...args, "--candidate", c], { encoding: "utf8", cwd: root, env: { ...process.env, ...env } });
        const line = r.stdout.trim().split("\n").pop() ?? "";
        const rates = r.status === 0 ? (JSON.parse(line) as number[] | null) : undefined;
        const text = rates === undefined ? `failed: ${(r.stderr || r.stdout).trim().split("\n").slice(-1)[0]}` : rates === null ? "not installed" : rates.map((x) => x.toFixed(0).padStart(10)).join("");
        console.log(`  ${c.padEnd(28)}${text}`);
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
