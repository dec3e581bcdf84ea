/**
 * How much the Kafka channel's consumer holds ahead of the takes (src/components/channels/kafka/
 * kafka-channel.ts): fetches of at most 128 kB, lower when the consumer settings say so, and one
 * transaction's worth of records. Its put and take semantics are the conformance suite's
 * (test/components/channels/conformance.test.ts) and the Flume wire tests' (test/e2e/kafka-flume.test.ts).
 */
import { expect, test } from "bun:test";
import { CHANNEL_FETCH_BYTES, channelFetches, readAhead } from "../../../../src/components/channels/kafka/kafka-channel.ts";
import { MemoryLogger } from "../../../../src/core/logger.ts";
import { consumerSettings } from "../../../../src/kafka/settings.ts";

const base = { bootstrap: "b1:9092", bootstrapKey: "kafka.bootstrap.servers", clientId: "flume", label: "kafka channel c1", groupId: "flume", defaultOffsetReset: "earliest" as const };

test("the channel's fetches ask for 128 kB at most: Kafka's defaults (50 MB, 1 MB a partition) are lowered, smaller settings kept", () => {
  expect(CHANNEL_FETCH_BYTES).toBe(128 * 1024);
  const defaults = channelFetches(consumerSettings({ ...base, logger: new MemoryLogger(), props: {} }));
  expect([defaults.maxBytes, defaults.maxBytesPerPartition]).toEqual([131072, 131072]);
  const small = channelFetches(consumerSettings({ ...base, logger: new MemoryLogger(), props: { "fetch.max.bytes": "100000", "max.partition.fetch.bytes": "65536" } }));
  expect([small.maxBytes, small.maxBytesPerPartition]).toEqual([100000, 65536]);
  // Everything else is the consumer's as configured.
  const s = consumerSettings({ ...base, logger: new MemoryLogger(), props: { "fetch.max.wait.ms": "20", "session.timeout.ms": "10000" } });
  expect({ ...channelFetches(s), maxBytes: s.maxBytes, maxBytesPerPartition: s.maxBytesPerPartition }).toEqual(s);
});

test("the channel fetches one transaction's worth of records ahead, at least 1000", () => {
  expect(readAhead(100)).toBe(1000);
  expect(readAhead(1000)).toBe(1000);
  expect(readAhead(5000)).toBe(5000);
});
