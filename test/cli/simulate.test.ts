import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ROOT, runCli, tempDir } from "../support/helpers.ts";

const TIER = path.join(ROOT, "conf", "tier.conf");

interface Report {
  events: number;
  produced: number;
  accepted: number;
  deliveredUnique: number;
  duplicates: number;
  lost: number;
  remaining: number;
  rolledBack: number;
  sinkFailures: number;
  crashes: { agent: string; at: number; dropped: { channel: string; events: number }[]; lost: number }[];
  crashesNotReached: { agent: string; at: number; why: string }[];
  duplicateCauses: Record<string, { count: number; example: number | null }>;
  sinks: { agent: string; name: string; group?: { name: string; processor: string }; delivered: number; batches: number; failed: number }[];
  histories: { id: number; kind: string; causes?: string[]; lines: string[] }[];
  putRefusals: number;
  channels: { name: string; type: string; peak: number; capacity: number }[];
  completed: boolean;
  verdict: "HELD" | "VIOLATED";
  verdictLine: string;
  firstLost: { id: number; channel: string; history: string[] } | null;
}

function simulateJson(args: string[], env: Record<string, string> = {}): { code: number | null; report: Report } {
  const r = runCli(["simulate", "--json", ...args], { env });
  if (r.code !== 0 && r.code !== 1) throw new Error(`simulate exited ${r.code}: ${r.stderr}`);
  return { code: r.code, report: JSON.parse(r.stdout) as Report };
}

