import { FlumeError } from "../core/errors.ts";

/** A Kafka setting the component cannot use as given (a bad value, an unsupported protocol). */
export class KafkaSettingError extends FlumeError {}

/** The topic does not exist and the broker does not create topics on use. */
export class KafkaTopicMissingError extends FlumeError {}

/** A record larger than the producer allows (kafka.producer.max.request.size). */
export class KafkaRecordTooLargeError extends FlumeError {}

/** A record that useFlumeEventFormat / parseAsFlumeEvent could not read as an Avro FlumeEvent. */
export class KafkaBadRecordError extends FlumeError {}

/** A fetched record batch that does not read: a CRC that does not check, a record running past its batch, an unknown format. */
export class KafkaCorruptRecordError extends FlumeError {}

/** The dead-letter topic (kafka.deadLetterTopic) cannot be written: missing, or refused by the broker. */
export class KafkaDeadLetterError extends FlumeError {}

export function messageOf(err: unknown): string {
  // The client nests one error per broker and retry: each distinct message once.
  if (err instanceof AggregateError && err.errors.length > 0) return `${err.message}: ${[...new Set(err.errors.map(messageOf))].join("; ")}`;
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause && cause !== err ? `${err.message || err.name} (${messageOf(cause)})` : err.message || err.name;
  }
  return String(err);
}

/** Whether a client error says a topic or partition is unknown to the cluster. */
export function isUnknownTopic(err: unknown): boolean {
  return /UNKNOWN_TOPIC_OR_PARTITION|unknown topic|does not host this topic|UNKNOWN_TOPIC_ID/i.test(messageOf(err));
}

/** Whether an error says a record or batch is larger than the producer or the broker allows. */
export function isTooLarge(err: unknown): boolean {
  return err instanceof KafkaRecordTooLargeError || /too large|RECORD_LIST_TOO_LARGE|MESSAGE_TOO_LARGE|larger than the max message size/i.test(messageOf(err));
}

/** A send the brokers did not acknowledge within delivery.timeout.ms (a broker down or unreachable). */
export class KafkaDeliveryTimeoutError extends FlumeError {}

/** A send given up because its component stops (its batch goes back to the channel). */
export class KafkaSendAbortedError extends FlumeError {}
