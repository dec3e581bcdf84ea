/**
 * The Kafka channel when a take's offset commit fails while its consumer goes on (a proxy
 * between the channel and a live broker loses OffsetCommit requests until the client's own
 * retries are spent; everything else goes through, so the consumer is not restarted). The take's records are held again until its rollback: another
 * take's commit does not pass them, they come back in order, and the fetch response they came
 * in is freed once they are committed.
 */
import { expect } from "bun:test";
import type { KafkaChannel, KafkaTransaction } from "../../../../src/components/channels/kafka/kafka-channel.ts";
import { bodyText, createEvent, type Event } from "../../../../src/core/event.ts";
import { MemoryLogger } from "../../../../src/core/logger.ts";
import { waitUntil } from "../../../support/helpers.ts";
import { needsJvm } from "../../../support/jvm.ts";
import { cleanupsAfterEach, committedOffset, kafkaChannel, kafkaForFileBehindProxy, putEvents } from "../../../support/kafka-tests.ts";

const { kafka, proxy } = kafkaForFileBehindProxy({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();

const BATCH = 100;
/** 400-byte bodies: a put of 100 is one fetch response of 40 kB, one the channel frees itself (over 16 kB). */
const bodies = (n: number, from: number) => Array.from({ length: n }, (_, i) => `event-${String(from + i).padStart(4, "0")}-${"x".repeat(389)}`);

/** Takes `n` events in a new transaction, left open. */
function takeOpen(c: KafkaChannel, n: number): { tx: KafkaTransaction; events: Event[] } {
  const tx = c.getTransaction();
  tx.begin();
  const events: Event[] = [];
  for (let i = 0; i < n; i++) {
    const e = tx.take();
    if (!e) break;
    events.push(e);
  }
  return { tx, events };
}

needsJvm.test(
  "a take whose offset commit was lost on the way to the broker: its commit fails, another take's commit does not pass its records, they come back in order after its rollback, and their fetch response is freed once they are committed",
  async () => {
    const topic = await kafka.newTopic();
    const group = `g-${topic}`;
    const logger = new MemoryLogger();
    const c = kafkaChannel({ "kafka.bootstrap.servers": `127.0.0.1:${proxy().port}`, "kafka.topic": topic, "kafka.consumer.group.id": group }, { cleanups, name: "kc", logger });
    await c.start();
    await waitUntil(() => c.connected, "channel connected", 60_000);
    // One fetch response each: the second put waits for the first one's records.
    await putEvents(c, bodies(BATCH, 0).map((b) => createEvent(b)));
    await waitUntil(() => c.counter.values.ChannelSize >= BATCH, "the first put fetched", 60_000);
    await putEvents(c, bodies(BATCH, BATCH).map((b) => createEvent(b)));
    await waitUntil(() => c.counter.values.ChannelSize >= 2 * BATCH, "the second put fetched", 60_000);

    const first = takeOpen(c, BATCH);
    expect(first.events.map(bodyText)).toEqual(bodies(BATCH, 0));
    const response = first.tx.takes[0].bytes.buffer;
    expect(response.byteLength).toBeGreaterThan(16 * 1024);
    // Lost until the client's retries are spent.
    proxy().loseOffsetCommits();
    await expect(first.tx.commit()).rejects.toThrow(`kafka channel kc: committing the offsets of ${BATCH} taken records failed`);
    expect(proxy().lost).toBeGreaterThan(0);
    proxy().restore();

    // The second take commits while the first one's records wait for their rollback: the group's offset stays before them.
    const second = takeOpen(c, BATCH);
    expect(second.events.map(bodyText)).toEqual(bodies(BATCH, BATCH));
    await second.tx.commit();
    second.tx.close();
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(-1);

    await first.tx.rollback();
    first.tx.close();
    const again = takeOpen(c, 2 * BATCH);
    expect(again.events.map(bodyText)).toEqual(bodies(BATCH, 0));
    await again.tx.commit();
    again.tx.close();
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(2 * BATCH);
    // Taken again, not a second first take: the response is freed (detached) with its records' commit.
    expect(response.byteLength).toBe(0);
    expect(c.counter.values).toMatchObject({ EventTakeSuccessCount: 2 * BATCH, RollbackCount: BATCH, ChannelSize: 0 });
    // The consumer went on: no rebalance, no reconnection.
    expect(logger.lines.map((l) => l.message).filter((m) => /rebalanced|connecting again/.test(m))).toEqual([]);
  },
  240_000,
);
