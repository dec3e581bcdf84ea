import { expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { appendFileSync, copyFileSync, mkdirSync, renameSync, truncateSync } from "node:fs";
import path from "node:path";
import { tempDir } from "../support/helpers.ts";
import { drain, openChannel, rng } from "../support/file-channel.ts";

const RUNNER = path.join(import.meta.dir, "taildir-runner.ts");
const SEED = Number(process.env.FLUME_CRASH_SEED ?? 11);

function startRunner(dir: string, raw: Record<string, string>) {
  const child = spawn(process.execPath, [RUNNER, dir, JSON.stringify(raw)], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise<void>((r) => child.on("exit", () => r()));
  const lastSize = () => {
    const m = [...out.matchAll(/^size (\d+)$/gm)];
    return m.length ? Number(m[m.length - 1][1]) : -1;
  };
  const until = async (cond: () => boolean, what: string, ms = 10000) => {
    const t0 = Date.now();
    while (!cond()) {
      if (child.exitCode !== null) throw new Error(`runner exited before ${what}:\n${out}\n${err}`);
      if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}:\n${out}\n${err}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  return { child, exited, lastSize, until, output: () => out };
}

test(`TAILDIR -> file channel: SIGKILLs during writes and rotations put every line exactly once (seed ${SEED})`, async () => {
  const { dir, cleanup } = tempDir("flume-fc-taildir-");
  try {
    const random = rng(SEED);
    const logs = path.join(dir, "logs");
    mkdirSync(logs);
    const file = path.join(logs, "app.log");
    const raw = {
      filegroups: "g1",
      "filegroups.g1": `${logs}/app\\.log.*`,
      positionFile: path.join(dir, "pos", "taildir_position.json"),
      batchSize: "37",
    };
    let n = 0;
    const write = (k: number) => {
      let s = "";
      for (let i = 0; i < k; i++) s += `L-${n++}\n`;
      appendFileSync(file, s);
    };
    for (let round = 0; round < 8; round++) {
      const r = startRunner(dir, raw);
      await r.until(() => r.output().includes("READY"), "start");
      const before = n;
      write(300 + Math.floor(random() * 300));
      await r.until(() => r.lastSize() > before, "reading to start");
      write(3000); // about 80 batches of 37, one fsync each: the kill lands while they are read
      await new Promise((res) => setTimeout(res, Math.floor(random() * 40)));
      r.child.kill("SIGKILL");
      await r.exited;
      if (process.env.FLUME_CRASH_DEBUG) console.log(`round ${round}: killed with ${r.lastSize()} of ${n} lines reported in the channel`);
      write(50);
      if (round % 2 === 0) renameSync(file, `${file}.${round}`);
      else {
        copyFileSync(file, `${file}.${round}`);
        truncateSync(file, 0);
      }
      write(60);
    }
    const r = startRunner(dir, raw);
    await r.until(() => r.output().includes("READY"), "start");
    write(10);
    await r.until(() => r.lastSize() >= n, `all ${n} lines in the channel`);
    r.child.kill("SIGTERM");
    await r.exited;
    expect(r.output()).toContain("STOPPED");

    const { ch } = await openChannel(dir);
    const lines = await drain(ch);
    await ch.stop();
    const counts = new Map<string, number>();
    for (const l of lines) counts.set(l, (counts.get(l) ?? 0) + 1);
    const missing: string[] = [];
    for (let i = 0; i < n; i++) if (!counts.has(`L-${i}`)) missing.push(`L-${i}`);
    const repeated = [...counts].filter(([, c]) => c > 1).map(([l]) => l);
    expect(missing.slice(0, 10)).toEqual([]);
    expect(repeated.slice(0, 10)).toEqual([]);
    expect(lines.length).toBe(n);
  } finally {
    cleanup();
  }
}, 30000);
