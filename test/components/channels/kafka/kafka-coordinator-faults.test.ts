/**
 * The Kafka channel's consumer when its requests to the group coordinator are lost (a proxy
 * between the clients and a live broker drops them; everything else goes through):
 * - a take's offset commit, until the client's own retries are spent, while the consumer goes
 *   on: the take's records are held again until its rollback, another take's commit does not
 *   pass them (nor one committing beside it), they come back in order, and the fetch response
 *   they came in is freed once they are committed;
 * - the same while the group rebalances: the records are fetched again by their partition's
 *   owner, so the take's rollback does not give them back, and their fetch response is freed;
 * - a rejoin after a rebalance: the consumer is dropped and connects again (the client reports
 *   the failed rejoin as an 'error' event, which ends the process when nothing listens to it);
 *   one that fails while the consumer starts fails the start (the partitions it was given may
 *   be another member's by then).
 */
import { expect } from "bun:test";
import type { KafkaChannel } from "../../../../src/components/channels/kafka/kafka-channel.ts";
import { bodyText, createEvent, type Event } from "../../../../src/core/event.ts";
import { MemoryLogger } from "../../../../src/core/logger.ts";
import { waitUntil } from "../../../support/helpers.ts";
import { needsJvm } from "../../../support/jvm.ts";
import { cleanupsAfterEach, committedOffset, kafkaChannel, kafkaForFileBehindProxy, largeBodies, putEvents } from "../../../support/kafka-tests.ts";
import { takeOpen } from "../../../support/core.ts";
import { OFFSET_FETCH } from "../../../support/kafka-proxy.ts";

