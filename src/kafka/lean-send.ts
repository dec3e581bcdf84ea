/**
 * The producer's send path for the batches we write ourselves (uncompressed, not
 * transactional; produce-api.ts): the library's Producer.send makes, for every record, two
 * header Maps, a copy of the message, a partitioner call and a `topic:partition` string for the
 * idempotent producer's sequences (measured: most of the Kafka channel's put CPU). Here the
 * records go to the Produce API as they are, grouped only by leader; partitions and sequences
 * are kept per partition, not per record. Metadata, connections, the client's quick retries
 * and the producer id request stay the library's (the symbols it exports for its own clients);
 * a batch's later retries (producer.ts) go through LeanBatch, under the same id and sequences.
 *
 * A record without partition and key goes with every other such record of the send to one
 * partition, the next one at the next send (the Java producer's sticky partitioning): a
 * channel's or sink's batch then is one record batch, in its order. A keyed one goes where the
 * Java producer sends it (javaPartitioner); one whose partition was chosen (partitionIdHeader,
 * defaultPartitionId) goes there, or fails the send when its topic has no such partition
 * (withChosenPartitions).
 */
import type { Producer } from "@platformatic/kafka";
import type { KafkaModule } from "./client.ts";
import type { ProduceMessage } from "./record-batch.ts";
import { FlumeError } from "../core/errors.ts";
import { KafkaPartitionMissingError, PARTITION_SETTINGS } from "./errors.ts";
import { javaKeyHash } from "./murmur2.ts";
import { isRetriable } from "./retriable.ts";

type Callback<T> = (error: Error | null, value?: T) => void;

interface TopicMetadata {
  partitionsCount: number;
  partitions: { leader: number }[];
}

interface ClusterMetadata {
  brokers: Map<number, unknown>;
  topics: Map<string, TopicMetadata>;
}

interface ProducerInfo {
  producerId: bigint;
  producerEpoch: number;
}

type ProduceApi = (connection: unknown, acks: number, timeout: number, messages: ProduceMessage[], options: object, callback: Callback<unknown>) => void;

/** The library's client internals this path uses (exported by it as symbols). */
interface Internals {
  metadata(options: { topics: string[]; autocreateTopics: boolean; forceUpdate?: boolean }, callback: Callback<ClusterMetadata>): void;
  connection(broker: unknown, callback: Callback<unknown>): void;
  api(name: string, callback: Callback<unknown>): void;
  withRetry(operation: (retry: Callback<unknown>) => void, callback: Callback<unknown>): void;
  timeout: number;
}

function internalsOf(kafka: KafkaModule, producer: Producer<Buffer, Uint8Array, Buffer, Buffer>): Internals {
  const p = producer as unknown as Record<symbol, (...args: unknown[]) => void> & Record<symbol, { timeout: number }>;
  return {
    metadata: (o, cb) => p[kafka.kMetadata].call(producer, o, cb),
    connection: (b, cb) => p[kafka.kGetConnection].call(producer, b, cb),
    api: (n, cb) => p[kafka.kGetApi].call(producer, n, cb),
    withRetry: (op, cb) => p[kafka.kPerformWithRetry].call(producer, "produce", op, cb, 0, []),
    timeout: (p[kafka.kOptions] as unknown as { timeout: number }).timeout,
  };
}

function promised<T>(start: (cb: Callback<T>) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value as T))));
}

/**
 * What a record needs here: a topic; partition and key, when set, choose its partition
 * (partition set by send); partitionFrom names what chose the partition, for the error when
 * the topic has no such partition.
 */
export type LeanRecord = ProduceMessage & { topic: string; key?: Buffer | null; partitionFrom?: string };

/** The partition counts of topics, as the client's metadata has them. */
interface PartitionCounts {
  topics: Map<string, { partitionsCount: number }>;
}

/** The first record whose chosen partition its topic does not have in `metadata`, as an error; null: none. */
function missingPartition(records: readonly LeanRecord[], metadata: PartitionCounts): KafkaPartitionMissingError | null {
  let topic: string | null = null;
  let count = 0;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    const p = r.partition;
    if (p === undefined) continue;
    if (r.topic !== topic) {
      topic = r.topic;
      // A topic the metadata lacks is refused later, as unknown.
      count = metadata.topics.get(topic)?.partitionsCount ?? Number.POSITIVE_INFINITY;
    }
    if (p >= count) return new KafkaPartitionMissingError(topic, p, count, r.partitionFrom ?? PARTITION_SETTINGS);
  }
  return null;
}

