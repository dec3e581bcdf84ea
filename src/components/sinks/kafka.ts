/**
 * Flume's Kafka sink (org.apache.flume.sink.kafka.KafkaSink): takes up to flumeBatchSize events
 * in one channel transaction, sends them as records (the `key` header as the record key, the
 * body, or the whole event as an Avro FlumeEvent with useFlumeEventFormat) and commits the take
 * only after the broker acknowledged every record; otherwise the batch is rolled back and the
 * runner backs off before it is taken again.
 */
import type { PropError } from "../../config/schema.ts";
import { configurationProblems } from "../../core/errors.ts";
import { type Event, readHeaders } from "../../core/event.ts";
import { type Logger, silentLogger } from "../../core/logger.ts";
import type { DeliveryFailure, Sink } from "../../core/sink.ts";
import { STOPPED_STARTING } from "../../kafka/connect-bound.ts";
import { KafkaSinkCounter } from "../../kafka/counters.ts";
import { DEAD_LETTER_HEADERS } from "../../kafka/dead-letters.ts";
import { isTooLarge, KafkaConnectAbortedError, KafkaDeadLetterError, KafkaSettingError, KafkaUnsendableEventError, messageOf, partitionChoosers, unlabelled } from "../../kafka/errors.ts";
import { flumeEventSize } from "../../kafka/flume-event.ts";
import { KafkaPublisher, type KafkaRecord, recordSize } from "../../kafka/producer.ts";
import { brokerList, producerSettings, type ProducerSettings } from "../../kafka/settings.ts";
import { isTopicName, TOPIC_NAME_RULE, topicNameProblems } from "../../kafka/topic-name.ts";
import { containsEscape, type EscapeOptions, EscapeTemplate, Escaper, type HostNames, lookupHostNames, MissingTimestampError } from "../../pipeline/bucket-path.ts";
import { WarningThrottle } from "../../pipeline/warning-throttle.ts";
import type { TakeLoop } from "../../pipeline/take-loop.ts";
import { type ComponentContext, defineComponent } from "../component.ts";
import { localAddress } from "../interceptors/host.ts";
import { builtIn } from "../registry.ts";
import { BaseSink } from "./base.ts";

export interface KafkaSinkOptions {
  producer: ProducerSettings;
  topic: string;
  batchSize: number;
  useFlumeEventFormat: boolean;
  allowTopicOverride: boolean;
  topicHeader: string;
  partitionIdHeader?: string;
  defaultPartitionId?: number;
  timestampHeader?: string;
  /** Flume header -> Kafka header (header.NAME = kafkaName). */
  kafkaHeaders: Readonly<Record<string, string>>;
  /** kafka.deadLetterTopic: where events go that can never be sent as configured (KafkaUnsendableEventError). */
  deadLetterTopic?: string;
}

/**
 * Batches in flight when kafka.producer.max.in.flight.requests.per.connection is not set.
 * Measured (stress -> memory -> this sink, 100-byte events, batches of 1,000, acks=all, one
 * local broker, alternated runs): 2 overlaps the broker's acknowledgement of one batch with the
 * taking and encoding of the next, about 1.4x the rate of 1 at the same CPU per event; 3 gained
 * nothing over 2.
 */
export const DEFAULT_BATCHES_IN_FLIGHT = 2;

/** The records of one batch in flight, reused by a later batch once it is settled. */
interface RecordSlot {
  readonly records: KafkaRecord[];
  readonly pool: KafkaRecord[];
}

/** As Flume's KafkaSink escapes kafka.topic (BucketPath.escapeString(topic, headers)): the agent's time zone, no rounding, the event's timestamp header. */
const TOPIC_ESCAPES: EscapeOptions = { round: false, roundValue: 1, roundUnit: "second", useLocalTimeStamp: false };
const NO_HOSTS: HostNames = { localhost: "", ip: "", fqdn: "" };

const PARTITION_NUMBER = /^\+?\d{1,10}$/;
const MAX_INT = 2 ** 31 - 1;
const EMPTY = new Uint8Array(0);
const DEAD_LETTER_ERROR = Buffer.from(DEAD_LETTER_HEADERS.error);

