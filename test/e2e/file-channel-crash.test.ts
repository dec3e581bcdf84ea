import { expect, test } from "bun:test";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ROOT, tempDir } from "../support/helpers.ts";
import { drain, openChannel, rng } from "../support/file-channel.ts";

const WRITER = path.join(ROOT, "test", "support", "runners", "crash-writer.ts");
const SEED = Number(process.env.FLUME_CRASH_SEED ?? 20261130);
const CYCLES = 20;

/** Runs the writer until `killAfterMs` after its first ack, SIGKILLs it, returns its last ack. */
function runAndKill(dir: string, firstId: number, seed: number, killAfterMs: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRITER, dir, String(firstId), String(seed)], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let timer: ReturnType<typeof setTimeout> | null = null;
    child.stdout.on("data", (d) => {
      out += d;
      if (timer === null && out.includes("ready")) timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    });
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code, signal) => {
      if (timer) clearTimeout(timer);
      if (signal !== "SIGKILL") return reject(new Error(`writer exited with ${code ?? signal} before the kill:\n${out}\n${err}`));
      if (process.env.FLUME_CRASH_DEBUG && err) process.stderr.write(err);
      const acks = [...out.matchAll(/^ack (\d+)$/gm)].map((m) => Number(m[1]));
      resolve(acks.length > 0 ? acks[acks.length - 1] : null);
    });
  });
}

test(`every acknowledged event survives ${CYCLES} SIGKILLs (seed ${SEED})`, async () => {
  const { dir, cleanup } = tempDir("flume-fc-crash-");
  try {
    const random = rng(SEED);
    const acked: [number, number][] = [];
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const first = cycle * 1_000_000;
      const last = await runAndKill(dir, first, Math.floor(random() * 0xffffffff), 20 + Math.floor(random() * 250));
      if (last !== null) acked.push([first, last]);
    }
    expect(acked.length).toBeGreaterThan(CYCLES / 4);

    const { ch } = await openChannel(dir, { capacity: 1_000_000 });
    const remaining = await drain(ch);
    await ch.stop();
    const delivered = fs.readFileSync(path.join(dir, "delivered.txt"), "utf8").split("\n");
    const seen = new Set<number>();
    for (const s of remaining) seen.add(Number(s));
    for (const s of delivered) if (s !== "") seen.add(Number(s));
    const missing: number[] = [];
    let total = 0;
    for (const [first, last] of acked) {
      for (let id = first; id <= last; id++) {
        total++;
        if (!seen.has(id)) missing.push(id);
      }
    }
    if (process.env.FLUME_CRASH_DEBUG) console.log({ total, remaining: remaining.length, delivered: delivered.length, files: fs.readdirSync(path.join(dir, "data")) });
    expect(total).toBeGreaterThan(100);
    expect(missing.slice(0, 20)).toEqual([]);
  } finally {
    cleanup();
  }
}, 90_000);
