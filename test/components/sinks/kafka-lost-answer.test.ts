/**
 * The Kafka sink when the broker wrote a batch but its answer was lost (a proxy between the
 * sink and a live broker cuts the connection as the Produce response comes back, then refuses
 * connections until the client's own quick retries are spent): the sink's retry sends the same
 * records under the same producer id and sequences, and the broker, which knows that batch,
 * answers it without writing it again. Each event is in the topic exactly once, in order.
 */
import { expect } from "bun:test";
import type { KafkaSink } from "../../../src/components/sinks/kafka.ts";
import { createEvent } from "../../../src/core/event.ts";
import type { MemoryLogger } from "../../../src/core/logger.ts";
import { waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { cleanupsAfterEach, kafkaForFileBehindProxy, kafkaSink, memoryChannel, putEvents, readTopic } from "../../support/kafka-tests.ts";

const { kafka, proxy } = kafkaForFileBehindProxy({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();

const BATCH = 100;
const bodies = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `event-${String(from + i).padStart(6, "0")}`);

async function sinkOnNewTopic(inFlight: number, total: number): Promise<{ sink: KafkaSink; topic: string; logger: MemoryLogger }> {
  const topic = await kafka.newTopic();
  const { sink, logger } = kafkaSink(
    {
      "kafka.bootstrap.servers": `127.0.0.1:${proxy().port}`,
      "kafka.topic": topic,
      "kafka.producer.acks": "all",
      flumeBatchSize: String(BATCH),
      "kafka.producer.max.in.flight.requests.per.connection": String(inFlight),
      "kafka.producer.retry.backoff.ms": "100",
      "kafka.producer.request.timeout.ms": "5000",
    },
    { cleanups },
  );
  const channel = memoryChannel("k1-in", Math.max(total, 1000), 1000);
  sink.setChannel(channel);
  await putEvents(channel, bodies(total).map((b) => createEvent(b)));
  await sink.start();
  return { sink, topic, logger };
}

/** Calls process() as the sink runner does until every event is acknowledged; the failures seen. */
async function drain(k: KafkaSink, total: number): Promise<Error[]> {
  const failures: Error[] = [];
  await waitUntil(
    async () => {
      try {
        if ((await k.process()) === "BACKOFF") await Bun.sleep(20);
      } catch (err) {
        failures.push(err as Error);
        await Bun.sleep(100);
      }
      return k.counter.values.EventDrainSuccessCount === total;
    },
    "every event acknowledged",
    120_000,
    0,
  );
  return failures;
}

/** After the outage: every event once, in order; no batch failed (so none went back to the channel to be sent again). */
async function expectExactlyOnce(k: KafkaSink, topic: string, total: number, failures: Error[], lost: number): Promise<void> {
  expect(failures).toEqual([]);
  expect(proxy().lost).toBe(lost);
  // The client's own retries were spent against the refused connections: the sink's retry delivered the batch.
  expect(proxy().refused).toBeGreaterThanOrEqual(8);
  expect(k.counter.values).toMatchObject({ EventDrainSuccessCount: total, RollbackCount: 0, EventWriteFail: 0 });
  await k.stop();
  expect(await readTopic(kafka.bootstrap, topic, 3000)).toEqual(bodies(total));
}

needsJvm.test(
  "one batch at a time, the broker's answer to a written batch lost: the retry under the same producer id and sequences leaves each event once in the topic",
  async () => {
    const total = 5 * BATCH;
    const { sink: k, topic, logger } = await sinkOnNewTopic(1, total);
    expect(await k.process()).toBe("READY");
    await waitUntil(() => k.counter.values.EventDrainSuccessCount === BATCH, "a first batch acknowledged", 60_000);
    proxy().loseProduceAnswers(1);
    const failures = await drain(k, total);
    await expectExactlyOnce(k, topic, total, failures, 1);
    // The wait is not silent: the retry is logged, with why and until when.
    const retried = logger.lines.filter((l) => l.level === "warn" && l.message.includes("did not take a batch"));
    expect(retried.length).toBeGreaterThanOrEqual(1);
    expect(retried[0].message).toStartWith(`kafka sink k1: Kafka at 127.0.0.1:${proxy().port} did not take a batch of ${BATCH} records for topic ${topic} (`);
    expect(retried[0].message).toEndWith("); sending it again every 100 ms until 120000 ms after its first send (kafka.producer.retry.backoff.ms, kafka.producer.delivery.timeout.ms)");
  },
  240_000,
);

needsJvm.test(
  "two batches in flight, the first one's answer lost and the second cut off behind it: both retried under the same producer id and sequences, each event once in the topic, in order",
  async () => {
    const total = 6 * BATCH;
    const { sink: k, topic } = await sinkOnNewTopic(2, total);
    expect(await k.process()).toBe("READY");
    await waitUntil(() => k.counter.values.EventDrainSuccessCount === BATCH, "a first batch acknowledged", 60_000);
    proxy().loseProduceAnswers(1);
    // Both taken before either is answered (the client writes the second once the first is
    // answered: one request at a time on a connection for an idempotent producer).
    expect(await k.process()).toBe("READY");
    expect(await k.process()).toBe("READY");
    expect(k.inFlight).toBe(2);
    const failures = await drain(k, total);
    await expectExactlyOnce(k, topic, total, failures, 1);
  },
  240_000,
);
