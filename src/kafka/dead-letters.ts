/**
 * A dead-letter topic (kafka.deadLetterTopic: ours, Flume has none): the records a Kafka source
 * or channel could not read as events go there as they were (key, value, headers), with headers
 * saying where each came from and why, instead of being only logged and skipped.
 */
import type { KafkaMessage } from "./consumer.ts";
import type { KafkaBadRecordError } from "./errors.ts";
import type { PropError } from "../config/schema.ts";
import type { KafkaPublisher, KafkaRecord } from "./producer.ts";

/** The headers a dead letter carries besides its own. */
export const DEAD_LETTER_HEADERS = { topic: "flume.dlq.topic", partition: "flume.dlq.partition", offset: "flume.dlq.offset", error: "flume.dlq.error" } as const;

const HEADER_KEYS = Object.fromEntries(Object.entries(DEAD_LETTER_HEADERS).map(([k, v]) => [k, Buffer.from(v)])) as Record<keyof typeof DEAD_LETTER_HEADERS, Buffer>;

export class DeadLetters {
  private pending: KafkaRecord[] = [];

  constructor(
    readonly topic: string,
    readonly publisher: KafkaPublisher,
  ) {}

  /** Keeps a bad record to send with the next flush (a BadRecordHandler). */
  readonly add = (m: KafkaMessage, error: KafkaBadRecordError): void => {
    const headers = new Map<Buffer, Buffer>(m.headers ?? []);
    headers.set(HEADER_KEYS.topic, Buffer.from(m.topic));
    headers.set(HEADER_KEYS.partition, Buffer.from(String(m.partition)));
    headers.set(HEADER_KEYS.offset, Buffer.from(String(m.offset)));
    headers.set(HEADER_KEYS.error, Buffer.from(error.message));
    const record: KafkaRecord = { topic: this.topic, value: m.value, headers };
    if (m.key && m.key.length > 0) record.key = m.key;
    this.pending.push(record);
  };

  get size(): number {
    return this.pending.length;
  }

  /** Sends the kept records; resolves once acknowledged. On failure they are dropped: the caller reads their batch again. */
  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    await this.publisher.send(batch);
  }

  /** Forgets the kept records (their batch is read again). */
  drop(): void {
    this.pending = [];
  }
}

/** The check of a source or channel that names a dead-letter topic with `format` (its Avro FlumeEvent switch) off. */
export function unusedDeadLetterTopic(format: string): PropError {
  return {
    key: "kafka.deadLetterTopic",
    severity: "warning",
    message: `is set while ${format} is false: every record is then read as a plain body, none can fail to read, so nothing is ever sent to this topic`,
    hint: `set ${format} = true if the topic holds Avro FlumeEvents, or remove kafka.deadLetterTopic`,
  };
}
