/**
 * The README's two-tier example run for real: conf/kafka-edge.conf (http -> file channel ->
 * Kafka sink, acks=all, lz4, FlumeEvents) and conf/kafka-collector.conf (Kafka source in the
 * group "collectors" -> file channel -> file_roll with header_and_text) as two `flume run`
 * processes on a live broker, the topic "logs" created as the operator would. The files are
 * read from conf/ and changed only where a test must: the broker list, the HTTP port and the
 * /var/lib/flume-ts paths. Events go in as a user sends them (JSON POSTs to the edge) and are
 * checked where a user looks: the collector's files and both agents' /metrics.
 */
import { expect } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { agentsAfterEach, type AgentProcess, fetchMetrics, freePort, type Metrics, ROOT, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { kafkaForFile } from "../support/kafka-tests.ts";

const { cleanups, startAgent } = agentsAfterEach();
const kafka = kafkaForFile({ autoCreateTopics: false });

/** The topic both files name, and its partitions here (one broker: replication factor 1). */
const TOPIC = "logs";
const PARTITIONS = 3;
let topicMade = false;

async function logsTopic(): Promise<void> {
  if (topicMade) return;
  await kafka.createTopic(TOPIC, { partitions: PARTITIONS });
  topicMade = true;
}

/** A file of conf/ with each [what, by] replaced; a `what` missing from it fails the test (the example changed shape). */
function documented(file: string, rewrites: [string, string][]): string {
  let text = readFileSync(path.join(ROOT, "conf", file), "utf8");
  for (const [what, by] of rewrites) {
    if (!text.includes(what)) throw new Error(`conf/${file} no longer holds "${what}": update this test with the example`);
    text = text.split(what).join(by);
  }
  return text;
}

const DOCUMENTED_BROKERS = "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094";

/** The edge agent's file: its broker list, HTTP port and state directory (below dir) changed. */
function edgeConf(dir: string, httpPort: number): string {
  return documented("kafka-edge.conf", [
    [DOCUMENTED_BROKERS, kafka.bootstrap],
    ["edge.sources.r1.port = 8080", `edge.sources.r1.port = ${httpPort}`],
    ["/var/lib/flume-ts/", `${dir}/`],
  ]);
}

/** The collector's file: its broker list and state directory (below dir) changed. */
function collectorConf(dir: string): string {
  return documented("kafka-collector.conf", [
    [DOCUMENTED_BROKERS, kafka.bootstrap],
    ["/var/lib/flume-ts/", `${dir}/`],
  ]);
}

interface Tier {
  dir: string;
  httpPort: number;
  edgePort: number;
  edge: AgentProcess;
  /** Starts a collector (again) on the same files; returns its metrics port. */
  startCollector(): Promise<{ agent: AgentProcess; port: number }>;
  /** Every complete line the collector's file_roll sink wrote so far, file after file. */
  written(): string[];
}

async function ready(port: number, what: string): Promise<void> {
  await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/ready`).catch(() => null))?.status === 200, what, 60_000, 100);
}

/** The edge and a collector started as `flume run -f <file> -n edge|collector`, both ready. */
async function startTier(prefix: string): Promise<Tier & { collector: AgentProcess; collectorPort: number }> {
  await logsTopic();
  const { dir, cleanup } = tempDir(prefix);
  cleanups.push(cleanup);
  const [httpPort, edgePort] = [await freePort(), await freePort()];
  const edge = startAgent(dir, "edge", edgeConf(dir, httpPort), edgePort);
  const out = path.join(dir, "collector", "out");
  const tier: Tier = {
    dir,
    httpPort,
    edgePort,
    edge,
    async startCollector() {
      const port = await freePort();
      const agent = startAgent(dir, "collector", collectorConf(dir), port);
      await ready(port, "the collector ready");
      return { agent, port };
    },
    written: () => written(out),
  };
  await ready(edgePort, "the edge ready");
  const { agent, port } = await tier.startCollector();
  return { ...tier, collector: agent, collectorPort: port };
}

/** file_roll names its files <start time>-<n>: in the order written. */
function fileOrder(a: string, b: string): number {
  const [sa, na] = a.split("-").map(Number);
  const [sb, nb] = b.split("-").map(Number);
  return sa - sb || na - nb;
}

function written(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort(fileOrder)
    .flatMap((f) => {
      const text = readFileSync(path.join(dir, f), "utf8");
      return text
        .slice(0, text.lastIndexOf("\n") + 1)
        .split("\n")
        .filter((l) => l.length > 0);
    });
}

/** A header_and_text line, `{k1=v1, k2=v2} body`, read back. */
function parseLine(line: string): { headers: Record<string, string>; body: string } {
  const end = line.indexOf("} ");
  if (!line.startsWith("{") || end < 0) throw new Error(`not a header_and_text line: ${line}`);
  const inner = line.slice(1, end);
  const headers = Object.fromEntries(
    inner === ""
      ? []
      : inner.split(", ").map((kv) => {
          const eq = kv.indexOf("=");
          return [kv.slice(0, eq), kv.slice(eq + 1)];
        }),
  );
  return { headers, body: line.slice(end + 2) };
}

/** Topic headers an HTTP client may send: the edge sends to "logs" anyway (allowTopicOverride = false). */
const CLIENT_TOPICS = ["elsewhere", "two words", "__consumer_offsets"];

/** The topic header event seq carries: its client's, which the collector's source keeps (as Flume's, it sets the header only when missing), else the topic it was read from. */
const topicHeaderOf = (seq: number) => (seq > 0 && seq % 7 === 0 ? CLIENT_TOPICS[(seq / 7) % CLIENT_TOPICS.length] : TOPIC);

/** The events of one POST: body `<run>-<seq>`, headers host (three of them) and seq; every seventh with a topic header of its client's choosing. */
function eventsOf(run: string, from: number, n: number): { headers: Record<string, string>; body: string }[] {
  return Array.from({ length: n }, (_, i) => {
    const seq = from + i;
    const headers: Record<string, string> = { host: `web-${seq % 3}`, seq: String(seq) };
    if (topicHeaderOf(seq) !== TOPIC) headers.topic = topicHeaderOf(seq);
    return { headers, body: `${run}-${seq}` };
  });
}

/** POSTs the events to the edge as curl -d does (the README's example); the edge answers 200 once its file channel committed them. */
async function post(port: number, events: unknown[]): Promise<void> {
  const r = await fetch(`http://127.0.0.1:${port}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: JSON.stringify(events) });
  expect(r.status).toBe(200);
}

const count = (m: Metrics, component: string, name: string): number => Number(m[component]?.[name] ?? 0);

/** Stops an agent as an operator does (SIGTERM) and expects a clean exit. */
async function stop(agent: AgentProcess): Promise<void> {
  agent.child.kill("SIGTERM");
  expect(await agent.exited()).toBe(0);
}

/**
 * Checks the collector's lines of one run: each of `total` events once, with its body and the
 * headers the edge set, and the Kafka headers the collector's source added; within each
 * partition in offset order and in the order the edge got them.
 */
function expectEachOnceInOrder(lines: string[], run: string, total: number): void {
  const ours = lines.map(parseLine).filter((e) => e.body.startsWith(`${run}-`));
  expect(ours.length).toBe(total);
  expect(new Set(ours.map((e) => e.body)).size).toBe(total);
  const byPartition = new Map<string, { seq: number; offset: number }[]>();
  for (const e of ours) {
    const seq = Number(e.body.slice(run.length + 1));
    expect(e.headers).toMatchObject({ host: `web-${seq % 3}`, seq: String(seq), topic: topicHeaderOf(seq) });
    expect(Number(e.headers.timestamp)).toBeGreaterThan(Date.now() - 3_600_000);
    const list = byPartition.get(e.headers.partition) ?? [];
    list.push({ seq, offset: Number(e.headers.offset) });
    byPartition.set(e.headers.partition, list);
  }
  for (const [partition, list] of byPartition) {
    expect(Number(partition)).toBeLessThan(PARTITIONS);
    for (let i = 1; i < list.length; i++) {
      expect(list[i].offset).toBeGreaterThan(list[i - 1].offset);
      expect(list[i].seq).toBeGreaterThan(list[i - 1].seq);
    }
  }
}

needsJvm.test(
  "the README's two-tier example: events POSTed to the edge are each written once by the collector's file_roll, with their body and headers, in order per partition, and both agents' /metrics count them",
  async () => {
    const tier = await startTier("flume-two-tier-");
    const run = `run${Date.now()}`;
    const total = 2000;
    // The conf file's own example first: one event, headers and a body.
    await post(tier.httpPort, [{ headers: { host: "web-0", seq: "0" }, body: `${run}-0` }]);
    for (let from = 1; from < total; from += 111) await post(tier.httpPort, eventsOf(run, from, Math.min(111, total - from)));

    const edge = await waitForMetrics(tier.edgePort, "the edge's sink acknowledged by the broker", (m) => count(m, "SINK.k1", "EventDrainSuccessCount") >= total, 60_000, 100);
    expect(count(edge, "SOURCE.r1", "EventAcceptedCount")).toBe(total);
    expect(count(edge, "SINK.k1", "EventDrainSuccessCount")).toBe(total);
    expect(count(edge, "SINK.k1", "RollbackCount")).toBe(0);
    const collector = await waitForMetrics(tier.collectorPort, "the collector's file_roll wrote every event", (m) => count(m, "SINK.k1", "EventDrainSuccessCount") >= total, 60_000, 100);
    expect(count(collector, "SOURCE.r1", "EventAcceptedCount")).toBe(total);
    expect(count(collector, "SOURCE.r1", "EventReadFail")).toBe(0);
    expect(count(collector, "SINK.k1", "EventDrainSuccessCount")).toBe(total);
    expect(count(collector, "CHANNEL.c1", "ChannelSize")).toBe(0);

    await stop(tier.collector);
    await stop(tier.edge);
    expectEachOnceInOrder(tier.written(), run, total);
    // Every partition got some: the edge's batches spread over the topic.
    const partitions = new Set(tier.written().map((l) => parseLine(l).headers.partition));
    expect(partitions.size).toBe(PARTITIONS);
  },
  300_000,
);

needsJvm.test(
  "the collector stopped (SIGTERM) while events keep coming to the edge, then started again, writes every event once: its offsets were committed after its file channel",
  async () => {
    const tier = await startTier("flume-two-tier-restart-");
    const run = `restart${Date.now()}`;
    let sent = 0;
    let sending = true;
    // A client POSTing 50 events every 100 ms or so, until told to stop.
    const client = (async () => {
      while (sending) {
        await post(tier.httpPort, eventsOf(run, sent, 50));
        sent += 50;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const drained = async (port: number): Promise<number> => count(await fetchMetrics(port), "SINK.k1", "EventDrainSuccessCount");
    try {
      await waitForMetrics(tier.collectorPort, "the collector writing", (m) => count(m, "SINK.k1", "EventDrainSuccessCount") >= 500, 60_000, 100);
      await stop(tier.collector);
      const whenStopped = tier.written().length;
      // The edge goes on sending to the topic while no collector reads it.
      const edgeAtStop = await drained(tier.edgePort);
      await waitUntil(async () => (await drained(tier.edgePort)) >= edgeAtStop + 1000, "1000 more events in the topic", 60_000, 100);
      expect(tier.written().length).toBe(whenStopped);

      const again = await tier.startCollector();
      await waitForMetrics(again.port, "the restarted collector writing", (m) => count(m, "SINK.k1", "EventDrainSuccessCount") >= 1000, 60_000, 100);
      sending = false;
      await client;
      const total = sent;
      await waitUntil(() => tier.written().filter((l) => l.includes(`} ${run}-`)).length >= total, "every event written", 60_000, 200);
      await stop(again.agent);
      await stop(tier.edge);
      console.log(`sent ${total}: ${whenStopped} written before the stop, ${edgeAtStop} in the topic then`);
      expectEachOnceInOrder(tier.written(), run, total);
    } finally {
      sending = false;
      await client.catch(() => {});
    }
  },
  300_000,
);
