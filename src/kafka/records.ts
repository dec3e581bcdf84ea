/** Kafka records to Flume events, as Flume's Kafka source and channel read them. */
import { bodyEvent, type Event } from "../core/event.ts";
import type { Logger } from "../core/logger.ts";
import type { KafkaMessage } from "./consumer.ts";
import { KafkaBadRecordError, messageOf } from "./errors.ts";
import { decodeFlumeEventAt } from "./flume-event.ts";

export function where(m: KafkaMessage): string {
  return `topic ${m.topic} partition ${m.partition} offset ${m.offset}`;
}

/** Why a record could not be read as an event: what a dead-letter topic records with it. False: reported before (read again), not logged again. */
export type BadRecordHandler = (m: KafkaMessage, error: KafkaBadRecordError) => boolean | void;

/**
 * The event a record carries: the value decoded as an Avro FlumeEvent (asFlumeEvent), or the
 * value as the body. Null for a record that is not a FlumeEvent, logged with where it is and
 * handed to `bad` when given. The value is `value`, or its `length` bytes from `at` when given.
 */
export function eventOfRecord(m: KafkaMessage, asFlumeEvent: boolean, label: string, logger: Logger, bad?: BadRecordHandler, value: Buffer = m.value, at = 0, length = value.length - at): Event | null {
  if (!asFlumeEvent) return bodyEvent(at === 0 && length === value.length ? value : value.subarray(at, at + length));
  try {
    // A fresh event of its own (its headers object too): the caller may add headers.
    return decodeFlumeEventAt(value, at, at + length);
  } catch (err) {
    const error = new KafkaBadRecordError(`${label}: skipped a record that is not an Avro FlumeEvent at ${where(m)} (${length} bytes: ${messageOf(err)}); write it with useFlumeEventFormat = true / parseAsFlumeEvent = true, or read the topic with those off`, { cause: err });
    if (bad?.(m, error) !== false) logger.error(error.message);
    return null;
  }
}
