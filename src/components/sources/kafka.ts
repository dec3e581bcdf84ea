/**
 * Flume's Kafka source (org.apache.flume.source.kafka.KafkaSource): a consumer in the group
 * kafka.consumer.group.id reads kafka.topics (or every topic matching kafka.topics.regex), hands
 * up to batchSize events (waiting at most batchDurationMillis) to the channels as one batch, and
 * commits the batch's offsets only after the channel transaction committed, while it reads on
 * (see commitLater): a crash re-reads the batches not committed (uncommittedBatches at most),
 * never skips one. A refused batch goes back to be offered again.
 */
import type { SourceCounter } from "../../core/counters.ts";
import type { Event } from "../../core/event.ts";
import { type Logger, silentLogger } from "../../core/logger.ts";
import type { DeliveryFailure, Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import { STOPPED_STARTING } from "../../kafka/connect-bound.ts";
import { highestOfEachPartition, KafkaPoller, type KafkaMessage } from "../../kafka/consumer.ts";
import { KAFKA_SOURCE_COUNTERS } from "../../kafka/counters.ts";
import { BadRecordsSeen } from "../../kafka/bad-records.ts";
import { DeadLetters, unusedDeadLetterTopic } from "../../kafka/dead-letters.ts";
import { type KafkaBadRecordError, KafkaConnectAbortedError, KafkaDeadLetterError, messageOf, unlabelled } from "../../kafka/errors.ts";
import { KafkaPublisher } from "../../kafka/producer.ts";
import { eventOfRecord, keyText, setSourceHeaders, type SourceHeaderShape, SourceRecordEvent, type SourceRun, where } from "../../kafka/records.ts";
import { CopiedValues, ResponseRelease } from "../../kafka/response-release.ts";
import { brokerList, connectionProps, consumerSettings, type ConsumerSettings, producerSettings, type ProducerSettings } from "../../kafka/settings.ts";
import type { PropError } from "../../config/schema.ts";
import { configurationProblems } from "../../core/errors.ts";
import { topicNameProblems } from "../../kafka/topic-name.ts";
import { WarningThrottle } from "../../pipeline/warning-throttle.ts";
import { type ComponentContext, defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSource } from "./base.ts";

/**
 * uncommittedBatches' default: batches in the channels whose offsets are not committed yet, at
 * most; the next batch waits for a commit to end. A crash re-reads at most these (Flume's
 * source: one, as it waits for each commit). 4 let commits overlap reads under load.
 */
export const MOST_UNCOMMITTED = 4;

/**
 * An offset commit within COMMIT_WAIT_MS of the end of the one before waits for COMMIT_BATCHES
 * batches (uncommittedBatches lowers it) or until COMMIT_WAIT_MS after that end: a commit a batch,
 * when the broker answered commits faster than batches came, cost the agent ~200 µs of CPU each
 * and the broker more (it shares the machine). A commit after a quiet spell goes at once.
 */
const COMMIT_BATCHES = 2;
const COMMIT_WAIT_MS = 10;
/** After a failed offset commit, the soonest the next one goes (as a consumer backs off before it asks the group coordinator again). */
const COMMIT_RETRY_MS = 1000;

export interface KafkaSourceOptions {
  consumer: ConsumerSettings;
  topics?: readonly string[];
  topicsRegex?: RegExp;
  batchSize: number;
  batchDurationMillis: number;
  backoffSleepIncrement: number;
  maxBackoffSleep: number;
  useFlumeEventFormat: boolean;
  setTopicHeader: boolean;
  topicHeader: string;
  timestampHeader?: string;
  /** Flume header <- Kafka header (header.NAME = kafkaName, as Flume's source and sink read it). */
  flumeHeaders: Readonly<Record<string, string>>;
  /** kafka.deadLetterTopic: where records that are no FlumeEvent go, and the producer that sends them there. */
  deadLetters?: { topic: string; producer: ProducerSettings };
  /** Most batches in the channels with their offsets not committed (a crash re-reads at most these). */
  uncommittedBatches: number;
}

export class KafkaSource extends BaseSource implements PollableSource {
  readonly kind = "pollable";
  declare readonly counter: SourceCounter<(typeof KAFKA_SOURCE_COUNTERS)[number]>;
  readonly backoffSleepIncrement: number;
  readonly maxBackoffSleep: number;
  private readonly poller: KafkaPoller;
  private readonly label: string;
  private readonly deadLetters: DeadLetters | null;
  /** Bad records of the batch being read again (held, or refused by the channel): logged, counted and dead-lettered once. */
  private readonly badSeen = new BadRecordsSeen();
  private readonly responses = new ResponseRelease();
  /** The offset commit going, if one is (it never fails: a failure is logged). */
  private committing: Promise<void> | null = null;
  /** Batches put whose offsets are waiting for the commit going to end, committed together next: each one's records with the highest offset of their partition (highestOfEachPartition). */
  private waiting: (readonly KafkaMessage[])[] = [];
  /** Events of the waiting batches. */
  private waitingEvents = 0;
  /** The consumer's generation the waiting batches were read in. */
  private waitingGeneration = 0;
  /** Batches put whose offset commit has not ended (going or waiting). */
  private uncommitted = 0;
  /** Commits the waiting batches COMMIT_WAIT_MS after the last commit ended, when fewer than COMMIT_BATCHES wait. */
  private commitTimer: ReturnType<typeof setTimeout> | null = null;
  /** When the last offset commit ended (Date.now()). */
  private commitEnded = 0;
  /** After a failed commit: no commit before this time (Date.now()), unless the batches waiting reach uncommittedBatches. */
  private commitRetryAt = 0;
  private readonly commitWarnings: WarningThrottle;
  private readonly onBad = (m: KafkaMessage, error: KafkaBadRecordError): boolean => this.badSeen.report(m, error, this.deadLetters?.add);
  /** The headers set on every event besides the timestamp. */
  private readonly headerShape: SourceHeaderShape;

  constructor(
    ctx: ComponentContext,
    readonly options: KafkaSourceOptions,
  ) {
    const label = `kafka source ${ctx.name}`;
    super(ctx, { label }, KAFKA_SOURCE_COUNTERS);
    this.label = label;
    this.backoffSleepIncrement = options.backoffSleepIncrement;
    this.maxBackoffSleep = options.maxBackoffSleep;
    this.headerShape = {
      topicHeader: options.setTopicHeader ? options.topicHeader : null,
      timestampHeader: options.timestampHeader ?? null,
      mapped: Object.keys(options.flumeHeaders).length > 0 ? options.flumeHeaders : null,
    };
    this.poller = new KafkaPoller(label, options.consumer, { topics: options.topics, regex: options.topicsRegex }, ctx.logger, options.batchSize * 2);
    this.commitWarnings = new WarningThrottle(ctx.clock, (m) => ctx.logger.warn(m));
    const dlq = options.deadLetters;
    this.deadLetters = dlq ? new DeadLetters(dlq.topic, new KafkaPublisher(`${label} dead letters`, dlq.producer, ctx.logger)) : null;
  }

  get connected(): boolean {
    return this.poller.connected;
  }

  async start(): Promise<void> {
    this.beginStart();
    // A broker that does not answer or a missing topic fails the start: the supervisor retries with backoff and /ready names the error.
    // The dead-letter topic must exist before a bad record needs it.
    const dlq = this.deadLetters;
    if (dlq) {
      try {
        await dlq.publisher.connect(dlq.topic);
      } catch (err) {
        await dlq.publisher.close();
        if (err instanceof KafkaConnectAbortedError) throw err;
        throw new KafkaDeadLetterError(`${this.label}: the dead-letter topic ${dlq.topic} (kafka.deadLetterTopic) cannot be written: ${unlabelled(dlq.publisher.label, err)}; create it, or remove kafka.deadLetterTopic to only log and skip records that are no FlumeEvent`, { cause: err });
      }
    }
    try {
      await this.poller.connect();
    } catch (err) {
      // Not started, so never stopped: the dead-letter producer would stay connected.
      await dlq?.publisher.close();
      throw err;
    }
    this.badSeen.clear();
    this.counter.values.OpenConnectionCount = 1;
    this.state = "START";
    this.logger.info(`${this.label} started (brokers ${this.poller.brokers}, topics ${this.poller.topics.join(",")}, group ${this.options.consumer.groupId})`);
  }

  readFailure(): DeliveryFailure | null {
    return this.state === "START" ? this.poller.failure : null;
  }

  abortStart(): void {
    this.deadLetters?.publisher.abortConnect(STOPPED_STARTING);
    this.poller.abortConnect(STOPPED_STARTING);
  }

  async stop(): Promise<void> {
    this.state = "STOP";
    // What was put is committed before the consumer leaves: a clean stop re-reads nothing.
    await this.commitsEnded();
    this.commitWarnings.stop();
    await this.poller.close();
    await this.deadLetters?.publisher.close();
    this.counter.values.OpenConnectionCount = 0;
    this.markStopped();
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }

  /**
   * The events of a batch, with the headers Flume's source sets,
   * their bodies in copies of the values: no event holds a fetch response, which is freed once
   * the batch is committed.
   */
  private eventsOf(msgs: readonly KafkaMessage[], copied: CopiedValues): Event[] {
    const events: Event[] = [];
    const { buffers, starts } = copied;
    const shape = this.headerShape;
    const flumeEvents = this.options.useFlumeEventFormat;
    // Headers from the run, offset, key and timestamp alone (no header.NAME): made when read.
    const lazy = shape.mapped === null;
    let run: SourceRun | null = null;
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i];
      if (run === null || m.partition !== run.partition || m.topic !== run.topic) run = { shape, topic: m.topic, partition: m.partition };
      const at = starts[i];
      if (flumeEvents) {
        const e = this.flumeEventOf(m, run, buffers[i], at);
        if (e) events.push(e);
        continue;
      }
      const key = m.key === null ? null : keyText(m);
      const e = new SourceRecordEvent(buffers[i], at, at + m.valueLength, run, m.offset, key, m.timestamp);
      if (!lazy && SourceRecordEvent.needsRecord(shape, m)) e.headers = setSourceHeaders({}, run, m.offset, key, m.timestamp, m.headers);
      events.push(e);
    }
    return events;
  }

  /** A record's value read as a FlumeEvent (null for one that is not), with the source's headers where it has none. `copy[at...]`: the value's copy. */
  private flumeEventOf(m: KafkaMessage, run: SourceRun, copy: Buffer, at: number): Event | null {
    const e = eventOfRecord(m, true, this.label, this.logger, this.onBad);
    if (!e) return null;
    // Its body is a view of the record's value, in the fetch response: the same part of the copy instead.
    if (e.body.buffer === m.bytes.buffer) {
      const from = at + e.body.byteOffset - m.bytes.byteOffset - m.valueAt;
      e.body = copy.subarray(from, from + e.body.length);
    }
    setSourceHeaders(e.headers, run, m.offset, keyText(m), m.timestamp, m.headers);
    return e;
  }

  async process(): Promise<Status> {
    if (this.state !== "START" || !this.poller.ensureConnected()) return "BACKOFF";
    const { batchSize, batchDurationMillis } = this.options;
    const started = Date.now();
    // As Flume's: a batch whose time ran out before it filled ended on a poll that found nothing.
    if (!(await this.poller.waitFor(batchSize, batchDurationMillis))) this.counter.values.KafkaEmptyCount++;
    const generation = this.poller.generation;
    const msgs = this.poller.take(batchSize);
    if (msgs.length === 0) return "BACKOFF";
    this.counter.values.KafkaEventGetTimer += Date.now() - started;
    const copied = new CopiedValues(msgs);
    const events = this.eventsOf(msgs, copied);
    if (!(await this.sendDeadLetters(msgs, generation))) return "BACKOFF";
    // Counted once the batch goes on: a batch held for its dead letters counts them only when they went, and a batch read again counts each once.
    this.counter.values.EventReadFail += this.badSeen.settle();
    // At most uncommittedBatches batches are in the channels with their offsets not committed (a crash re-reads at most these).
    while (this.uncommitted >= this.options.uncommittedBatches) await (this.committing ?? this.commitWhenDue());
    if (events.length > 0) {
      const refused = await this.emitter.offer(events, `topics ${this.poller.topics.join(",")}`);
      if (refused) {
        this.giveBack(msgs, generation);
        return "BACKOFF";
      }
    }
    this.commitLater(msgs, generation);
    // The events hold copies: the responses are done with once the batch is in the channels (a batch in the channels is never given back).
    this.responses.committed(copied.sources);
    return "READY";
  }

  /**
   * Commits a batch's offsets once its channel transaction committed, while the next batches
   * are read: one commit goes at a time, in order, and the batches put while it goes are
   * committed together by the next one (each commit took ~200 µs of the agent's CPU and more
   * of the broker's: one a batch was a fifth of the source's CPU). A failure is logged and the
   * offsets go with the next commit, at least COMMIT_RETRY_MS later (the coordinator moving to
   * another broker takes seconds); reading goes on meanwhile.
   */
  private commitLater(msgs: readonly KafkaMessage[], generation: number): void {
    // Held batches are given back at the head and read first: this batch, gone on, held every bad record seen.
    this.badSeen.clear();
    // Read before the consumer started again from the group's committed offsets (a rebalance while
    // the batch was put): read again from there, by this member or by the partition's new owner;
    // an offset committed for them now could move that owner's back.
    if (generation !== this.poller.generation) return;
    this.dropStaleWaiting();
    this.waitingGeneration = generation;
    this.uncommitted++;
    this.waiting.push(highestOfEachPartition([msgs]));
    this.waitingEvents += msgs.length;
    this.commitSoon();
  }

  /** Commits the waiting batches unless a commit is going, or the last one ended under COMMIT_WAIT_MS ago and fewer than COMMIT_BATCHES wait (then when it is COMMIT_WAIT_MS ago). */
  private commitSoon(): void {
    if (this.committing || this.waiting.length === 0 || this.commitTimer) return;
    const now = Date.now();
    if (now < this.commitRetryAt) {
      this.commitTimer = setTimeout(() => this.commitWaiting(), this.commitRetryAt - now);
      return;
    }
    const wait = this.commitEnded + COMMIT_WAIT_MS - now;
    if (wait <= 0 || this.waiting.length >= Math.min(COMMIT_BATCHES, this.options.uncommittedBatches)) this.commitWaiting();
    else this.commitTimer = setTimeout(() => this.commitWaiting(), wait);
  }

  /** Commits the waiting batches now, or once COMMIT_RETRY_MS passed since a failed commit. */
  private async commitWhenDue(): Promise<void> {
    const wait = this.commitRetryAt - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    await (this.committing ?? this.commitWaiting());
  }

  private commitWaiting(): Promise<void> {
    if (this.commitTimer) {
      clearTimeout(this.commitTimer);
      this.commitTimer = null;
    }
    this.dropStaleWaiting();
    const batches = this.waiting;
    const events = this.waitingEvents;
    this.waiting = [];
    this.waitingEvents = 0;
    if (batches.length === 0) return Promise.resolve();
    const started = Date.now();
    const generation = this.waitingGeneration;
    let failed = false;
    const done = this.poller
      .commitAll(batches)
      .then(
        () => {
          this.counter.values.KafkaCommitTimer += Date.now() - started;
        },
        (err: unknown) => {
          // In the channels already: an offset not committed means a re-read after a crash or a rebalance (at least once).
          failed = true;
          let fate: string;
          if (this.state !== "START") fate = "the source stops: its next start reads them again";
          else if (generation !== this.poller.generation) fate = "the consumer started again from the group's committed offsets: they are read again";
          else fate = `they go with the next commit, in ${COMMIT_RETRY_MS} ms at the soonest (until it lands, a restart or a rebalance reads them again)`;
          this.commitWarnings.warn(`${this.label}: committing the offsets of ${events} events failed (${messageOf(err)}); ${fate}`);
        },
      )
      .then(() => {
        this.uncommitted -= batches.length;
        this.committing = null;
        this.commitEnded = Date.now();
        if (failed) this.commitAgain(batches, events, generation);
        else this.commitWarnings.stop();
        this.commitSoon();
      });
    this.committing = done;
    return done;
  }

  /**
   * The offsets of a failed commit wait again, as one batch, for the next commit (Flume's source
   * keeps them for its next commit too): unless the source stops, or the consumer started again
   * from the group's committed offsets since (they are read again from there).
   */
  private commitAgain(batches: readonly (readonly KafkaMessage[])[], events: number, generation: number): void {
    if (this.state !== "START" || generation !== this.poller.generation) return;
    this.dropStaleWaiting();
    this.waitingGeneration = generation;
    this.waiting.unshift(highestOfEachPartition(batches));
    this.waitingEvents += events;
    this.uncommitted++;
    this.commitRetryAt = Date.now() + COMMIT_RETRY_MS;
  }

  /** Waiting batches read before the consumer last started again from the committed offsets commit nothing (see commitLater). */
  private dropStaleWaiting(): void {
    if (this.waiting.length === 0 || this.waitingGeneration === this.poller.generation) return;
    this.uncommitted -= this.waiting.length;
    this.waiting = [];
    this.waitingEvents = 0;
  }

  /**
   * A batch not put goes back to be read first, unless the consumer started again from the
   * group's committed offsets since it was read (a rebalance): its records come again from
   * there, by this member or by the partition's new owner, so given back they would come twice.
   */
  private giveBack(msgs: KafkaMessage[], generation: number): void {
    if (this.poller.generation === generation) this.poller.giveBack(msgs);
  }

  /** Waits until the offsets of every batch put are committed (or their commit failed). */
  private async commitsEnded(): Promise<void> {
    for (;;) {
      if (this.committing) await this.committing;
      else if (this.waiting.length > 0) await this.commitWaiting();
      else return;
    }
  }

  /**
   * Sends the batch's bad records to the dead-letter topic before the batch goes on. When the
   * topic refuses them the batch is held: given back, no offset committed, nothing put, and
   * offered again after the runner's backoff (a bad record is never skipped unrecorded).
   */
  private async sendDeadLetters(msgs: KafkaMessage[], generation: number): Promise<boolean> {
    const dlq = this.deadLetters;
    if (!dlq || dlq.size === 0) return true;
    const bad = dlq.size;
    try {
      await dlq.flush();
      return true;
    } catch (err) {
      this.counter.values.KafkaDeadLetterFailCount++;
      this.logger.error(`${this.label}: cannot write ${bad} record(s) that are no FlumeEvent to the dead-letter topic ${dlq.topic} (kafka.deadLetterTopic): ${messageOf(err)}; the batch of ${msgs.length} records from ${where(msgs[0])} is held (not put, offsets not committed) and read again after backoff`);
      this.giveBack(msgs, generation);
      return false;
    }
  }
}

