import { describe, expect, test } from "bun:test";
import { channelModel } from "../support/agent.ts";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { putBatch } from "../../src/core/channel-processor.ts";
import { createEvent } from "../../src/core/event.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { liveTracer } from "../../src/simulate/trace.ts";
import { replayTrace } from "../../src/simulate/replay.ts";
import { readdirSync } from "node:fs";
import { freePort, ROOT, runCli, startCli, tempDir, waitUntil } from "../support/helpers.ts";

interface ReplayJson {
  ok: boolean;
  operations: number;
  ledger: Record<string, number>;
  expected: Record<string, number> | null;
  mismatches: unknown[];
  line?: number;
  error?: string;
}

function replayJson(file: string): { code: number | null; out: ReplayJson } {
  const r = runCli(["replay", file, "--json"]);
  return { code: r.code, out: JSON.parse(r.stdout) as ReplayJson };
}

const HEADER = JSON.stringify({ flumeTrace: 1, clock: "virtual", deliveries: "sink", channels: [{ name: "c1", type: "memory", durable: false, capacity: 100, transactionCapacity: 10 }] });

function traceFile(dir: string, name: string, lines: object[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, [HEADER, ...lines.map((l) => JSON.stringify(l))].join("\n") + "\n");
  return file;
}

describe("flume replay", () => {
  test("a recorded simulation (sink failures, put failures, crash; memory and file channel) replays to the same ledger", () => {
    const { dir, cleanup } = tempDir("flume-replay-");
    try {
      for (const channel of ["memory", "file"]) {
        const trace = path.join(dir, `${channel}.jsonl`);
        const sim = runCli(["simulate", "--json", "--events", "5000", "--fail-sink", "0.2", "--fail-put", "0.1", "--crash-at", "400ms", "--channel", channel, "--trace", trace], { env: { TMPDIR: dir } });
        const report = JSON.parse(sim.stdout) as Record<string, number>;
        const { code, out } = replayJson(trace);
        expect(code).toBe(0);
        expect(out.ok).toBe(true);
        expect(out.mismatches).toEqual([]);
        for (const k of ["accepted", "deliveredUnique", "duplicates", "lost", "remaining", "rolledBack"]) expect(out.ledger[k]).toBe(report[k]);
        expect(out.ledger.duplicates).toBeGreaterThan(0);
        // The crash loses what the memory channel held; the file channel keeps it.
        expect({ channel, lost: out.ledger.lost > 0 }).toEqual({ channel, lost: channel === "memory" });
      }
      // The text form names the verdict and the comparison.
      const text = runCli(["replay", path.join(dir, "file.jsonl")]);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain("replay reached the same ledger");
      expect(text.stdout).toContain("at-least-once: HELD");
    } finally {
      cleanup();
    }
  });

  test("--step prints a readable timeline", () => {
    const { dir, cleanup } = tempDir("flume-replay-step-");
    try {
      const trace = path.join(dir, "t.jsonl");
      runCli(["simulate", "--events", "300", "--fail-sink", "2", "--crash-at", "40ms", "--trace", trace]);
      const r = runCli(["replay", trace, "--step"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/tx 1\s+r1 @ c1\s+begin/);
      expect(r.stdout).toMatch(/put 100 events 0\.\.99/);
      expect(r.stdout).toMatch(/commit \+100\s+\(c1 holds \d+\)/);
      expect(r.stdout).toContain("ROLLBACK");
      expect(r.stdout).toContain("CRASH: open transactions vanish");
    } finally {
      cleanup();
    }
  });

  test("a trace that breaks the transaction rules is rejected with its line number", () => {
    const { dir, cleanup } = tempDir("flume-replay-bad-");
    try {
      const takeOutside = traceFile(dir, "take.jsonl", [
        { t: 0, op: "begin", tx: 1, ch: "c1", by: "r1" },
        { t: 0, op: "put", tx: 1, ids: [1, 2] },
        { t: 0, op: "commit", tx: 1 },
        { t: 0, op: "committed", tx: 1 },
        { t: 0, op: "close", tx: 1 },
        { t: 1, op: "take", tx: 2, ids: [1] },
      ]);
      let r = runCli(["replay", takeOutside]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${takeOutside}:7: take on transaction 2, which was never begun: a take must happen inside a transaction`);

      const commitAfterClose = traceFile(dir, "close.jsonl", [
        { t: 0, op: "begin", tx: 1, ch: "c1" },
        { t: 0, op: "put", tx: 1, ids: [1] },
        { t: 0, op: "commit", tx: 1 },
        { t: 0, op: "committed", tx: 1 },
        { t: 0, op: "close", tx: 1 },
        { t: 0, op: "commit", tx: 1 },
      ]);
      r = runCli(["replay", commitAfterClose]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`close\\.jsonl:7: commit on transaction 1 \\(begun at line 2\\) breaks the transaction rules: commit\\(\\) called when transaction is CLOSED`));

      const closeWhileOpen = traceFile(dir, "open.jsonl", [
        { t: 0, op: "begin", tx: 1, ch: "c1" },
        { t: 0, op: "close", tx: 1 },
      ]);
      expect(replayJson(closeWhileOpen).out).toMatchObject({ ok: false, line: 3, error: expect.stringContaining("close() called when transaction is OPEN") });

      const notJson = path.join(dir, "json.jsonl");
      writeFileSync(notJson, `${HEADER}\n{"t":0,"op":"begin","tx":1,"ch":"c1"}\n{"t":0,"op":"put",\n`);
      expect(replayJson(notJson).out).toMatchObject({ ok: false, line: 3, error: expect.stringContaining("not valid JSON") });

      const noHeader = path.join(dir, "noheader.jsonl");
      writeFileSync(noHeader, `{"t":0,"op":"begin","tx":1,"ch":"c1"}\n`);
      expect(replayJson(noHeader).out).toMatchObject({ ok: false, line: 1, error: expect.stringContaining("not a Flume TS trace") });

      // A take that the fresh channel cannot reproduce (edited trace) diverges at its line.
      const diverged = traceFile(dir, "diverged.jsonl", [
        { t: 0, op: "begin", tx: 1, ch: "c1" },
        { t: 0, op: "put", tx: 1, ids: [1, 2] },
        { t: 0, op: "commit", tx: 1 },
        { t: 0, op: "committed", tx: 1 },
        { t: 0, op: "close", tx: 1 },
        { t: 1, op: "begin", tx: 2, ch: "c1" },
        { t: 1, op: "take", tx: 2, ids: [2] },
      ]);
      expect(replayJson(diverged).out).toMatchObject({ ok: false, line: 8, error: expect.stringContaining('took event 2 from c1, the replayed channel gave 1') });
    } finally {
      cleanup();
    }
  });

  test("an edited ledger line is reported as a different ledger", () => {
    const { dir, cleanup } = tempDir("flume-replay-ledger-");
    try {
      const trace = path.join(dir, "t.jsonl");
      runCli(["simulate", "--events", "500", "--trace", trace]);
      const lines = readFileSync(trace, "utf8").trimEnd().split("\n");
      const ledger = JSON.parse(lines[lines.length - 1]) as Record<string, unknown>;
      lines[lines.length - 1] = JSON.stringify({ ...ledger, duplicates: 3 });
      writeFileSync(trace, lines.join("\n") + "\n");
      const r = runCli(["replay", trace]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/duplicates\s+3\s+0\s+<- differs/);
      expect(r.stdout).toContain("replay reached a different ledger (duplicates)");
    } finally {
      cleanup();
    }
  });

  test("flume run --trace records a live agent; the trace replays to the same ledger", async () => {
    const { dir, cleanup } = tempDir("flume-replay-live-");
    try {
      const conf = path.join(dir, "agent.conf");
      const trace = path.join(dir, "live.jsonl");
      writeFileSync(
        conf,
        [
          "a1.sources = r1",
          "a1.channels = c1",
          "a1.sinks = k1",
          "a1.sources.r1.type = seq",
          "a1.sources.r1.totalEvents = 3000",
          "a1.sources.r1.batchSize = 50",
          "a1.sources.r1.channels = c1",
          "a1.channels.c1.type = memory",
          "a1.channels.c1.capacity = 10000",
          "a1.channels.c1.transactionCapacity = 100",
          "a1.sinks.k1.type = null",
          "a1.sinks.k1.channel = c1",
          "",
        ].join("\n"),
      );
      const agent = startCli(["run", "-f", conf, "-q", "--no-reload-conf", "--trace", trace]);
      await agent.waitFor(/agent a1 started/);
      agent.child.kill("SIGTERM");
      await agent.waitFor(/trace written to/);
      expect(await agent.exited()).toBe(0);
      const lines = readFileSync(trace, "utf8").trimEnd().split("\n");
      expect(JSON.parse(lines[0])).toMatchObject({ flumeTrace: 1, clock: "wall", deliveries: "take" });
      expect(JSON.parse(lines[1])).toMatchObject({ op: "channel", name: "c1", type: "memory", capacity: 10000, transactionCapacity: 100 });
      const { code, out } = replayJson(trace);
      expect(code).toBe(0);
      expect(out.ok).toBe(true);
      expect(out.ledger.lost).toBe(0);
      expect(out.ledger.accepted).toBeGreaterThan(0);
      expect(out.ledger).toEqual(out.expected as Record<string, number>);
    } finally {
      cleanup();
    }
  });
});

describe("a live tier", () => {
  test("flume run --trace on each agent of conf/tier.conf; flume replay of the three traces reaches each agent's ledger and the tier's, hops found where an avro sink sends to an avro source", async () => {
    const { dir, cleanup } = tempDir("flume-replay-tier-");
    const agents: ReturnType<typeof startCli>[] = [];
    try {
      const port = await freePort();
      const conf = path.join(dir, "tier.conf");
      // conf/tier.conf with a free port, the collector's directories in the temp dir, 2,000 events per edge.
      const tierConf = readFileSync(path.join(ROOT, "conf", "tier.conf"), "utf8").replaceAll("4545", String(port)).replaceAll("/tmp/flume-tier", dir).replaceAll("totalEvents = 100000", "totalEvents = 2000");
      writeFileSync(conf, tierConf);
      const start = async (name: string) => {
        const a = startCli(["run", "-f", conf, "-n", name, "-q", "--no-reload-conf", "--trace", path.join(dir, `${name}.jsonl`)]);
        agents.push(a);
        await a.waitFor(new RegExp(`agent ${name} started`));
        return a;
      };
      const collector = await start("collector");
      const edges = [await start("edge1"), await start("edge2")];
      const out = path.join(dir, "out");
      const delivered = () => readdirSync(out).reduce((n, f) => n + readFileSync(path.join(out, f), "utf8").split("\n").filter(Boolean).length, 0);
      await waitUntil(() => delivered() >= 4000, "the collector's file_roll sink to write 4,000 events", 20000, 50);
      for (const a of [...edges, collector]) {
        a.child.kill("SIGTERM");
        await a.waitFor(/trace written to/);
        expect(await a.exited()).toBe(0);
      }
      const files = ["edge1", "edge2", "collector"].map((n) => path.join(dir, `${n}.jsonl`));
      expect(JSON.parse(readFileSync(files[0], "utf8").split("\n")[0])).toMatchObject({ flumeTrace: 1, clock: "wall", agent: "edge1" });
      expect(JSON.parse(readFileSync(files[2], "utf8").split("\n")[0])).toMatchObject({ agent: "collector", avroSources: [{ name: "r1", bind: "127.0.0.1", port }] });
      const r = runCli(["replay", ...files, "--json"]);
      expect(r.code).toBe(0);
      const res = JSON.parse(r.stdout) as { ok: boolean; agents: { name: string; ledger: Record<string, number>; mismatches: unknown[] }[]; tier: { ledger: Record<string, number>; verdict: string; hops: string[] } };
      expect(res.ok).toBe(true);
      expect(res.agents.map((a) => `${a.name} ${a.ledger.accepted} ${a.mismatches.length}`)).toEqual(["edge1 2000 0", "edge2 2000 0", "collector 4000 0"]);
      expect(res.tier.hops).toEqual([`edge1.k1 -> collector (127.0.0.1:${port})`, `edge2.k1 -> collector (127.0.0.1:${port})`]);
      // The tier: 4,000 events (the edges' headers tell their seq numbers apart), each delivered by the collector.
      expect(res.tier.ledger).toMatchObject({ accepted: 4000, deliveredUnique: 4000, lost: 0, remaining: 0 });
      expect(res.tier.verdict).toMatch(/^tier at-least-once: HELD/);
      const text = runCli(["replay", ...files]);
      expect(text.stdout).toContain("the tier across the 3 traces, hops: edge1.k1 -> collector");
      expect(text.stdout).toContain("replay reached the same ledgers");
    } finally {
      for (const a of agents) if (a.child.exitCode === null) a.child.kill("SIGKILL");
      cleanup();
    }
  });
});

describe("trace recorder", () => {
  test("a live recording stops at its size bound and still replays to its ledger", async () => {
    const { dir, cleanup } = tempDir("flume-trace-bound-");
    try {
      const file = path.join(dir, "bounded.jsonl");
      const clock = new VirtualClock(1_000);
      const tracer = liveTracer(file, clock, 6_000);
      const channel = tracer.wrapChannel(new MemoryChannel("c1", { capacity: 1000, transactionCapacity: 100 }, clock), channelModel("memory", { capacity: "1000", transactionCapacity: "100" }));
      await channel.start();
      for (let b = 0; b < 40; b++) {
        await putBatch(
          channel,
          Array.from({ length: 10 }, (_, i) => createEvent(`event ${b * 10 + i}`)),
        );
        const tx = channel.getTransaction();
        tx.begin();
        for (let i = 0; i < 10; i++) tx.take();
        await tx.commit();
        tx.close();
        await clock.advance(5);
      }
      const summary = tracer.finish();
      const text = readFileSync(file, "utf8");
      expect(text.length).toBeLessThan(6_000 + 500);
      expect(text).toContain('{"op":"truncated"');
      expect(summary.accepted).toBeGreaterThan(0);
      expect(summary.accepted).toBeLessThan(400);
      const { code, out } = replayJson(file);
      expect(code).toBe(0);
      expect(out.ok).toBe(true);
      expect(out.ledger).toEqual(out.expected as Record<string, number>);
    } finally {
      cleanup();
    }
  });
});

const MEMORY_TRACE_HEADER = JSON.stringify({ flumeTrace: 1, clock: "virtual", deliveries: "sink", channels: [{ name: "c1", type: "memory", durable: false, capacity: 100, transactionCapacity: 10, keepAlive: 3 }], seed: 1 });

async function replayError(lines: object[]): Promise<string> {
  const { dir, cleanup } = tempDir();
  const file = path.join(dir, "t.jsonl");
  writeFileSync(file, [MEMORY_TRACE_HEADER, ...lines.map((l) => JSON.stringify(l))].join("\n") + "\n");
  try {
    await replayTrace(file);
  } catch (err) {
    return (err as Error).message;
  } finally {
    cleanup();
  }
  return "no error";
}

describe("operations on transactions a crash ended", () => {
  test("a put on a transaction that was open at the crash says it vanished in the crash", async () => {
    const msg = await replayError([
      { t: 0, op: "begin", tx: 1, ch: "c1", by: "r1" },
      { t: 0, op: "put", tx: 1, ids: [1] },
      { t: 1, op: "crash" },
      { t: 2, op: "put", tx: 1, ids: [2] },
    ]);
    expect(msg).toContain(":5: put on transaction 1, which vanished in a crash");
  });

  test("a commit on a transaction closed before the crash says it was closed, not that it vanished", async () => {
    const msg = await replayError([
      { t: 0, op: "begin", tx: 1, ch: "c1", by: "r1" },
      { t: 0, op: "put", tx: 1, ids: [1] },
      { t: 0, op: "commit", tx: 1 },
      { t: 0, op: "committed", tx: 1 },
      { t: 0, op: "close", tx: 1 },
      { t: 1, op: "crash" },
      { t: 2, op: "commit", tx: 1 },
    ]);
    expect(msg).toContain(":8: commit on transaction 1, which was closed before the crash");
    expect(msg).not.toContain("vanished");
  });
});

describe("malformed channel declarations", () => {
  test("a channel line without a name is reported with its own line number", async () => {
    const msg = await replayError([{ op: "channel" }]);
    expect(msg).toContain(":2: a channel needs a name");
  });

  test("a header whose channel list holds something else than objects is a trace error, not a crash", async () => {
    const { dir, cleanup } = tempDir();
    const file = path.join(dir, "t.jsonl");
    writeFileSync(file, `${JSON.stringify({ flumeTrace: 1, channels: [null] })}\n`);
    let msg = "no error";
    try {
      await replayTrace(file);
    } catch (err) {
      msg = `${(err as Error).name}: ${(err as Error).message}`;
    } finally {
      cleanup();
    }
    expect(msg).toContain("TraceError");
    expect(msg).toContain(":1: a channel needs a name");
  });
});
