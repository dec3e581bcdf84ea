/**
 * One Kafka consumer in a consumer group for a source or a channel. Records are fetched ahead
 * into a buffer bounded in records and in bytes (READ_AHEAD_BYTES); the user takes them in batches and commits a batch's offsets only
 * once it is safe (the source: after the channel transaction committed; the channel: at its
 * take commit). A batch that failed goes back to the head of the buffer, in order. Offsets are
 * never committed automatically, so a crash re-reads at most what was taken and not committed.
 * After a rebalance the buffer is dropped and fetching starts again from the committed offsets.
 * Every metadata.max.age.ms, as the Java consumer: with a pattern (kafka.topics.regex) the topics
 * are listed again and new matching ones join the subscription; and a member that led the last
 * assignment looks at the partition counts of the group's topics. Either makes the group
 * rebalance once, to spread the new partitions.
 *
 * The client library keeps the group, metadata, connections and offset commits; the fetching
 * and the reading of record batches are ours (fetcher.ts, record-batch-reader.ts): its message
 * stream made several objects, a copy and a commit closure per record.
 */
import type { Consumer } from "@platformatic/kafka";
import { systemClock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { DeliveryFailure } from "../core/sink.ts";
import { WarningThrottle } from "../pipeline/warning-throttle.ts";
import { type KafkaModule, loadKafka } from "./client.ts";
import { ConnectBound } from "./connect-bound.ts";
import { isUnknownTopic, KafkaConnectAbortedError, KafkaTopicMissingError, messageOf, namedBy } from "./errors.ts";
import { withListenerHint } from "./listener-probe.ts";
import { DirectCommits } from "./commit-api.ts";
import { useOwnFetchReader } from "./fetch-api.ts";
import { Fetcher } from "./fetcher.ts";
import { GROUP_PROTOCOLS, watchedRangeAssigner } from "./group-assigner.ts";
import type { FetchedRecord } from "./record-batch-reader.ts";
import { clientOptions, type ConsumerSettings, describeBrokers } from "./settings.ts";

export type KafkaMessage = FetchedRecord;

export interface Subscription {
  topics?: readonly string[];
  /** kafka.topics.regex: every topic whose name matches, at connect and then every metadata.max.age.ms. */
  regex?: RegExp;
}

type KafkaConsumer = Consumer<Buffer, Buffer, Buffer, Buffer>;

/**
 * Bytes of fetched records (keys and values) held ahead of what was taken, at most: a fetch asks
 * for half of it (fetch.max.bytes and max.partition.fetch.bytes lower that, never raise it), and
 * fetching pauses while half of it waits, so what is held stays below twice a fetch. The Java
 * client's 1 MB a partition brought ~9,000 records of 100 bytes at once; 256 KB fetches took
 * 15-25 MB off the source's peak RSS at the same rate. 240 KB, not 256: a response then fits in
 * one socket read of Bun's (256 KB at most), so the client hands it over as it came instead of
 * copying the reads together, and the source frees it whole (response-release.ts). A record
 * batch larger than a fetch still comes whole (the broker sends the first one of any size), so
 * large records are read as before.
 */
export const READ_AHEAD_BYTES = 480 * 1024;
const FETCH_BYTES = READ_AHEAD_BYTES / 2;

function sizeOf(m: KafkaMessage): number {
  return m.valueLength + (m.key?.length ?? 0);
}

function sizeOfAll(msgs: readonly KafkaMessage[]): number {
  let n = 0;
  for (const m of msgs) n += sizeOf(m);
  return n;
}

function keepHighest(last: Map<string, Map<number, KafkaMessage>>, m: KafkaMessage): void {
  let partitions = last.get(m.topic);
  if (!partitions) last.set(m.topic, (partitions = new Map()));
  const prev = partitions.get(m.partition);
  if (!prev || prev.offset < m.offset) partitions.set(m.partition, m);
}

/**
 * The record of each partition with its highest offset in the given batches: what committing
 * them commits (its offset + 1, its leader epoch). For a batch put, what is kept of it until its
 * commit: its records are then garbage as soon as it is put, not once committed.
 */
export function highestOfEachPartition(batches: readonly (readonly KafkaMessage[])[]): KafkaMessage[] {
  // Records come in runs of one partition, looked up once a run.
  const last = new Map<string, Map<number, KafkaMessage>>();
  for (const msgs of batches) {
    let run: KafkaMessage | null = null;
    for (const m of msgs) {
      if (run !== null && m.partition === run.partition && m.topic === run.topic) {
        if (m.offset > run.offset) run = m;
        continue;
      }
      if (run !== null) keepHighest(last, run);
      run = m;
    }
    if (run !== null) keepHighest(last, run);
  }
  return [...last.values()].flatMap((partitions) => [...partitions.values()]);
}

/** What the client's consumer:group:join event tells. */
interface GroupJoin {
  isLeader?: boolean;
  assignments?: readonly { topic: string; partitions: readonly number[] }[];
}

/** Topic -> partitions of a lone member's assignment: the client gives it every partition of its topics without asking the assigner. */
function wholeTopics(assignments: GroupJoin["assignments"]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const a of assignments ?? []) counts.set(a.topic, Math.max(counts.get(a.topic) ?? 0, a.partitions.length));
  return counts;
}