const props = {
  "kafka.bootstrap.servers": { type: "string", required: true, doc: "Kafka brokers, host1:9092,host2:9092" },
  "kafka.consumer.group.id": { type: "string", default: "flume", aliases: ["groupId"], deprecated: ["groupId"], doc: "Consumer group; agents with the same group share the partitions (groupId: deprecated name)" },
  "kafka.topics": { type: "string", aliases: ["topic"], deprecated: ["topic"], doc: "Comma-separated topics to read (topic: deprecated name)" },
  "kafka.topics.regex": { type: "string", doc: "Read every topic whose name matches this regular expression, and topics created later that match (checked every kafka.consumer.metadata.max.age.ms); overrides kafka.topics" },
  batchSize: { type: "int", default: 1000, min: 1, roles: ["batchSize"], doc: "Most events written to the channels in one batch" },
  batchDurationMillis: { type: "int", default: 1000, min: 0, doc: "Milliseconds a batch waits to fill before it is written" },
  backoffSleepIncrement: { type: "int", default: 50, min: 1, doc: "Milliseconds added to the wait after each empty poll" },
  maxBackoffSleep: { type: "int", default: 1000, min: 1, doc: "Longest wait after empty polls, in milliseconds" },
  useFlumeEventFormat: { type: "boolean", default: false, doc: "Read each record as an Avro FlumeEvent (headers and body), as a Flume Kafka sink with useFlumeEventFormat writes it" },
  setTopicHeader: { type: "boolean", default: true, doc: "Put the record's topic in the topicHeader header" },
  topicHeader: { type: "string", default: "topic", doc: "Header the topic goes to, with setTopicHeader" },
  timestampHeader: { type: "string", doc: "Ours, not Flume 1.11's source: a header the record's Kafka timestamp also goes to (the timestamp header has it already, unless a FlumeEvent brings its own)" },
  "kafka.deadLetterTopic": { type: "string", doc: "Ours, not Flume's: with useFlumeEventFormat, records that are no Avro FlumeEvent are sent to this topic (as they were, with headers flume.dlq.topic, flume.dlq.partition, flume.dlq.offset and flume.dlq.error) besides being logged, counted (EventReadFail) and skipped; the topic must exist" },
  uncommittedBatches: { type: "int", default: MOST_UNCOMMITTED, min: 1, doc: "Ours, not Flume's: batches in the channels whose offsets may still be committing while the source reads on; a crash re-reads at most these. 1 is Flume 1.11's bound (one batch re-read)" },
  migrateZookeeperOffsets: { type: "boolean", default: true, doc: "Flume's ZooKeeper offset migration: no longer applies (Kafka keeps the offsets); accepted and ignored" },
} as const;