/** The largest timestamp taken from timestampHeader: the record batch is written from numbers, which lose milliseconds beyond it. */
const MAX_TIMESTAMP = Number.MAX_SAFE_INTEGER;

/**
 * timestampHeader's value as epoch milliseconds, read as Java's Long.parseLong reads it
 * (decimal digits after an optional +); -1 when it is none, or above MAX_TIMESTAMP. Parsed by
 * hand: no string or BigInt made per event.
 */
export function headerTimestamp(text: string): number {
  const n = text.length;
  let i = n > 0 && text.charCodeAt(0) === 43 ? 1 : 0;
  if (i === n) return -1;
  let v = 0;
  for (; i < n; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
    // Rounded or not, past 2^53 it stays above MAX_TIMESTAMP.
    if (v > MAX_TIMESTAMP) return -1;
  }
  return v;
}

/**
 * kafka.topic compiled once, as a template of Flume's escapes; null when the topic is sent to as
 * written: no escape in it, or allowTopicOverride = false (as Flume 1.11).
 */
function topicTemplate(topic: string, allowTopicOverride: boolean): EscapeTemplate | null {
  if (!allowTopicOverride) return null;
  const t = new EscapeTemplate(topic, "kafka.topic");
  return t.isLiteral ? null : t;
}

/**
 * Fills `record` in as the dead letter of event e: its body (or the FlumeEvent), its key header
 * as the key, every header as a record header, and flume.dlq.error saying why it could not be
 * sent; the partition is the producer's choice.
 */
function deadLetterOf(record: KafkaRecord, topic: string, e: Event, problem: string, asFlumeEvent: boolean): KafkaRecord {
  const headers = readHeaders(e);
  record.topic = topic;
  record.value = e.body;
  record.flumeEvent = asFlumeEvent ? e : undefined;
  record.eventSize = asFlumeEvent ? flumeEventSize(e) : undefined;
  record.key = headers.key === undefined ? undefined : Buffer.from(headers.key);
  record.partition = undefined;
  record.partitionFrom = undefined;
  record.timestamp = undefined;
  const out = new Map<Buffer, Buffer>();
  for (const name in headers) if (name !== DEAD_LETTER_HEADERS.error) out.set(Buffer.from(name), Buffer.from(headers[name]));
  out.set(DEAD_LETTER_ERROR, Buffer.from(problem));
  record.headers = out;
  return record;
}

/** Why a kafka.topic sent to as written holds an escape, if it does. */
function literalTopicWhy(topic: string): string {
  return containsEscape(topic) ? "; with allowTopicOverride = false, %{header} is not replaced, nor any other escape (as Flume 1.11)" : "";
}

export class KafkaSink extends BaseSink implements Sink {
  override readonly counter: KafkaSinkCounter;
  protected readonly takeLoop: TakeLoop;
  private readonly publisher: KafkaPublisher;
  private readonly slots: RecordSlot[] = [];
  /** Set by stop: a batch taken after it is not sent (rolled back). */
  private stopping = false;
  /** Batches in flight settled (or rolled back) before the connection goes: once per stop. */
  private draining: Promise<void> | null = null;
  /** Why the last batch failed and since when, until one is acknowledged again (for /ready). */
  private failing: DeliveryFailure | null = null;
  /** kafka.topic with escapes, compiled at configure time; null: the topic as written (no per-event work). */
  private readonly topicTemplate: EscapeTemplate | null;
  /** The last computed or header topic found to be a valid Kafka topic name. */
  private validTopic = "";
  /** Escapes topicTemplate for each event; made at start (with this host's names when the template has %[...]). */
  private escaper: Escaper | null = null;
  private readonly headerNames: [string, Buffer][];
  /** What partitionIdHeader and defaultPartitionId say in the error for a partition the topic does not have. */
  private readonly choosers: { byHeader: string; byDefault: string };
  /** Invalid timestampHeader values: one line at once, then one per interval, not one per event. */
  private readonly timestampWarnings: WarningThrottle;
  /** Events sent to kafka.deadLetterTopic, logged as timestampWarnings. */
  private readonly deadLetterWarnings: WarningThrottle;

