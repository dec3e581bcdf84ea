/**
 * One Kafka producer for a sink or a channel: records built from events, sent as one batch that
 * resolves once the broker acknowledged every record (acks as configured).
 */
import type { Producer } from "@platformatic/kafka";
import type { Event } from "../core/event.ts";
import type { Logger } from "../core/logger.ts";
import { loadKafka } from "./client.ts";
import { ConnectBound } from "./connect-bound.ts";
import { javaPartitioner, KafkaProducerIdDroppedError, LeanSender, type LibraryPartitioner, withChosenPartitions } from "./lean-send.ts";
import { encodeFlumeEvent } from "./flume-event.ts";
import { useOwnRecordBatches } from "./produce-api.ts";
import { isTooLarge, isUnknownTopic, KafkaConnectAbortedError, KafkaDeliveryTimeoutError, KafkaPartitionMissingError, KafkaRecordTooLargeError, KafkaSendAbortedError, KafkaTopicMissingError, messageOf } from "./errors.ts";
import { withListenerHint } from "./listener-probe.ts";
import { systemClock } from "../core/clock.ts";
import { WarningThrottle } from "../pipeline/warning-throttle.ts";
import { isRetriable } from "./retriable.ts";
import { clientOptions, describeBrokers, type ProducerSettings } from "./settings.ts";

export interface KafkaRecord {
  topic: string;
  key?: Buffer;
  /** A Buffer or any view of bytes (an event's body as it is): the request is written from the bytes. */
  value: Uint8Array;
  headers?: Map<Buffer, Buffer>;
  partition?: number;
  /** What chose partition (a setting, a header), named when the topic has no such partition; absent: "partitionIdHeader or defaultPartitionId". */
  partitionFrom?: string;
  /** Epoch milliseconds, a safe integer (the record batch is written from numbers); absent: the time of the send. */
  timestamp?: number;
  /** In place of value: this event as an AvroFlumeEvent, of eventSize bytes (flumeEventSize), written straight into the request. */
  flumeEvent?: Event;
  eventSize?: number;
}

/** Record overhead in a v2 batch besides key, value and headers (varints, attributes, deltas), bounded above. */
const RECORD_OVERHEAD = 21;
const BATCH_OVERHEAD = 61;

export function recordSize(r: KafkaRecord): number {
  let n = RECORD_OVERHEAD + (r.flumeEvent ? r.eventSize! : r.value.length) + (r.key?.length ?? 0);
  if (r.headers) for (const [k, v] of r.headers) n += k.length + v.length + 10;
  return n;
}

/** A record as the library's Producer.send takes it: its timestamp a bigint. */
type LibraryMessage = Omit<KafkaRecord, "timestamp"> & { timestamp?: bigint };

/**
 * The records as the library's Producer.send takes them: it keeps only topic, key, value,
 * headers, partition and timestamp of each, so a record to be written as a FlumeEvent carries
 * the event's Avro bytes as its value (else the body alone would be sent). A record with
 * neither FlumeEvent nor timestamp is passed as it is.
 */