export class KafkaPoller {
  private kafka: KafkaModule | null = null;
  private consumer: KafkaConsumer | null = null;
  private readonly connecting = new ConnectBound();
  /** The consumer's offset commits (commit-api.ts). */
  private commits: DirectCommits | null = null;
  private fetcher: Fetcher | null = null;
  private metadataTimer: ReturnType<typeof setInterval> | null = null;
  private following: Promise<void> | null = null;
  private watching: Promise<void> | null = null;
  /** Topic -> partitions, as the group's last assignment saw them, when this member made it (led the group); else null. */
  private ledAssignment: Map<string, number> | null = null;
  private buffer: KafkaMessage[] = [];
  private head = 0;
  /** Bytes of the buffered records' keys and values. */
  private heldBytes = 0;
  private waiter: (() => void) | null = null;
  /** Offset commits, one at a time in the order asked: a later commit of a partition never lands before an earlier one. */
  private committing: Promise<void> = Promise.resolve();
  /** The topics the consumer subscribed to. */
  topics: string[] = [];
  /** While reading fails (the consumer lost, connecting again failing): the last error, since the first; null once connected again. */
  failure: DeliveryFailure | null = null;
  /** The failure set while partitions wait for their leader (the consumer kept): cleared when they are fetched again. */
  private leaderWait: DeliveryFailure | null = null;
  private readonly leaderWarnings = new WarningThrottle(systemClock, (m) => this.logger.warn(m));
  /**
   * Counts the times fetching started again from the group's committed offsets (a rebalance,
   * the consumer lost): a record taken in an older generation is fetched again, by this member
   * or the partition's new owner, so it is not given back.
   */
  generation = 0;
  /** The consumer group's generation (Kafka's) the records of this generation are fetched in: their offsets are committed only in it. */
  private groupGeneration = -1;
  /** Called with the count of records each fetch brought and the milliseconds from its request to them read (a channel counts what arrived for its ChannelSize, and times its fetches). */
  onRecords?: (count: number, ms: number) => void;
  /**
   * Called at each new generation (a rebalance, the consumer dropped: brokers lost, closed),
   * with the buffered records dropped (maybe none): fetching starts again from the committed
   * offsets. A channel holds the records of rolled-back takes waiting here (taken-offsets.ts):
   * it lets go of them, and of what it kept of the generation that ended.
   */
  onDropped?: (records: readonly KafkaMessage[]) => void;

  constructor(
    readonly label: string,
    readonly settings: ConsumerSettings,
    private readonly subscription: Subscription,
    private readonly logger: Logger,
    /** Records fetched ahead at most (fetching pauses above it). */
    private readonly maxBuffered: number,
    /** Called when records arrive into an empty buffer (a channel wakes its sink runners). */
    private readonly onArrival?: () => void,
  ) {}

  get brokers(): string {
    return describeBrokers(this.settings);
  }

  get connected(): boolean {
    return this.fetcher !== null;
  }

  get buffered(): number {
    return this.buffer.length - this.head;
  }

  /** Bytes of the fetched records not taken yet (keys and values): below READ_AHEAD_BYTES unless one record batch is larger. */
  get bufferedBytes(): number {
    return this.heldBytes;
  }

  /** Whether fetching pauses: the buffer holds maxBuffered records or a fetch's bytes. */
  private get full(): boolean {
    return this.buffered >= this.maxBuffered || this.heldBytes >= FETCH_BYTES;
  }