  constructor(
    ctx: ComponentContext,
    readonly options: KafkaSinkOptions,
  ) {
    super(ctx);
    this.counter = new KafkaSinkCounter(ctx.name, ctx.clock);
    this.publisher = new KafkaPublisher(`kafka sink ${ctx.name}`, options.producer, ctx.logger, true);
    this.topicTemplate = topicTemplate(options.topic, options.allowTopicOverride);
    this.headerNames = Object.entries(options.kafkaHeaders).map(([flume, kafka]) => [flume, Buffer.from(kafka)]);
    this.choosers = partitionChoosers(options);
    this.timestampWarnings = new WarningThrottle(this.clock, (m) => this.logger.warn(m));
    this.deadLetterWarnings = new WarningThrottle(this.clock, (m) => this.logger.error(m));
    this.takeLoop = this.newTakeLoop({
      label: this.publisher.label,
      counter: this.counter,
      batchSize: options.batchSize,
      // As Flume's Kafka sink: a batch the channel cut short is still READY.
      underflow: "READY",
      target: () => `Kafka at ${this.publisher.brokers}`,
      deliver: (events) => this.send(events),
      failed: (err) => {
        this.counter.values.RollbackCount++;
        this.failing = { error: messageOf(err), since: this.failing?.since ?? this.clock.now() };
      },
      // Each batch's take commits once the broker acknowledged it (Flume's guarantee per batch).
      inFlight: options.producer.maxInFlight ?? DEFAULT_BATCHES_IN_FLIGHT,
    });
  }

  get label(): string {
    return this.publisher.label;
  }

  /** Batches sent and not yet acknowledged or failed. */
  get inFlight(): number {
    return this.takeLoop.inFlight;
  }

  /** Most batches that were in flight at once (sent, not yet acknowledged or failed). */
  get maxBatchesInFlight(): number {
    return this.takeLoop.maxUnsettled;
  }

  override async start(): Promise<void> {
    this.stopping = false;
    this.draining = null;
    this.failing = null;
    const topic = this.options.topic;
    const template = this.topicTemplate;
    // Refused by Kafka anyway: said here with the setting's name (Flume's producer fails each batch on it).
    if (template === null && !isTopicName(topic)) throw new KafkaSettingError(`${this.label}: kafka.topic = "${topic}" is not a Kafka topic name (${TOPIC_NAME_RULE})${literalTopicWhy(topic)}`);
    if (template !== null && this.escaper === null) {
      this.escaper = new Escaper(TOPIC_ESCAPES, template.needsHosts ? await lookupHostNames(localAddress) : NO_HOSTS, () => this.clock.now());
    }
    // A broker that does not answer fails the start: the supervisor retries with backoff and /ready names the error.
    await this.publisher.connect(template === null ? topic : undefined);
    await this.checkDeadLetterTopic();
    // After the counters' start, which sets them to 0 (as Flume's MonitoredCounterGroup.start).
    super.start();
    this.counter.values.ConnectionCreatedCount++;
    this.logger.info(`${this.label} started (brokers ${this.publisher.brokers}, topic ${this.options.topic}, acks ${this.options.producer.acks === -1 ? "all" : this.options.producer.acks})`);
  }

  /** The dead-letter topic must exist before an event needs it: checked at start, as the source's. */
  private async checkDeadLetterTopic(): Promise<void> {
    const dlq = this.options.deadLetterTopic;
    if (dlq === undefined) return;
    try {
      await this.publisher.checkTopic(dlq);
    } catch (err) {
      await this.publisher.close();
      if (err instanceof KafkaConnectAbortedError) throw err;
      throw new KafkaDeadLetterError(`${this.label}: the dead-letter topic ${dlq} (kafka.deadLetterTopic) cannot be written: ${unlabelled(this.label, err)}; create it, or remove kafka.deadLetterTopic to hold a batch with an event that cannot be sent until the event is fixed (as Flume)`, { cause: err });
    }
  }

  deliveryFailure(): DeliveryFailure | null {
    return this.failing;
  }

  abortStart(): void {
    this.publisher.abortConnect(STOPPED_STARTING);
  }

