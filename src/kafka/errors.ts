import { FlumeError } from "../core/errors.ts";

/** A topic or partition the Kafka sink cannot send to: kafka.topic not a topic name, or one a header chose. (A bad setting is a ConfigurationError.) */
export class KafkaSettingError extends FlumeError {}

/**
 * An event the Kafka sink can never send as configured: the topic or partition its headers
 * choose is none Kafka accepts, or kafka.topic's date escapes find no timestamp header.
 * `problem` says what is wrong with the event, for the dead-letter topic and the log.
 */
export class KafkaUnsendableEventError extends KafkaSettingError {
  constructor(
    message: string,
    readonly problem: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The topic does not exist and the broker does not create topics on use. */
export class KafkaTopicMissingError extends FlumeError {}

/** A record larger than the producer allows (kafka.producer.max.request.size). */
export class KafkaRecordTooLargeError extends FlumeError {}

/** An offset commit refused because the consumer group moved to a new generation (a rebalance) after its records were fetched. */
export class KafkaCommitFencedError extends FlumeError {}

/** A record that useFlumeEventFormat / parseAsFlumeEvent could not read as an Avro FlumeEvent. */
export class KafkaBadRecordError extends FlumeError {}

/** A fetched record batch that does not read: a CRC that does not check, a record running past its batch, an unknown format. */
export class KafkaCorruptRecordError extends FlumeError {}

/** The dead-letter topic (kafka.deadLetterTopic) cannot be written: missing, or refused by the broker. */
export class KafkaDeadLetterError extends FlumeError {}

/** The error's text led by `label` (a component's), unless it names it already: the client's own errors do not, ours do. */
export function namedBy(label: string, err: unknown): string {
  const why = messageOf(err);
  return why.startsWith(`${label}:`) ? why : `${label}: ${why}`;
}

/** The error's text without a leading `label: ` (a publisher's own label, inside a message that names its component already). */
export function unlabelled(label: string, err: unknown): string {
  const why = messageOf(err);
  return why.startsWith(`${label}: `) ? why.slice(label.length + 2) : why;
}

export function messageOf(err: unknown): string {
  // The client nests one error per broker and retry: each distinct message once (its "failed 3 times." without the full stop).
  if (err instanceof AggregateError && err.errors.length > 0) return `${err.message.replace(/\.$/, "")}: ${[...new Set(err.errors.map(messageOf))].join("; ")}`;
  if (err instanceof Error) {
    const own = err.message || err.name;
    const cause = (err as { cause?: unknown }).cause;
    if (!cause || cause === err) return own;
    // Ours often say their cause in their message already: said once.
    const inner = messageOf(cause);
    return own.includes(inner) ? own : `${own} (${inner})`;
  }
  return String(err);
}

/**
 * A failed connect's text, with what it says about security.protocol: a TLS listener answers a
 * client without TLS with a TLS alert (the client's "Broker requires TLS.") or closes the
 * connection before answering, and a listener without TLS breaks off a client's TLS handshake;
 * the client's own errors name no setting, and the last two not even TLS.
 */
export function withProtocolHint(err: unknown, s: { securityProtocol: string; securityProtocolKey: string }): string {
  const why = messageOf(err);
  const hint = protocolMismatchHint(err, s);
  return hint ? `${why.replace(/\.$/, "")}; ${hint}` : why;
}

export function protocolMismatchHint(err: unknown, s: { securityProtocol: string; securityProtocolKey: string }): string {
  const tls = s.securityProtocol.endsWith("SSL");
  const is = `${s.securityProtocolKey} is ${s.securityProtocol}`;
  if (!tls && someError(err, (e) => e.message === "Broker requires TLS.")) {
    return `the listener speaks TLS (${is}): set ${s.securityProtocolKey} = SSL, or SASL_SSL for a SASL listener`;
  }
  // A connection closed without an answer is looked into by a probe of the listener (listener-probe.ts).
  // Only while connecting: a reset after the handshake says nothing about it.
  if (tls && someError(err, (e) => e.message.startsWith("Connection to ") && /ECONNRESET|before secure TLS connection|wrong version number/.test(messageOf(e)))) {
    return `the TLS handshake was broken off, as a listener without TLS does (${is}): if this is a PLAINTEXT or SASL_PLAINTEXT listener, set ${s.securityProtocolKey} to match`;
  }
  return "";
}

/** Whether `err` or an error it wraps (cause, AggregateError / the client's MultipleErrors) passes `test`. */
export function someError(err: unknown, test: (e: Error) => boolean, seen = new Set<unknown>()): boolean {
  if (!(err instanceof Error) || seen.has(err)) return false;
  seen.add(err);
  if (test(err)) return true;
  if (err instanceof AggregateError && err.errors.some((e) => someError(e, test, seen))) return true;
  return someError((err as { cause?: unknown }).cause, test, seen);
}

/** Whether the error is the client's ProtocolError for one of Kafka's error codes `ids` (its apiId, e.g. MESSAGE_TOO_LARGE). */
function isProtocolError(e: Error, ids: readonly string[]): boolean {
  const apiId = (e as { apiId?: unknown }).apiId;
  return typeof apiId === "string" && ids.includes(apiId);
}

const UNKNOWN_TOPIC = ["UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"] as const;
const TOO_LARGE = ["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"] as const;

/**
 * Whether a client error says a topic or partition is unknown to the cluster: a broker's
 * UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID, or the client's UserError for a topic its
 * metadata request did not find (the client makes that one of the broker's error and keeps
 * nothing else of it: its text is all that tells).
 */
export function isUnknownTopic(err: unknown): boolean {
  return someError(err, (e) => isProtocolError(e, UNKNOWN_TOPIC) || ((e as { code?: unknown }).code === "PLT_KFK_USER" && e.message.startsWith("Unknown topic ")));
}

/** Whether an error says a record or batch is larger than the producer (ours) or the broker (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE) allows. */
export function isTooLarge(err: unknown): boolean {
  return someError(err, (e) => e instanceof KafkaRecordTooLargeError || isProtocolError(e, TOO_LARGE));
}

/** A send the brokers did not acknowledge within delivery.timeout.ms (a broker down or unreachable). */
export class KafkaDeliveryTimeoutError extends FlumeError {}

/** A send given up because its component stops (its batch goes back to the channel). */
export class KafkaSendAbortedError extends FlumeError {}

/** A connect given up because its component stops (ConnectBound.abort). */
export class KafkaConnectAbortedError extends FlumeError {}

/** What chose a record's partition, when the record does not say (KafkaRecord.partitionFrom). */
export const PARTITION_SETTINGS = "partitionIdHeader or defaultPartitionId";

/** What a sink's or channel's partitionIdHeader and defaultPartitionId say when they chose a partition (KafkaRecord.partitionFrom), made once at start. */
export function partitionChoosers(o: { partitionIdHeader?: string; defaultPartitionId?: number }): { byHeader: string; byDefault: string } {
  return { byHeader: `the event's header ${o.partitionIdHeader} (partitionIdHeader)`, byDefault: `defaultPartitionId = ${o.defaultPartitionId}` };
}

/**
 * A record for a partition its topic does not have, chosen by partitionIdHeader or
 * defaultPartitionId: failed, as the Java producer fails it (Flume's sink rolls its batch back,
 * its channel's put fails), never sent to another partition.
 */
export class KafkaPartitionMissingError extends FlumeError {
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly partitionsCount: number,
    /** The setting or header that chose the partition. */
    readonly chosenBy: string,
    /** The component, named first in the message. */
    label = "",
  ) {
    const count = `${partitionsCount} partition${partitionsCount === 1 ? "" : "s"} (0 to ${partitionsCount - 1})`;
    super(
      `${label ? `${label}: ` : ""}partition ${partition} of topic ${topic} does not exist: the topic has ${count}; ${chosenBy} chose it. Choose a partition the topic has, or add partitions to the topic (kafka-topics.sh --alter --topic ${topic} --partitions ${partition + 1})`,
    );
  }

  labelled(label: string): KafkaPartitionMissingError {
    return new KafkaPartitionMissingError(this.topic, this.partition, this.partitionsCount, this.chosenBy, label);
  }
}