  /** Joins the group and starts fetching; fails with the reason when no broker answers or a topic is missing. */
  async connect(): Promise<void> {
    if (this.fetcher) return;
    const kafka = (this.kafka ??= await loadKafka());
    const s = this.settings;
    const consumer = new kafka.Consumer<Buffer, Buffer, Buffer, Buffer>({
      ...clientOptions(s),
      groupId: s.groupId,
      partitionAssigner: watchedRangeAssigner((counts) => (assigning = counts)),
      protocols: GROUP_PROTOCOLS,
      autocommit: false,
      sessionTimeout: s.sessionTimeout,
      heartbeatInterval: s.heartbeatInterval,
      rebalanceTimeout: s.rebalanceTimeout,
      maxWaitTime: s.maxWaitTime,
      minBytes: s.minBytes,
      maxBytes: s.maxBytes,
      maxBytesPerPartition: s.maxBytesPerPartition,
      isolationLevel: s.isolationLevel,
    });
    useOwnFetchReader(kafka, consumer);
    const commits = new DirectCommits(kafka, consumer);
    const fetcher = new Fetcher(kafka, consumer, s, this.label, this.logger, { arrived: (records, bytes, ms) => this.arrived(records, bytes, ms), full: () => this.full, failed: (err) => this.lost(fetcher, messageOf(err)), waiting: (problem, ms) => this.waitingForLeaders(fetcher, problem, ms) }, FETCH_BYTES, () => this.topics);
    // The client reports a rejoin that failed as an 'error' event, which with no listener would stop the agent.
    // One before the start ended (a rebalance while the positions were read) fails the start: the
    // member is out of the group, and the partitions it was given may be another member's now.
    let starting = true;
    let failedRejoin: string | null = null;
    consumer.on("error", (err: unknown) => {
      const why = `rejoining consumer group ${s.groupId} failed: ${messageOf(err)}`;
      if (starting) failedRejoin ??= why;
      else this.lost(fetcher, why);
    });
    // Every join after the first (a rebalance; one during the start too): what was fetched may now be another member's.
    let joined = false;
    // Set by the assigner while this member leads a join of several members, read as that join ends.
    let assigning: Map<string, number> | null = null;
    consumer.on("consumer:group:join", (join?: GroupJoin) => {
      const led = assigning;
      assigning = null;
      if (fetcher.stopped || (this.fetcher !== null && this.fetcher !== fetcher)) return;
      this.ledAssignment = join?.isLeader ? (led ?? wholeTopics(join.assignments)) : null;
      if (!joined) return;
      this.groupGeneration = consumer.generationId;
      this.forgetLeaderWait();
      this.dropBuffered(join?.assignments);
      fetcher.restart().catch((err) => this.lost(fetcher, messageOf(err)));
    });
    // Bounded: the client may keep retrying a broker that came back in another state, or one that never answers.
    const bound = s.requestTimeout + s.sessionTimeout;
    try {
      const join = async () => {
        const topics = await this.resolveTopics(consumer);
        for (const t of topics) consumer.topics.track(t);
        this.topics = topics;
        await consumer.joinGroup({});
        this.groupGeneration = consumer.generationId;
        joined = true;
        await fetcher.restart();
      };
      await this.connecting.run(join, bound, () => new Error(`no answer from the brokers within ${bound} ms (request.timeout.ms + session.timeout.ms)`));
      if (failedRejoin !== null) throw new Error(failedRejoin);
      this.consumer = consumer;
      this.commits = commits;
      this.fetcher = fetcher;
    } catch (err) {
      await fetcher.stop();
      await consumer.close(true).catch(() => {});
      if (err instanceof KafkaConnectAbortedError) throw err;
      throw await this.explain(err);
    } finally {
      starting = false;
    }
    this.metadataTimer = setInterval(() => {
      if (this.subscription.regex) void this.followPattern();
      void this.watchPartitions();
    }, s.metadataMaxAge);
    this.metadataTimer.unref?.();
  }

  /**
   * The consumer cannot go on: fetching failed past the client's retries (brokers gone), or a
   * rejoin after a rebalance failed (the member is out of the group, no heartbeat scheduled).
   * It is dropped, and the owner connects again.
   */
  private lost(fetcher: Fetcher, why: string): void {
    if (this.fetcher !== fetcher) return;
    const error = `${this.label}: the Kafka consumer at ${this.brokers} stopped (${why}); connecting again`;
    this.failing(error);
    this.logger.warn(error);
    void this.crash();
  }