  /** The runner stops: batches in flight end within request.timeout.ms (acknowledged, or rolled back). */
  interrupt(): void {
    void this.drain();
  }

  override async stop(): Promise<void> {
    // Also called after a start that failed (its runner cleans up before the retry): then there
    // is no connection to count as closed, and nothing stopped to report at every retry.
    const started = this.getLifecycleState() === "START";
    await this.drain();
    this.timestampWarnings.stop();
    this.deadLetterWarnings.stop();
    await this.publisher.close();
    super.stop();
    if (!started) return;
    this.counter.values.ConnectionClosedCount++;
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }

  /**
   * Every batch in flight committed or rolled back before the connection goes: those the broker
   * does not acknowledge within request.timeout.ms are given up, rolled back into the channel
   * (taken again after a restart; a file channel keeps them).
   */
  private drain(): Promise<void> {
    this.stopping = true;
    return (this.draining ??= (async () => {
      const timeout = this.options.producer.requestTimeout;
      if (await this.takeLoop.settle(timeout)) return;
      this.publisher.abort(`stopping: ${this.takeLoop.inFlight} batch(es) not acknowledged by Kafka at ${this.publisher.brokers} within kafka.producer.request.timeout.ms (${timeout} ms) rolled back into the channel`);
      await this.takeLoop.settle();
    })());
  }

  /** Whether t is a topic Kafka accepts; the last one found valid is remembered (a batch's events mostly share one), so most events skip the pattern. */
  private isValidTopic(t: string): boolean {
    if (t === this.validTopic) return true;
    if (!isTopicName(t)) return false;
    this.validTopic = t;
    return true;
  }

  private topicOf(headers: Readonly<Record<string, string>>): string {
    const o = this.options;
    if (!o.allowTopicOverride) return o.topic;
    const t = headers[o.topicHeader];
    // Unlike Flume, an empty header names no topic: kafka.topic is used (Flume sends to "", which the broker refuses, batch after batch).
    if (t) {
      // The broker's refusal names neither the topic nor the header.
      if (!this.isValidTopic(t)) throw this.unsendable(`header ${o.topicHeader} = "${t}" is not a Kafka topic name (${TOPIC_NAME_RULE})`, "fix the event's header, or set allowTopicOverride = false");
      return t;
    }
    const template = this.topicTemplate;
    if (template === null) return o.topic;
    let topic: string;
    try {
      topic = (this.escaper as Escaper).escape(template, headers);
    } catch (err) {
      // The batch rolls back and is taken again, as Flume's; the error names the sink.
      if (err instanceof MissingTimestampError) throw this.unsendable(err.message, "", err);
      throw err;
    }
    if (!this.isValidTopic(topic)) {
      throw this.unsendable(`kafka.topic = "${template.template}" gives the topic "${topic}" for an event, which is not a Kafka topic name (${TOPIC_NAME_RULE})`, "fix the event's headers or kafka.topic");
    }
    return topic;
  }

  /**
   * An event that can never be sent as configured (as Flume's sink, its batch fails on every
   * retry); with kafka.deadLetterTopic it is sent there instead (deadLetterFor).
   */
  private unsendable(problem: string, fix: string, cause?: unknown): KafkaUnsendableEventError {
    const then = `the batch is rolled back and taken again${fix ? `: ${fix}` : ""} (or set kafka.deadLetterTopic to send such events there)`;
    return new KafkaUnsendableEventError(`${this.label}: ${problem}; ${then}`, problem, { cause });
  }

  /** With kafka.deadLetterTopic, the dead letter of event e, which recordOf found cannot be sent as configured (err); otherwise err is thrown on. */
  private deadLetterFor(err: unknown, record: KafkaRecord, e: Event): KafkaRecord {
    const dlq = this.options.deadLetterTopic;
    if (dlq === undefined || !(err instanceof KafkaUnsendableEventError)) throw err;
    this.deadLetterWarnings.warn(`${this.label}: an event sent to the dead-letter topic ${dlq} (kafka.deadLetterTopic): ${err.problem}`);
    return deadLetterOf(record, dlq, e, err.problem, this.options.useFlumeEventFormat);
  }