describe("flume simulate", () => {
  test("the same seed gives byte-identical output; another seed does not", () => {
    const { dir, cleanup } = tempDir("flume-sim-det-");
    try {
      const args = ["simulate", "--events", "20000", "--fail-sink", "0.2", "--fail-put", "0.05", "--crash-at", "700ms", "--seed", "42"];
      const a = runCli([...args, "--trace", path.join(dir, "a.jsonl"), "--html", path.join(dir, "a.html")]);
      const b = runCli([...args, "--trace", path.join(dir, "b.jsonl"), "--html", path.join(dir, "b.html")]);
      expect(a.code).toBe(1);
      const strip = (s: string) => s.replace(/[ab]\.(jsonl|html)/g, "X");
      expect(strip(b.stdout)).toBe(strip(a.stdout));
      expect(a.stdout).toContain("at-least-once: VIOLATED");
      expect(readFileSync(path.join(dir, "b.jsonl"))).toEqual(readFileSync(path.join(dir, "a.jsonl")));
      expect(readFileSync(path.join(dir, "b.html"), "utf8")).toBe(readFileSync(path.join(dir, "a.html"), "utf8"));
      const j1 = runCli(["simulate", "--json", "--events", "5000", "--fail-sink", "0.3", "--seed", "7"]);
      const j2 = runCli(["simulate", "--json", "--events", "5000", "--fail-sink", "0.3", "--seed", "7"]);
      const j3 = runCli(["simulate", "--json", "--events", "5000", "--fail-sink", "0.3", "--seed", "8"]);
      expect(j2.stdout).toBe(j1.stdout);
      expect(j3.stdout).not.toBe(j1.stdout);
      // The real file channel (disk writes, fsync) is awaited before virtual time moves: still the same bytes.
      const fileArgs = ["simulate", "--channel", "file", "--events", "5000", "--fail-sink", "0.2", "--crash-at", "300ms", "--seed", "9"];
      const f1 = runCli([...fileArgs, "--trace", path.join(dir, "f1.jsonl")], { env: { TMPDIR: dir } });
      const f2 = runCli([...fileArgs, "--trace", path.join(dir, "f2.jsonl")], { env: { TMPDIR: dir } });
      expect(f1.code).toBe(0);
      expect(f2.stdout.replaceAll("f2.jsonl", "f1.jsonl")).toBe(f1.stdout);
      expect(readFileSync(path.join(dir, "f2.jsonl"))).toEqual(readFileSync(path.join(dir, "f1.jsonl")));
    } finally {
      cleanup();
    }
  });

  test("memory channel, sink failures, no crash: HELD, with duplicates from partly delivered batches", () => {
    const { code, report } = simulateJson(["--events", "20000", "--fail-sink", "0.25", "--seed", "3"]);
    expect(code).toBe(0);
    expect(report.verdict).toBe("HELD");
    expect(report.completed).toBe(true);
    expect(report.accepted).toBe(20000);
    expect(report.deliveredUnique).toBe(20000);
    expect(report.lost).toBe(0);
    expect(report.sinkFailures).toBeGreaterThan(0);
    expect(report.duplicates).toBeGreaterThan(0);
    expect(report.verdictLine).toBe(`at-least-once: HELD (0 lost, ${report.duplicates.toLocaleString("en-US")} duplicates)`);
  });

  test("the same crash: a memory channel VIOLATES at-least-once, the real file channel on a temp dir HOLDS", () => {
    const { dir, cleanup } = tempDir("flume-sim-crash-");
    try {
      const args = ["--events", "10000", "--fail-sink", "0.1", "--crash-at", "500ms", "--seed", "5"];
      const mem = simulateJson(args);
      expect(mem.code).toBe(1);
      expect(mem.report.verdict).toBe("VIOLATED");
      expect(mem.report.lost).toBeGreaterThan(0);
      expect(mem.report.crashes).toHaveLength(1);
      // What the crash dropped includes events that had already got through; what it lost is the verdict's count.
      expect(mem.report.crashes[0].dropped[0].events).toBeGreaterThanOrEqual(mem.report.lost);
      expect(mem.report.crashes[0].lost).toBe(mem.report.lost);
      expect(mem.report.verdictLine).toBe(`at-least-once: VIOLATED (${mem.report.lost.toLocaleString("en-US")} lost)`);
      // The story of the first lost event: accepted, then the crash took it.
      const story = mem.report.firstLost?.history.join("\n") ?? "";
      expect(story).toContain("committed into channel c1 by r1");
      expect(story).toContain("CRASH: memory channel c1 loses its contents");

      // TMPDIR puts the file channel's scratch directory under our temp dir.
      const file = simulateJson([...args, "--channel", "file"], { TMPDIR: dir });
      expect(file.code).toBe(0);
      expect(file.report.verdict).toBe("HELD");
      expect(file.report.channels[0].type).toBe("file");
      expect(file.report.crashes).toHaveLength(1);
      expect(file.report.lost).toBe(0);
      expect(file.report.deliveredUnique).toBe(10000);
      expect(file.report.firstLost).toBeNull();
      // The scratch directory is removed afterwards.
      expect(readdirSync(dir)).toEqual([]);

      // A crash after a batch reached its destination but before the sink committed its take:
      // the file channel still has the batch and delivers it again (duplicates, nothing lost).
      const ack = simulateJson(["--channel", "file", "--events", "10000", "--crash-at", "505ms"], { TMPDIR: dir });
      expect(ack.report.verdict).toBe("HELD");
      expect(ack.report.sinkFailures).toBe(0);
      expect(ack.report.duplicates).toBe(100);
    } finally {
      cleanup();
    }
  });

  test("the text report has the figures, a timeline and the verdict; --html writes one self-contained page", () => {
    const { dir, cleanup } = tempDir("flume-sim-text-");
    try {
      const html = path.join(dir, "sim.html");
      const r = runCli(["simulate", "--events", "5000", "--fail-sink", "3,7-9", "--crash-at", "300ms", "--html", html]);
      expect(r.code).toBe(1);
      for (const label of ["produced", "accepted", "delivered unique", "duplicates", "lost", "rolled-back transactions", "client retries", "channel peak fill c1", "crash at 300ms"]) {
        expect(r.stdout).toContain(label);
      }
      expect(r.stdout).toMatch(/c1 fill\s+\|[ ▁▂▃▄▅▆▇█]+\|/);
      expect(r.stdout).toMatch(/faults\s+\|[·xpfC]*C[·xpfC]*\|/);
      expect(r.stdout).toMatch(/sink batches \(failed\)\s+\d+ \(4\)/);
      expect(r.stdout).toContain("first lost event:");
      const page = readFileSync(html, "utf8");
      expect(page).toStartWith("<!doctype html>");
      expect(page).toContain("<svg");
      // The crash's label counts what the verdict counts.
      const lost = /at-least-once: VIOLATED \(([\d,]+) lost\)/.exec(r.stdout)?.[1];
      expect(page).toMatch(new RegExp(`crash 300ms \\([\\d,]+ dropped, ${lost} lost\\)`));
      expect(page).not.toMatch(/<script|<link|src="http/);
      // No progress bar when stderr is not a terminal.
      expect(r.stderr).toBe("");
    } finally {
      cleanup();
    }
  });

  test("-f conf: configured channels, selector, interceptors and sink group with simulated sources and sinks", () => {
    const { dir, cleanup } = tempDir("flume-sim-conf-");
    try {
      const conf = path.join(dir, "agent.conf");
      const untouched = path.join(dir, "production");
      writeFileSync(
        conf,
        [
          "a1.sources = r1",
          "a1.channels = mem disk",
          "a1.sinks = k1 k2 k3",
          "a1.sinkgroups = g1",
          "a1.sources.r1.type = netcat",
          "a1.sources.r1.bind = 127.0.0.1",
          "a1.sources.r1.port = 1",
          "a1.sources.r1.channels = mem disk",
          "a1.sources.r1.interceptors = ts",
          "a1.sources.r1.interceptors.ts.type = timestamp",
          "a1.channels.mem.type = memory",
          "a1.channels.mem.capacity = 5000",
          "a1.channels.mem.transactionCapacity = 200",
          "a1.channels.disk.type = file",
          `a1.channels.disk.checkpointDir = ${untouched}/checkpoint`,
          `a1.channels.disk.dataDirs = ${untouched}/data`,
          "a1.sinks.k1.type = logger",
          "a1.sinks.k1.channel = mem",
          "a1.sinks.k2.type = logger",
          "a1.sinks.k2.channel = mem",
          "a1.sinks.k3.type = null",
          "a1.sinks.k3.channel = disk",
          "a1.sinkgroups.g1.sinks = k1 k2",
          "a1.sinkgroups.g1.processor.type = failover",
          "a1.sinkgroups.g1.processor.priority.k1 = 10",
          "a1.sinkgroups.g1.processor.priority.k2 = 5",
          "",
        ].join("\n"),
      );
      const { code, report } = simulateJson(["-f", conf, "-n", "a1", "--events", "4000", "--fail-sink", "0.1", "--crash-at", "200ms"]);
      expect(code).toBe(1);
      expect(report.channels.map((c) => `${c.name}:${c.type}:${c.capacity}`)).toEqual(["mem:memory:5000", "disk:file:1000000"]);
      expect(report.crashes[0].dropped).toEqual([{ channel: "mem", events: expect.any(Number) }]);
      expect(report.crashes[0].lost).toBe(report.lost);
      // Per-sink counts of the failover group: the preferred sink delivered, the other one took over after its failures.
      const byName = Object.fromEntries(report.sinks.map((k) => [k.name, k]));
      expect(byName.k1.group).toEqual({ name: "g1", processor: "failover" });
      expect(byName.k2.group).toEqual({ name: "g1", processor: "failover" });
      expect(byName.k1.delivered).toBeGreaterThan(byName.k2.delivered);
      expect(byName.k2.delivered).toBeGreaterThan(0);
      expect(byName.k3.delivered).toBeGreaterThanOrEqual(4000);
      expect(report.firstLost?.channel).toBe("mem");
      expect(report.accepted).toBe(4000);
      // Every event reached the file channel's sink: the memory channel's copies are the lost ones.
      expect(report.deliveredUnique).toBe(4000);
      expect(existsSync(untouched)).toBe(false);
      const text = runCli(["simulate", "-f", conf, "--events", "1000"]);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain("sinkgroup g1: failover over k1 k2");
      expect(text.stdout).toContain("source r1 -> mem disk (the real netcat source, fed by a simulated client over link client->a1, answered lines in batches of 100; interceptors ts)");
    } finally {
      cleanup();
    }
  });

  test("histories for lost and duplicated events in --json, channel-full retries named as such, crashes that never happened said so, a file channel's fill", () => {
    const { dir, cleanup } = tempDir("flume-sim-fixes-");
    try {
      // A lost event and duplicated ones: each gets its history, in the JSON too.
      const { report } = simulateJson(["--events", "5000", "--fail-sink", "0.2", "--crash-at", "300ms", "--seed", "4"]);
      expect(report.firstLost?.history.length).toBeGreaterThan(2);
      const dup = report.histories.find((h) => h.kind === "duplicated");
      expect(dup?.causes).toEqual(["partial-batch"]);
      expect(dup?.lines.join("\n")).toContain("that delivery is a duplicate: a batch partly got through, then rolled back and was sent again");
      expect(report.duplicateCauses["partial-batch"].count).toBe(report.duplicates);
      expect(report.histories.find((h) => h.id === report.firstLost?.id)?.kind).toBe("lost");

      // A channel too small for the client: the source refuses puts (channel full), no put fault was injected.
      const conf = path.join(dir, "small.conf");
      writeFileSync(conf, ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = seq", "a1.sources.r1.batchSize = 100", "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", "a1.channels.c1.capacity = 500", "a1.channels.c1.keep-alive = 1", "a1.sinks.k1.type = null", "a1.sinks.k1.channel = c1", ""].join("\n"));
      // The sink frees room every 3 s (2 s to deliver, 1 s for the answer); a commit waits 1 s for it (keep-alive).
      const small = runCli(["simulate", "-f", conf, "--events", "1000", "--sink-latency", "2s"]);
      expect(small.code).toBe(0);
      expect(small.stdout).toContain("put: no injected failures");
      expect(small.stdout).toMatch(/faults\s+\|[·f]*f[·f]*\|/);
      expect(small.stdout).toMatch(/put refusals \(channel full\)\s+[1-9]/);
      expect(small.stdout).toContain("f put refused (channel full)");

      // The run ends before the second crash: it is listed as not reached.
      const short = runCli(["simulate", "--events", "2000", "--crash-at", "100ms,300ms"]);
      expect(short.stdout).toMatch(/crash at 100ms\s+c1 dropped 100: 100 lost \(never delivered\)/);
      expect(short.stdout).toMatch(/crash at 300ms\s+did not happen: the run ended at 198ms/);
      expect(simulateJson(["--events", "2000", "--crash-at", "100ms,300ms"]).report.crashesNotReached).toEqual([{ agent: "a1", at: 300, why: "the run ended at 198ms" }]);

      // The file channel's fill row shows its fill (from the ledger, whatever the channel type).
      const file = runCli(["simulate", "--channel", "file", "--events", "5000", "--sink-latency", "20ms"], { env: { TMPDIR: dir } });
      const peak = Number(/channel peak fill c1\s+([\d,]+) of/.exec(file.stdout)?.[1].replace(/,/g, ""));
      expect(peak).toBeGreaterThan(0);
      expect(file.stdout).toMatch(new RegExp(`c1 fill\\s+\\|[ ▁▂▃▄▅▆▇█]*█[ ▁▂▃▄▅▆▇█]*\\|  0 to peak ${peak.toLocaleString("en-US")}`));
    } finally {
      cleanup();
    }
  });

  test("a load-balancing group: per-sink counts add up to the deliveries", () => {
    const { dir, cleanup } = tempDir("flume-sim-lb-");
    try {
      const conf = path.join(dir, "lb.conf");
      writeFileSync(
        conf,
        ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1 k2", "a1.sinkgroups = g1", "a1.sources.r1.type = seq", "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", "a1.sinks.k1.type = null", "a1.sinks.k1.channel = c1", "a1.sinks.k2.type = null", "a1.sinks.k2.channel = c1", "a1.sinkgroups.g1.sinks = k1 k2", "a1.sinkgroups.g1.processor.type = load_balance", ""].join("\n"),
      );
      const { report } = simulateJson(["-f", conf, "--events", "4000", "--fail-sink", "0.1"]);
      const [k1, k2] = report.sinks;
      expect(k1.group).toEqual({ name: "g1", processor: "load_balance" });
      expect(k1.delivered).toBeGreaterThan(500);
      expect(k2.delivered).toBeGreaterThan(500);
      expect(k1.delivered + k2.delivered).toBe(report.deliveredUnique + report.duplicates);
      const text = runCli(["simulate", "-f", conf, "--events", "4000"]);
      expect(text.stdout).toMatch(/k1\s+load_balance g1\s+simulated\s+[\d,]+/);
    } finally {
      cleanup();
    }
  });

  test("a configuration flume validate accepts runs: examples/jsonl-sink.conf, whose sink is a custom module, is simulated with its configured batch sizes", () => {
    const valid = runCli(["validate", "examples/jsonl-sink.conf"]);
    expect(valid.code).toBe(0);
    const r = runCli(["simulate", "-f", "examples/jsonl-sink.conf", "--events", "2000", "--fail-sink", "0.1"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("source r1 -> c1 (the real netcat source, fed by a simulated client over link client->a1, answered lines in batches of 100)");
    expect(r.stdout).toContain("sink k1 <- c1 (jsonl replaced by a simulated sink, batches of 100)");
    expect(r.stdout).toMatch(/delivered unique\s+2,000\n/);
    expect(r.stdout).toContain("at-least-once: HELD");
  });

  test("a file in ISO-8859-1 is read as flume run reads it: a Latin-1 value reaches the report", () => {
    const { dir, cleanup } = tempDir("flume-sim-latin1-");
    try {
      const conf = path.join(dir, "latin1.conf");
      const text = ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = seq", "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", "a1.sinks.k1.type = null", "a1.sinks.k1.channel = c1", "a1.sinkgroups = gr\u00fcn", "a1.sinkgroups.gr\u00fcn.sinks = k1", "a1.sinkgroups.gr\u00fcn.processor.type = failover", ""].join("\n");
      writeFileSync(conf, Buffer.from(text, "latin1"));
      const r = runCli(["simulate", "-f", conf, "--events", "100"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("sinkgroup gr\u00fcn: failover over k1");
    } finally {
      cleanup();
    }
  });

  test("a tier from one file: a timeline per agent, agents, links, duplicates by cause, a verdict for the tier and each agent; --explain an event across agents", () => {
    const { dir, cleanup } = tempDir("flume-sim-tier-");
    try {
      const r = runCli(["simulate", "-f", TIER, "--events", "10000", "--lose-answer", "edge1->collector=0.1", "--crash", "edge2@400ms", "--link-latency", "10ms", "--explain", "42"], { env: { TMPDIR: dir } });
      expect(r.code).toBe(1);
      const out = r.stdout;
      expect(out).toContain("flume simulate: 10,000 events, seed 1, a tier of 3 agents");
      expect(out).toContain("link edge1->collector: sink k1 (avro, 127.0.0.1:4545) -> source r1 of collector; the real avro sink and source over the simulated network");
      for (const row of ["edge1.c1 fill", "edge1.sent on", "edge2.faults", "collector.c1 fill", "collector.delivered"]) expect(out).toContain(row);
      expect(out).toMatch(/edge2\.faults\s+\|[·xpfC]*C[·xpfC]*\|/);
      expect(out).toMatch(/agents:\n\s+agent\s+accepted\s+sent on or delivered\s+duplicates\s+lost/);
      expect(out).toMatch(/edge2\s+5,000\s+[\d,]+\s+\d+\s+[1-9][\d,]*\s+.*VIOLATED/);
      expect(out).toMatch(/links:\n\s+link\s+events\s+requests\s+answers\s+answers lost/);
      expect(out).toMatch(/edge1->collector\s+[\d,]+\s+\d+\s+\d+\s+[1-9]/);
      expect(out).toMatch(/duplicates by cause:\n\s+lost-answer\s+[\d,]+\s+the next agent committed a batch whose answer was lost/);
      expect(out).toMatch(/tier at-least-once: VIOLATED \([\d,]+ lost\)\n  agent edge1: HELD \(0 lost, [\d,]+ duplicates\)\n  agent edge2: VIOLATED/);
      expect(out).toContain("agent collector: HELD");
      expect(out).toMatch(/event 42: clean\n.*edge1: produced by the client of source r1/);
      expect(out).toMatch(/collector: delivered by sink k1/);
      // One agent of the file alone.
      const one = runCli(["simulate", "-f", TIER, "-n", "collector", "--events", "1000"], { env: { TMPDIR: dir } });
      expect(one.code).toBe(0);
      expect(one.stdout).toContain("source r1 -> c1 (avro replaced by a simulated client, batches of 100)");
      // Faults need agents and links of the run; --crash-at needs a one-agent run.
      const bad = runCli(["simulate", "-f", TIER, "--crash-at", "1s"]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("--crash-at crashes the agent of a one-agent run; this file has 3 agents: name the one to crash, e.g. --crash edge1@1.000s");
      const unquoted = runCli(["simulate", "-f", TIER, "--partition", "edge1-"]);
      expect(unquoted.code).toBe(2);
      expect(unquoted.stderr).toContain("quote it in a shell");
    } finally {
      cleanup();
    }
  });

  test("a tier is deterministic: the same seed gives byte-identical text, JSON, trace and HTML, and flume replay reaches the same ledger for the tier and each agent", () => {
    const { dir, cleanup } = tempDir("flume-sim-tier-det-");
    try {
      const args = ["simulate", "-f", TIER, "--events", "8000", "--seed", "11", "--lose-answer", "0.05", "--link-fail", "0.02", "--fail-sink", "0.1", "--partition", "edge1:collector@300ms-900ms", "--crash", "collector@500ms,edge2@700ms+300ms"];
      const run = (tag: string, json = false) => runCli([...args, ...(json ? ["--json"] : []), "--trace", path.join(dir, `${tag}.jsonl`), "--html", path.join(dir, `${tag}.html`)], { env: { TMPDIR: dir } });
      const a = run("a");
      const b = run("b");
      expect(a.code).toBe(1);
      expect(b.stdout.replace(/b\.(jsonl|html)/g, "a.$1")).toBe(a.stdout);
      expect(readFileSync(path.join(dir, "b.jsonl"))).toEqual(readFileSync(path.join(dir, "a.jsonl")));
      expect(readFileSync(path.join(dir, "b.html"), "utf8")).toBe(readFileSync(path.join(dir, "a.html"), "utf8"));
      const ja = run("c", true);
      const jb = run("d", true);
      expect(jb.stdout).toBe(ja.stdout);
      const report = JSON.parse(ja.stdout) as Report & { agents: { name: string; accepted: number; lost: number; duplicates: number }[] };
      const replay = runCli(["replay", path.join(dir, "a.jsonl"), "--json"]);
      expect(replay.code).toBe(0);
      const out = JSON.parse(replay.stdout) as { ok: boolean; ledger: Record<string, number>; agents: { name: string; ledger: Record<string, number>; mismatches: unknown[] }[] };
      expect(out.ok).toBe(true);
      for (const k of ["accepted", "deliveredUnique", "duplicates", "lost", "remaining", "rolledBack"] as const) expect(out.ledger[k]).toBe(report[k] as number);
      expect(out.agents.map((x) => `${x.name} ${x.ledger.accepted} ${x.ledger.lost} ${x.ledger.duplicates}`)).toEqual(report.agents.map((x) => `${x.name} ${x.accepted} ${x.lost} ${x.duplicates}`));
      const text = runCli(["replay", path.join(dir, "a.jsonl")]);
      expect(text.stdout).toContain("replay reached the same ledger");
      expect(text.stdout).toMatch(/collector\s+accepted\s+[\d,]+\s+[\d,]+/);
    } finally {
      cleanup();
    }
  });

  test("usage errors exit 2 and name the option", () => {
    const r = runCli(["simulate", "--crash-at", "soon"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--crash-at");
    const r2 = runCli(["simulate", "--fail-sink", "1.5"]);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain("--fail-sink");
  });
});
