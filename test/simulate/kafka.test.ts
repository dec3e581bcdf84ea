import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { runSimulation, type SimulationResult } from "../../src/simulate/engine.ts";
import { simulateWithHistory } from "../../src/simulate/with-history.ts";
import { replayTraces } from "../../src/simulate/replay.ts";
import { DEFAULTS, parseCrashSpecs, parseFailovers, parseLinkLatencies, type SimulationOptions, SimulationUsageError } from "../../src/simulate/options.ts";
import { jsonReport, textReport } from "../../src/simulate/report.ts";
import type { SimulationHooks } from "../../src/simulate/simulation-result.ts";
import { ROOT, runCli, tempDir } from "../support/helpers.ts";

const EDGE = readFileSync(path.join(ROOT, "conf", "kafka-edge.conf"), "utf8");
const COLLECTOR = readFileSync(path.join(ROOT, "conf", "kafka-collector.conf"), "utf8");

/** conf/kafka-edge.conf and conf/kafka-collector.conf as one file (a tier over the topic), with the edge's acks. */
async function kafkaTier(over: Partial<SimulationOptions>, acks = "all", explain: number[] = [], memory = false): Promise<SimulationResult> {
  const { dir, cleanup } = tempDir("flume-sim-kafka-");
  try {
    const conf = path.join(dir, "kafka-tier.conf");
    let text = `${EDGE.replace("kafka.producer.acks = all", `kafka.producer.acks = ${acks}`)}\n${COLLECTOR}`;
    // Memory channels instead of file channels: a crash loses what they hold.
    if (memory) text = text.replaceAll(/^(\w+)\.channels\.c1\.type = file$/gm, "$1.channels.c1.type = memory\n$1.channels.c1.capacity = 10000").replaceAll(/^\w+\.channels\.c1\.(checkpointDir|dataDirs) = .*$/gm, "");
    writeFileSync(conf, text);
    return await simulateWithHistory({ ...DEFAULTS, events: 5000, sinkLatency: 100, configFile: conf, workDir: dir, ...over }, {}, explain);
  } finally {
    cleanup();
  }
}

/** The causes that explain at least one duplicate, with their counts. */
const causeCount = (r: SimulationResult) => Object.fromEntries(r.duplicateCauses.filter((d) => d.count > 0).map((d) => [d.cause, d.count]));
const topicLine = (r: SimulationResult, topic = "logs") => r.peers.find((l) => l.startsWith(`topic ${topic}:`)) ?? "";