/**
 * `metadata` when every record's chosen partition is one its topic has there; else the metadata
 * asked for anew once (the topic may have grown since it was cached, as the Java producer waits
 * for metadata that has the partition), and KafkaPartitionMissingError if the partition is
 * still missing: the Java producer fails such a record, it is not sent to another partition.
 */
export async function withChosenPartitions<M extends PartitionCounts>(records: readonly LeanRecord[], metadata: M, refresh: () => Promise<M>): Promise<M> {
  if (missingPartition(records, metadata) === null) return metadata;
  const fresh = await refresh();
  const missing = missingPartition(records, fresh);
  if (missing) throw missing;
  return fresh;
}

export type LibraryPartitioner = (message: unknown, key: Buffer | undefined) => number;

/**
 * The partition of a record for the client's Producer (its compressed sends), as its `partitioner`
 * option, before the modulo by the partition count. A keyed record: the Java producer's
 * (javaKeyHash), not the client's defaultPartitioner, which takes the hash unsigned (`>>> 0`):
 * another partition whenever the hash is negative and the count no power of two. A record
 * without key: `sticky`, one number a send (kept by its retries), so the unkeyed records of a
 * send go to one partition and the next send's to the next, as on the lean path and close to
 * the Java producer's sticky partitioning (one compressed batch instead of one a partition).
 */
export function javaPartitioner(sticky: number): LibraryPartitioner {
  return (_message, key) => (key ? javaKeyHash(key) : sticky);
}

/** What the broker was sent for a batch: its producer id and each partition's first sequence, sent again as they are by a retry. */
interface Sent {
  info: ProducerInfo | null;
  topics: string[];
  /** `topic:partition` -> the first sequence of the batch's records of that partition. */
  firsts: Map<string, number>;
  options: object;
}

/**
 * One batch of records through its attempts (LeanSender.batch, send as often as retried, end
 * once): its partitions and sequences are set by the first attempt, and a retry sends the same
 * under the same producer id, so that the broker answers a batch it already wrote (its answer
 * lost) with success instead of writing it twice (as the Java idempotent producer).
 */
export interface LeanBatch {
  readonly records: LeanRecord[];
  sent: Sent | null;
}

/** A batch sent under a producer id that was dropped since (another batch's failure): not sent again under a new id, where the broker could not recognise it. */
export class KafkaProducerIdDroppedError extends FlumeError {}

/** Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER: the batch's first sequence is not the one after the partition's last written one. */
const OUT_OF_ORDER_SEQUENCE_NUMBER = 45;
const SEQUENCE_MODULUS = 2147483648;

export class LeanSender {
  private readonly internals: Internals;
  private info: ProducerInfo | null = null;
  /** Why each producer id given up was dropped (the failure of the batch that dropped it), for the batches sent under it. */
  private readonly dropReasons = new WeakMap<ProducerInfo, unknown>();
  private initializing: Promise<ProducerInfo> | null = null;
  /** The idempotent producer's next sequence, per topic, per partition. */
  private readonly sequences = new Map<string, number[]>();
  /** The batches sent under the current producer id and not ended yet (acknowledged or given up). */
  private readonly unresolved = new Set<LeanBatch>();
  /** The sticky partition of each topic's records that have neither partition nor key. */
  private sticky = 0;

  constructor(
    kafka: KafkaModule,
    private readonly producer: Producer<Buffer, Uint8Array, Buffer, Buffer>,
    private readonly acks: number,
    private readonly idempotent: boolean,
  ) {
    this.internals = internalsOf(kafka, producer);
  }

  batch(records: LeanRecord[]): LeanBatch {
    return { records, sent: null };
  }