  /**
   * The i-th record of a batch, filled in for event e: the records are reused from batch to
   * batch (the client takes what it sends from them before send resolves), every field set
   * each time, so a batch of 1,000 events makes no record objects.
   */
  private recordOf(pool: KafkaRecord[], i: number, e: Event): KafkaRecord {
    const o = this.options;
    const headers = readHeaders(e);
    let record = pool[i];
    if (record === undefined) pool[i] = record = { topic: "", value: EMPTY, key: undefined, headers: undefined, partition: undefined, partitionFrom: undefined, timestamp: undefined, flumeEvent: undefined, eventSize: undefined };
    record.topic = this.topicOf(headers);
    // The body as it is: no Buffer view per event (the request is written from its bytes); or
    // the event, written as a FlumeEvent straight into the request.
    record.value = e.body;
    if (o.useFlumeEventFormat) {
      record.flumeEvent = e;
      record.eventSize = flumeEventSize(e);
    }
    const key = headers.key;
    record.key = key === undefined ? undefined : Buffer.from(key);
    record.partition = undefined;
    record.partitionFrom = undefined;
    if (o.partitionIdHeader !== undefined && headers[o.partitionIdHeader] !== undefined) {
      const text = headers[o.partitionIdHeader];
      // Decimal digits only, as Flume's Integer.parseInt ("", " 1", "1.0", "0x1" fail the batch there too).
      const p = PARTITION_NUMBER.test(text) ? Number(text) : NaN;
      if (!(p >= 0 && p <= MAX_INT)) throw this.unsendable(`header ${o.partitionIdHeader} = "${text}" (partitionIdHeader) is not a partition number`, "fix the event's header");
      record.partition = p;
      record.partitionFrom = this.choosers.byHeader;
    } else if (o.defaultPartitionId !== undefined) {
      record.partition = o.defaultPartitionId;
      record.partitionFrom = this.choosers.byDefault;
    }
    record.timestamp = undefined;
    if (o.timestampHeader !== undefined) {
      const text = headers[o.timestampHeader];
      if (text !== undefined) {
        const ts = headerTimestamp(text);
        if (ts >= 0) record.timestamp = ts;
        else {
          // As Flume's sink (Long.parseLong failing): warned, sent stamped now. Flume's producer
          // refuses a negative one, failing the batch again and again: sent stamped now too.
          this.timestampWarnings.warn(
            `${this.label}: header ${o.timestampHeader} = "${text}" (timestampHeader) is no timestamp in milliseconds from 0 to ${MAX_TIMESTAMP}: the event is sent stamped with the current time`,
          );
        }
      }
    }
    record.headers = undefined;
    if (this.headerNames.length > 0) {
      let out: Map<Buffer, Buffer> | undefined;
      for (const [flume, kafka] of this.headerNames) {
        const v = headers[flume];
        if (v === undefined) continue;
        (out ??= new Map()).set(kafka, Buffer.from(v));
      }
      record.headers = out;
    }
    return record;
  }

  /** Sends a taken batch; resolves once the broker acknowledged every record (the take then commits). */
  private async send(events: readonly Event[]): Promise<void> {
    if (this.stopping) throw new Error(`${this.label} is stopping`);
    const slot = this.slots.pop() ?? { records: [], pool: [] };
    try {
      await this.sendWith(slot, events);
      this.failing = null;
    } finally {
      slot.records.length = 0;
      this.slots.push(slot);
    }
  }

  private async sendWith({ records, pool }: RecordSlot, events: readonly Event[]): Promise<void> {
    let refused = 0;
    let deadLetters = 0;
    for (let i = 0; i < events.length; i++) {
      let r: KafkaRecord;
      let dead = false;
      try {
        r = this.recordOf(pool, i, events[i]);
      } catch (err) {
        r = this.deadLetterFor(err, pool[i], events[i]);
        dead = true;
      }
      const tooLarge = this.publisher.checkSize(r);
      if (tooLarge) {
        // Never accepted however often it is retried: reported and left out, the rest goes.
        this.logger.error(tooLarge.message);
        refused++;
        continue;
      }
      if (dead) deadLetters++;
      records.push(r);
    }
    if (refused > 0) this.counter.values.EventWriteFail += refused;
    if (records.length > 0) {
      const started = Date.now();
      try {
        await this.publisher.send(records);
      } catch (err) {
        if (!isTooLarge(err)) throw err;
        await this.sendEach(records);
      }
      this.counter.values.KafkaEventSendTimer += Date.now() - started;
    }
    // Counted once acknowledged: a failed batch is taken again and its events dead-lettered again.
    this.counter.values.EventWriteFail += deadLetters;
  }

