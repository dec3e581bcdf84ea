/**
 * The Kafka sink with several batches in flight (kafka.producer.max.in.flight.requests.per.connection),
 * against a live broker: each batch's take commits only once the broker acknowledged it, a
 * failed one (and those sent after it) rolls back, and nothing acknowledged is lost.
 */
import { expect } from "bun:test";
import type { KafkaSink } from "../../../src/components/sinks/kafka.ts";
import { bodyText, createEvent, type Event } from "../../../src/core/event.ts";
import type { Channel } from "../../../src/core/channel.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { cleanupsAfterEach, kafkaForFile, kafkaSink, memoryChannel, putEvents, readTopic } from "../../support/kafka-tests.ts";

const kafka = kafkaForFile({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();
function sink(props: Record<string, string>, capacity: number) {
  const logger = new MemoryLogger();
  const built = kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.producer.acks": "all", ...props }, { cleanups, logger });
  const channel = memoryChannel("k1-in", Math.max(capacity, 1000), 1000);
  built.sink.setChannel(channel);
  return { ...built, channel };
}

/** Every body in the topic, in offset order. */
function readAll(topic: string): Promise<string[]> {
  return readTopic(kafka.bootstrap, topic, 3000);
}

/** Calls process() as the sink runner does (a BACKOFF or a failure waits) until stopped. */
function runSink(k: KafkaSink): { failures: Error[]; stop(): Promise<void> } {
  let running = true;
  const failures: Error[] = [];
  const loop = (async () => {
    while (running) {
      try {
        if ((await k.process()) === "BACKOFF") await Bun.sleep(50);
      } catch (err) {
        failures.push(err as Error);
        await Bun.sleep(200);
      }
    }
  })();
  return {
    failures,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** Puts the events in transactions of 1,000 (the channel's transactionCapacity). */
async function put(channel: Channel, events: readonly Event[]): Promise<void> {
  for (let i = 0; i < events.length; i += 1000) await putEvents(channel, events.slice(i, i + 1000));
}

const bodies = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `event-${String(from + i).padStart(6, "0")}`);
const drained = (k: KafkaSink) => k.counter.values.EventDrainSuccessCount;

needsJvm.test(
  "three batches in flight: every event delivered once, in order; each take committed once acknowledged",
  async () => {
    const topic = await kafka.newTopic();
    const total = 20_000;
    const { sink: k, channel } = sink({ "kafka.topic": topic, flumeBatchSize: "1000", "kafka.producer.max.in.flight.requests.per.connection": "3" }, total);
    await k.start();
    await put(channel, bodies(total).map((b) => createEvent(b)));
    const runner = runSink(k);
    await waitUntil(() => drained(k) === total, "every event acknowledged", 120_000);
    await runner.stop();
    expect(runner.failures).toEqual([]);
    // Taken before the first was acknowledged: three batches were on the wire at once.
    expect(k.maxBatchesInFlight).toBe(3);
    expect(k.counter.values).toMatchObject({ EventDrainAttemptCount: total, EventDrainSuccessCount: total, BatchCompleteCount: 20, RollbackCount: 0, EventWriteFail: 0 });
    expect(channel.counter.values.ChannelSize).toBe(0);
    expect(await readAll(topic)).toEqual(bodies(total));
  },
  240_000,
);

needsJvm.test(
  "a batch the broker refuses with the next one in flight: the next fails with OUT_OF_ORDER_SEQUENCE_NUMBER, rolls back and is sent again under a new producer id; each event once",
  async () => {
    // Two 1,000-byte records fit alone, not together: the broker refuses their batch.
    const topic = await kafka.newTopic({ config: { "max.message.bytes": "1500" } });
    const { sink: k, channel, logger } = sink({ "kafka.topic": topic, flumeBatchSize: "10", "kafka.producer.max.in.flight.requests.per.connection": "2" }, 100);
    await k.start();
    // A first batch acknowledged: the broker knows the producer id and its last sequence.
    await put(channel, bodies(10).map((b) => createEvent(b)));
    expect(await k.process()).toBe("READY");
    await waitUntil(() => drained(k) === 10, "the first batch acknowledged", 60_000);
    const big = [createEvent(`big-a ${"a".repeat(1000)}`), createEvent(`big-b ${"b".repeat(1000)}`)];
    await put(channel, [...big, ...bodies(8, 10).map((b) => createEvent(b))]);
    await put(channel, bodies(10, 18).map((b) => createEvent(b)));
    // Both sent before either is answered.
    expect(await k.process()).toBe("READY");
    expect(await k.process()).toBe("READY");
    expect(k.maxBatchesInFlight).toBe(2);
    // The next call settles both and throws the failure of the one behind the refused batch.
    const err = (await k.process().catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain("failed to deliver 10 events");
    expect(err.message).toMatch(/out of order sequence|OUT_OF_ORDER_SEQUENCE_NUMBER/i);
    expect(err.message).toContain(`rolled back into channel ${channel.name}`);
    // The refused batch went record by record (the sink's answer to a batch too large); the other is back in the channel.
    expect(drained(k)).toBe(20);
    expect(k.counter.values).toMatchObject({ RollbackCount: 1, EventWriteFail: 1 });
    expect(channel.counter.values.ChannelSize).toBe(10);
    expect(logger.lines.filter((l) => l.level === "error")).toEqual([]);
    // Sent again: the producer's new id starts its sequences again, the broker takes them.
    expect(await k.process()).toBe("READY");
    await waitUntil(() => drained(k) === 30, "the rolled-back batch acknowledged", 60_000);
    await k.stop();
    const got = await readAll(topic);
    expect(got.length).toBe(30);
    expect([...got].sort()).toEqual([...bodies(10), ...bodies(8, 10), ...bodies(10, 18), ...big.map(bodyText)].sort());
  },
  240_000,
);

needsJvm.test(
  "the broker killed with batches in flight: stop rolls back each unacknowledged one, nothing acknowledged is lost; after its restart everything is delivered",
  async () => {
    const topic = await kafka.newTopic();
    const total = 60_000;
    const batch = 1000;
    const inFlight = 3;
    const props = { "kafka.topic": topic, flumeBatchSize: String(batch), "kafka.producer.max.in.flight.requests.per.connection": String(inFlight), "kafka.producer.request.timeout.ms": "3000" };
    const { sink: k, channel } = sink(props, total);
    await k.start();
    await put(channel, bodies(total).map((b) => createEvent(b)));
    const runner = runSink(k);
    await waitUntil(() => drained(k) >= 3 * batch, "some batches acknowledged", 120_000);
    const [broker] = kafka.nodes;
    await broker.peer.kill("SIGKILL");
    // The client retries while no broker answers: the sink holds its batches in flight.
    await waitUntil(() => k.inFlight === inFlight, "the batches in flight waiting for the broker", 60_000);
    const acknowledged = drained(k);
    // Stop gives them request.timeout.ms, then closes the producer: each fails and is rolled back.
    await k.stop();
    await runner.stop();
    expect(k.inFlight).toBe(0);
    expect(drained(k)).toBe(acknowledged);
    expect(acknowledged).toBeLessThan(total);
    // Every event not acknowledged is back in the channel: nothing lost.
    expect(channel.counter.values.ChannelSize).toBe(total - acknowledged);
    expect(channel.size).toBe(total - acknowledged);
    expect(k.counter.values.RollbackCount).toBeGreaterThanOrEqual(inFlight);
    expect(k.counter.values.EventWriteFail).toBe(k.counter.values.RollbackCount);

    await broker.restart();
    const { sink: again } = sink(props, 1000);
    again.setChannel(channel);
    await waitUntil(
      async () => {
        try {
          await again.start();
          return true;
        } catch {
          return false;
        }
      },
      "the restarted broker answers",
      120_000,
      500,
    );
    const left = channel.size;
    const resumed = runSink(again);
    await waitUntil(() => drained(again) === left, "the rest acknowledged", 120_000);
    await resumed.stop();
    expect(resumed.failures).toEqual([]);
    const got = await readAll(topic);
    const unique = new Set(got);
    expect(unique.size).toBe(total);
    // At least once: the batches on the wire when the broker died may have been written without an answer.
    expect(got.length - total).toBeLessThanOrEqual(inFlight * batch);
  },
  300_000,
);

needsJvm.test(
  "the broker killed with batches in flight and the sink running: each send fails after delivery.timeout.ms, is rolled back and counted, /ready's error is set; after the broker's restart the same sink delivers everything",
  async () => {
    const topic = await kafka.newTopic();
    const total = 30_000;
    const batch = 1000;
    const inFlight = 2;
    const props = {
      "kafka.topic": topic,
      flumeBatchSize: String(batch),
      "kafka.producer.max.in.flight.requests.per.connection": String(inFlight),
      "kafka.producer.request.timeout.ms": "2000",
      "kafka.producer.delivery.timeout.ms": "4000",
    };
    const { sink: k, channel } = sink(props, total);
    await k.start();
    await put(channel, bodies(total).map((b) => createEvent(b)));
    const runner = runSink(k);
    await waitUntil(() => drained(k) >= 3 * batch, "some batches acknowledged", 120_000);
    const [broker] = kafka.nodes;
    const killedAt = Date.now();
    await broker.peer.kill("SIGKILL");
    await broker.peer.exited;
    // No stop: the sends themselves fail, the runner sees the failure.
    await waitUntil(() => runner.failures.length > 0, "a batch failed after delivery.timeout.ms", 90_000);
    // Tried again while the broker was gone, then given up: one failure per delivery.timeout.ms, not per retry.
    expect(runner.failures.every((e) => e.message.includes("within kafka.producer.delivery.timeout.ms = 4000 ms"))).toBe(true);
    const failure = runner.failures[0];
    expect(failure.message).toContain(`did not acknowledge`);
    expect(failure.message).toContain(`for topic ${topic}`);
    expect(failure.message).toContain(kafka.bootstrap);
    expect(failure.message).toContain("rolled back into channel");
    expect(k.deliveryFailure()?.error).toContain("kafka.producer.delivery.timeout.ms = 4000 ms");
    // Since the first failure after the kill, kept by the failures after it.
    expect(k.deliveryFailure()!.since).toBeGreaterThanOrEqual(killedAt);
    expect(k.deliveryFailure()!.since).toBeLessThanOrEqual(Date.now());
    expect(k.counter.values.RollbackCount).toBeGreaterThanOrEqual(1);
    expect(k.counter.values.EventWriteFail).toBe(k.counter.values.RollbackCount);
    // Whatever is not acknowledged is in the channel (taken batches in flight excepted).
    expect(channel.counter.values.ChannelSize + k.inFlight * batch).toBeGreaterThanOrEqual(total - drained(k));

    await broker.restart();
    // The same sink, never restarted: its runner takes the rolled-back batches again.
    await waitUntil(() => drained(k) === total, "every event acknowledged after the restart", 180_000);
    await runner.stop();
    expect(k.deliveryFailure()).toBeNull();
    expect(channel.counter.values.ChannelSize).toBe(0);
    const got = await readAll(topic);
    expect(new Set(got).size).toBe(total);
    // At least once: only the failed batches may be there twice.
    expect(got.length - total).toBeLessThanOrEqual(k.counter.values.RollbackCount * batch);
  },
  300_000,
);