  /**
   * Sends the batch's records (each one's partition is set by the first attempt); resolves once
   * the broker acknowledged every one. Sent before: the same producer id and sequences again
   * (KafkaProducerIdDroppedError when that id was dropped since).
   */
  async send(batch: LeanBatch): Promise<void> {
    const records = batch.records;
    if (records.length === 0) return;
    const again = batch.sent !== null;
    // Written or not, unknown: given up (its events go back to the channel), never silently re-sent as new records.
    const dropped = this.droppedUnder(batch);
    if (dropped) throw dropped;
    const topics = again ? batch.sent!.topics : topicsOf(records);
    const metadataOf = (forceUpdate: boolean) => promised<ClusterMetadata>((cb) => this.internals.metadata({ topics, autocreateTopics: true, forceUpdate }, cb));
    let metadata = await metadataOf(again);
    // Again: its partitions were checked and set by the first attempt.
    if (!again) metadata = await withChosenPartitions(records, metadata, () => metadataOf(true));
    const counts = new Map<string, number[]>();
    // Again: the partitions are those of the first attempt, the grouping by leader today's.
    const byLeader = this.assign(records, metadata, counts);
    let sent: Sent;
    if (again) sent = batch.sent!;
    else {
      const info = this.idempotent ? (this.info ?? (await this.producerInfo())) : null;
      // From here to the Produce requests' writes nothing waits (metadata, connection and API
      // are known): sends in flight at once write their requests in the order of their
      // sequences, as the broker needs them on a connection.
      const firsts = info ? this.nextSequences(counts) : new Map<string, number>();
      const options = info ? { producerId: info.producerId, producerEpoch: info.producerEpoch, sequences: { getWithDefault: (key: string, fallback: number) => firsts.get(key) ?? fallback } } : {};
      sent = batch.sent = { info, topics, firsts, options };
      if (info) this.unresolved.add(batch);
    }
    try {
      if (byLeader instanceof Map) await Promise.all([...byLeader.values()].map((list) => this.sendTo(list, topics, sent.options)));
      else await this.sendTo(records, topics, sent.options);
    } catch (err) {
      // A failure that a retry under the same id cannot mend drops the id at once: sends in
      // flight under it then fail rather than retry (the broker refuses the sequences after
      // the missing ones).
      if (!this.canRetry(batch, err)) this.drop(sent.info, err);
      throw err;
    }
  }

  /**
   * Whether the batch may be sent again as it is (same producer id and sequences) after it
   * failed with `err`: as the Java idempotent producer, a retriable error (retriable.ts), or an
   * OUT_OF_ORDER_SEQUENCE_NUMBER while an earlier batch of the same partition is still
   * unresolved (written ahead of that one's retry: once it is in, this one's sequences are the
   * next). Not: any other error (the broker's sequences for this id are unknown: UNKNOWN_PRODUCER_ID,
   * INVALID_PRODUCER_EPOCH, a gap), or the id dropped since.
   */
  canRetry(batch: LeanBatch, err: unknown): boolean {
    const sent = batch.sent;
    if (!sent) return isRetriable(err);
    if (this.idempotent && sent.info !== this.info) return false;
    if (hasErrorCode(err, OUT_OF_ORDER_SEQUENCE_NUMBER, new Set())) return this.behindUnresolved(batch);
    return isRetriable(err);
  }

  /** The batch's last attempt done: acknowledged, or given up with `why` (its fate unknown: the next send takes a new producer id, its sequences from 0). */
  end(batch: LeanBatch, delivered: boolean, why?: unknown): void {
    this.unresolved.delete(batch);
    if (!delivered && batch.sent) this.drop(batch.sent.info, why);
  }

  /**
   * Why the batch cannot be sent again, when it was sent under a producer id dropped since:
   * the failure of the batch that dropped it (a broker down makes every batch in flight fail
   * the same way; this names it, not the retry's own error), else null.
   */
  droppedUnder(batch: LeanBatch): KafkaProducerIdDroppedError | null {
    const info = batch.sent?.info;
    if (!this.idempotent || !info || info === this.info) return null;
    const why = this.dropReasons.get(info);
    const because = why === undefined ? "" : ` (${why instanceof Error ? why.message : String(why)})`;
    // Named, not its cause: what that failure was (too large, a topic missing) is not this batch's.
    return new KafkaProducerIdDroppedError(`${batch.records.length} record(s) sent unacknowledged are not sent again: their producer id was dropped after another batch sent under it failed${because}; they go back to the channel`);
  }

  /** Drops the producer id `info` if still the current one (a failure under an older id, after a new one was taken, leaves the new one alone). */
  private drop(info: ProducerInfo | null, why: unknown): void {
    if (!info || this.info !== info) return;
    if (why !== undefined) this.dropReasons.set(info, why);
    this.info = null;
    this.sequences.clear();
    this.unresolved.clear();
  }

  /** Whether another unresolved batch under the same id has records of one of this batch's partitions with earlier sequences. */
  private behindUnresolved(batch: LeanBatch): boolean {
    const sent = batch.sent!;
    for (const other of this.unresolved) {
      if (other === batch || other.sent!.info !== sent.info) continue;
      for (const [key, first] of sent.firsts) {
        const theirs = other.sent!.firsts.get(key);
        if (theirs === undefined) continue;
        const ahead = (first - theirs + SEQUENCE_MODULUS) % SEQUENCE_MODULUS;
        if (ahead > 0 && ahead < SEQUENCE_MODULUS / 2) return true;
      }
    }
    return false;
  }