const { kafka, proxy } = kafkaForFileBehindProxy({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();

const BATCH = 100;

/** A Kafka channel whose clients reach the broker through the proxy. */
function behindProxy(props: Record<string, string>, name: string, logger?: MemoryLogger): KafkaChannel {
  return kafkaChannel({ "kafka.bootstrap.servers": `127.0.0.1:${proxy().port}`, ...props }, { cleanups, name, logger });
}

/**
 * Starts channel kc (through the proxy) and puts `puts` transactions of BATCH events, each one
 * fetched back before the next: one fetch response each.
 */
async function startWithPuts(props: Record<string, string>, logger: MemoryLogger, puts: number): Promise<KafkaChannel> {
  const c = behindProxy(props, "kc", logger);
  await c.start();
  await waitUntil(() => c.connected, "channel connected", 60_000);
  for (let i = 0; i < puts; i++) {
    await putEvents(c, largeBodies(BATCH, i * BATCH).map((b) => createEvent(b)));
    await waitUntil(() => c.counter.values.ChannelSize >= (i + 1) * BATCH, `put ${i + 1} fetched`, 60_000);
  }
  return c;
}

/** Sessions short enough for quick rebalances. */
const QUICK_REBALANCES = { "kafka.consumer.session.timeout.ms": "6000", "kafka.consumer.heartbeat.interval.ms": "500" };

/**
 * Takes until `n` events were taken in committed transactions, as a sink does: a take whose
 * commit fails (the group rebalancing) is rolled back and taken again. Returns the events and
 * how many events the rollbacks gave back.
 */
async function takeCommitted(c: KafkaChannel, n: number): Promise<{ events: Event[]; rolledBack: number }> {
  const out: Event[] = [];
  let rolledBack = 0;
  await waitUntil(
    async () => {
      const { tx, events } = takeOpen(c, n - out.length);
      try {
        await tx.commit();
        out.push(...events);
      } catch {
        rolledBack += events.length;
        await tx.rollback();
      } finally {
        tx.close();
      }
      return out.length === n;
    },
    `${n} events taken`,
    60_000,
    100,
  );
  return { events: out, rolledBack };
}

/** Rolls back `first`, the take of the first put, and takes it again in a take that commits past both puts: its records come first. */
async function firstTakenAgain(c: KafkaChannel, first: ReturnType<typeof takeOpen>, group: string, topic: string): Promise<void> {
  await first.tx.rollback();
  first.tx.close();
  const again = takeOpen(c, 2 * BATCH);
  expect(again.events.map(bodyText)).toEqual(largeBodies(BATCH, 0));
  await again.tx.commit();
  again.tx.close();
  expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(2 * BATCH);
}

needsJvm.test(
  "a take whose offset commit was lost on the way to the broker: its commit fails, another take's commit does not pass its records, they come back in order after its rollback, and their fetch response is freed once they are committed",
  async () => {
    const topic = await kafka.newTopic();
    const group = `g-${topic}`;
    const logger = new MemoryLogger();
    const c = await startWithPuts({ "kafka.topic": topic, "kafka.consumer.group.id": group }, logger, 2);

    const first = takeOpen(c, BATCH);
    expect(first.events.map(bodyText)).toEqual(largeBodies(BATCH, 0));
    const response = first.tx.takes[0].bytes.buffer;
    expect(response.byteLength).toBeGreaterThan(16 * 1024);
    // Lost until the client's retries are spent.
    proxy().loseOffsetCommits();
    await expect(first.tx.commit()).rejects.toThrow(`kafka channel kc: committing the offsets of ${BATCH} taken records failed`);
    expect(proxy().lost).toBeGreaterThan(0);
    proxy().restore();

    // The second take commits while the first one's records wait for their rollback: the group's offset stays before them.
    const second = takeOpen(c, BATCH);
    expect(second.events.map(bodyText)).toEqual(largeBodies(BATCH, BATCH));
    await second.tx.commit();
    second.tx.close();
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(-1);

    await firstTakenAgain(c, first, group, topic);
    // Taken again, not a second first take: the response is freed (detached) with its records' commit.
    expect(response.byteLength).toBe(0);
    expect(c.counter.values).toMatchObject({ EventTakeSuccessCount: 2 * BATCH, RollbackCount: BATCH, ChannelSize: 0 });
    // The consumer went on: no rebalance, no reconnection.
    expect(logger.lines.map((l) => l.message).filter((m) => /rebalanced|connecting again/.test(m))).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "two takes committing at once (two sinks), the first one's offset commit lost: the second works out its offset once the first failed, and does not pass the records the first holds again; they come back after its rollback",
  async () => {
    const topic = await kafka.newTopic();
    const group = `g-${topic}`;
    const c = await startWithPuts({ "kafka.topic": topic, "kafka.consumer.group.id": group }, new MemoryLogger(), 2);
    const first = takeOpen(c, BATCH);
    const second = takeOpen(c, BATCH);
    expect([first.events.map(bodyText), second.events.map(bodyText)]).toEqual([largeBodies(BATCH, 0), largeBodies(BATCH, BATCH)]);
    proxy().loseOffsetCommits();
    const outcome = (p: Promise<void>) => p.then(() => null, (err: unknown) => err);
    const firstCommit = outcome(first.tx.commit());
    const secondCommit = outcome(second.tx.commit());
    const failed = await firstCommit;
    proxy().restore();
    expect(String(failed)).toContain(`kafka channel kc: committing the offsets of ${BATCH} taken records failed`);
    // The second take committed, its records above the first one's: the group's offset stays before both.
    expect(await secondCommit).toBeNull();
    second.tx.close();
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(-1);
    expect(c.repeatable().map(bodyText)).toEqual(largeBodies(BATCH, BATCH));

    await firstTakenAgain(c, first, group, topic);
    expect(c.repeatable()).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "a take whose offset commit goes unanswered while a second member joins the group: its commit fails after the rebalance, its rollback gives nothing back, its fetch response is freed, and the partition's next owner delivers every record from the committed offset",
  async () => {
    const topic = await kafka.newTopic();
    const group = `g-${topic}`;
    const logger = new MemoryLogger();
    // Quick rebalances; one attempt a commit, each timed out after 8 s: the rebalance ends while the first one waits.
    const props = { "kafka.topic": topic, "kafka.consumer.group.id": group, ...QUICK_REBALANCES, "kafka.consumer.request.timeout.ms": "8000", "kafka.consumer.retries": "0" };
    const c = await startWithPuts(props, logger, 2);

    const first = takeOpen(c, BATCH);
    expect(first.events.map(bodyText)).toEqual(largeBodies(BATCH, 0));
    const response = first.tx.takes[0].bytes.buffer;
    expect(response.byteLength).toBeGreaterThan(16 * 1024);
    proxy().loseOffsetCommits("unanswered");
    const commit = first.tx.commit().then(
      () => null,
      (err: unknown) => err,
    );
    const c2 = behindProxy(props, "kc2");
    await c2.start();
    // The second put's records, fetched and not taken, were dropped by the rebalance.
    await waitUntil(() => logger.lines.some((l) => /kafka channel kc: consumer group .* rebalanced \(generation \d+\): this member reads .*; 100 fetched records/.test(l.message)), "kc rebalanced", 60_000);
    const failed = await commit;
    expect(String(failed)).toContain(`kafka channel kc: committing the offsets of ${BATCH} taken records failed`);
    expect(proxy().lost).toBeGreaterThan(0);
    proxy().restore();
    await first.tx.rollback();
    first.tx.close();

    // kc2 leaves without taking: the partition is kc's again, read from the group's offset (none committed).
    await c2.stop();
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(-1);
    const { events: taken, rolledBack } = await takeCommitted(c, 2 * BATCH);
    // Once each, in order: the rolled-back take gave none back beside the records fetched again.
    expect(taken.map(bodyText)).toEqual(largeBodies(2 * BATCH, 0));
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(2 * BATCH);
    // The first take's response was let go of when its records were dropped (they came again in new ones), and freed once a newer one was taken from.
    expect(response.byteLength).toBe(0);
    expect(c.counter.values).toMatchObject({ EventTakeSuccessCount: 2 * BATCH, RollbackCount: BATCH + rolledBack, ChannelSize: 0 });
    expect(c.repeatable()).toEqual([]);
  },
  240_000,
);

needsJvm.test(
  "a consumer whose rejoin after a rebalance fails (its JoinGroup requests lost) does not stop the process: it is dropped with a warning naming the group, connects again once joins go through, and the channel delivers every record",
  async () => {
    const topic = await kafka.newTopic();
    const group = `g-${topic}`;
    const logger = new MemoryLogger();
    const props = { "kafka.topic": topic, "kafka.consumer.group.id": group, ...QUICK_REBALANCES };
    const c = await startWithPuts({ ...props, "kafka.consumer.client.id": "kc-consumer" }, logger, 1);
    const half = takeOpen(c, BATCH / 2);
    await half.tx.commit();
    half.tx.close();

    // kc2 joins: kc's heartbeat is told to rejoin, and its JoinGroup requests are lost.
    proxy().loseJoins("kc-consumer");
    const c2 = behindProxy(props, "kc2");
    await c2.start();
    await waitUntil(
      () => logger.lines.some((l) => l.message.includes(`kafka channel kc: the Kafka consumer at 127.0.0.1:${proxy().port} stopped (rejoining consumer group ${group} failed:`)),
      "kc's consumer dropped",
      60_000,
    );
    expect(proxy().lost).toBeGreaterThan(0);
    proxy().restore();
    // kc2 leaves without taking: kc connects again (on its next take) and reads on from the group's offset.
    await c2.stop();
    const { events: taken } = await takeCommitted(c, BATCH / 2);
    expect(taken.map(bodyText)).toEqual(largeBodies(BATCH, 0).slice(BATCH / 2));
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(BATCH);
    expect(logger.lines.some((l) => l.message.startsWith("kafka channel kc: connected again"))).toBe(true);
  },
  240_000,
);

needsJvm.test(
  "a consumer whose rejoin fails while it starts (a second member joined as it read its committed offsets): the start fails naming the group, instead of reading a partition the group gave to the other member; the next start joins and the channel delivers every record once",
  async () => {
    const topic = await kafka.newTopic();
    const group = `g-${topic}`;
    const props = { "kafka.topic": topic, "kafka.consumer.group.id": group, ...QUICK_REBALANCES };
    // Written by a channel of another group.
    const writer = behindProxy({ "kafka.topic": topic, "kafka.consumer.group.id": `${group}-writer` }, "writer");
    await writer.start();
    await putEvents(writer, largeBodies(BATCH, 0).map((b) => createEvent(b)));

    // kc joins alone and is given the partition; the answer to its committed offsets waits.
    proxy().holdAnswers(OFFSET_FETCH, "kc-consumer");
    const kc = behindProxy({ ...props, "kafka.consumer.client.id": "kc-consumer" }, "kc");
    const started = kc.start().then(
      () => null,
      (err: unknown) => err,
    );
    await waitUntil(() => proxy().held > 0, "kc's committed offsets asked for", 60_000);
    // kc2 joins: kc's heartbeat is told to rejoin, and its JoinGroup is refused. The group goes on
    // without kc once its rebalance timeout passed: kc2's start ends with the partition.
    proxy().refuseJoins("kc-consumer");
    const kc2 = behindProxy(props, "kc2");
    await kc2.start();
    expect(proxy().lost).toBeGreaterThan(0);
    proxy().releaseAnswers();
    const failed = await started;
    expect(String(failed)).toContain(`kafka channel kc: Kafka at 127.0.0.1:${proxy().port}: rejoining consumer group ${group} failed:`);
    expect(kc.connected).toBe(false);

    proxy().restore();
    await kc2.stop();
    await kc.start();
    const { events: taken } = await takeCommitted(kc, BATCH);
    expect(taken.map(bodyText)).toEqual(largeBodies(BATCH, 0));
    expect(await committedOffset(kafka.bootstrap, group, topic)).toBe(BATCH);
  },
  240_000,
);
