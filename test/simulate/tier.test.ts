import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { runSimulation, type SimulationResult } from "../../src/simulate/engine.ts";
import { simulateWithHistory } from "../../src/simulate/with-history.ts";
import { DEFAULTS, parseCrashSpecs, parseFailSpec, parseLinkLatencies, parseLinkRates, parseLinkSelector, parsePartitions, type SimulationOptions, SimulationUsageError } from "../../src/simulate/options.ts";
import { ROOT, tempDir } from "../support/helpers.ts";

const TIER = path.join(ROOT, "conf", "tier.conf");

async function tier(over: Partial<SimulationOptions>, explain: number[] = []): Promise<SimulationResult> {
  const { dir, cleanup } = tempDir("flume-tier-");
  try {
    return await simulateWithHistory({ ...DEFAULTS, crashAt: [], crashes: [], links: [], events: 6000, configFile: TIER, workDir: dir, ...over }, {}, explain);
  } finally {
    cleanup();
  }
}

const byName = <T extends { name: string }>(list: T[]) => Object.fromEntries(list.map((x) => [x.name, x]));
/** The causes that explain at least one duplicate, with their counts. */
const causeCount = (r: SimulationResult) => Object.fromEntries(r.duplicateCauses.filter((d) => d.count > 0).map((d) => [d.cause, d.count]));

