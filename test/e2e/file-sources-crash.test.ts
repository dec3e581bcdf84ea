/**
 * File sources in child processes killed with SIGKILL while they read, across log rotations,
 * then restarted: no line is lost, and with a durable channel none is repeated. The child
 * processes are test/support/runners/taildir.ts and spooldir.ts.
 */
import { describe, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { numbered, until } from "../support/components.ts";
import { drain, openChannel, rng } from "../support/file-channel.ts";
import { cleanupsAfterEach, ROOT, tempDir, waitBound } from "../support/helpers.ts";

const TAILDIR_RUNNER = path.join(ROOT, "test", "support", "runners", "taildir.ts");
const SPOOLDIR_RUNNER = path.join(ROOT, "test", "support", "runners", "spooldir.ts");
const SEED = Number(process.env.FLUME_CRASH_SEED ?? 11);

const cleanups = cleanupsAfterEach();

/** A logs folder and TAILDIR properties for its app.log. */
function taildirSetup() {
  const t = tempDir("flume-taildir-crash-");
  cleanups.push(t.cleanup);
  const logs = path.join(t.dir, "logs");
  mkdirSync(logs);
  const raw = { filegroups: "g1", "filegroups.g1": `${logs}/app\\.log`, positionFile: path.join(t.dir, "pos", "taildir_position.json"), batchSize: "7" };
  return { dir: t.dir, logs, raw };
}

/** A spool folder and spooldir properties for it. */
function spoolSetup(extra: Record<string, string> = {}) {
  const t = tempDir("flume-spool-crash-");
  cleanups.push(t.cleanup);
  const spool = path.join(t.dir, "spool");
  mkdirSync(spool);
  return { dir: t.dir, spool, raw: { spoolDir: spool, pollDelay: "20", batchSize: "10", ...extra } };
}

/**
 * The delivered file's faults for a failure message: runs of repeated lines (where the first
 * copy ended, what followed it, and the #POS line the repeat resumed from) and lines that are
 * none of the K-0..K-(n-1) written.
 */
function deliveryFaults(output: string, n: number): string[] {
  const rows = readFileSync(output, "utf8").split("\n");
  const expected = new Set(numbered("K", 0, n).trim().split("\n"));
  const firstRow = new Map<string, number>();
  const faults: string[] = [];
  const cut = (l: string | undefined) => (l === undefined ? "<end>" : l.length > 400 ? `${l.slice(0, 400)}...` : l);
  let lastPos = -1;
  let run: { from: number; to: number; orig: number; origEnd: number } | null = null;
  const close = () => {
    if (!run) return;
    const after = rows.slice(run.origEnd + 1, run.origEnd + 3).map(cut);
    faults.push(`rows ${run.from}-${run.to} (${rows[run.from]}..${rows[run.to]}) repeat rows ${run.orig}-${run.origEnd}, which were followed by ${JSON.stringify(after)}; the repeat follows ${lastPos >= 0 ? `row ${lastPos}: ${cut(rows[lastPos])}` : "no #POS"}`);
    run = null;
  };
  rows.forEach((l, row) => {
    if (l === "") return;
    if (l.startsWith("#POS ")) {
      close();
      lastPos = row;
      return;
    }
    if (!expected.has(l)) {
      close();
      faults.push(`row ${row}: ${JSON.stringify(l)} was never written (a torn line?)`);
      return;
    }
    const orig = firstRow.get(l);
    if (orig === undefined) {
      close();
      firstRow.set(l, row);
      return;
    }
    if (run && run.to === row - 1 && run.origEnd === orig - 1) Object.assign(run, { to: row, origEnd: orig });
    else {
      close();
      run = { from: row, to: row, orig, origEnd: orig };
    }
  });
  close();
  return faults;
}

const ls = (dir: string) => readdirSync(dir).filter((n) => !n.startsWith(".")).sort();

/** The TAILDIR -> file channel runner on channel directory dir. */
function startFileChannelRunner(dir: string, raw: Record<string, string>) {
  const child = spawn(process.execPath, [TAILDIR_RUNNER, "file-channel", dir, JSON.stringify(raw)], { stdio: ["ignore", "pipe", "pipe"] });
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
      if (Date.now() - t0 > waitBound(ms)) throw new Error(`timed out waiting for ${what}:\n${out}\n${err}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  return { child, exited, lastSize, until, output: () => out };
}

/** The lines of a delivered file (its #POS lines left out). */
function deliveredLines(output: string): string[] {
  try {
    return readFileSync(output, "utf8").split("\n").filter((l) => l !== "" && !l.startsWith("#POS "));
  } catch {
    return [];
  }
}

/** Waits until the delivered file stops growing (lines of rotated files may come after the last one written). */
async function untilQuiet(output: string): Promise<void> {
  for (let count = -1; count !== deliveredLines(output).length; ) {
    count = deliveredLines(output).length;
    await new Promise((res) => setTimeout(res, 300));
  }
}

/**
 * The TAILDIR -> delivered file runner (batches of 50), started; SIGKILLed after the test if
 * still running. Its stderr is passed on (`quiet`: only kept, for the test to look at).
 */
async function startDeliverRunner(raw: Record<string, string>, output: string, durable: boolean, { env = {}, quiet = false }: { env?: Record<string, string>; quiet?: boolean } = {}) {
  const child = spawn(process.execPath, [TAILDIR_RUNNER, "deliver", JSON.stringify({ ...raw, batchSize: "50" }), output, durable ? "durable" : "memory"], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => {
    err += d;
    if (!quiet) process.stderr.write(d);
  });
  const exited = new Promise<void>((r) => child.on("exit", () => r()));
  await until(() => {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the runner exited before READY:\n${err}`);
    return out.includes("READY");
  }, "runner start");
  return { child, exited, output: () => out, errors: () => err };
}