function libraryMessages(records: readonly KafkaRecord[]): LibraryMessage[] {
  return records.map((r) => {
    if (!r.flumeEvent && r.timestamp === undefined) return r as LibraryMessage;
    const value = r.flumeEvent ? encodeFlumeEvent(r.flumeEvent) : r.value;
    return { ...r, value, flumeEvent: undefined, eventSize: undefined, timestamp: r.timestamp === undefined ? undefined : BigInt(r.timestamp) };
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function topicsOf(records: readonly KafkaRecord[]): string[] {
  return [...new Set(records.map((r) => r.topic))];
}

export class KafkaPublisher {
  private producer: Producer<Buffer, Uint8Array, Buffer, Buffer> | null = null;
  /** Sends what our record-batch encoder writes (uncompressed); null: the library's Producer.send. */
  private lean: LeanSender | null = null;
  /** Fails each send under way (abort). */
  private readonly pending = new Set<(err: Error) => void>();
  /** The compressed sends so far: each one's unkeyed records go to one partition (javaPartitioner). */
  private librarySends = 0;
  private readonly connecting = new ConnectBound();

  /** Sends tried again after a retriable failure: the first logged at once, then one line every 10 s. */
  private readonly retryWarnings = new WarningThrottle(systemClock, (m) => this.logger.warn(m));

  constructor(
    readonly label: string,
    readonly settings: ProducerSettings,
    private readonly logger: Logger,
    /** Whether a retriable failure (retriable.ts: a broker out of reach, a leader moving) is tried again until delivery.timeout.ms (a sink, whose failed batch waits in its channel); else the client's retries decide. */
    private readonly retryUntilDeliveryTimeout = false,
  ) {}

  get brokers(): string {
    return describeBrokers(this.settings);
  }

  get connected(): boolean {
    return this.producer !== null;
  }

  /**
   * Creates the producer and checks that a broker answers (and that `topic` exists, when given),
   * within socket.connection.setup.timeout.ms + request.timeout.ms (one request's worth; the
   * owner's start is retried); abortConnect() ends it at once.
   */
  async connect(topic?: string): Promise<void> {
    if (this.producer) return;
    const kafka = await loadKafka();
    const s = this.settings;
    const producer = new kafka.Producer<Buffer, Uint8Array, Buffer, Buffer>({
      ...clientOptions(s),
      acks: s.acks,
      idempotent: s.idempotent,
      compression: s.compression,
      // As the Java producer: the broker decides (auto.create.topics.enable).
      autocreateTopics: true,
    });
    useOwnRecordBatches(kafka, producer);
    try {
      await this.metadataWithin(producer, topic);
    } catch (err) {
      await producer.close(true).catch(() => {});
      throw err;
    }
    this.producer = producer;
    if (s.compression === "none") this.lean = new LeanSender(kafka, producer, s.acks, s.idempotent);
  }

  /** Checks on the connected producer that `topic` exists (or is created on use), within connect's bound; the error names the topic. */
  async checkTopic(topic: string): Promise<void> {
    if (this.producer === null) throw new Error(`${this.label}: not connected`);
    await this.metadataWithin(this.producer, topic);
  }

  private async metadataWithin(producer: Producer<Buffer, Uint8Array, Buffer, Buffer>, topic: string | undefined): Promise<void> {
    const bound = this.settings.connectTimeout + this.settings.requestTimeout;
    try {
      await this.connecting.run(() => producer.metadata({ topics: topic ? [topic] : [], autocreateTopics: true }), bound, () => new Error(`no answer from the brokers within ${bound} ms (socket.connection.setup.timeout.ms + request.timeout.ms)`));
    } catch (err) {
      if (err instanceof KafkaConnectAbortedError) throw err;
      const known = this.known(err, topic ? [topic] : []);
      if (known) throw known;
      // An error of no known kind may be a listener that is not Kafka's without TLS: the message says what listens there.
      // A connect's client stops its retries first, so that only the probe talks to it meanwhile.
      if (producer !== this.producer) await producer.close(true).catch(() => {});
      throw new Error(`${this.label}: Kafka at ${this.brokers}: ${await withListenerHint(err, this.settings)}`, { cause: err });
    }
  }

  /**
   * Sends records (setting each one's partition on the lean path); resolves once every one was
   * acknowledged. A send fails (KafkaDeliveryTimeoutError) once delivery.timeout.ms has passed
   * since it began, also when the client itself never answers. With retryUntilDeliveryTimeout,
   * as the Java producer (retries unbounded by default): a retriable failure is tried again
   * every retry.backoff.ms until then, the same records under the same producer id and
   * sequences (lean-send.ts: a batch written whose answer was lost is not written again); with
   * kafka.producer.retries set, the client's retries bound it instead. abort() fails the sends
   * under way at once. What the client still does for a send given up is ignored: a late
   * success only means the records are sent again (at least once).
   */
  async send(records: KafkaRecord[]): Promise<void> {
    if (!this.producer) await this.connect();
    const s = this.settings;
    const deadline = Date.now() + s.deliveryTimeout;
    let last: unknown;
    let fail!: (err: Error) => void;
    const givenUp = new Promise<never>((_, reject) => (fail = reject));
    givenUp.catch(() => {});
    this.pending.add(fail);
    const timer = setTimeout(() => fail(this.timedOut(records, last)), s.deliveryTimeout);
    const lean = this.lean;
    const batch = lean?.batch(records);
    const messages = lean ? null : libraryMessages(records);
    const partitioner = lean ? null : javaPartitioner(this.librarySends++ & 0x7fffffff);
    let delivered = false;
    let failure: unknown;
    try {
      for (;;) {
        const sending = lean ? lean.send(batch!) : this.sendByLibrary(records, messages!, partitioner!);
        try {
          await Promise.race([sending, givenUp]);
          delivered = true;
          return;
        } catch (err) {
          if (err instanceof KafkaDeliveryTimeoutError || err instanceof KafkaSendAbortedError) throw err;
          const retriable = lean ? lean.canRetry(batch!, err) : isRetriable(err);
          if (!this.retryUntilDeliveryTimeout || !s.retriesUntilDeadline || !retriable) {
            // Worth a retry but for its producer id, dropped by another batch's failure: that failure is the reason.
            const dropped = lean && isRetriable(err) ? lean.droppedUnder(batch!) : null;
            throw this.explain(dropped ?? err, topicsOf(records));
          }
          if (Date.now() + s.retryDelay >= deadline) throw this.timedOut(records, err);
          // The Java producer logs each retry; an operator sees why the batches wait (too few in-sync replicas, a leader moving).
          this.retryWarnings.warn(
            `${this.label}: Kafka at ${this.brokers} did not take a batch of ${records.length} record${records.length === 1 ? "" : "s"} for topic ${topicsOf(records).join(", ")} (${messageOf(err)}); sending it again every ${s.retryDelay} ms until ${s.deliveryTimeout} ms after its first send (kafka.producer.retry.backoff.ms, kafka.producer.delivery.timeout.ms)`,
          );
          last = err;
          await Promise.race([delay(s.retryDelay), givenUp]);
        }
      }
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      // Given up (failed, timed out or aborted, maybe with a request under way): the broker's
      // sequences for this producer id are unknown, the next send takes a new one.
      lean?.end(batch!, delivered, failure);
      clearTimeout(timer);
      this.pending.delete(fail);
    }
  }

  /**
   * The client's Producer.send (compressed sends), after the records' chosen partitions were
   * checked: the client would send one its topic does not have to another (the modulo of the
   * partition count).
   */
  private async sendByLibrary(records: readonly KafkaRecord[], messages: LibraryMessage[], partitioner: LibraryPartitioner): Promise<void> {
    const producer = this.producer!;
    const topics = topicsOf(records);
    const metadataOf = (forceUpdate: boolean) => producer.metadata({ topics, autocreateTopics: true, forceUpdate });
    await withChosenPartitions(records, await metadataOf(false), () => metadataOf(true));
    await producer.send({ messages, partitioner });
  }

  /** Fails the connect under way, or else the next one, with `why` (a component that stops while it starts). */
  abortConnect(why: string): void {
    this.connecting.abort(`${this.label}: ${why}`);
  }

  /** Fails every send under way with `why` (a component that stops: its batches go back to the channel). */
  abort(why: string): void {
    for (const fail of [...this.pending]) fail(new KafkaSendAbortedError(`${this.label}: ${why}`));
  }

  private timedOut(records: readonly KafkaRecord[], last: unknown): KafkaDeliveryTimeoutError {
    const s = this.settings;
    const unset = s.deliveryTimeoutSet ? "" : " (not set: 120000, or request.timeout.ms + linger.ms when more)";
    return new KafkaDeliveryTimeoutError(
      `${this.label}: Kafka at ${this.brokers} did not acknowledge ${records.length} record${records.length === 1 ? "" : "s"} for topic ${topicsOf(records).join(", ")} within kafka.producer.delivery.timeout.ms${unset} = ${s.deliveryTimeout} ms: the broker is down or unreachable${last === undefined ? "" : ` (${messageOf(last)})`}; raise kafka.producer.delivery.timeout.ms to wait longer for it`,
      last === undefined ? undefined : { cause: last },
    );
  }

  /** Refuses a record over max.request.size before sending (the broker would refuse the whole request). */
  checkSize(r: KafkaRecord): KafkaRecordTooLargeError | null {
    const size = recordSize(r) + BATCH_OVERHEAD;
    if (size <= this.settings.maxRequestSize) return null;
    return new KafkaRecordTooLargeError(
      `${this.label}: a record of ${size} bytes for topic ${r.topic} is larger than kafka.producer.max.request.size (${this.settings.maxRequestSize}); raise it (and the topic's max.message.bytes / the broker's message.max.bytes) to send such events`,
    );
  }

  private explain(err: unknown, topics: string[]): Error {
    return this.known(err, topics) ?? new Error(`${this.label}: Kafka at ${this.brokers}: ${messageOf(err)}`, { cause: err });
  }

  /** The error as one of the kinds the sink and channel act on (a partition or topic missing, too large), or null. */
  private known(err: unknown, topics: string[]): Error | null {
    if (err instanceof KafkaPartitionMissingError) return err.labelled(this.label);
    // It names another batch's failure (too large, a topic missing): not this batch's kind.
    if (err instanceof KafkaProducerIdDroppedError) return new Error(`${this.label}: Kafka at ${this.brokers}: ${err.message}`, { cause: err });
    const why = messageOf(err);
    if (isUnknownTopic(err) && topics.length > 0) {
      return new KafkaTopicMissingError(`${this.label}: topic ${topics.join(", ")} does not exist on ${this.brokers} and the brokers do not create topics on use (auto.create.topics.enable=false): create it, e.g. kafka-topics.sh --create --topic ${topics[0]} (${why})`, { cause: err });
    }
    if (isTooLarge(err)) {
      return new KafkaRecordTooLargeError(`${this.label}: the broker refused a batch as too large; raise the topic's max.message.bytes (and kafka.producer.max.request.size) or lower the batch size (${why})`, { cause: err });
    }
    return null;
  }

  async close(): Promise<void> {
    this.connecting.cancel(`${this.label}: closed while it connected`);
    this.retryWarnings.stop();
    const p = this.producer;
    this.producer = null;
    this.lean = null;
    if (p) await p.close().catch((err) => this.logger.warn(`${this.label}: closing the Kafka producer: ${messageOf(err)}`));
  }
}