  /** Partitions wait for their leader (problem), or are all fetched again (null): told on /ready and in the log, the consumer kept. */
  private waitingForLeaders(fetcher: Fetcher, problem: string | null, ms: number): void {
    if (this.fetcher !== fetcher) return;
    if (problem !== null) {
      this.leaderWarnings.warn(`${this.label}: ${problem}`);
      if (this.failure === null || this.failure === this.leaderWait) this.failure = this.leaderWait = { error: `${this.label}: ${problem}`, since: Date.now() - ms };
      return;
    }
    this.forgetLeaderWait();
    this.logger.info(`${this.label}: fetching from the partitions' leaders again, after ${ms} ms`);
  }

  private forgetLeaderWait(): void {
    this.leaderWarnings.stop();
    if (this.failure === this.leaderWait) this.failure = null;
    this.leaderWait = null;
  }

  private failing(error: string): void {
    this.failure = { error, since: this.failure?.since ?? Date.now() };
  }

  /** Lists the topics again and reads the new ones that match the pattern. One check at a time. */
  followPattern(): Promise<void> {
    this.following ??= this.addMatchingTopics()
      .catch((err) => this.logger.warn(`${this.label}: listing the topics for kafka.topics.regex ${this.subscription.regex!.source} failed (${messageOf(err)}); trying again in ${this.settings.metadataMaxAge} ms`))
      .finally(() => (this.following = null));
    return this.following;
  }

