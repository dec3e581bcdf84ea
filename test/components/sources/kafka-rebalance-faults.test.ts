/**
 * The Kafka source across a rebalance that comes while a batch it read waits (a proxy between
 * the clients and a live broker holds the answers the batch waits for):
 * - for its put (the channel's produce answers held): put after the rebalance, the batch commits
 *   no offset, since the partition it came from may be another member's by then, which has read
 *   and committed past it;
 * - for the offset commit before it (uncommittedBatches = 1), and then refused by a full channel:
 *   it is not given back, since its records are read again from the committed offsets, by this
 *   member or by the partition's new owner.
 */
import { expect } from "bun:test";
import { createEvent, type Event, bodyText, readHeaders } from "../../../src/core/event.ts";
import type { KafkaPoller } from "../../../src/kafka/consumer.ts";
import { waitUntil } from "../../support/helpers.ts";
import { needsJvm } from "../../support/jvm.ts";
import { OFFSET_COMMIT, PRODUCE } from "../../support/kafka-proxy.ts";
import { cleanupsAfterEach, committedOffset, kafkaChannel, kafkaForFileBehindProxy, kafkaSource, memoryChannel, pollChannel, putEvents, takeEvents } from "../../support/kafka-tests.ts";

const { kafka, proxy } = kafkaForFileBehindProxy({ autoCreateTopics: false });
const cleanups = cleanupsAfterEach();

const QUICK_REBALANCES = { "kafka.consumer.session.timeout.ms": "6000", "kafka.consumer.heartbeat.interval.ms": "500" };

/** A topic of two partitions with p0-0, p0-1, p1-0 and p1-1 written as plain records by a Kafka channel of another group ("p" names each event's partition); the writer for more. */
async function twoPartitionsWritten(bootstrap: string) {
  const topic = await kafka.newTopic({ partitions: 2 });
  const group = `g-${topic}`;
  const writer = kafkaChannel({ "kafka.bootstrap.servers": bootstrap, "kafka.topic": topic, "kafka.consumer.group.id": `${group}-writer`, partitionIdHeader: "p", parseAsFlumeEvent: "false" }, { cleanups, name: "writer" });
  await writer.start();
  await putEvents(writer, ["0", "1"].flatMap((p) => [createEvent(`p${p}-0`, { p }), createEvent(`p${p}-1`, { p })]));
  const props = { "kafka.bootstrap.servers": bootstrap, "kafka.topics": topic, "kafka.consumer.group.id": group, "kafka.consumer.auto.offset.reset": "earliest", ...QUICK_REBALANCES };
  return { topic, group, writer, props };
}

needsJvm.test(
  "a batch read before a rebalance and put after it commits no offset: the partition's new owner has read it again and committed past it, and its offset stays there",
  async () => {
    const bootstrap = `127.0.0.1:${proxy().port}`;
    const { topic, group, writer, props } = await twoPartitionsWritten(bootstrap);

    // r1 puts into a Kafka channel whose produce answers the proxy will hold (longer than the
    // rebalance and r2's reads take on a busy machine, within its request timeout).
    const out = kafkaChannel({ "kafka.bootstrap.servers": bootstrap, "kafka.topic": await kafka.newTopic(), "kafka.producer.client.id": "out-producer", "kafka.producer.request.timeout.ms": "150000" }, { cleanups, name: "out" });
    await out.start();
    const r1 = kafkaSource({ ...props, batchSize: "4", batchDurationMillis: "2000" }, { cleanups, name: "r1", channel: out });
    await r1.source.start();
    proxy().holdAnswers(PRODUCE, "out-producer");
    // The four records in one batch, whose put waits for the broker's answer.
    const first = r1.source.process();
    await waitUntil(() => proxy().held > 0, "r1's batch being put", 60_000);

    // r2 joins: each member gets one partition. r2 reads its own from the committed offset (none)
    // and, with two more records written there, commits past them.
    const r2 = kafkaSource(props, { cleanups, name: "r2" });
    await r2.source.start();
    const got = await pollChannel(r2.source, r2.channel, 2);
    expect(got.length).toBe(2);
    const moved = readHeaders(got[0]).partition;
    const kept = moved === "0" ? "1" : "0";
    await putEvents(writer, [createEvent(`p${moved}-2`, { p: moved }), createEvent(`p${moved}-3`, { p: moved })]);
    await pollChannel(r2.source, r2.channel, 4, got);
    expect(got.map(bodyText)).toEqual([0, 1, 2, 3].map((i) => `p${moved}-${i}`));
    await waitUntil(async () => (await committedOffset(kafka.bootstrap, group, topic, Number(moved))) === 4, `r2's offset commit of partition ${moved}`, 60_000);

    // r1's batch is put now. Its partition read again from the committed offset, r1 commits it.
    proxy().releaseAnswers();
    expect(await first).toBe("READY");
    await waitUntil(
      async () => {
        await r1.source.process();
        return (await committedOffset(kafka.bootstrap, group, topic, Number(kept))) === 2;
      },
      `r1's offset commit of partition ${kept}`,
      60_000,
      50,
    );
    expect(await committedOffset(kafka.bootstrap, group, topic, Number(moved))).toBe(4);
    // Nothing lost: r1 put its batch of four, and its own partition's two records again.
    const put: Event[] = [];
    await waitUntil(async () => (await takeEvents(out, put)).length >= 6, "r1's events in its channel", 60_000);
    expect(put.map(bodyText).sort()).toEqual([`p${kept}-0`, `p${kept}-0`, `p${kept}-1`, `p${kept}-1`, `p${moved}-0`, `p${moved}-1`].sort());
  },
  240_000,
);

