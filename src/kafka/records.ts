/** Kafka records to Flume events, as Flume's Kafka source and channel read them. */
import { bodyEvent, type Event, flatRangeEvent, type RangeEventWithHeaders } from "../core/event.ts";
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

/** The headers the Kafka source sets besides Flume's fixed ones (Flume's KafkaSource options). */
export interface SourceHeaderShape {
  /** setTopicHeader's topicHeader; null without setTopicHeader. */
  readonly topicHeader: string | null;
  /** timestampHeader: where the record's Kafka timestamp goes, if anywhere. */
  readonly timestampHeader: string | null;
  /** header.NAME = KAFKA_HEADER mappings (event header NAME <- record header KAFKA_HEADER); null when there are none. */
  readonly mapped: Readonly<Record<string, string>> | null;
}

/** What every event of a run of records from one partition in one source batch has in its headers. */
export interface SourceRun {
  readonly shape: SourceHeaderShape;
  readonly topic: string;
  readonly partition: number;
}

/** Partition numbers as header text, made once each. */
const PARTITION_TEXT: string[] = [];

function partitionText(p: number): string {
  return (PARTITION_TEXT[p] ??= String(p));
}

/**
 * Sets the headers Flume 1.11's Kafka source sets on h, as it does: timestamp (the record's
 * Kafka timestamp), topic, partition and offset only where h has none (a FlumeEvent's own win);
 * the key and the mapped record headers always. `recordHeaders` is needed only with header.NAME
 * mappings (SourceRecordEvent.needsRecord).
 */
export function setSourceHeaders(h: Record<string, string>, run: SourceRun, offset: number, key: string | null, timestamp: number, recordHeaders?: [Buffer, Buffer][] | null): Record<string, string> {
  const shape = run.shape;
  if (h.timestamp === undefined) h.timestamp = String(timestamp);
  if (shape.timestampHeader !== null) h[shape.timestampHeader] = String(timestamp);
  const mapped = shape.mapped;
  if (mapped !== null && recordHeaders) {
    // Each record header's name decoded once, whatever the number of mappings.
    for (const [k, v] of recordHeaders) {
      const kafkaName = k.toString("utf8");
      for (const name in mapped) if (mapped[name] === kafkaName) h[name] = v.toString("utf8");
    }
  }
  if (shape.topicHeader !== null && h[shape.topicHeader] === undefined) h[shape.topicHeader] = run.topic;
  if (h.partition === undefined) h.partition = partitionText(run.partition);
  if (h.offset === undefined) h.offset = String(offset);
  if (key !== null) h.key = key;
  return h;
}

/** A record's key as the key header: null when the record has none (an empty key is an empty header, as Flume's). */
export function keyText(m: KafkaMessage): string | null {
  return m.key !== null ? m.key.toString("utf8") : null;
}

/**
 * Flume 1.11's KafkaChannel take: the record's key, when it has one, as the event's `key`
 * header, over a FlumeEvent's own. Only a keyed record's event gets a headers object made.
 */
export function setKeyHeader(e: Event, m: KafkaMessage): void {
  const key = keyText(m);
  if (key !== null) e.headers.key = key;
}

/**
 * The Kafka source's event of a plain record (not a FlumeEvent): its body a range of the
 * batch's copy of the values (a view made when first read), its headers made when first read
 * (a memory channel and a null sink never read them; a file channel or a sink that writes
 * headers does, through readHeaders). One object a record instead of five (a headers object,
 * an offset string, a body view, the event). What the headers are made of is held here: the
 * key as text (the response it views is freed once the batch is committed); records whose
 * headers need more of the record (needsRecord) get theirs at once. A RangeEventWithHeaders of
 * one constructor (flatRangeEvent).
 */
export interface SourceRecordEvent extends RangeEventWithHeaders {}
export class SourceRecordEvent {
  constructor(
    protected bytes: Uint8Array,
    protected start: number,
    protected end: number,
    private readonly run: SourceRun,
    private readonly offset: number,
    private readonly key: string | null,
    private readonly timestamp: number,
  ) {}

  /** Whether m's headers need more than the run, offset, key and timestamp (its own headers): made at once then. */
  static needsRecord(shape: SourceHeaderShape, m: KafkaMessage): boolean {
    return shape.mapped !== null && m.headers !== null;
  }

  protected makeHeaders(): Record<string, string> {
    return setSourceHeaders({}, this.run, this.offset, this.key, this.timestamp);
  }
}
flatRangeEvent(SourceRecordEvent);
