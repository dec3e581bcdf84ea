/**
 * Rebalances with real `flume run` agents on a live Kafka broker: agent A reads a topic of four
 * partitions while records keep coming, agent B joins its group, then A stops (SIGTERM) and B
 * reads on alone. Every record arrives (the union of both agents' files) and the repeats stay
 * within the batches the members had not committed when the group rebalanced.
 */
import { expect } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { agentsAfterEach, freePort, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { consoleProduce } from "../support/kafka.ts";
import { kafkaForFile } from "../support/kafka-tests.ts";

const { cleanups, startAgent } = agentsAfterEach();
const kafka = kafkaForFile({ autoCreateTopics: false });

const BATCH = 50;
const CHUNK = 2000;

/** kafka source (group "rebalancing", uncommittedBatches = 1) -> memory channel -> file_roll into out. */
function conf(topic: string, out: string): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = kafka
a1.sources.r1.channels = c1
a1.sources.r1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sources.r1.kafka.topics = ${topic}
a1.sources.r1.kafka.consumer.group.id = rebalancing
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
a1.sources.r1.kafka.consumer.session.timeout.ms = 6000
a1.sources.r1.kafka.consumer.heartbeat.interval.ms = 500
a1.sources.r1.batchSize = ${BATCH}
a1.sources.r1.batchDurationMillis = 100
a1.sources.r1.uncommittedBatches = 1
a1.channels.c1.type = memory
a1.channels.c1.capacity = 10000
a1.channels.c1.transactionCapacity = 1000
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${out}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.batchSize = 1000
`;
}

/** The complete lines the file_roll sink wrote into dir so far. */
function written(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const text = readFileSync(path.join(dir, f), "utf8");
      return text.slice(0, text.lastIndexOf("\n") + 1).split("\n").filter((l) => l.length > 0);
    });
}

const accepted = (m: Record<string, Record<string, unknown>>): number => Number(m["SOURCE.r1"]?.EventAcceptedCount ?? 0);

/** The events an agent's source put so far (0 while its /metrics does not answer yet). */
async function acceptedBy(port: number): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => null);
  const m = (await r?.json().catch(() => null)) as Record<string, Record<string, unknown>> | null | undefined;
  return m ? accepted(m) : 0;
}

needsJvm.test(
  "a second agent joining the group mid-stream and the first leaving (SIGTERM) lose nothing and repeat at most the batches not committed when the group rebalanced",
  async () => {
    const topic = "rebalanced";
    await kafka.createTopic(topic, { partitions: 4 });
    let produced = 0;
    /** Produces the next CHUNK records, keyed so they spread over the partitions. */
    const produce = async (): Promise<void> => {
      const from = produced;
      produced += CHUNK;
      await consoleProduce(
        kafka,
        topic,
        Array.from({ length: CHUNK }, (_, i) => `k${from + i}\tv${from + i}`),
        { keys: true },
      );
    };
    const { dir, cleanup } = tempDir("flume-kafka-rebalance-");
    cleanups.push(cleanup);
    const outA = path.join(dir, "a");
    const outB = path.join(dir, "b");
    mkdirSync(outA);
    mkdirSync(outB);
    mkdirSync(path.join(dir, "confB"));

    await produce();
    const portA = await freePort();
    const a = startAgent(dir, "a1", conf(topic, outA), portA);
    await waitForMetrics(portA, "agent A reading", (m) => accepted(m) > 0, 120_000, 50);

    // B joins while records keep coming: produce until both members read from the same chunk
    // (B got its partitions, A kept the others).
    const portB = await freePort();
    const b = startAgent(path.join(dir, "confB"), "a1", conf(topic, outB), portB);
    const reads = async (): Promise<[number, number]> => [await acceptedBy(portA), await acceptedBy(portB)];
    let [aRead, bRead] = await reads();
    let both = false;
    for (let i = 0; i < 15 && !both; i++) {
      await produce();
      await waitUntil(async () => (await acceptedBy(portA)) + (await acceptedBy(portB)) >= produced, "the chunk read", 120_000, 100);
      const [aNow, bNow] = await reads();
      both = bRead > 0 && aNow > aRead && bNow > bRead;
      [aRead, bRead] = [aNow, bNow];
      console.log(`chunk ${i}: A ${aNow} B ${bNow}`);
    }
    expect(both).toBe(true);
    const aBeforeLeaving = aRead;

    // A leaves while records keep coming; B takes its partitions.
    const more = produce();
    a.child.kill("SIGTERM");
    expect(await a.exited()).toBe(0);
    await more;
    await produce();

    const expected = new Set(Array.from({ length: produced }, (_, i) => `v${i}`));
    await waitUntil(
      () => {
        const seen = new Set([...written(outA), ...written(outB)]);
        return [...expected].every((v) => seen.has(v));
      },
      "every record in A's or B's files",
      120_000,
      500,
    );
    b.child.kill("SIGTERM");
    expect(await b.exited()).toBe(0);
    const fromA = written(outA);
    const fromB = written(outB);
    const all = [...fromA, ...fromB];
    const repeated = all.length - new Set(all).size;
    // Two rebalances after A started reading: B joining (A's uncommitted batch) and A leaving
    // (A commits before it leaves; B's uncommitted batch): one batch each at most.
    const bound = 2 * BATCH;
    console.log(`produced ${produced}; A wrote ${fromA.length} (${aBeforeLeaving} read when B had joined), B wrote ${fromB.length}; repeated: ${repeated} (bound ${bound})`);
    expect(fromA.length).toBeGreaterThan(0);
    expect(fromB.length).toBeGreaterThan(0);
    expect(new Set(all).size).toBe(produced);
    expect(repeated).toBeLessThanOrEqual(bound);
  },
  300_000,
);