describe("a tier of agents from one file", () => {
  test("two edges and a collector, joined where each avro sink names the collector's avro source; the real avro sink and source carry every event", async () => {
    const r = await tier({});
    expect(r.tier).toBe(true);
    expect(r.agents.map((a) => a.name)).toEqual(["edge1", "edge2", "collector"]);
    expect(r.links.map((l) => `${l.name} ${l.sink}->${l.source} ${l.address}`)).toEqual(["edge1->collector k1->r1 127.0.0.1:4545", "edge2->collector k1->r1 127.0.0.1:4545"]);
    expect(r.topology).toContain("edge1: sink k1 <- c1 (the real avro sink, to collector over the simulated network, batches of 100)");
    expect(r.topology).toContain("collector: source r1 -> c1 (the real avro source, on the simulated network)");
    // Each edge's client fed half the events; every one went through an appendBatch that was answered.
    const links = byName(r.links);
    for (const l of r.links) {
      expect(l.events).toBe(3000);
      expect(l.stats.requests).toBe(30);
      expect(l.stats.answers).toBe(30);
      expect(l.stats.connections).toBe(1);
    }
    expect(links["edge1->collector"].stats.answersLost).toBe(0);
    const agents = byName(r.agents);
    expect(agents.edge1.summary).toMatchObject({ accepted: 3000, deliveredUnique: 3000, lost: 0, duplicates: 0 });
    expect(agents.collector.summary).toMatchObject({ accepted: 6000, deliveredUnique: 6000 });
    expect(r.summary).toMatchObject({ accepted: 6000, deliveredUnique: 6000, duplicates: 0, lost: 0, remaining: 0 });
    expect(r.verdict.line).toBe("tier at-least-once: HELD (0 lost, 0 duplicates)");
    expect(r.sinks.map((s) => `${s.agent}.${s.name} ${s.kind} ${s.kind === "avro" ? s.forwarded : s.delivered}`)).toEqual(["edge1.k1 avro 3000", "edge2.k1 avro 3000", "collector.k1 simulated 6000"]);
  });

  test("-n picks one agent: its avro sink then sends nowhere in the run and is simulated", async () => {
    const r = await tier({ agentName: "edge1", events: 1000 });
    expect(r.tier).toBe(false);
    expect(r.agents.map((a) => a.name)).toEqual(["edge1"]);
    expect(r.links).toEqual([]);
    expect(r.sinks[0]).toMatchObject({ name: "k1", kind: "simulated", delivered: 1000 });
    expect(r.topology).toContain("sink k1 <- c1 (avro replaced by a simulated sink, batches of 100)");
  });

  test("an answer lost after the collector committed: the edge's real avro sink times out and sends the batch again; every duplicate says so", async () => {
    const r = await tier({ links: parseLinkRates("edge1->collector=0.2", "--lose-answer", "lose-answer") });
    const l = byName(r.links);
    expect(l["edge1->collector"].stats.answersLost).toBeGreaterThan(0);
    expect(l["edge2->collector"].stats.answersLost).toBe(0);
    expect(r.verdict.held).toBe(true);
    expect(r.summary.duplicates).toBe(l["edge1->collector"].stats.answersLost * 100);
    expect(causeCount(r)).toEqual({ "lost-answer": r.summary.duplicates });
    // The example duplicate's history crosses the link: committed at the collector, the edge's
    // sink timing out (request-timeout 2000 in conf/tier.conf), the second copy, two deliveries.
    const example = r.duplicateCauses.find((d) => d.cause === "lost-answer")?.example as number;
    const h = r.histories.find((x) => x.id === example);
    expect(h?.kind).toBe("duplicated");
    expect(h?.causes).toEqual(["lost-answer"]);
    const story = h?.lines.join("\n") ?? "";
    expect(story).toMatch(/collector: committed into channel c1 by r1 \(tx \d+\), sent by edge1's sink k1 from its channel c1/);
    expect(story).toContain("edge1:   why: sink runner k1: Unable to deliver event");
    expect(story).toContain("within 2000 ms (request-timeout)");
    expect(story).toContain("collector: that put made a second copy in collector.c1: the next agent committed a batch whose answer was lost");
    expect(story).toContain("collector: that delivery is a duplicate");
    expect(story).toContain("in the end: edge1.c1: committed 1x, forwarded 2x; collector.c1: committed 2x, delivered 2x");
  });

  test("no fault at all, a slow collector: the edge's request-timeout fires while the collector waits for room, its late commit makes the resend a duplicate, counted as a lost answer", async () => {
    const { dir, cleanup } = tempDir("flume-tier-slow-");
    try {
      const conf = path.join(dir, "slow.conf");
      const edge = ["edge.sources = r1", "edge.channels = c1", "edge.sinks = k1", "edge.sources.r1.type = seq", "edge.sources.r1.batchSize = 100", "edge.sources.r1.channels = c1", "edge.channels.c1.type = memory", "edge.channels.c1.capacity = 100000"];
      // The avro sink names the collector by its agent name; the collector binds every address.
      const link = ["edge.sinks.k1.type = avro", "edge.sinks.k1.channel = c1", "edge.sinks.k1.hostname = collector", "edge.sinks.k1.port = 4545", "edge.sinks.k1.request-timeout = 2000"];
      const collector = ["collector.sources = r1", "collector.channels = c1", "collector.sinks = k1", "collector.sources.r1.type = avro", "collector.sources.r1.bind = 0.0.0.0", "collector.sources.r1.port = 4545", "collector.sources.r1.channels = c1", "collector.channels.c1.type = memory", "collector.channels.c1.capacity = 200", "collector.channels.c1.keep-alive = 3", "collector.sinks.k1.type = logger", "collector.sinks.k1.channel = c1"];
      writeFileSync(conf, [...edge, ...link, ...collector, ""].join("\n"));
      const r = await simulateWithHistory({ ...DEFAULTS, crashAt: [], crashes: [], links: [], events: 2000, sinkLatency: 1500, configFile: conf, workDir: dir });
      expect(r.links.map((l) => l.name)).toEqual(["edge->collector"]);
      expect(r.links[0].stats).toMatchObject({ answersLost: 0, requestsFailed: 0 });
      expect(r.summary.duplicates).toBeGreaterThan(0);
      expect(causeCount(r)).toEqual({ "lost-answer": r.summary.duplicates });
      const h = r.histories.find((x) => x.id === r.duplicateCauses[1].example)?.lines.join("\n") ?? "";
      expect(h).toMatch(/edge:   why: .*no answer from Avro source at collector:4545 within 2000 ms \(request-timeout\)[^]*collector: committed into channel c1 by r1/);
    } finally {
      cleanup();
    }
  });

  test("requests lost with the connection reset: the edge retries, nothing is duplicated or lost", async () => {
    const r = await tier({ links: parseLinkRates("0.2", "--link-fail", "fail") });
    for (const l of r.links) expect(l.stats.requestsFailed).toBeGreaterThan(0);
    expect(r.summary).toMatchObject({ accepted: 6000, deliveredUnique: 6000, duplicates: 0, lost: 0 });
    expect(r.agents[0].sinkFailures).toBeGreaterThan(0);
  });

  test("a partition holds a link: the edge's channel fills while the other edge goes on, and everything arrives after it heals", async () => {
    const r = await tier({ events: 20_000, links: parsePartitions("edge1->collector@200ms-3s", "--partition") });
    const links = byName(r.links);
    expect(links["edge1->collector"].stats.heldByPartition).toBeGreaterThan(0);
    expect(links["edge2->collector"].stats.heldByPartition).toBe(0);
    const peaks = byName(r.channels);
    expect(peaks["edge1.c1"].peak).toBeGreaterThan(5000);
    expect(peaks["edge2.c1"].peak).toBeLessThan(1000);
    expect(r.summary.lost).toBe(0);
    expect(r.summary.deliveredUnique).toBe(20_000);
    expect(r.time).toBeGreaterThan(3000);
  });

  test("a slow link: the same events take longer", async () => {
    const fast = await tier({ rate: 0, events: 3000 });
    const slow = await tier({ rate: 0, events: 3000, links: parseLinkLatencies("200ms", "--link-latency") });
    expect(slow.summary.deliveredUnique).toBe(3000);
    // 15 batches per edge, one after the other, each a request and an answer of 200 ms.
    expect(slow.links.map((l) => l.stats.requests)).toEqual([15, 15]);
    expect(slow.time - fast.time).toBeGreaterThanOrEqual(15 * 400);
  });

  test("crashes of one agent at a time: the collector's file channel loses nothing, an edge's memory channel loses what it held, with the verdict's count", async () => {
    // 20 ms each way: an edge sends 100 events per 40 ms while its client offers 5,000 a second, so its channel fills.
    const r = await tier({ events: 20_000, links: parseLinkLatencies("20ms", "--link-latency"), crashes: parseCrashSpecs("collector@300ms,edge2@600ms+1s", "--crash") });
    const agents = byName(r.agents);
    expect(r.crashes.map((c) => `${c.agent}@${c.at}+${c.down}`)).toEqual(["collector@300+0", "edge2@600+1000"]);
    expect(r.crashes[0]).toMatchObject({ dropped: [], lost: 0 });
    expect(r.crashes[1].dropped[0].channel).toBe("edge2.c1");
    expect(r.crashes[1].lost).toBeGreaterThan(0);
    expect(r.crashes[1].lost).toBe(r.summary.lost);
    expect(agents.edge2.summary.lost).toBe(r.summary.lost);
    expect(agents.collector.verdict.held).toBe(true);
    expect(agents.edge1.verdict.held).toBe(true);
    expect(agents.edge2.verdict.line).toBe(`agent edge2: VIOLATED (${r.summary.lost.toLocaleString("en-US")} lost)`);
    expect(r.verdict.line).toBe(`tier at-least-once: VIOLATED (${r.summary.lost.toLocaleString("en-US")} lost)`);
    // While edge2 was down, its link was refused; the collector's restart reset the connections.
    const links = byName(r.links);
    expect(links["edge1->collector"].stats.resets).toBeGreaterThan(0);
    // The first lost event's story is edge2's.
    expect(r.firstLost?.agent).toBe("edge2");
    expect(r.firstLost?.history.join("\n")).toContain("edge2: CRASH: memory channel c1 loses its contents, this event with them; edge2 is down until 1.600s");
  });

  test("every duplicate has a cause, and every lost event a crash, whatever the faults (many seeds)", async () => {
    const seen = new Set<string>();
    for (let seed = 1; seed <= 5; seed++) {
      const r = await tier({
        seed,
        events: 4000,
        failSink: parseFailSpec("0.15", "--fail-sink"),
        failPut: 0.02,
        links: [...parseLinkRates("0.05", "--lose-answer", "lose-answer"), ...parseLinkRates("edge2->collector=0.05", "--link-fail", "fail"), ...parsePartitions("edge1->collector@300ms-900ms", "--partition")],
        crashes: parseCrashSpecs(`collector@${200 + seed * 37}ms,edge${1 + (seed % 2)}@700ms`, "--crash"),
      });
      const counts = causeCount(r);
      expect(counts.unexplained).toBeUndefined();
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(r.summary.duplicates);
      for (const [c, n] of Object.entries(counts)) if (n > 0) seen.add(c);
      expect(r.crashes.reduce((n, c) => n + c.lost, 0)).toBe(r.summary.lost);
      expect(r.summary.accepted).toBe(r.summary.deliveredUnique + r.summary.lost + r.summary.remaining);
    }
    expect([...seen].sort()).toEqual(["lost-answer", "partial-batch"]);
  });

  test("--explain tells any event's whole story across agents: a clean one too", async () => {
    const r = await tier({ events: 2000 }, [1234, 5000]);
    const clean = r.histories.find((h) => h.id === 1234);
    expect(clean?.kind).toBe("clean");
    const lines = clean?.lines.join("\n") ?? "";
    for (const step of ["produced by the client of source r1", "committed into channel c1 by r1", "edge1: take by k1 committed: it left channel c1", "collector: committed into channel c1 by r1", "collector: delivered by sink k1"]) expect(lines).toContain(step);
    expect(r.histories.find((h) => h.id === 5000)).toMatchObject({ kind: "never produced", lines: ["event 5000 was never produced (this run produced ids 0 to 1999)"] });
  });

  test("faults name agents and links that exist", async () => {
    await expect(tier({ crashAt: [500] })).rejects.toThrow("--crash-at crashes the agent of a one-agent run; this file has 3 agents: name the one to crash, e.g. --crash edge1@500ms");
    await expect(tier({ crashes: parseCrashSpecs("edge3@1s", "--crash") })).rejects.toThrow("--crash: no agent edge3 in this run (agents: edge1, edge2, collector)");
    await expect(tier({ links: parsePartitions("edge1->edge2@1s-2s", "--partition") })).rejects.toThrow("link fault on edge1->edge2: no such link; the links are edge1->collector, edge2->collector");
    await expect(runSimulation({ ...DEFAULTS, crashAt: [], crashes: [], links: parseLinkRates("0.1", "--lose-answer", "lose-answer") })).rejects.toThrow(SimulationUsageError);
  });
});

describe("fault spellings", () => {
  test("links, windows, crashes", () => {
    expect(parseLinkSelector("edge1->collector", "x")).toEqual({ from: "edge1", to: "collector" });
    expect(parseLinkSelector("edge1:collector", "x")).toEqual({ from: "edge1", to: "collector" });
    expect(parseLinkSelector("edge-1->*", "x")).toEqual({ from: "edge-1", to: "*" });
    // What bash leaves of an unquoted edge1->collector@2s-5s (it redirects to a file "collector@2s-5s").
    expect(() => parsePartitions("edge1-", "--partition")).toThrow("--partition: expected a window like edge1->collector@2s-5s");
    expect(() => parseLinkSelector("edge1-", "--partition")).toThrow("the shell took \">\" as a redirection");
    expect(parsePartitions("edge1->collector@2s-5s,3s-4s", "x")).toEqual([
      { kind: "partition", link: { from: "edge1", to: "collector" }, from: 2000, to: 5000 },
      { kind: "partition", link: { from: "*", to: "*" }, from: 3000, to: 4000 },
    ]);
    expect(() => parsePartitions("edge1->collector@5s-2s", "--partition")).toThrow("ends before it starts");
    expect(parseLinkRates("edge1->collector=0.1", "x", "lose-answer")).toEqual([{ kind: "lose-answer", link: { from: "edge1", to: "collector" }, rate: 0.1 }]);
    expect(() => parseLinkRates("edge1->collector=2", "--lose-answer", "lose-answer")).toThrow("--lose-answer: expected a probability");
    expect(parseLinkLatencies("20ms", "x")).toEqual([{ kind: "latency", link: { from: "*", to: "*" }, ms: 20 }]);
    expect(parseCrashSpecs("collector@5s+2s,edge1@3s", "x")).toEqual([
      { agent: "edge1", at: 3000, down: 0 },
      { agent: "collector", at: 5000, down: 2000 },
    ]);
    expect(() => parseCrashSpecs("3s", "--crash")).toThrow("--crash: expected AGENT@TIME");
  });
});

describe("links are found by the RPC link their definitions declare, whatever the protocol", () => {
  /** edge (seq -> memory -> `sinkType` sink to collector:4545) and collector (`sourceType` source on 4545 -> memory -> logger). */
  async function twoAgents(sinkType: string, sourceType: string, sinkExtra: string[] = []): Promise<SimulationResult> {
    const { dir, cleanup } = tempDir("flume-tier-rpc-");
    try {
      const conf = path.join(dir, "rpc.conf");
      const edge = ["edge.sources = r1", "edge.channels = c1", "edge.sinks = k1", "edge.sources.r1.type = seq", "edge.sources.r1.batchSize = 50", "edge.sources.r1.channels = c1", "edge.channels.c1.type = memory"];
      const sink = [`edge.sinks.k1.type = ${sinkType}`, "edge.sinks.k1.channel = c1", "edge.sinks.k1.hostname = 127.0.0.1", "edge.sinks.k1.port = 4545", "edge.sinks.k1.batch-size = 25", ...sinkExtra];
      const collector = ["collector.sources = r1", "collector.channels = c1", "collector.sinks = k1", `collector.sources.r1.type = ${sourceType}`, "collector.sources.r1.bind = 127.0.0.1", "collector.sources.r1.port = 4545", "collector.sources.r1.channels = c1", "collector.channels.c1.type = memory", "collector.sinks.k1.type = logger", "collector.sinks.k1.channel = c1"];
      writeFileSync(conf, [...edge, ...sink, ...collector, ""].join("\n"));
      return await runSimulation({ ...DEFAULTS, crashAt: [], crashes: [], links: [], events: 1000, configFile: conf, workDir: dir });
    } finally {
      cleanup();
    }
  }

  test("a thrift sink naming another agent's thrift source is a link: the real thrift sink and source carry every event; its TLS is turned off with a warning", async () => {
    const r = await twoAgents("thrift", "thrift", ["edge.sinks.k1.ssl = true"]);
    expect(r.links.map((l) => `${l.name} ${l.sink}->${l.source} ${l.address}`)).toEqual(["edge->collector k1->r1 127.0.0.1:4545"]);
    expect(r.topology).toContain("edge: sink k1 <- c1 (the real thrift sink, to collector over the simulated network, batches of 25)");
    expect(r.topology).toContain("collector: source r1 -> c1 (the real thrift source, on the simulated network)");
    expect(r.topology).toContain("link edge->collector: sink k1 (thrift, 127.0.0.1:4545) -> source r1 of collector; the real thrift sink and source over the simulated network");
    expect(r.warnings).toContain("edge: sink k1: TLS not simulated on the link (its frames travel plain)");
    expect(r.links[0].events).toBe(1000);
    expect(r.sinks.map((s) => `${s.agent}.${s.name} ${s.kind} ${s.link !== undefined ? s.forwarded : s.delivered}`)).toEqual(["edge.k1 thrift 1000", "collector.k1 simulated 1000"]);
    expect(r.summary).toMatchObject({ accepted: 1000, deliveredUnique: 1000, duplicates: 0, lost: 0 });
  });

  test("an avro sink on a thrift source's port is no link: the protocols differ, so the sink is simulated and the source is fed by a client", async () => {
    const r = await twoAgents("avro", "thrift");
    expect(r.links).toEqual([]);
    expect(r.topology).toContain("edge: sink k1 <- c1 (avro replaced by a simulated sink (no agent of the file listens on 127.0.0.1:4545), batches of 25)");
    expect(r.topology).toContain("collector: source r1 -> c1 (thrift replaced by a simulated client, batches of 100)");
  });
});
