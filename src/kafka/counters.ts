/** Flume's KafkaSourceCounter, KafkaSinkCounter and KafkaChannelCounter: the Flume counters plus Kafka's timers (milliseconds, summed), empty polls and rollbacks. */
import type { Clock } from "../core/clock.ts";
import { ChannelCounter, CounterGroup, SINK_COUNTERS, type SinkCounterKey } from "../core/counters.ts";

export const KAFKA_SINK_COUNTERS = ["KafkaEventSendTimer", "RollbackCount"] as const;

export class KafkaSinkCounter extends CounterGroup<SinkCounterKey | (typeof KAFKA_SINK_COUNTERS)[number]> {
  constructor(name: string, clock?: Clock) {
    super("SINK", name, [...SINK_COUNTERS, ...KAFKA_SINK_COUNTERS], clock);
  }
}

/** EventReadFail is ours on the channel (Flume's KafkaChannel only logs them): records that are no FlumeEvent, skipped by a committed take. */
export const KAFKA_CHANNEL_COUNTERS = ["KafkaEventGetTimer", "KafkaEventSendTimer", "KafkaCommitTimer", "RollbackCount", "EventReadFail"] as const;

export class KafkaChannelCounter extends ChannelCounter<(typeof KAFKA_CHANNEL_COUNTERS)[number]> {
  constructor(name: string, clock?: Clock) {
    super(name, KAFKA_CHANNEL_COUNTERS, clock);
  }
}

/** Added to the source's counters (SourceCounter's extra keys); KafkaDeadLetterFailCount is ours: writes of bad records the dead-letter topic refused, each holding the batch for another try. */
export const KAFKA_SOURCE_COUNTERS = ["KafkaEventGetTimer", "KafkaCommitTimer", "KafkaEmptyCount", "KafkaDeadLetterFailCount"] as const;