  /**
   * The broker refused the batch as too large (the topic's max.message.bytes is below
   * max.request.size): each record alone, so only those the broker refuses by themselves are
   * left out (reported and counted), never the rest of the batch. Records of the batch the
   * broker had taken may be sent twice (at least once).
   */
  private async sendEach(records: readonly KafkaRecord[]): Promise<void> {
    for (const r of records) {
      try {
        await this.publisher.send([r]);
      } catch (err) {
        if (!isTooLarge(err)) throw err;
        this.logger.error(`${this.label}: the broker refused a record of ${recordSize(r)} bytes for topic ${r.topic} as too large; raise the topic's max.message.bytes (the broker's message.max.bytes) to send such events; left out (${messageOf(err)})`);
        this.counter.values.EventWriteFail++;
      }
    }
  }
}

const props = {
  "kafka.bootstrap.servers": { type: "string", required: true, aliases: ["brokerList"], deprecated: ["brokerList"], doc: "Kafka brokers, host1:9092,host2:9092 (brokerList: deprecated name)" },
  "kafka.topic": { type: "string", default: "default-flume-topic", aliases: ["topic"], deprecated: ["topic"], doc: "Topic to write to, with Flume's escapes: %{header}, the date escapes (%Y %m %d %H ...; from the event's timestamp header, in the agent's time zone), %[localhost] %[IP] %[FQDN] (topic: deprecated name)" },
  flumeBatchSize: { type: "int", default: 100, min: 1, aliases: ["batchSize"], deprecated: ["batchSize"], roles: ["batchSize"], doc: "Events taken per transaction and sent as one batch (batchSize: deprecated name)" },
  "kafka.producer.acks": { type: "string", default: "1", aliases: ["requiredAcks"], deprecated: ["requiredAcks"], doc: "Acknowledgements a record needs: 0, 1 or all / -1 (requiredAcks: deprecated name). all makes the producer idempotent" },
  useFlumeEventFormat: { type: "boolean", default: false, doc: "Write the whole event (headers and body) as an Avro FlumeEvent, for a Flume Kafka source or channel with useFlumeEventFormat / parseAsFlumeEvent" },
  defaultPartitionId: { type: "int", min: 0, doc: "Partition every event goes to, unless partitionIdHeader says otherwise; default: the key's hash, or spread" },
  partitionIdHeader: { type: "string", doc: "Header whose value is the partition number of the event" },
  allowTopicOverride: { type: "boolean", default: true, doc: "Let the topicHeader header, else the escapes in kafka.topic, choose the topic of an event; false: kafka.topic as written" },
  topicHeader: { type: "string", default: "topic", doc: "Header naming the topic, with allowTopicOverride" },
  timestampHeader: { type: "string", doc: "Header whose value (epoch milliseconds) becomes the record's timestamp" },
  "kafka.deadLetterTopic": {
    type: "string",
    doc: "Ours, not Flume's: an event that can never be sent as configured (the topic its headers choose is no Kafka topic name, kafka.topic's date escapes find no timestamp header, its partitionIdHeader value is no number) is sent to this topic (its body or FlumeEvent, its headers as record headers, flume.dlq.error saying why), logged and counted (EventWriteFail), and the rest of its batch is sent; unset, its batch fails on every retry, as Flume's; the topic must exist",
  },
} as const;

const groups = {
  producerProps: { prefix: "kafka.producer.", doc: "Kafka producer settings (acks, compression.type, enable.idempotence, max.request.size, max.in.flight.requests.per.connection (Flume batches sent before the first is acknowledged, each committed once acknowledged; default 2, 1 = one at a time as Flume 1.11), client.id, request.timeout.ms, retries, retry.backoff.ms, security.protocol, sasl.*, ssl.*); others are reported at start" },
  kafkaHeaders: { prefix: "header.", doc: "header.NAME = KAFKA_NAME: the event's header NAME is sent as the record header KAFKA_NAME" },
} as const;