const groups = {
  consumerProps: { prefix: "kafka.consumer.", doc: "Kafka consumer settings (auto.offset.reset, session.timeout.ms, heartbeat.interval.ms, fetch.*, max.partition.fetch.bytes, isolation.level, client.id, security.protocol, sasl.*, ssl.*); others are reported at start" },
  flumeHeaders: { prefix: "header.", doc: "header.NAME = KAFKA_HEADER: the record header KAFKA_HEADER becomes the event header NAME (as the sink's header.NAME, read the other way)" },
} as const;

function settings(o: { "kafka.bootstrap.servers": string; "kafka.consumer.group.id": string; consumerProps: Readonly<Record<string, string>> }, ctx: Pick<ComponentContext, "agentName" | "name" | "logger">, label: string): ConsumerSettings {
  return consumerSettings({
    bootstrap: o["kafka.bootstrap.servers"],
    bootstrapKey: "kafka.bootstrap.servers",
    props: o.consumerProps,
    groupId: o["kafka.consumer.group.id"],
    // The Java consumer's default, which Flume's source keeps.
    defaultOffsetReset: "latest",
    clientId: `flume-${ctx.agentName}-${ctx.name}`,
    label,
    logger: ctx.logger,
  });
}

/** The producer of the dead-letter topic: the consumer's connection (brokers, security, timeouts), every send acknowledged by all replicas. */
function deadLetterProducer(o: { "kafka.bootstrap.servers": string; consumerProps: Readonly<Record<string, string>> }, ctx: Pick<ComponentContext, "agentName" | "name">, label: string, logger: Logger): ProducerSettings {
  return producerSettings({
    bootstrap: o["kafka.bootstrap.servers"],
    bootstrapKey: "kafka.bootstrap.servers",
    props: connectionProps(o.consumerProps),
    defaultAcks: "all",
    clientId: `flume-${ctx.agentName}-${ctx.name}-dlq`,
    label,
    logger,
  });
}

