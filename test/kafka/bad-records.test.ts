/**
 * A record that is no FlumeEvent, read again and again by rolled-back takes, is logged and
 * dead-lettered once; one the consumer dropped at a rebalance is forgotten, and reported anew
 * when its partition's owner reads it.
 */
import { expect, test } from "bun:test";
import { MemoryLogger } from "../../src/core/logger.ts";
import { BadRecordsSeen } from "../../src/kafka/bad-records.ts";
import type { KafkaMessage } from "../../src/kafka/consumer.ts";
import type { KafkaBadRecordError } from "../../src/kafka/errors.ts";
import { BatchOrigin, FetchedRecord } from "../../src/kafka/record-batch-reader.ts";
import { eventOfRecord } from "../../src/kafka/records.ts";

/** A record of topic t partition 1 at `offset` whose value is no Avro FlumeEvent. */
function badRecord(offset: number): KafkaMessage {
  const bytes = Buffer.from([0xff, 0xff, 0xff]);
  return new FetchedRecord(new BatchOrigin("t", 1, 0, bytes, offset), offset, 0, null, 0, bytes.length, null);
}

test("a bad record read again by rolled-back takes is logged and dead-lettered once; dropped at a rebalance and read again, it is reported anew", () => {
  const seen = new BadRecordsSeen();
  const logger = new MemoryLogger();
  const dead: number[] = [];
  const read = (m: KafkaMessage) => eventOfRecord(m, true, "kafka channel c1", logger, (r, e: KafkaBadRecordError) => seen.report(r, e, (d) => void dead.push(d.offset)));
  const m = badRecord(7);
  expect(read(m)).toBeNull();
  expect(read(m)).toBeNull();
  expect(logger.lines.map((l) => l.level)).toEqual(["error"]);
  expect(logger.lines[0].message).toContain("skipped a record that is not an Avro FlumeEvent at topic t partition 1 offset 7");
  // Each read hands it to the dead-letter list of the take reading it (a rolled-back take's list went with it).
  expect(dead).toEqual([7, 7]);
  // Other records dropped with it change nothing for them; this one is forgotten.
  seen.forgetAll([badRecord(8), m]);
  expect(read(m)).toBeNull();
  expect(logger.lines.map((l) => l.level)).toEqual(["error", "error"]);
  seen.forget(m);
  seen.forgetAll([m]);
  expect(read(badRecord(7))).toBeNull();
  expect(logger.lines).toHaveLength(3);
});