needsJvm.test(
  "a batch read before a rebalance and refused by a full channel after it is not given back: this member reads its own partition again from the committed offset, each record once, and none of the partition another member has now",
  async () => {
    const bootstrap = `127.0.0.1:${proxy().port}`;
    const { topic, group, writer, props } = await twoPartitionsWritten(bootstrap);
    // Batches of two into a channel with room for one; a batch waits for the offset commit of the one before.
    const full = memoryChannel("r1-out", 2, 2);
    const r1 = kafkaSource({ ...props, "kafka.consumer.client.id": "r1-consumer", batchSize: "2", batchDurationMillis: "2000", uncommittedBatches: "1" }, { cleanups, name: "r1", channel: full });
    await r1.source.start();
    const poller = (r1.source as unknown as { poller: KafkaPoller }).poller;
    let takes = 0;
    const take = poller.take.bind(poller);
    poller.take = (max: number) => {
      takes++;
      return take(max);
    };
    // The first batch is put; the answer to its offset commit is held (the broker has it).
    proxy().holdAnswers(OFFSET_COMMIT, "r1-consumer");
    expect(await r1.source.process()).toBe("READY");
    await waitUntil(() => proxy().held > 0, "r1's first offset commit", 60_000);
    // The second batch is read and waits for that commit, while r2 joins: each gets one partition.
    const second = r1.source.process();
    await waitUntil(() => takes === 2, "r1's second batch read", 60_000, 10);
    const readIn = poller.generation;
    const r2 = kafkaSource(props, { cleanups, name: "r2" });
    await r2.source.start();
    await waitUntil(() => poller.generation > readIn, "r1 rebalanced", 60_000, 10);
    proxy().releaseAnswers();
    // The channel is full: the second batch, read before the rebalance, is refused.
    expect(await second).toBe("BACKOFF");
    const first = await takeEvents(full, [], 2);
    expect(first.length).toBe(2);

    // One more record a partition; r2 shows which partition moved.
    await putEvents(writer, [createEvent("p0-2", { p: "0" }), createEvent("p1-2", { p: "1" })]);
    const got2 = await pollChannel(r2.source, r2.channel, 1);
    expect(got2.length).toBe(1);
    const moved = readHeaders(got2[0]).partition;
    const kept = moved === "0" ? "1" : "0";
    // r1 delivers its partition from the committed offset on, up to the new record: each once, none of the other partition.
    const from = Math.max(0, await committedOffset(kafka.bootstrap, group, topic, Number(kept)));
    const got1: Event[] = [];
    await waitUntil(
      async () => {
        await r1.source.process();
        await takeEvents(full, got1, 2);
        return got1.some((e) => bodyText(e) === `p${kept}-2`);
      },
      `r1 reading p${kept}-2`,
      60_000,
      50,
    );
    expect(got1.map(bodyText)).toEqual([0, 1, 2].slice(from).map((i) => `p${kept}-${i}`));
  },
  240_000,
);