  /** A new producer id (one request for the sends waiting for it at once), its sequences from 0. */
  private producerInfo(): Promise<ProducerInfo> {
    this.initializing ??= (async () => {
      try {
        const got = (await this.producer.initIdempotentProducer({})) as ProducerInfo;
        this.info = { producerId: got.producerId, producerEpoch: got.producerEpoch };
        this.sequences.clear();
        this.unresolved.clear();
        return this.info;
      } finally {
        this.initializing = null;
      }
    })();
    return this.initializing;
  }

  /**
   * Sets each record's partition and counts the records of each partition (for the sequences);
   * the records grouped by leader when they have more than one (else null: all to one).
   */
  private assign(records: LeanRecord[], metadata: ClusterMetadata, counts: Map<string, number[]>): Map<number, LeanRecord[]> | null {
    const sticky = this.sticky++;
    let topic = "";
    let meta: TopicMetadata | undefined;
    let count: number[] = [];
    let firstLeader = -1;
    let byLeader: Map<number, LeanRecord[]> | null = null;
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      if (r.topic !== topic || !meta) {
        topic = r.topic;
        meta = metadata.topics.get(topic);
        if (!meta) throw new Error(`no metadata for topic ${topic}`);
        let c = counts.get(topic);
        if (!c) counts.set(topic, (c = new Array<number>(meta.partitionsCount).fill(0)));
        count = c;
      }
      let p = r.partition;
      // A chosen partition is one the topic has (withChosenPartitions): only a hash or the sticky one wraps around.
      if (p === undefined) p = (r.key ? javaKeyHash(r.key) : sticky) % meta.partitionsCount;
      r.partition = p;
      count[p]++;
      const leader = meta.partitions[p].leader;
      if (i === 0) firstLeader = leader;
      else if (leader !== firstLeader && !byLeader) byLeader = new Map([[firstLeader, records.slice(0, i)]]);
      if (byLeader) {
        const list = byLeader.get(leader);
        if (list) list.push(r);
        else byLeader.set(leader, [r]);
      }
    }
    return byLeader;
  }

  /** Each partition's first sequence in this send (the records of each counted in `counts`); the next ones moved past them. */
  private nextSequences(counts: Map<string, number[]>): Map<string, number> {
    const first = new Map<string, number>();
    for (const [topic, c] of counts) {
      let next = this.sequences.get(topic);
      if (!next || next.length < c.length) {
        const grown = new Array<number>(c.length).fill(0);
        if (next) for (let i = 0; i < next.length; i++) grown[i] = next[i];
        this.sequences.set(topic, (next = grown));
      }
      for (let p = 0; p < c.length; p++) {
        if (c[p] === 0) continue;
        first.set(`${topic}:${p}`, next[p]);
        // Kafka's sequences wrap at 2^31 - 1.
        next[p] = (next[p] + c[p]) % SEQUENCE_MODULUS;
      }
    }
    return first;
  }

  /** One Produce request to the leader of the records' partitions, retried (same sequences) as the library retries. */
  private sendTo(records: LeanRecord[], topics: string[], options: object): Promise<unknown> {
    const { topic, partition } = records[0];
    const i = this.internals;
    let refresh = false;
    return promised((done) =>
      i.withRetry((retry) => {
        i.metadata({ topics, autocreateTopics: true, forceUpdate: refresh }, (error, metadata) => {
          refresh = error !== null;
          if (error) return retry(error);
          i.connection(metadata!.brokers.get(metadata!.topics.get(topic)!.partitions[partition!].leader), (error, connection) => {
            refresh = error !== null;
            if (error) return retry(error);
            i.api("Produce", (error, api) => {
              if (error) return retry(error);
              (api as ProduceApi)(connection, this.acks, i.timeout, records, options, (error, response) => {
                // A refused or lost request: the next attempt asks who leads the partition now.
                refresh = error !== null;
                retry(error, response);
              });
            });
          });
        });
      }, done),
    );
  }
}

function topicsOf(records: readonly LeanRecord[]): string[] {
  const first = records[0].topic;
  let more: Set<string> | null = null;
  for (const r of records) if (r.topic !== first) (more ??= new Set([first])).add(r.topic);
  return more ? [...more] : [first];
}

/** Whether `err` or an error it wraps (a ResponseError's per-partition errors, MultipleErrors' attempts) carries Kafka's error code `code`. */
function hasErrorCode(err: unknown, code: number, seen: Set<unknown>): boolean {
  if (typeof err !== "object" || err === null || seen.has(err)) return false;
  seen.add(err);
  const e = err as { apiCode?: unknown; errors?: unknown; cause?: unknown };
  if (e.apiCode === code) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => hasErrorCode(inner, code, seen))) return true;
  return e.cause !== undefined && hasErrorCode(e.cause, code, seen);
}
