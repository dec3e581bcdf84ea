/**
 * `flume run` agents with Kafka components, as real processes on a live Kafka broker: an agent
 * SIGKILLed while its source consumes re-reads at most the batches it had not committed, and an
 * agent started before its broker is not ready (naming the sink and the error) until the
 * broker comes, then delivers; a source whose dead-letter topic is missing is not ready (naming
 * the topic) while the rest of the agent runs, and starts once the topic exists.
 */
import { expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { MOST_UNCOMMITTED } from "../../src/components/sources/kafka.ts";
import { agentsAfterEach, CLI, freePort, ROOT, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { precondition } from "../support/requires.ts";
import { needsJvm } from "../support/jvm.ts";
import { drain, openChannel } from "../support/file-channel.ts";
import { consoleConsume, consoleProduce, startKafka } from "../support/kafka.ts";
import { kafkaForFile } from "../support/kafka-tests.ts";

interface ReadyBody {
  ready: boolean;
  notStarted: { kind: string; name: string; error?: string }[];
}

/** Waits until /ready answers 503 naming the component with an error; returns that answer. */
async function notReadyNaming(port: number, component: string, what: string): Promise<ReadyBody> {
  const last: { body?: ReadyBody } = {};
  await waitUntil(
    async () => {
      const r = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => null);
      if (!r) return false;
      const body = (last.body = (await r.json()) as ReadyBody);
      return r.status === 503 && body.notStarted.some((c) => c.name === component && c.error !== undefined);
    },
    what,
    120_000,
    200,
  );
  return last.body as ReadyBody;
}

const { cleanups, startAgent } = agentsAfterEach();
const kafka = kafkaForFile({ autoCreateTopics: false });

function sourceConf(topic: string, dir: string, uncommittedBatches?: number): string {
  return `a1.sources = r1
a1.channels = c1
a1.sources.r1.type = org.apache.flume.source.kafka.KafkaSource
a1.sources.r1.channels = c1
a1.sources.r1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sources.r1.kafka.topics = ${topic}
a1.sources.r1.kafka.consumer.group.id = agents
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
# The killed member holds its partitions until its session expires: short, so the restart gets them soon.
a1.sources.r1.kafka.consumer.session.timeout.ms = 6000
a1.sources.r1.kafka.consumer.heartbeat.interval.ms = 1000
a1.sources.r1.batchSize = 50
a1.sources.r1.batchDurationMillis = 100
${uncommittedBatches === undefined ? "" : `a1.sources.r1.uncommittedBatches = ${uncommittedBatches}\n`}a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${path.join(dir, "checkpoint")}
a1.channels.c1.dataDirs = ${path.join(dir, "data")}
a1.channels.c1.transactionCapacity = 1000
`;
}

/** Takes every event out of the file channel in dir (the agent using it stopped). */
async function drainDir(dir: string): Promise<string[]> {
  const { ch } = await openChannel(dir, { transactionCapacity: 1000 });
  const bodies = await drain(ch);
  await ch.stop();
  return bodies;
}

/**
 * Fills a one-partition topic, SIGKILLs an agent reading it into a file channel once it put
 * some batches, takes out what it put, restarts it on the same group and takes the rest:
 * every record arrives, and the records put twice are at most `bound` batches of 50.
 */
async function killedMidConsume(topic: string, uncommittedBatches: number | undefined, bound: number): Promise<void> {
  await kafka.createTopic(topic);
  const total = 10_000;
  await consoleProduce(
    kafka,
    topic,
    Array.from({ length: total }, (_, i) => `e${i}`),
  );
  const { dir, cleanup } = tempDir("flume-kafka-kill-");
  cleanups.push(cleanup);
  mkdirSync(path.join(dir, "data"), { recursive: true });
  const port = await freePort();
  const first = startAgent(dir, "a1", sourceConf(topic, dir, uncommittedBatches), port);
  await waitForMetrics(port, "some batches committed to the file channel", (m) => Number(m["SOURCE.r1"]?.EventAcceptedCount ?? 0) >= 500, 120_000, 5);
  first.child.kill("SIGKILL");
  await first.exited();
  // What the killed agent put: the kill landed mid-stream.
  const before = await drainDir(dir);
  expect(before.length).toBeGreaterThan(0);
  expect(before.length).toBeLessThan(total);

  const port2 = await freePort();
  const second = startAgent(dir, "a1", sourceConf(topic, dir, uncommittedBatches), port2);
  // The restart puts the rest plus the re-read: read on until the source finds the topic drained twice.
  const full = await waitForMetrics(port2, "the rest read", (m) => before.length + Number(m["CHANNEL.c1"]?.ChannelSize ?? 0) >= total, 120_000, 50);
  const empty = Number(full["SOURCE.r1"]?.KafkaEmptyCount ?? 0);
  await waitForMetrics(port2, "the topic drained", (m) => Number(m["SOURCE.r1"]?.KafkaEmptyCount ?? 0) >= empty + 2, 120_000, 50);
  second.child.kill("SIGTERM");
  await second.exited();

  const bodies = [...before, ...(await drainDir(dir))];
  const unique = new Set(bodies);
  const reRead = bodies.length - unique.size;
  console.log(`uncommittedBatches ${uncommittedBatches ?? `${MOST_UNCOMMITTED} (default)`}: killed after ${before.length} of ${total}, re-read: ${reRead} (bound ${bound * 50})`);
  // Nothing skipped; repeated: at most the batches (of 50) put whose offsets were not committed.
  expect(unique.size).toBe(total);
  expect(reRead).toBeLessThanOrEqual(bound * 50);
}

needsJvm.test(
  "an agent SIGKILLed mid-stream while its source consumes with uncommittedBatches = 1 (Flume's bound) re-reads at most one batch, and skips none",
  () => killedMidConsume("killed-mid-consume-1", 1, 1),
  300_000,
);

needsJvm.test(
  "an agent SIGKILLed mid-stream while its source consumes with the default uncommittedBatches re-reads at most that many batches, and skips none",
  () => killedMidConsume("killed-mid-consume", undefined, MOST_UNCOMMITTED),
  300_000,
);

needsJvm.test(
  "an agent whose broker is not there yet is not ready, naming the sink and the error, and delivers once the broker comes",
  async () => {
    const kafkaPort = await freePort();
    const { dir, cleanup } = tempDir("flume-kafka-late-");
    cleanups.push(cleanup);
    const port = await freePort();
    startAgent(
      dir,
      "a1",
      `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 100
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = kafka
a1.sinks.k1.channel = c1
a1.sinks.k1.kafka.bootstrap.servers = 127.0.0.1:${kafkaPort}
a1.sinks.k1.kafka.topic = late
a1.sinks.k1.kafka.producer.request.timeout.ms = 2000
a1.sinks.k1.kafka.producer.socket.connection.setup.timeout.ms = 1000
`,
      port,
    );
    const ready = await notReadyNaming(port, "k1", "/ready naming the sink");
    const k1 = ready.notStarted.find((c) => c.name === "k1")!;
    expect(k1.error).toContain(`127.0.0.1:${kafkaPort}`);

    const late = await startKafka({ ports: [kafkaPort] });
    cleanups.push(() => void late.stop());
    await late.createTopic("late");
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/ready`)).status === 200, "the agent ready", 120_000, 200);
    const lines = await consoleConsume(late, "late", 100);
    expect(lines).toEqual(Array.from({ length: 100 }, (_, i) => String(i)));
    await late.stop();
  },
  300_000,
);

const DENO = path.join(ROOT, "node_modules", ".bin", "deno");
const needsDeno = precondition(() => existsSync(DENO), "needs deno from npm (npm install)");

/** seq (1000 events) -> memory -> kafka sink with lz4 (a codec of the client's wasm module) into `topic`. */
function lz4SinkConf(topic: string): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 1000
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = kafka
a1.sinks.k1.channel = c1
a1.sinks.k1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sinks.k1.kafka.topic = ${topic}
a1.sinks.k1.kafka.producer.compression.type = lz4
`;
}

/** Runs `cmd run -f conf` until Kafka's console consumer read the 1000 events it sends. */
async function deliversThrough(cmd: string[], topic: string): Promise<void> {
  await kafka.createTopic(topic);
  const { dir, cleanup } = tempDir("flume-kafka-runtime-");
  cleanups.push(cleanup);
  const conf = path.join(dir, "a1.conf");
  writeFileSync(conf, lz4SinkConf(topic));
  const child = spawn(cmd[0], [...cmd.slice(1), "run", "-f", conf, "-n", "a1", "--no-reload-conf"], { stdio: "ignore" });
  cleanups.push(() => void child.kill("SIGKILL"));
  const lines = await consoleConsume(kafka, topic, 1000, { timeoutMs: 90_000 });
  expect(lines).toEqual(Array.from({ length: 1000 }, (_, i) => String(i)));
}

needsJvm.test(
  "the compiled binary sends with the Kafka client's wasm codecs (lz4)",
  async () => {
    const { dir, cleanup } = tempDir("flume-kafka-binary-");
    cleanups.push(cleanup);
    const binary = path.join(dir, "flume");
    const build = spawnSync(process.execPath, [path.join(ROOT, "scripts", "build.ts"), binary], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
    expect(build.status).toBe(0);
    await deliversThrough([binary], "from-binary");
  },
  300_000,
);

needsJvm.and(needsDeno).test(
  "under Deno the kafka sink sends with lz4",
  async () => {
    await deliversThrough([DENO, "run", "-A", CLI], "from-deno");
  },
  300_000,
);

needsJvm.and(needsDeno).test(
  "under Deno the kafka source reads every record once and in order, over many fetch responses (each freed once its batches are committed)",
  async () => {
    const topic = "to-deno";
    await kafka.createTopic(topic);
    const total = 20_000; // ~2 MB: a few dozen fetch responses of up to 240 KB
    const lines = Array.from({ length: total }, (_, i) => `r${i}-${"x".repeat(90)}`);
    await consoleProduce(kafka, topic, lines);
    const { dir, cleanup } = tempDir("flume-kafka-deno-source-");
    cleanups.push(cleanup);
    const out = path.join(dir, "out");
    mkdirSync(out);
    const conf = path.join(dir, "a1.conf");
    writeFileSync(
      conf,
      `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = kafka
a1.sources.r1.channels = c1
a1.sources.r1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sources.r1.kafka.topics = ${topic}
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
a1.sources.r1.batchSize = 1000
a1.sources.r1.batchDurationMillis = 100
a1.channels.c1.type = memory
a1.channels.c1.capacity = 10000
a1.channels.c1.transactionCapacity = 1000
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${out}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.batchSize = 1000
`,
    );
    const port = await freePort();
    const child = spawn(DENO, ["run", "-A", CLI, "run", "-f", conf, "-n", "a1", "--metrics-port", String(port), "--metrics-bind", "127.0.0.1", "--quiet", "--no-reload-conf"], { stdio: "ignore" });
    cleanups.push(() => void child.kill("SIGKILL"));
    await waitForMetrics(port, "every record written by the file_roll sink", (m) => Number(m["SINK.k1"]?.EventDrainSuccessCount ?? 0) >= total, 120_000, 50);
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    const written = readdirSync(out)
      .sort()
      .flatMap((f) => readFileSync(path.join(out, f), "utf8").split("\n").filter((l) => l.length > 0));
    expect(written.length).toBe(total);
    expect(written).toEqual(lines);
  },
  300_000,
);

needsJvm.test(
  "a dead-letter topic that does not exist keeps the kafka source from starting: /ready names it and the topic, the rest of the agent runs, and once the topic exists the source reads, the bad record going there",
  async () => {
    const topic = "with-dead-letters";
    const dlq = "dead-letters-later";
    await kafka.createTopic(topic);
    await consoleProduce(kafka, topic, ["not an Avro FlumeEvent"]);
    const { dir, cleanup } = tempDir("flume-kafka-dlq-");
    cleanups.push(cleanup);
    const port = await freePort();
    startAgent(
      dir,
      "a1",
      `a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = kafka
a1.sources.r1.channels = c1
a1.sources.r1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sources.r1.kafka.topics = ${topic}
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
a1.sources.r1.useFlumeEventFormat = true
a1.sources.r1.kafka.deadLetterTopic = ${dlq}
a1.sources.r1.batchSize = 100
a1.sources.r1.batchDurationMillis = 100
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = 500
a1.sources.r2.channels = c2
a1.channels.c1.type = memory
a1.channels.c2.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
a1.sinks.k2.type = null
a1.sinks.k2.channel = c2
`,
      port,
    );
    const ready = await notReadyNaming(port, "r1", "/ready naming the kafka source");
    expect(ready.notStarted.map((c) => c.name)).toEqual(["r1"]);
    expect(ready.notStarted[0].error).toContain(`the dead-letter topic ${dlq} (kafka.deadLetterTopic) cannot be written`);
    // The rest of the agent runs.
    await waitForMetrics(port, "the seq source's events taken by its sink", (m) => Number(m["CHANNEL.c2"]?.EventTakeSuccessCount ?? 0) === 500, 120_000, 100);
    await kafka.createTopic(dlq);
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/ready`)).status === 200, "the agent ready once the dead-letter topic exists", 120_000, 200);
    expect(await consoleConsume(kafka, dlq, 1)).toEqual(["not an Avro FlumeEvent"]);
    await waitForMetrics(port, "the bad record counted", (m) => Number(m["SOURCE.r1"]?.EventReadFail ?? 0) === 1, 60_000, 100);
  },
  300_000,
);
