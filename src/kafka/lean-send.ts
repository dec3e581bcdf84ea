/**
 * The producer's send path for the batches we write ourselves (uncompressed, not
 * transactional; produce-api.ts): the library's Producer.send makes, for every record, two
 * header Maps, a copy of the message, a partitioner call and a `topic:partition` string for the
 * idempotent producer's sequences (measured: most of the Kafka channel's put CPU). Here the
 * records go to the Produce API as they are, grouped only by leader; partitions and sequences
 * are kept per partition, not per record. Metadata, connections, retries and the producer id
 * stay the library's (the symbols it exports for its own clients).
 *
 * A record without partition and key goes with every other such record of the send to one
 * partition, the next one at the next send (the Java producer's sticky partitioning): a
 * channel's or sink's batch then is one record batch, in its order.
 */
import type { Producer } from "@platformatic/kafka";
import type { KafkaModule } from "./client.ts";
import type { ProduceMessage } from "./record-batch.ts";

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

/** What a record needs here: a topic; partition and key, when set, choose its partition (partition set by send). */
export type LeanRecord = ProduceMessage & { topic: string; key?: Buffer | null };

export class LeanSender {
  private readonly internals: Internals;
  private info: ProducerInfo | null = null;
  private initializing: Promise<ProducerInfo> | null = null;
  /** The idempotent producer's next sequence, per topic, per partition. */
  private readonly sequences = new Map<string, number[]>();
  /** The sticky partition of each topic's records that have neither partition nor key. */
  private sticky = 0;

  constructor(
    private readonly kafka: KafkaModule,
    private readonly producer: Producer<Buffer, Uint8Array, Buffer, Buffer>,
    private readonly acks: number,
    private readonly idempotent: boolean,
  ) {
    this.internals = internalsOf(kafka, producer);
  }

  /** Sends the records (each one's partition is set); resolves once the broker acknowledged every one. */
  async send(records: LeanRecord[]): Promise<void> {
    if (records.length === 0) return;
    const topics = topicsOf(records);
    const metadata = await promised<ClusterMetadata>((cb) => this.internals.metadata({ topics, autocreateTopics: true }, cb));
    const counts = new Map<string, number[]>();
    const byLeader = this.assign(records, metadata, counts);
    const info = this.idempotent ? (this.info ?? (await this.producerInfo())) : null;
    // From here to the Produce requests' writes nothing waits (metadata, connection and API
    // are known): sends in flight at once write their requests in the order of their
    // sequences, as the broker needs them on a connection.
    const options = info ? { producerId: info.producerId, producerEpoch: info.producerEpoch, sequences: this.nextSequences(counts) } : {};
    try {
      if (byLeader instanceof Map) await Promise.all([...byLeader.values()].map((list) => this.sendTo(list, topics, options)));
      else await this.sendTo(records, topics, options);
    } catch (err) {
      // As the library: after a failure the broker's sequences are unknown; the next send
      // starts a new producer id. Sends in flight with the same id fail too (the broker
      // refuses the sequences after the missing ones); a failure under an older id, after a
      // new one was taken, leaves the new one alone.
      if (this.info === info) {
        this.info = null;
        this.sequences.clear();
      }
      throw err;
    }
  }

  /** After a send given up (not failed by the client): the next send takes a new producer id, its sequences from 0. */
  forget(): void {
    this.info = null;
    this.sequences.clear();
  }

  /** A new producer id (one request for the sends waiting for it at once), its sequences from 0. */
  private producerInfo(): Promise<ProducerInfo> {
    this.initializing ??= (async () => {
      try {
        const got = (await this.producer.initIdempotentProducer({})) as ProducerInfo;
        this.info = { producerId: got.producerId, producerEpoch: got.producerEpoch };
        this.sequences.clear();
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
      if (p === undefined) p = r.key ? this.kafka.defaultPartitioner(r as never, r.key) : sticky;
      p %= meta.partitionsCount;
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
  private nextSequences(counts: Map<string, number[]>): { getWithDefault(key: string, fallback: number): number } {
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
        next[p] = (next[p] + c[p]) % 2147483648;
      }
    }
    return { getWithDefault: (key, fallback) => first.get(key) ?? fallback };
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
