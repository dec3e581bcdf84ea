import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { crc32c, crc32cTables, useHardwareCrc32c } from "../../src/io/crc32c.ts";
import { hasSse42, loadSse42Crc32c } from "../../src/io/crc32c-sse42.ts";
import { precondition } from "../support/requires.ts";
import { crc32cSlicingBy8 } from "../support/crc32c-slicing-by-8.ts";
import { ROOT } from "../support/helpers.ts";

/** The bitwise definition (reflected polynomial 0x82F63B78), to check the sliced tables against. */
function reference(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** Bytes from a seeded generator, so a failure repeats. */
function randomBytes(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) bytes[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
  return bytes;
}

test("crc32c: the published check values (RFC 3720's iSCSI vectors, '123456789')", () => {
  expect(crc32c(new TextEncoder().encode("123456789"))).toBe(0xe3069283);
  expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
  expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
  expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
  expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c);
});

test("crc32c of any range equals the bitwise definition (ranges of every length around the 8-byte slices)", () => {
  const bytes = new Uint8Array(1200);
  let x = 99;
  for (let i = 0; i < bytes.length; i++) bytes[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  for (const [from, to] of [[0, 0], [0, 1], [3, 10], [5, 13], [1, 512], [512, 1024], [0, 1200], [1190, 1200]]) {
    expect(crc32c(bytes, from, to)).toBe(reference(bytes.subarray(from, to)));
  }
});

test("crc32c equals the bitwise definition and the former slicing-by-8 on random inputs of every length up to 1,100 bytes, at odd offsets", () => {
  const bytes = randomBytes(1200, 7);
  for (let length = 0; length <= 1100; length++) {
    const from = (length * 7) % 97;
    const want = reference(bytes.subarray(from, from + length));
    expect({ length, from, crc: crc32c(bytes, from, from + length) }).toEqual({ length, from, crc: want });
    expect({ length, from, crc: crc32cSlicingBy8(bytes, from, from + length) }).toEqual({ length, from, crc: want });
  }
});

test("crc32c equals the former slicing-by-8 on long random inputs, on subarrays at any byte offset", () => {
  const bytes = randomBytes(300_000, 11);
  const lengths = [1535, 4096, 16_383, 16_384, 65_537, 110_000, 131_075, 299_000];
  for (const length of lengths) {
    for (const offset of [0, 1, 3, 4, 5]) {
      const view = bytes.subarray(offset, offset + length);
      expect({ length, offset, crc: crc32c(view) }).toEqual({ length, offset, crc: crc32cSlicingBy8(view) });
      expect({ length, offset, crc: crc32c(bytes, 999 - offset, 999 - offset + length) }).toEqual({ length, offset, crc: crc32cSlicingBy8(bytes, 999 - offset, 999 - offset + length) });
    }
  }
  // A Buffer from Node's shared pool (a non-zero byteOffset in a larger ArrayBuffer).
  const pooled = Buffer.from(bytes.subarray(5, 4000));
  expect(crc32c(pooled)).toBe(reference(bytes.subarray(5, 4000)));
});

test("crc32c over a megabyte equals the bitwise definition", () => {
  const bytes = randomBytes(1 << 20, 3);
  expect(crc32c(bytes, 17)).toBe(reference(bytes.subarray(17)));
});

test("under Node and Deno crc32c gives the same values", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "crc32c-"));
  try {
    const entry = path.join(dir, "check.ts");
    writeFileSync(
      entry,
      `import { crc32c } from ${JSON.stringify(path.join(ROOT, "src/io/crc32c.ts"))};
      const b = new Uint8Array(70000);
      for (let i = 0; i < b.length; i++) b[i] = (i * 31 + 7) & 255;
      console.log(JSON.stringify([crc32c(b), crc32c(b, 3, 515), crc32c(b, 1, 40)]));`,
    );
    const b = new Uint8Array(70000);
    for (let i = 0; i < b.length; i++) b[i] = (i * 31 + 7) & 255;
    const want = JSON.stringify([reference(b), reference(b.subarray(3, 515)), reference(b.subarray(1, 40))]);
    // Node 20 runs no TypeScript: the check bundled for it.
    const bundle = path.join(dir, "check.mjs");
    const built = spawnSync(process.execPath, ["build", entry, "--target=node", `--outfile=${bundle}`], { encoding: "utf8" });
    expect(built.stderr).not.toContain("error");
    const runs = {
      node: spawnSync("node", [bundle], { encoding: "utf8" }),
      deno: spawnSync(path.join(ROOT, "node_modules/.bin/deno"), ["run", "--allow-read", entry], { encoding: "utf8", cwd: dir }),
    };
    for (const [runtime, r] of Object.entries(runs)) {
      expect({ runtime, out: r.stdout.trim(), err: r.status === 0 ? "" : r.stderr }).toEqual({ runtime, out: want, err: "" });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const sse42 = precondition(() => typeof Bun !== "undefined" && hasSse42(), "needs Bun on x86-64 Linux with SSE 4.2");

sse42.test("crc32c with the CPU's instruction equals the tables on every length up to 1,100 bytes at odd offsets and on a record batch's 128 KB, and crc32c takes it", async () => {
  const native = await loadSse42Crc32c();
  expect(native).not.toBeNull();
  const bytes = randomBytes(140_000, 11);
  for (let length = 0; length <= 1100; length++) {
    const from = (length * 13) % 89;
    expect({ length, from, crc: native!(bytes, from, from + length) }).toEqual({ length, from, crc: crc32cTables(bytes, from, from + length) });
  }
  expect(native!(bytes, 5, 131_077)).toBe(crc32cTables(bytes, 5, 131_077));
  expect(await useHardwareCrc32c()).toBe(true);
  expect(crc32c(new TextEncoder().encode("123456789"))).toBe(0xe3069283);
  expect(crc32c(bytes, 7, 120_007)).toBe(reference(bytes.subarray(7, 120_007)));
});