describe("TAILDIR in a child process, SIGKILLed", () => {
  for (const [first, durable] of [["rename", false], ["copytruncate", false], ["rename", true], ["copytruncate", true]] as const) test(`SIGKILL during writes and rotations (${first} first), then restart: ${durable ? "with a durable channel every line exactly once" : "lost only what the memory channel held, none repeated beyond a batch"}`, async () => {
    const s = taildirSetup();
    const output = path.join(s.dir, "delivered.txt");
    writeFileSync(output, "");
    const startRunner = () => startDeliverRunner(s.raw, output, durable);
    const file = path.join(s.logs, "app.log");
    let n = 0;
    const write = (k: number) => {
      appendFileSync(file, numbered("K", n, n + k));
      n += k;
    };
    /** Lines a kill may take with it: read into the memory channel, not delivered yet. */
    const inFlight = new Set<string>();
    const delivered = () => deliveredLines(output);
    for (let round = 0; round < 4; round++) {
      const r = await startRunner();
      write(500);
      // All of them: lines a kill took from the memory channel are gone for good, so a count of what was written cannot be waited for.
      const lastOfRound = `K-${n - 1}`;
      await until(() => delivered().includes(lastOfRound), "this round's lines delivered");
      const from = n;
      write(700); // the kill lands while these are being read
      for (const l of numbered("K", from, n).trim().split("\n")) inFlight.add(l);
      r.child.kill("SIGKILL");
      await r.exited;
      write(50);
      if (round % 2 === (first === "rename" ? 0 : 1)) renameSync(file, `${file}.${round}`);
      else {
        copyFileSync(file, `${file}.${round}`);
        truncateSync(file, 0);
      }
      write(60);
    }
    const r = await startRunner();
    write(10);
    const last = `K-${n - 1}`;
    await until(() => delivered().includes(last) && (!durable || new Set(delivered()).size >= n), "every line delivered", 15000);
    await untilQuiet(output);
    r.child.kill("SIGTERM");
    await r.exited;
    const lines = delivered();
    const unique = new Set(lines);
    const missing = numbered("K", 0, n).trim().split("\n").filter((l) => !unique.has(l));
    if (process.env.DEBUG_TAILDIR) console.log(`delivered ${lines.length} lines, ${lines.length - unique.size} repeated, ${missing.length} lost, of ${n}`);
    if (durable) {
      expect(missing).toEqual([]);
      // On failure, which lines came twice or torn, and what the output file held around them.
      expect(lines.length === n ? [] : deliveryFaults(output, n)).toEqual([]);
      expect(lines.length).toBe(n);
    } else {
      // Positions follow the commits: a crash loses the channel's content, and repeats at most the batch whose position it cut off.
      expect(missing.filter((l) => !inFlight.has(l))).toEqual([]);
      expect(lines.length - unique.size).toBeLessThanOrEqual(4 * 50);
    }
    expect(r.output()).toContain("STOPPED");
  }, 120_000);

  test("SIGKILL in the middle of a durable channel's commit (part of its write landed), then restart: the torn commit is not delivered, every line exactly once", async () => {
    const s = taildirSetup();
    const output = path.join(s.dir, "delivered.txt");
    writeFileSync(output, "");
    const file = path.join(s.logs, "app.log");
    // The commit holding K-120 writes a third of its bytes, then its process is SIGKILLed.
    const torn = await startDeliverRunner(s.raw, output, true, { env: { FLUME_TEST_TEAR_AT: "K-120" }, quiet: true });
    writeFileSync(file, numbered("K", 0, 300));
    await torn.exited;
    expect(torn.child.signalCode).toBe("SIGKILL");
    expect(readFileSync(output, "utf8")).not.toMatch(/\n#POS [^\n]*\n$/);
    const r = await startDeliverRunner(s.raw, output, true, { quiet: true });
    appendFileSync(file, numbered("K", 300, 310));
    await until(() => deliveredLines(output).includes("K-309"), "every line delivered", 15000);
    await untilQuiet(output);
    r.child.kill("SIGTERM");
    await r.exited;
    const lines = deliveredLines(output);
    expect(lines.length === 310 ? [] : deliveryFaults(output, 310)).toEqual([]);
    expect(lines).toEqual(numbered("K", 0, 310).trim().split("\n"));
    expect(r.errors()).toContain("a commit torn by a crash");
    expect(r.output()).toContain("STOPPED");
  }, 120_000);
});

describe("spooldir in a child process, SIGKILLed", () => {
  for (const durable of [false, true]) {
    test(`SIGKILL in the middle of files, then restart: nothing lost${durable ? "; with a durable channel nothing repeated either" : ""}`, async () => {
      const s = spoolSetup({ batchSize: "25" });
      const output = path.join(s.dir, "delivered.txt");
      writeFileSync(output, "");
      const children: ChildProcess[] = [];
      cleanups.push(() => {
        for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
      });
      const start = async () => {
        const child = spawn(process.execPath, [SPOOLDIR_RUNNER, "deliver", JSON.stringify(s.raw), output, durable ? "1" : "0"], { stdio: ["pipe", "pipe", "inherit"] });
        children.push(child);
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        await until(() => out.includes("READY"), "runner start");
        return { child, exited: new Promise<void>((r) => child.on("exit", () => r())), out: () => out };
      };
      const delivered = () => (existsSync(output) ? readFileSync(output, "utf8").split("\n").filter((l) => l !== "" && !l.startsWith("#POS ")) : []);
      const expected: string[] = [];
      for (let f = 0; f < 4; f++) {
        const text = numbered(`F${f}`, 0, 4000);
        writeFileSync(path.join(s.spool, `f${f}.log`), text);
        utimesSync(path.join(s.spool, `f${f}.log`), new Date(), new Date(1_000_000 + f * 1000));
        expected.push(...text.trim().split("\n"));
      }
      for (let kill = 0; kill < 4; kill++) {
        const r = await start();
        const before = delivered().length;
        await until(() => delivered().length >= before + 1500, "progress");
        r.child.kill("SIGKILL");
        await r.exited;
      }
      const r = await start();
      await until(() => ls(s.spool).filter((n) => n.endsWith(".COMPLETED")).length === 4, "all files completed", 15000);
      r.child.kill("SIGTERM");
      await r.exited;
      const lines = delivered();
      const unique = new Set(lines);
      expect(expected.filter((l) => !unique.has(l))).toEqual([]);
      if (durable) expect(lines.length).toBe(expected.length);
      expect(r.out()).toContain("STOPPED");
    }, 120_000);
  }
});

describe("TAILDIR -> file channel in a child process, SIGKILLed", () => {
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
        const r = startFileChannelRunner(dir, raw);
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
      const r = startFileChannelRunner(dir, raw);
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
  }, 120_000);
});