function topicList(raw: string | undefined): string[] {
  return (raw ?? "").split(",").map((t) => t.trim()).filter(Boolean);
}

function topicsRegex(raw: string | undefined): RegExp | undefined {
  return raw ? new RegExp(`^(?:${raw})$`) : undefined;
}

export const definition = defineComponent({
  ...builtIn.kafkaSource,
  doc: "Reads Kafka topics in a consumer group; commits offsets only after the channel transaction committed (Flume's KafkaSource).",
  props,
  groups,
  validate(o) {
    const errors: PropError[] = [];
    if (!o["kafka.topics"] && !o["kafka.topics.regex"]) errors.push({ key: "kafka.topics", message: "is required: give kafka.topics (comma-separated) or kafka.topics.regex" });
    if (!o["kafka.topics.regex"]) errors.push(...topicNameProblems("kafka.topics", topicList(o["kafka.topics"])));
    if (o["kafka.deadLetterTopic"]) errors.push(...topicNameProblems("kafka.deadLetterTopic", [o["kafka.deadLetterTopic"]]));
    try {
      topicsRegex(o["kafka.topics.regex"]);
    } catch (err) {
      errors.push({ key: "kafka.topics.regex", message: `is not a valid regular expression: ${messageOf(err)}` });
    }
    errors.push(
      ...configurationProblems(() => {
        settings(o, { agentName: "a1", name: "r", logger: silentLogger }, "");
        if (o["kafka.deadLetterTopic"]) deadLetterProducer(o, { agentName: "a1", name: "r" }, "", silentLogger);
      }, "kafka.bootstrap.servers"),
    );
    // Without the Avro format every record is a body: none can fail to read, none is dead-lettered.
    if (o["kafka.deadLetterTopic"] && !o.useFlumeEventFormat) errors.push(unusedDeadLetterTopic("useFlumeEventFormat"));
    return errors;
  },
  brokerLink: {
    protocol: "kafka",
    consumes: (o) => ({
      topics: topicList(o["kafka.topics"]),
      regex: o["kafka.topics.regex"] || undefined,
      group: o["kafka.consumer.group.id"],
      batchSize: o.batchSize,
      batchDurationMs: o.batchDurationMillis,
    }),
    topicHeader: (o) => (o.setTopicHeader ? { header: o.topicHeader, brokers: brokerList(o["kafka.bootstrap.servers"]), name: "topicHeader", off: "setTopicHeader" } : null),
  },
  create(o, ctx) {
    const label = `kafka source ${ctx.name}`;
    const regex = topicsRegex(o["kafka.topics.regex"]);
    return new KafkaSource(ctx, {
      consumer: settings(o, ctx, label),
      topics: regex ? undefined : topicList(o["kafka.topics"]),
      topicsRegex: regex,
      batchSize: o.batchSize,
      batchDurationMillis: o.batchDurationMillis,
      backoffSleepIncrement: o.backoffSleepIncrement,
      maxBackoffSleep: o.maxBackoffSleep,
      useFlumeEventFormat: o.useFlumeEventFormat,
      setTopicHeader: o.setTopicHeader,
      topicHeader: o.topicHeader,
      timestampHeader: o.timestampHeader || undefined,
      flumeHeaders: o.flumeHeaders,
      deadLetters: o["kafka.deadLetterTopic"] ? { topic: o["kafka.deadLetterTopic"], producer: deadLetterProducer(o, ctx, label, ctx.logger) } : undefined,
      uncommittedBatches: o.uncommittedBatches,
    });
  },
});
