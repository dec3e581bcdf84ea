/**
 * An agent (`flume run`, a real process) whose only Kafka broker is SIGKILLed while its kafka
 * sink sends from a file channel: /ready lists the sink under `failing`, SIGTERM stops the agent in
 * bounded time with the unacknowledged batches back in the file channel, and an agent started
 * again once the broker is back delivers every event.
 */
import { expect } from "bun:test";
import { DEFAULT_BATCHES_IN_FLIGHT } from "../../src/components/sinks/kafka.ts";
import { agentsAfterEach, expectStopsOnSigterm, freePort, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { kafkaForFile, readTopic, seqFileKafkaConf } from "../support/kafka-tests.ts";

const { cleanups, startAgent } = agentsAfterEach();
const kafka = kafkaForFile({ autoCreateTopics: false });

function conf(dir: string, topic: string, totalEvents: number, batch: number, deliveryTimeoutMs: number): string {
  return seqFileKafkaConf({ dir, bootstrap: kafka.bootstrap, topic, total: totalEvents, batch, producer: { "request.timeout.ms": 3000, "delivery.timeout.ms": deliveryTimeoutMs } });
}

interface Ready {
  ready: boolean;
  notStarted: { kind: string; name: string; state: string; error?: string }[];
  failing: { kind: string; name: string; state: string; error: string; since: string }[];
}

async function readiness(port: number): Promise<Ready | null> {
  try {
    return (await (await fetch(`http://127.0.0.1:${port}/ready`)).json()) as Ready;
  } catch {
    return null;
  }
}

const total = 200_000;
const batch = 500;

/** An agent sending `total` events to `topic` (seq -> file channel -> kafka sink), its broker SIGKILLed once some were acknowledged. */
async function runThenKillBroker(topic: string, deliveryTimeoutMs: number) {
  await kafka.createTopic(topic, { partitions: 1 });
  const { dir, cleanup } = tempDir("flume-kafka-down-");
  cleanups.push(cleanup);
  const port = await freePort();
  const agent = startAgent(dir, "a1", conf(dir, topic, total, batch, deliveryTimeoutMs), port);
  await waitForMetrics(port, "some batches acknowledged", (m) => Number(m["SINK.k1"]?.EventDrainSuccessCount ?? 0) >= 2000, 120_000, 20);
  const [broker] = kafka.nodes;
  // Whole milliseconds, as /ready's since.
  const killedAt = Date.now();
  await broker.peer.kill("SIGKILL");
  await broker.peer.exited;
  return { dir, port, agent, broker, killedAt };
}

/** Waits until the seq source has put every event into the file channel (on a busy machine it may still be putting when the broker dies). */
async function allAccepted(port: number): Promise<void> {
  await waitForMetrics(port, `all ${total} events in the file channel`, (m) => Number(m["SOURCE.r1"]?.EventAcceptedCount ?? 0) === total, 120_000, 50);
}


/** Starts the agent again on the same file channel (its source adds nothing) with the broker back; resolves once the channel is empty. */
async function drainAgain(start: ReturnType<typeof agentsAfterEach>["startAgent"], dir: string, topic: string, batch: number, port: number): Promise<void> {
  const again = start(dir, "a1", conf(dir, topic, 0, batch, 6000), port);
  await waitForMetrics(port, "the file channel drained", (x) => x["CHANNEL.c1"] !== undefined && Number(x["CHANNEL.c1"].ChannelSize) === 0 && Number(x["SINK.k1"]?.EventDrainSuccessCount ?? 0) > 0, 180_000, 200);
  again.child.kill("SIGTERM");
  expect(await again.exited()).toBe(0);
}

/** Every event of the run in the topic; duplicates at most `most`. */
async function expectAll(topic: string, total: number, most: number): Promise<void> {
  const bodies = await readTopic(kafka.bootstrap, topic, 5000);
  expect(new Set(bodies).size).toBe(total);
  expect(bodies.length - total).toBeLessThanOrEqual(most);
}

needsJvm.test(
  "SIGTERM while the broker is down and the sink's sends wait for it (delivery.timeout.ms 10 minutes): the agent exits within request.timeout.ms of its drain, the batches in flight back in the file channel; a restart delivers every event",
  async () => {
    const topic = "broker-down-stop";
    const { dir, port, agent, broker } = await runThenKillBroker(topic, 600_000);
    // Taken, sent, neither acknowledged nor failed: the sends wait for the broker.
    const m = await waitForMetrics(port, "batches in flight", (x) => Number(x["SINK.k1"]?.EventDrainAttemptCount ?? 0) - Number(x["SINK.k1"]?.EventDrainSuccessCount ?? 0) >= batch, 60_000, 100);
    expect(Number(m["SINK.k1"].RollbackCount)).toBe(0);
    await allAccepted(port);

    // Far below delivery.timeout.ms: the drain (5 s) and request.timeout.ms (3 s) bound the stop.
    await expectStopsOnSigterm(agent, 90_000);
    expect(agent.stdout + agent.stderr).toContain("rolled back into the channel");

    await broker.restart();
    await drainAgain(startAgent, dir, topic, batch, port);
    // At least once: the batches in flight when the broker died may have been written without an answer, and were rolled back at the stop.
    await expectAll(topic, total, 2 * DEFAULT_BATCHES_IN_FLIGHT * batch);
  },
  300_000,
);

needsJvm.test(
  "the broker SIGKILLed under a running agent: /ready lists the sink as failing, SIGTERM stops the agent in bounded time, a restart with the broker back delivers every event",
  async () => {
    const topic = "broker-down-ready";
    const { dir, port, agent, broker, killedAt } = await runThenKillBroker(topic, 6000);

    // The sink's sends fail after delivery.timeout.ms: /ready says which sink, why and since when.
    let ready: Ready | null = null;
    await waitUntil(
      async () => {
        ready = await readiness(port);
        return ready?.failing.some((c) => c.kind === "sink" && c.name === "k1") ?? false;
      },
      "/ready naming the failing sink",
      120_000,
      200,
    );
    const failing = ready!.failing.find((c) => c.kind === "sink")!;
    expect(ready!.ready).toBe(false);
    // Started, failing its sends: not listed as not started.
    expect(ready!.notStarted).toEqual([]);
    expect(failing.state).toBe("FAILING");
    expect(Date.parse(failing.since)).toBeGreaterThanOrEqual(killedAt);
    expect(Date.parse(failing.since)).toBeLessThanOrEqual(Date.now());
    expect(failing.error).toContain("kafka.producer.delivery.timeout.ms = 6000 ms");
    expect(failing.error).toContain(kafka.bootstrap);
    const m = await waitForMetrics(port, "a batch rolled back", (x) => Number(x["SINK.k1"]?.RollbackCount ?? 0) >= 1, 60_000, 100);
    expect(Number(m["SINK.k1"].EventDrainSuccessCount)).toBeLessThan(total);
    expect(Number(m["SINK.k1"].EventWriteFail)).toBe(Number(m["SINK.k1"].RollbackCount));

    // Stopped while the broker is still down: the batches in flight go back into the file channel.
    await allAccepted(port);
    await expectStopsOnSigterm(agent, 90_000);

    await broker.restart();
    await drainAgain(startAgent, dir, topic, batch, port);
    // At least once: only the batches that failed (one per delivery.timeout.ms) or were in flight at the kill and the stop may be there twice.
    const failed = Number(m["SINK.k1"].RollbackCount);
    await expectAll(topic, total, (failed + 1 + 2 * DEFAULT_BATCHES_IN_FLIGHT) * batch);
  },
  300_000,
);
