import type { Clock } from "../../../core/clock.ts";
import { ChannelCounter } from "../../../core/counters.ts";

/** The counters Flume's KafkaChannelCounter adds, named for JetStream, plus publish retries. */
export const JETSTREAM_CHANNEL_COUNTERS = [
  "channel.jetstream.event.send.time",
  "channel.jetstream.commit.time",
  "channel.rollback.count",
  "channel.jetstream.publish.retry.count",
  "channel.jetstream.publish.duplicate.count",
  /** Take commits whose acks the server did not confirm within commit-timeout (committed all the same). */
  "channel.jetstream.commit.unconfirmed.count",
] as const;
export type JetStreamChannelCounterKey = (typeof JETSTREAM_CHANNEL_COUNTERS)[number];

/**
 * ChannelSize is the shared consumer's backlog (events not yet delivered plus delivered and
 * not committed, over every agent), read from the server every second; ChannelCapacity is the
 * stream's max-msgs (0: no limit).
 */
export class JetStreamChannelCounter extends ChannelCounter<JetStreamChannelCounterKey> {
  connected = false;

  constructor(name: string, clock?: Clock) {
    super(name, JETSTREAM_CHANNEL_COUNTERS, clock);
  }

  protected override extra(): Record<string, string> {
    return { ...super.extra(), Connected: String(this.connected) };
  }
}
