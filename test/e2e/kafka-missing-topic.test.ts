/**
 * Topics that do not exist, on a broker that does not create topics on use, through `flume run`:
 * the agent stays up, /ready answers 503 naming each Kafka component (source, channel, sink)
 * with an error naming its topic, and once the topics exist the supervisor's retries start them
 * and events flow.
 */
import { expect } from "bun:test";
import { agentsAfterEach, freePort, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { consoleConsume, consoleProduce, kafkaTool } from "../support/kafka.ts";
import { kafkaForFile } from "../support/kafka-tests.ts";

interface ReadyBody {
  ready: boolean;
  notStarted: { kind: string; name: string; error?: string }[];
  failing: { kind: string; name: string; state: string; error: string; since: string }[];
}

const { cleanups, startAgent } = agentsAfterEach();
const kafka = kafkaForFile({ autoCreateTopics: false });

needsJvm.test(
  "a kafka source, channel and sink naming topics that do not exist: the agent stays up, /ready names each with its topic, and once the topics exist they start and deliver",
  async () => {
    const { dir, cleanup } = tempDir("flume-kafka-missing-");
    cleanups.push(cleanup);
    const port = await freePort();
    const agent = startAgent(
      dir,
      "a1",
      `# The source and the channel share Flume's default group (flume) on different topics.
a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = kafka
a1.sources.r1.channels = c1
a1.sources.r1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sources.r1.kafka.topics = missing-in
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
a1.sources.r1.batchDurationMillis = 100
a1.channels.c1.type = memory
a1.channels.c1.capacity = 10000
a1.channels.c1.transactionCapacity = 1000
a1.sinks.k1.type = kafka
a1.sinks.k1.channel = c1
a1.sinks.k1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sinks.k1.kafka.topic = missing-out
# The source's topic header would send the events back to missing-in.
a1.sinks.k1.allowTopicOverride = false
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = 100
a1.sources.r2.channels = c2
a1.channels.c2.type = org.apache.flume.channel.kafka.KafkaChannel
a1.channels.c2.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.channels.c2.kafka.topic = missing-channel
a1.channels.c2.kafka.consumer.auto.offset.reset = earliest
a1.sinks.k2.type = null
a1.sinks.k2.channel = c2
`,
      port,
    );
    const want = { r1: "missing-in", k1: "missing-out", c2: "missing-channel" } as const;
    let body: ReadyBody | null = null;
    await waitUntil(
      async () => {
        if (agent.child.exitCode !== null) throw new Error(`the agent exited (${agent.child.exitCode}): ${agent.stderr}`);
        const r = await fetch(`http://127.0.0.1:${port}/ready`, { signal: AbortSignal.timeout(10_000) }).catch(() => null);
        if (!r) return false;
        body = (await r.json()) as ReadyBody;
        return r.status === 503 && Object.keys(want).every((name) => body!.notStarted.some((c) => c.name === name && c.error !== undefined));
      },
      "/ready naming the kafka source, channel and sink",
      120_000,
      200,
    );
    const notStarted = (body as ReadyBody | null)?.notStarted ?? [];
    for (const [name, topic] of Object.entries(want)) {
      const c = notStarted.find((x) => x.name === name);
      expect(c?.error).toContain(`topic ${topic} does not exist`);
    }
    expect(notStarted.find((x) => x.name === "r1")?.kind).toBe("source");
    expect(notStarted.find((x) => x.name === "c2")?.kind).toBe("channel");
    // The process stays up, retrying sooner at first, each error line saying when the next try is.
    expect(agent.child.exitCode).toBeNull();
    await agent.waitFor(/Unable to start k1, retrying in 500 ms: /, 60_000);
    expect(agent.stderr).toMatch(/Unable to start k1, retrying in 250 ms: kafka sink k1: topic missing-out does not exist/);

    for (const topic of Object.values(want)) await kafka.createTopic(topic);
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/ready`)).status === 200, "the agent ready once the topics exist", 120_000, 200);
    await consoleProduce(kafka, "missing-in", ["one", "two", "three"]);
    expect(await consoleConsume(kafka, "missing-out", 3)).toEqual(["one", "two", "three"]);
    await waitForMetrics(port, "the seq events through the kafka channel", (m) => Number(m["CHANNEL.c2"]?.EventTakeSuccessCount ?? 0) === 100, 120_000, 100);
    expect(agent.child.exitCode).toBeNull();
  },
  300_000,
);

needsJvm.test(
  "topics deleted under a running kafka source and kafka channel: /ready lists both under failing with their error and since when, the agent stays up, and once the topics exist again they read on and /ready answers 200",
  async () => {
    const { dir, cleanup } = tempDir("flume-kafka-deleted-");
    cleanups.push(cleanup);
    for (const t of ["deleted-in", "deleted-channel"]) await kafka.createTopic(t);
    const port = await freePort();
    const agent = startAgent(
      dir,
      "a1",
      `a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = kafka
a1.sources.r1.channels = c1
a1.sources.r1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sources.r1.kafka.topics = deleted-in
a1.sources.r1.kafka.consumer.group.id = deleted-source
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
a1.sources.r1.batchSize = 100
a1.sources.r1.batchDurationMillis = 100
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = 100
a1.sources.r2.channels = c2
a1.channels.c2.type = kafka
a1.channels.c2.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.channels.c2.kafka.topic = deleted-channel
a1.channels.c2.kafka.consumer.group.id = deleted-channel
a1.sinks.k2.type = null
a1.sinks.k2.channel = c2
`,
      port,
    );
    const ready = async (): Promise<{ status: number; body: ReadyBody }> => {
      const r = await fetch(`http://127.0.0.1:${port}/ready`, { signal: AbortSignal.timeout(10_000) });
      return { status: r.status, body: (await r.json()) as ReadyBody };
    };
    await waitForMetrics(port, "the seq events through the kafka channel", (m) => Number(m["CHANNEL.c2"]?.EventTakeSuccessCount ?? 0) === 100, 120_000, 100);
    await consoleProduce(kafka, "deleted-in", ["one", "two", "three"]);
    await waitForMetrics(port, "the source reading the topic", (m) => m["SOURCE.r1"]?.EventAcceptedCount === "3", 120_000, 100);
    expect((await ready()).status).toBe(200);

    const t0 = Date.now();
    for (const t of ["deleted-in", "deleted-channel"]) {
      const r = await kafkaTool(kafka.classpath, "org.apache.kafka.tools.TopicCommand", ["--bootstrap-server", kafka.bootstrap, "--delete", "--topic", t]);
      expect(r.code).toBe(0);
    }
    let seen: ReadyBody | null = null;
    await waitUntil(
      async () => {
        const r = await ready();
        seen = r.body;
        return r.status === 503 && ["r1", "c2"].every((n) => r.body.failing.some((f) => f.name === n));
      },
      "/ready listing the source and the channel as failing",
      120_000,
      200,
    );
    const failing = (seen as ReadyBody | null)?.failing ?? [];
    for (const [kind, name] of [["source", "r1"], ["channel", "c2"]]) {
      const f = failing.find((x) => x.name === name);
      expect(f).toMatchObject({ kind, name, state: "FAILING" });
      expect(f?.error).toContain(`kafka ${kind} ${name}: `);
      expect(Date.parse(f?.since ?? "")).toBeGreaterThanOrEqual(t0 - 1000);
    }
    expect((seen as ReadyBody | null)?.notStarted).toEqual([]);
    expect(agent.child.exitCode).toBeNull();

    for (const t of ["deleted-in", "deleted-channel"]) await kafka.createTopic(t);
    await waitUntil(async () => (await ready()).status === 200, "the agent ready once the topics exist again", 120_000, 200);
    await consoleProduce(kafka, "deleted-in", ["four", "five"]);
    await waitForMetrics(port, "the source reading the new topic", (m) => m["SOURCE.r1"]?.EventAcceptedCount === "5", 120_000, 100);
    expect(agent.child.exitCode).toBeNull();
  },
  300_000,
);