  private async addMatchingTopics(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer || !this.subscription.regex) return;
    const fresh = (await this.matchingTopics()).filter((t) => !this.topics.includes(t));
    if (fresh.length === 0 || this.consumer !== consumer) return;
    for (const t of fresh) consumer.topics.track(t);
    this.topics = [...this.topics, ...fresh];
    // The group rebalances to spread the new partitions; the join restarts the fetching.
    await consumer.joinGroup({});
    this.logger.info(`${this.label}: reading ${fresh.length === 1 ? "topic" : "topics"} ${fresh.join(", ")} too (created since, matching kafka.topics.regex ${this.subscription.regex.source})`);
  }

  /**
   * When this member made the group's last assignment: reads the partition counts of its topics
   * again, and makes the group rebalance if one changed (partitions added). One check at a time.
   */
  watchPartitions(): Promise<void> {
    this.watching ??= this.rebalanceOnNewPartitions()
      .catch((err) => {
        // Closed meanwhile: nothing to report.
        if (this.consumer) this.logger.warn(`${this.label}: reading the partition counts of the group's topics failed (${messageOf(err)}); trying again in ${this.settings.metadataMaxAge} ms (metadata.max.age.ms)`);
      })
      .finally(() => (this.watching = null));
    return this.watching;
  }

  private async rebalanceOnNewPartitions(): Promise<void> {
    const consumer = this.consumer;
    const led = this.ledAssignment;
    if (!consumer || !led || led.size === 0) return;
    const md = await consumer.metadata({ topics: [...led.keys()], forceUpdate: true, autocreateTopics: false });
    const changed: string[] = [];
    for (const [topic, before] of led) {
      const now = md.topics.get(topic)?.partitionsCount;
      if (now !== undefined && now !== before) changed.push(`topic ${topic} has ${now} partitions (${before} before)`);
    }
    if (changed.length === 0 || this.consumer !== consumer || this.ledAssignment !== led) return;
    this.ledAssignment = null;
    this.logger.info(`${this.label}: ${changed.join(", ")}; consumer group ${this.settings.groupId} rebalances to read them`);
    await consumer.joinGroup({});
  }

  private async matchingTopics(): Promise<string[]> {
    const { Admin } = await loadKafka();
    const admin = new Admin(clientOptions(this.settings));
    try {
      const all = await admin.listTopics({ includeInternals: false });
      return all.filter((t) => this.subscription.regex!.test(t));
    } finally {
      await admin.close().catch(() => {});
    }
  }

  private reconnecting: Promise<void> | null = null;

  /**
   * Connects again in the background after fetching stopped (see connect); true while
   * connected. Failures are logged once per attempt; the next call tries again.
   */
  ensureConnected(): boolean {
    // The channel calls this on every take: the arrows of the slow path live in reconnect(), or
    // JavaScriptCore would make a scope object for them on each call, connected or not.
    if (this.fetcher) return true;
    this.reconnecting ??= this.reconnect();
    return false;
  }

  private reconnect(): Promise<void> {
    return this.connect()
      .then(() => {
        this.failure = null;
        this.logger.info(`${this.label}: connected again to ${this.brokers}`);
      })
      .catch((err) => {
        const line = namedBy(this.label, err);
        // Closed while it connected (its component stops): nothing went wrong.
        if (err instanceof KafkaConnectAbortedError) return this.logger.info(line);
        this.failing(line);
        this.logger.warn(line);
      })
      .finally(() => (this.reconnecting = null));
  }

  private async resolveTopics(consumer: KafkaConsumer): Promise<string[]> {
    const { topics, regex } = this.subscription;
    if (topics && topics.length > 0) {
      // As the Java consumer: brokers that create topics on use create the missing ones, unless allow.auto.create.topics = false.
      const create = this.settings.allowAutoCreateTopics;
      const md = await consumer.metadata({ topics: [...topics], autocreateTopics: create });
      const missing = topics.filter((t) => !md.topics.has(t));
      if (missing.length > 0) throw this.topicMissing(missing);
      return [...topics];
    }
    const matched = await this.matchingTopics();
    if (matched.length === 0) throw new KafkaTopicMissingError(`${this.label}: no topic on ${this.brokers} matches kafka.topics.regex ${regex!.source}`);
    return matched;
  }

  private topicMissing(topics: readonly string[], cause?: unknown): KafkaTopicMissingError {
    const how = this.settings.allowAutoCreateTopics ? "or let the brokers create topics on use (auto.create.topics.enable)" : "or set kafka.consumer.allow.auto.create.topics = true on brokers that create topics on use";
    const why = cause === undefined ? "" : ` (${messageOf(cause)})`;
    return new KafkaTopicMissingError(`${this.label}: topic ${topics.join(", ")} does not exist on ${this.brokers}${why}: create it (kafka-topics.sh --create --topic ${topics[0]}) ${how}`, cause === undefined ? undefined : { cause });
  }

  private async explain(err: unknown): Promise<Error> {
    if (err instanceof KafkaTopicMissingError) return err;
    if (isUnknownTopic(err)) return this.topicMissing(this.subscription.topics ?? [], err);
    return new Error(`${this.label}: Kafka at ${this.brokers}: ${await withListenerHint(err, this.settings)}`, { cause: err });
  }

  private arrived(records: KafkaMessage[], bytes: number, ms: number): void {
    const first = this.buffered === 0;
    if (first) this.buffer = records;
    else {
      // One native copy of what is left and what came (a push a record was ~4 times as long), the taken head dropped with it.
      this.buffer = (this.head > 0 ? this.buffer.slice(this.head) : this.buffer).concat(records);
    }
    this.head = 0;
    this.heldBytes += bytes;
    this.onRecords?.(records.length, ms);
    if (first) this.onArrival?.();
    if (this.waiter) this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  /**
   * A rebalance: what was fetched and not taken may now belong to another member, so it is
   * dropped (fetching starts again from the committed offsets); what this member reads now is
   * logged, as Flume's source logs the partitions assigned.
   */
  private dropBuffered(assignments: GroupJoin["assignments"]): void {
    const n = this.dropAll();
    const reads = (assignments ?? []).filter((a) => a.partitions.length > 0).map((a) => `topic ${a.topic} ${a.partitions.length === 1 ? "partition" : "partitions"} ${a.partitions.join(", ")}`);
    const dropped = n > 0 ? `; ${n} fetched records left to be fetched again from the committed offsets` : "";
    this.logger.info(`${this.label}: consumer group ${this.settings.groupId} rebalanced (generation ${this.groupGeneration}): this member reads ${reads.length > 0 ? reads.join(", ") : "no partition"}${dropped}`);
  }

  /** Empties the buffer, handing what it held to onDropped; returns how many records it held. */
  private dropAll(): number {
    this.generation++;
    const { buffer, head } = this;
    this.buffer = [];
    this.head = 0;
    this.heldBytes = 0;
    const n = buffer.length - head;
    this.onDropped?.(head > 0 ? buffer.slice(head) : buffer);
    return n;
  }

  /**
   * Fetches again as soon as the buffer is under both bounds: the next fetch is under way while
   * the records left are taken (waiting for half the buffer to empty cost the source a tenth of
   * its rate), and what is held stays within a fetch past the bound.
   */
  private resumeIfLow(): void {
    if (!this.full) this.fetcher?.resume();
  }

  /**
   * Resolves once `n` records are buffered, the read-ahead is full (records larger than
   * READ_AHEAD_BYTES / n each: no more comes until some are taken): true; or once `ms` passed
   * without: false.
   */
  waitFor(n: number, ms: number): Promise<boolean> {
    if (this.buffered >= n || this.full) return Promise.resolve(true);
    if (ms <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        resolve(false);
      }, ms);
      const check = () => {
        if (this.buffered >= n || this.full) {
          clearTimeout(timer);
          resolve(true);
        } else this.waiter = check;
      };
      this.waiter = check;
    });
  }

  /** Takes up to `max` buffered records, in order. */
  take(max: number): KafkaMessage[] {
    const end = Math.min(this.buffer.length, this.head + max);
    const out = this.buffer.slice(this.head, end);
    this.head = end;
    this.heldBytes = this.head === this.buffer.length ? 0 : this.heldBytes - sizeOfAll(out);
    this.compact();
    this.resumeIfLow();
    return out;
  }

  /** Takes the next buffered record (a channel's take), without the array of take(1). */
  takeOne(): KafkaMessage | undefined {
    if (this.head >= this.buffer.length) return undefined;
    const m = this.buffer[this.head++];
    this.heldBytes = this.head === this.buffer.length ? 0 : this.heldBytes - sizeOf(m);
    this.compact();
    this.resumeIfLow();
    return m;
  }

  /** Drops the taken head of the buffer once it is most of it. */
  private compact(): void {
    if (this.head === this.buffer.length) {
      this.buffer = [];
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.buffer.length) {
      this.buffer = this.buffer.slice(this.head);
      this.head = 0;
    }
  }

  /** Puts taken records back at the head of the buffer (their batch failed), in their order. */
  giveBack(msgs: readonly KafkaMessage[]): void {
    if (msgs.length === 0) return;
    this.buffer = [...msgs, ...this.buffer.slice(this.head)];
    this.head = 0;
    this.heldBytes += sizeOfAll(msgs);
  }

  /** Commits the offsets after the given records (per partition, the last one's offset + 1). */
  commit(msgs: readonly KafkaMessage[]): Promise<void> {
    return this.commitAll([msgs]);
  }

  /** Commits the offsets after the records of the given batches, in one request (per partition, the highest offset + 1). */
  commitAll(batches: readonly (readonly KafkaMessage[])[]): Promise<void> {
    const commits = this.commits;
    if (!this.consumer || !commits) return Promise.reject(new Error(`${this.label}: the Kafka consumer is not connected; the offsets are not committed`));
    const offsets = highestOfEachPartition(batches).map((m) => ({ topic: m.topic, partition: m.partition, offset: BigInt(m.offset + 1), leaderEpoch: m.leaderEpoch }));
    const generation = this.generation;
    const groupGeneration = this.groupGeneration;
    // Started again from the committed offsets while this waited for the commit before it: the
    // records are read again from there, and a partition may be another member's now (an offset
    // committed for it could move its owner's back). Nothing is committed. The group may also have
    // moved on before this member heard of it: the commit then lands in no later generation (commit-api.ts).
    const done = this.committing.then(() => (this.generation === generation ? commits.commit(offsets, groupGeneration) : undefined));
    this.committing = done.catch(() => {});
    return done;
  }

  /** What a killed process leaves: the connection dropped, nothing committed or left cleanly. */
  async crash(): Promise<void> {
    const { consumer, fetcher } = this.detach();
    await fetcher?.stop();
    await consumer?.close(true).catch(() => {});
  }

  /** Stops following, drops what is buffered, and hands over the consumer and fetcher to close. */
  private detach() {
    const held = { consumer: this.consumer, fetcher: this.fetcher };
    if (this.metadataTimer) clearInterval(this.metadataTimer);
    this.metadataTimer = null;
    this.ledAssignment = null;
    this.consumer = null;
    this.commits = null;
    this.fetcher = null;
    this.forgetLeaderWait();
    this.dropAll();
    return held;
  }

  /** Fails the connect under way, or else the next one, with `why` (a component that stops while it starts). */
  abortConnect(why: string): void {
    this.connecting.abort(`${this.label}: ${why}`);
  }

  async close(): Promise<void> {
    this.connecting.cancel(`${this.label}: closed while it connected`);
    const { consumer, fetcher } = this.detach();
    this.wake();
    await this.following;
    await fetcher?.stop();
    await this.committing;
    await consumer?.close().catch((err) => this.logger.warn(`${this.label}: closing the Kafka consumer: ${messageOf(err)}`));
  }
}