/** With the topic as written and no partition header, every event can be sent: nothing ever goes to the dead-letter topic. */
function unusedSinkDeadLetterTopic(): PropError {
  return {
    key: "kafka.deadLetterTopic",
    severity: "warning",
    message: "is set while allowTopicOverride is false and partitionIdHeader is not set: every event then goes to kafka.topic as written, none can fail to be sent as configured, so nothing is ever sent to this topic",
    hint: "remove kafka.deadLetterTopic, or set allowTopicOverride = true / partitionIdHeader",
  };
}

/** The sink's producer settings: several batches in flight, so max.in.flight.requests.per.connection counts. */
function sinkProducer(o: { "kafka.bootstrap.servers": string; "kafka.producer.acks": string; producerProps: Readonly<Record<string, string>> }, clientId: string, label: string, logger: Logger): ProducerSettings {
  return producerSettings({ bootstrap: o["kafka.bootstrap.servers"], bootstrapKey: "kafka.bootstrap.servers", props: o.producerProps, defaultAcks: o["kafka.producer.acks"], clientId, label, logger, batchesInFlight: true });
}

export const definition = defineComponent({
  ...builtIn.kafkaSink,
  doc: "Sends events to a Kafka topic; a batch's take commits only after the broker acknowledged every record (Flume's KafkaSink).",
  props,
  groups,
  validate(o) {
    const problems: PropError[] = [];
    const topic = o["kafka.topic"];
    const template = configurationProblems(() => topicTemplate(topic, o.allowTopicOverride));
    problems.push(...template);
    // Sent to as written: a name Kafka refuses fails every batch (Flume's producer's too), so it is said here.
    if (template.length === 0 && topicTemplate(topic, o.allowTopicOverride) === null) {
      const why = literalTopicWhy(topic);
      const hint = why && "set allowTopicOverride = true to choose the topic from the event's headers";
      problems.push(...topicNameProblems("kafka.topic", [topic], why).map((p) => (hint ? { ...p, hint } : p)));
    }
    problems.push(...configurationProblems(() => sinkProducer(o, "flume", "", silentLogger), "kafka.bootstrap.servers"));
    const dlq = o["kafka.deadLetterTopic"];
    if (dlq) {
      problems.push(...topicNameProblems("kafka.deadLetterTopic", [dlq]));
      if (!o.allowTopicOverride && !o.partitionIdHeader) problems.push(unusedSinkDeadLetterTopic());
    }
    return problems;
  },
  brokerLink: {
    protocol: "kafka",
    produces(o) {
      const s = sinkProducer(o, "flume", "", silentLogger);
      return { topic: o["kafka.topic"], batchSize: o.flumeBatchSize, idempotent: s.idempotent, requestTimeoutMs: s.requestTimeout, lossy: s.acks !== -1 };
    },
    topicHeader: (o) => (o.allowTopicOverride ? { header: o.topicHeader, brokers: brokerList(o["kafka.bootstrap.servers"]), name: "topicHeader", off: "allowTopicOverride" } : null),
  },
  create(o, ctx) {
    const label = `kafka sink ${ctx.name}`;
    return new KafkaSink(ctx, {
      producer: sinkProducer(o, `flume-${ctx.agentName}-${ctx.name}`, label, ctx.logger),
      topic: o["kafka.topic"],
      batchSize: o.flumeBatchSize,
      useFlumeEventFormat: o.useFlumeEventFormat,
      allowTopicOverride: o.allowTopicOverride,
      topicHeader: o.topicHeader,
      partitionIdHeader: o.partitionIdHeader || undefined,
      defaultPartitionId: o.defaultPartitionId,
      timestampHeader: o.timestampHeader || undefined,
      kafkaHeaders: o.kafkaHeaders,
      deadLetterTopic: o["kafka.deadLetterTopic"] || undefined,
    });
  },
});