describe("Kafka components against the simulated broker", () => {
  test("an edge's kafka sink and a collector's kafka source over one topic: every event crosses, spread over the partitions, the group's offsets all committed", async () => {
    const r = await kafkaTier({ kafkaPartitions: 4 });
    expect(r.tier).toBe(true);
    expect(r.summary).toMatchObject({ accepted: 5000, deliveredUnique: 5000, duplicates: 0, lost: 0, remaining: 0 });
    expect(topicLine(r)).toBe("topic logs: 5,000 records in 4 partitions (1250/1250/1250/1250), 0 leader failovers, 0 acknowledgements lost; group collectors: lag 0, 0 records read again, 1 rebalances");
    const k1 = r.sinks.find((s) => s.agent === "edge" && s.name === "k1");
    expect(k1).toMatchObject({ kind: "kafka", link: "topic logs", forwarded: 5000, failed: 0 });
    expect(r.agents.map((a) => a.verdict.line)).toEqual(["agent edge: HELD (0 lost, 0 duplicates)", "agent collector: HELD (0 lost, 0 duplicates)"]);
  }, 60_000);

  test("lost acknowledgements: the broker wrote the batch, the sink waited its request timeout, rolled back and sent it again; each copy is a lost-ack duplicate", async () => {
    const r = await kafkaTier({ kafkaLoseAck: 0.2, seed: 4 });
    expect(r.verdict.held).toBe(true);
    expect(r.summary.duplicates).toBeGreaterThan(0);
    expect(causeCount(r)).toEqual({ "lost-ack": r.summary.duplicates });
    const acksLost = Number(/(\d+) acknowledgements lost/.exec(topicLine(r))?.[1]);
    expect(acksLost).toBeGreaterThan(0);
    // Every record beyond the events is a copy the resends wrote.
    expect(topicLine(r)).toContain(`topic logs: ${(5000 + r.summary.duplicates).toLocaleString("en-US")} records`);
    const example = r.histories.find((h) => h.causes?.includes("lost-ack"));
    expect(example?.lines.join("\n")).toMatch(/the acknowledgement of topic logs's write \(tx \d+\) was lost[^]*that delivery is a duplicate: the Kafka broker wrote a batch whose acknowledgement was lost/);
  }, 60_000);

  test("a leader failover while a write waits for its acknowledgement: without idempotence the new leader writes the records again; an idempotent producer (acks=all) makes no duplicate", async () => {
    const failover = parseFailovers("logs@150ms+200ms", "--kafka-failover");
    const plain = await kafkaTier({ kafkaFailovers: failover }, "1");
    expect(plain.verdict.held).toBe(true);
    expect(plain.summary.duplicates).toBeGreaterThan(0);
    expect(causeCount(plain)).toEqual({ "leader-failover": plain.summary.duplicates });
    expect(topicLine(plain)).toContain("3 leader failovers");
    const idempotent = await kafkaTier({ kafkaFailovers: failover }, "all");
    expect(idempotent.summary).toMatchObject({ deliveredUnique: 5000, duplicates: 0, lost: 0 });
    expect(topicLine(idempotent)).toContain("topic logs: 5,000 records");
  }, 60_000);

  test("acks=1: a failover after the old leader answered and before its followers had the records loses them (counted as lost, with the cause in the topic line and the history); acks=all loses none", async () => {
    const failover = parseFailovers("logs@160ms+200ms", "--kafka-failover");
    const one = await kafkaTier({ kafkaFailovers: failover }, "1");
    expect(one.summary).toMatchObject({ accepted: 5000, deliveredUnique: 4900, lost: 100, duplicates: 0 });
    expect(one.verdict.held).toBe(false);
    expect(topicLine(one)).toContain("100 acknowledged records LOST in leader failovers (acks 0 or 1: the leader answered before its followers had them; acks=all never loses them)");
    expect(one.firstLost?.history?.join("\n")).toMatch(/LOST in topic logs partition \d: its leader had acknowledged the record and failed over before a follower had it/);
    const all = await kafkaTier({ kafkaFailovers: failover }, "all");
    expect(all.summary).toMatchObject({ deliveredUnique: 5000, lost: 0 });
    expect(topicLine(all)).not.toContain("LOST");
  }, 60_000);

  test("an election longer than the producer's request timeout: the send fails, the sink rolls back, and what other partitions had written comes again", async () => {
    const r = await kafkaTier({ kafkaFailovers: parseFailovers("logs:1@300ms+40s", "--kafka-failover") }, "all");
    expect(r.verdict.held).toBe(true);
    expect(r.summary.duplicates).toBeGreaterThan(0);
    expect(causeCount(r)).toEqual({ "leader-failover": r.summary.duplicates });
    expect(r.sinks.find((s) => s.agent === "edge")?.failed).toBeGreaterThan(0);
    expect(r.time).toBeGreaterThan(30_000);
  }, 60_000);

  test("the collector crashes after its channel commit and before its offset commit: the group reads the batch again from the committed offset (source-reread)", async () => {
    const r = await kafkaTier({ crashes: parseCrashSpecs("collector@400ms+1s", "--crash") });
    expect(r.verdict.held).toBe(true);
    expect(r.summary.duplicates).toBeGreaterThan(0);
    expect(causeCount(r)).toEqual({ "source-reread": r.summary.duplicates });
    expect(topicLine(r)).toContain(`group collectors: lag 0, ${r.summary.duplicates} records read again, 2 rebalances`);
  }, 60_000);

  test("the collector alone: a producer outside the run writes the topic; the edge alone: the topic is its destination", async () => {
    const { dir, cleanup } = tempDir("flume-sim-kafka-");
    try {
      const collector = path.join(dir, "collector.conf");
      writeFileSync(collector, COLLECTOR);
      const c = await simulateWithHistory({ ...DEFAULTS, events: 3000, configFile: collector, workDir: dir });
      expect(c.topology).toContain("topic logs: written by a simulated producer outside the run (no sink of the run writes it), 3 partitions");
      expect(c.summary).toMatchObject({ accepted: 3000, deliveredUnique: 3000, duplicates: 0, lost: 0 });
      const edge = path.join(dir, "edge.conf");
      writeFileSync(edge, EDGE);
      const e = await simulateWithHistory({ ...DEFAULTS, events: 3000, kafkaLoseAck: 0.3, seed: 2, configFile: edge, workDir: dir });
      expect(e.topology).toContain("topic logs: on the simulated Kafka broker, 3 partitions, read by no source of the run (what is written there is delivered)");
      expect(e.summary).toMatchObject({ accepted: 3000, deliveredUnique: 3000, lost: 0 });
      expect(e.summary.duplicates).toBeGreaterThan(0);
      expect(causeCount(e)).toEqual({ "lost-ack": e.summary.duplicates });
    } finally {
      cleanup();
    }
  }, 60_000);

  test("every duplicate has a cause and every lost event a crash, whatever the faults (many seeds, file and memory channels)", async () => {
    const seen = new Set<string>();
    for (let seed = 1; seed <= 6; seed++) {
      const memory = seed % 2 === 0;
      const r = await kafkaTier(
        {
          seed,
          events: 4000,
          sinkLatency: 50,
          failSink: { kind: "rate", rate: 0.1 },
          kafkaLoseAck: 0.1,
          kafkaFailovers: parseFailovers(`logs@${100 + seed * 40}ms+300ms,logs:1@${300 + seed * 30}ms+35s`, "--kafka-failover"),
          crashes: parseCrashSpecs(`collector@${200 + seed * 37}ms+500ms,edge@${150 + seed * 23}ms`, "--crash"),
        },
        "1",
        [],
        memory,
      );
      expect(r.channels.map((c) => c.type)).toEqual(memory ? ["memory", "memory"] : ["file", "file"]);
      const counts = causeCount(r);
      expect(counts.unexplained).toBeUndefined();
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(r.summary.duplicates);
      for (const c of Object.keys(counts)) seen.add(c);
      expect(r.crashes.reduce((n, c) => n + c.lost, 0)).toBe(r.summary.lost);
      if (!memory) expect(r.summary.lost).toBe(0);
      expect(r.summary.accepted).toBe(r.summary.deliveredUnique + r.summary.lost + r.summary.remaining);
    }
    expect([...seen].sort()).toEqual(["crash-replay", "leader-failover", "lost-ack", "partial-batch"]);
  }, 60_000);

  test("the same seed gives the same report, byte for byte", async () => {
    const o: Partial<SimulationOptions> = { kafkaLoseAck: 0.1, kafkaFailovers: parseFailovers("logs:2@150ms+200ms", "--kafka-failover"), crashes: parseCrashSpecs("collector@400ms+1s", "--crash"), seed: 9 };
    const a = await kafkaTier(o, "1");
    const b = await kafkaTier(o, "1");
    expect(a.summary.duplicates).toBeGreaterThan(0);
    // Each run reads its config from its own temp dir, which the topology names.
    const report = (r: SimulationResult) => jsonReport({ ...DEFAULTS, ...o }, r).replaceAll(/flume-sim-kafka-\w+/g, "DIR");
    expect(report(b)).toBe(report(a));
  }, 60_000);

  test("a Kafka tier's trace (acks all; acks 1 with a failover losing records after the edge's sink wrote them) and an HDFS collector's trace replay to the ledgers the simulations recorded, each agent's too", async () => {
    const { dir, cleanup } = tempDir("flume-sim-peers-trace-");
    try {
      const tier = path.join(dir, "kafka-tier.conf");
      writeFileSync(tier, `${EDGE}\n${COLLECTOR}`);
      const kafkaTrace = path.join(dir, "kafka.jsonl");
      const k = await runSimulation({ ...DEFAULTS, events: 3000, seed: 4, kafkaLoseAck: 0.2, crashes: parseCrashSpecs("collector@300ms+1s", "--crash"), configFile: tier, workDir: path.join(dir, "k") }, { traceFile: kafkaTrace });
      // acks = 1 and a failover: the broker loses records the edge's sink had written (its hop to the collector).
      const lossy = path.join(dir, "kafka-tier-acks1.conf");
      writeFileSync(lossy, `${EDGE.replace("kafka.producer.acks = all", "kafka.producer.acks = 1")}\n${COLLECTOR}`);
      const lossyTrace = path.join(dir, "kafka-acks1.jsonl");
      const l = await runSimulation({ ...DEFAULTS, events: 3000, seed: 2, sinkLatency: 100, kafkaFailovers: parseFailovers("logs@160ms+200ms", "--kafka-failover"), configFile: lossy, workDir: path.join(dir, "l") }, { traceFile: lossyTrace });
      expect(l.summary.lost).toBeGreaterThan(0);
      const lr = await replayTraces([lossyTrace], { workDir: path.join(dir, "replay-acks1") });
      expect(lr.mismatches).toEqual([]);
      expect(lr.tier?.summary).toEqual(l.summary);
      expect(lr.files[0].agents.map((a) => [a.name, a.summary])).toEqual(l.agents.map((a) => [a.name, a.summary]));
      const hdfsTrace = path.join(dir, "hdfs.jsonl");
      const h = await runSimulation({ ...DEFAULTS, events: 3000, seed: 4, hdfsTimeout: 0.2, crashAt: [200], configFile: path.join(ROOT, "conf", "hdfs-collector.conf"), workDir: path.join(dir, "h") }, { traceFile: hdfsTrace });
      for (const [trace, sim] of [
        [kafkaTrace, k],
        [hdfsTrace, h],
      ] as const) {
        expect(sim.summary.duplicates).toBeGreaterThan(0);
        const r = await replayTraces([trace], { workDir: path.join(dir, `replay-${path.basename(trace)}`) });
        expect(r.mismatches).toEqual([]);
        expect(r.tier?.summary ?? r.summary).toEqual(sim.summary);
      }
    } finally {
      cleanup();
    }
  }, 60_000);

  test("a failover of a topic or partition the run does not have is refused", async () => {
    await expect(kafkaTier({ kafkaFailovers: parseFailovers("other@1s", "--kafka-failover") })).rejects.toThrow(new SimulationUsageError("--kafka-failover: no Kafka sink, source or channel of the run uses topic other"));
    await expect(kafkaTier({ kafkaFailovers: parseFailovers("logs:3@1s", "--kafka-failover") })).rejects.toThrow("topic logs has partitions 0 to 2 (--kafka-partitions), not 3");
    expect(() => parseFailovers("logs", "--kafka-failover")).toThrow("expected TOPIC[:PARTITION]@TIME[+ELECTION]");
    expect(parseFailovers("logs:1@2s+500ms,a@1s", "--kafka-failover")).toEqual([
      { topic: "a", partition: undefined, at: 1000, election: 1000 },
      { topic: "logs", partition: 1, at: 2000, election: 500 },
    ]);
  }, 60_000);
});

describe("a Kafka channel on the simulated broker", () => {
  /** Agent a1: a client -> a Kafka channel on topic ch -> sinks k1 and k2 taking at once (their lines and more follow). */
  const channelAgent = (...more: string[]) => [
    "a1.sources = r1",
    "a1.channels = c1",
    "a1.sinks = k1 k2",
    "a1.sources.r1.type = seq",
    "a1.sources.r1.batchSize = 100",
    "a1.sources.r1.channels = c1",
    "a1.channels.c1.type = kafka",
    "a1.channels.c1.kafka.bootstrap.servers = kafka1:9092",
    "a1.channels.c1.kafka.topic = ch",
    ...more,
  ];

  /** One agent: a client -> a Kafka channel (acks 1) -> two sinks taking at once. */
  async function kafkaChannelRun(over: Partial<SimulationOptions>, hooks: SimulationHooks = {}): Promise<SimulationResult> {
    const { dir, cleanup } = tempDir("flume-sim-kafka-channel-");
    try {
      const conf = path.join(dir, "kafka-channel.conf");
      const lines = channelAgent(
        "a1.channels.c1.kafka.producer.acks = 1",
        "a1.sinks.k1.type = logger",
        "a1.sinks.k1.channel = c1",
        "a1.sinks.k1.batchSize = 70",
        "a1.sinks.k2.type = logger",
        "a1.sinks.k2.channel = c1",
        "a1.sinks.k2.batchSize = 130",
      );
      writeFileSync(conf, `${lines.join("\n")}\n`);
      return await runSimulation({ ...DEFAULTS, events: 10_000, sinkLatency: 40, configFile: conf, workDir: dir, ...over }, hooks);
    } finally {
      cleanup();
    }
  }

  test("a crash while a slow take is open, after a faster sink's takes committed above it: the group offset waited behind the open take, so the restart reads those committed takes again; nothing lost, each copy a crash-replay duplicate the report counts and explains", async () => {
    const { dir, cleanup } = tempDir("flume-sim-kafka-channel-");
    try {
      // Two sink runners on one Kafka channel: k1 forwards over a link of 100 ms each way (its take stays open), k2 delivers at once.
      const conf = path.join(dir, "two-takers.conf");
      const lines = channelAgent(
        "a1.sinks.k1.type = avro",
        "a1.sinks.k1.channel = c1",
        "a1.sinks.k1.hostname = collector",
        "a1.sinks.k1.port = 4141",
        "a1.sinks.k2.type = logger",
        "a1.sinks.k2.channel = c1",
        "collector.sources = r1",
        "collector.channels = c1",
        "collector.sinks = k1",
        "collector.sources.r1.type = avro",
        "collector.sources.r1.bind = 0.0.0.0",
        "collector.sources.r1.port = 4141",
        "collector.sources.r1.channels = c1",
        "collector.channels.c1.type = memory",
        "collector.channels.c1.capacity = 10000",
        "collector.sinks.k1.type = logger",
        "collector.sinks.k1.channel = c1",
      );
      writeFileSync(conf, `${lines.join("\n")}\n`);
      const o: SimulationOptions = { ...DEFAULTS, events: 3000, seed: 3, links: parseLinkLatencies("a1->collector=100ms", "--link-latency"), crashes: parseCrashSpecs("a1@261ms+300ms", "--crash"), configFile: conf, workDir: dir };
      const r = await simulateWithHistory(o);
      const text = textReport(o, r, false);
      expect(r.summary).toMatchObject({ accepted: 3000, deliveredUnique: 3000, lost: 0, remaining: 0 });
      expect(r.summary.duplicates).toBe(500);
      expect(text).toContain("\nlost                                       0\n");
      expect(text).toMatch(/\nduplicates +500\n/);
      expect(text).toContain("a1 crash at 261ms (down 300ms)  no committed event lost");
      // Every copy is a crash replay, and the topic's line counts the records the restarted channel read again.
      expect(causeCount(r)).toEqual({ "crash-replay": 500 });
      expect(text).toMatch(/\n {2}crash-replay +500 {2}a crash replayed a durable channel's take whose events had already got through \(a take still open, or a Kafka channel's committed take whose offset waited behind a record another take held\) \(e\.g\. event \d+\)\n/);
      // Read again: the 500 of k2's committed takes above k1's open one, and the 200 of the takes open at the crash (k1's and k2's).
      expect(topicLine(r, "ch")).toBe("topic ch: 3,000 records in 3 partitions (1001/1000/999), 0 leader failovers, 0 acknowledgements lost; group flume: lag 0, 700 records read again, 2 rebalances");
      // The example's history says why it came again.
      const example = r.histories.find((h) => h.causes?.includes("crash-replay"));
      expect(example?.lines.join("\n")).toMatch(/CRASH: channel c1 will give it back \(its take committed, its offset was not\)[^]*that delivery is a duplicate: a crash replayed/);
      expect(r.verdict.line).toBe("tier at-least-once: HELD (0 lost, 500 duplicates)");
      // a1 counts k1's open take too: the collector had committed it, and k2 delivered it again after the restart.
      expect(r.agents.map((a) => a.verdict.line)).toEqual(["agent a1: HELD (0 lost, 600 duplicates)", "agent collector: HELD (0 lost, 0 duplicates)"]);
    } finally {
      cleanup();
    }
  }, 60_000);

  test("a crash while a put commit waits for the broker's answer: the records it wrote become readable all the same, and the restarted agent delivers every event", async () => {
    for (const seed of [1, 4]) {
      const r = await kafkaChannelRun({ seed, crashes: parseCrashSpecs("a1@237ms+500ms", "--crash") });
      expect(r.summary).toMatchObject({ accepted: 10_000, deliveredUnique: 10_000, lost: 0, remaining: 0 });
      expect(r.peers.find((l) => l.startsWith("topic ch:"))).toContain("group flume: lag 0");
    }
  }, 60_000);

  test("a Kafka channel whose topic a Kafka sink of the run writes too is refused, naming the channel and the topic", async () => {
    const { dir, cleanup } = tempDir("flume-sim-kafka-channel-");
    try {
      const conf = path.join(dir, "shared.conf");
      writeFileSync(conf, `${EDGE}\nedge.channels = c1 c2\nedge.channels.c2.type = kafka\nedge.channels.c2.kafka.bootstrap.servers = kafka1:9092\nedge.channels.c2.kafka.topic = logs\n`);
      await expect(runSimulation({ ...DEFAULTS, events: 100, configFile: conf, workDir: dir })).rejects.toThrow(
        new SimulationUsageError("edge: channel c2 keeps its events in topic logs, which a Kafka sink or source of the run uses too; the simulation gives each Kafka channel a topic of its own"),
      );
    } finally {
      cleanup();
    }
  });

  test("every duplicate has a cause and every lost event a failover that lost acknowledged records, whatever the faults (many seeds, two sinks taking at once)", async () => {
    const seen = new Set<string>();
    let lostSomewhere = false;
    for (let seed = 1; seed <= 6; seed++) {
      const r = await kafkaChannelRun({
        seed,
        failSink: { kind: "rate", rate: 0.1 },
        kafkaLoseAck: 0.05,
        kafkaFailovers: parseFailovers(`ch@${100 + seed * 50}ms+300ms,ch:1@${700 + seed * 20}ms+35s`, "--kafka-failover"),
        crashes: parseCrashSpecs(`a1@${200 + seed * 37}ms+500ms,a1@${900 + seed * 61}ms`, "--crash"),
      });
      const counts = causeCount(r);
      expect(counts.unexplained).toBeUndefined();
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(r.summary.duplicates);
      for (const c of Object.keys(counts)) seen.add(c);
      const line = r.peers.find((l) => l.startsWith("topic ch:")) ?? "";
      const brokerLost = Number(/([\d,]+) acknowledged records LOST/.exec(line)?.[1].replaceAll(",", "") ?? 0);
      expect(r.summary.lost).toBe(brokerLost);
      if (brokerLost > 0) lostSomewhere = true;
      expect(r.summary.accepted).toBe(r.summary.deliveredUnique + r.summary.lost + r.summary.remaining);
      expect(r.summary.remaining).toBe(0);
      expect(line).toContain("group flume: lag 0");
    }
    expect([...seen].sort()).toEqual(["crash-replay", "leader-failover", "lost-ack", "partial-batch"]);
    expect(lostSomewhere).toBe(true);
  }, 120_000);
  test("a trace of runs with broker faults (lost acknowledgements, failovers losing acknowledged records, crashes, two sinks taking at once) replays to the ledger each simulation reported", async () => {
    const { dir, cleanup } = tempDir("flume-sim-kafka-channel-trace-");
    try {
      for (let seed = 1; seed <= 3; seed++) {
        const trace = path.join(dir, `seed-${seed}.jsonl`);
        const sim = await kafkaChannelRun(
          {
            seed,
            failSink: { kind: "rate", rate: 0.1 },
            kafkaLoseAck: 0.05,
            kafkaFailovers: parseFailovers(`ch@${100 + seed * 50}ms+300ms,ch:1@${700 + seed * 20}ms+35s`, "--kafka-failover"),
            crashes: parseCrashSpecs(`a1@${200 + seed * 37}ms+500ms,a1@${900 + seed * 61}ms`, "--crash"),
          },
          { traceFile: trace },
        );
        expect(sim.summary.duplicates).toBeGreaterThan(0);
        const r = await replayTraces([trace], { workDir: path.join(dir, `replay-${seed}`) });
        expect(r.mismatches).toEqual([]);
        expect(r.summary).toEqual(sim.summary);
        // What the broker did outside the transactions is in the trace, for the replay to apply.
        const ops = new Set(readFileSync(trace, "utf8").split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { op?: string }).op));
        expect(ops.has("landed")).toBe(true);
        if (sim.summary.lost > 0) expect(ops.has("brokerLost")).toBe(true);
      }
      // What a user runs: the same ledger, said so.
      const text = runCli(["replay", path.join(dir, "seed-3.jsonl")]);
      expect(text.stdout).toContain("replay reached the same ledger");
      expect(text.code).toBe(0);
    } finally {
      cleanup();
    }
  }, 120_000);
  test("a replayed Kafka channel still checks the takes: an event the channel never held, or one copy taken by two open takes, is a divergence naming the line; copies the broker wrote outside a commit can be taken", async () => {
    const { dir, cleanup } = tempDir("flume-sim-kafka-channel-trace-");
    try {
      const header = { flumeTrace: 1, clock: "virtual", deliveries: "sink", channels: [{ name: "c1", type: "kafka", durable: true }] };
      const put = [
        { t: 0, op: "begin", tx: 1, ch: "c1", by: "r1" },
        { t: 0, op: "put", tx: 1, ids: [1, 2] },
        { t: 0, op: "commit", tx: 1 },
        { t: 1, op: "committed", tx: 1 },
        { t: 1, op: "close", tx: 1 },
      ];
      const write = (name: string, lines: object[]) => {
        const file = path.join(dir, name);
        writeFileSync(file, `${[header, ...put, ...lines].map((l) => JSON.stringify(l)).join("\n")}\n`);
        return file;
      };
      const never = write("never.jsonl", [
        { t: 2, op: "begin", tx: 2, ch: "c1", by: "k1" },
        { t: 2, op: "take", tx: 2, ids: [3] },
      ]);
      await expect(replayTraces([never], { workDir: path.join(dir, "r1") })).rejects.toThrow(`${never}:8: replay diverged: transaction 2 took event 3 from c1, which holds no copy of it that another open take does not have`);
      const twice = write("twice.jsonl", [
        { t: 2, op: "begin", tx: 2, ch: "c1", by: "k1" },
        { t: 2, op: "take", tx: 2, ids: [1] },
        { t: 2, op: "begin", tx: 3, ch: "c1", by: "k2" },
        { t: 2, op: "take", tx: 3, ids: [1] },
      ]);
      await expect(replayTraces([twice], { workDir: path.join(dir, "r2") })).rejects.toThrow(`${twice}:10: replay diverged: transaction 3 took event 1 from c1, which holds no copy of it that another open take does not have`);
      // A put whose acknowledgement was lost: it failed, and the broker holds its copy all the same.
      const landed = write("landed.jsonl", [
        { t: 2, op: "begin", tx: 2, ch: "c1", by: "r1" },
        { t: 2, op: "put", tx: 2, ids: [2] },
        { t: 2, op: "commit", tx: 2 },
        { t: 3, op: "landed", ch: "c1", ids: [2], cause: "lost-ack" },
        { t: 3, op: "committed", tx: 2, error: "ChannelException: no acknowledgement" },
        { t: 3, op: "rollback", tx: 2 },
        { t: 3, op: "close", tx: 2 },
        { t: 4, op: "begin", tx: 3, ch: "c1", by: "k1" },
        { t: 4, op: "take", tx: 3, ids: [2, 1, 2] },
        { t: 4, op: "deliver", tx: 3, by: "k1", ids: [2, 1, 2] },
        { t: 4, op: "commit", tx: 3 },
        { t: 5, op: "committed", tx: 3 },
        { t: 5, op: "close", tx: 3 },
      ]);
      const r = await replayTraces([landed], { workDir: path.join(dir, "r3") });
      expect(r.summary).toMatchObject({ accepted: 2, deliveredUnique: 2, duplicates: 1, lost: 0, remaining: 0, rolledBack: 1 });
    } finally {
      cleanup();
    }
  });
});
