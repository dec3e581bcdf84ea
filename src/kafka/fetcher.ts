/**
 * The fetch loop of a Kafka consumer (consumer.ts), in place of the client library's message
 * stream: the library keeps the group (join, sync, heartbeats, rebalances, assignment),
 * metadata, connections, leader changes and offset commits; here are the fetch positions of
 * the assigned partitions and one Fetch in flight per leader, its response read by ours
 * (fetch-api.ts) into compact records (record-batch-reader.ts).
 *
 * Positions start from the group's committed offsets, else from auto.offset.reset (earliest or
 * latest; none fails), and start again so after every rebalance. A position the broker no
 * longer has (OFFSET_OUT_OF_RANGE: the log was truncated by retention) moves by
 * auto.offset.reset, as the Java consumer's does. A batch that does not read (corrupt) holds
 * its partition, retried every second with one error logged, as the Java consumer stops on it.
 * A fetch that failed in a way worth trying again (its broker down, the leader moving) keeps
 * the positions: its partitions wait a second, then are fetched from the leaders the brokers
 * name then, as the Java consumer does; the group is not rejoined, so nothing is read twice.
 */
import type { Consumer } from "@platformatic/kafka";
import type { Logger } from "../core/logger.ts";
import type { KafkaModule } from "./client.ts";
import { messageOf } from "./errors.ts";
import { isRetriable } from "./retriable.ts";
import { crc32c } from "../io/crc32c.ts";
import { fetchConnectionPool, libraryInflate } from "./fetch-api.ts";
import type { FetchResponse } from "./fetch-response.ts";
import { type Crc32c, type FetchedRecord, type Inflate, readRecordBatches } from "./record-batch-reader.ts";
import type { ConsumerSettings } from "./settings.ts";

type KafkaConsumer = Consumer<Buffer, Buffer, Buffer, Buffer>;

interface Position {
  topic: string;
  partition: number;
  /** The next offset to fetch. */
  offset: number;
  /** A corrupt batch at `offset`: not fetched again before this time. */
  heldUntil: number;
}

export interface FetchHooks {
  /** Records read from a response, in offset order per partition, with the bytes of their keys and values, and the milliseconds from the fetch's request to them read. */
  arrived(records: FetchedRecord[], bytes: number, ms: number): void;
  /** Whether the read-ahead is full: no fetch starts then (resume() starts them again). */
  full(): boolean;
  /** A fetch failed past the library's retries in a way not worth trying again, or the metadata cannot be read (the brokers are gone): the consumer is dropped and connected again. */
  failed(err: unknown): void;
  /**
   * Partitions wait for their leader (a fetch from it failed, or the brokers name none): what
   * is wrong, each time, or null once every partition is fetched again, with how long it lasted.
   */
  waiting(problem: string | null, ms: number): void;
}

/** The fetch connections (fetch-api.ts): one per broker, the library's. */
interface FetchPool {
  close(cb: (error?: unknown) => void): void;
  getEstablishedConnection?(broker: unknown): unknown;
}

type FetchRequestTopics = { topicId: string; partitions: { partition: number; fetchOffset: bigint; partitionMaxBytes: number; currentLeaderEpoch: number; lastFetchedEpoch: number }[] }[];

/** The Fetch API: (connection, maxWaitMs, minBytes, maxBytes, isolationLevel, sessionId, sessionEpoch, topics, forgotten, rackId, callback). */
type DirectFetchApi = ((connection: unknown, maxWaitMs: number, minBytes: number, maxBytes: number, isolationLevel: number, sessionId: number, sessionEpoch: number, topics: FetchRequestTopics, forgotten: never[], rackId: string, cb: (err: Error | null, response?: unknown) => void) => void) & { version: number };

/** A session epoch of -1 with session id 0: a full fetch that opens no fetch session (KIP-227). */
const SESSIONLESS = -1;
const FIRST_TOPIC_ID_VERSION = 13;

const OFFSET_OUT_OF_RANGE = 1;
const RETRY_MS = 1000;

export class Fetcher {
  private positions = new Map<string, Position>();
  /** Counts rebalances and stops: a response to a fetch of an older generation is dropped. */
  private generation = 0;
  private readonly inFlight = new Set<number>();
  private planning = false;
  /** pump() found the read-ahead full: resume() starts fetching again. */
  private waitingForRoom = false;
  /** Leaders of the assigned partitions at the last planning: while all have a fetch in flight, pump() has nothing to start. */
  private leaders = Number.POSITIVE_INFINITY;
  /** Where the next planning starts in the partitions' order. */
  private turn = 0;
  /** A partition had no leader in the metadata: the next planning asks the brokers again. */
  private staleMetadata = false;
  private refreshing: Promise<void> | null = null;
  private halted = false;
  /** Partitions ("topic:partition") waiting for their leader: since when. */
  private readonly waitingSince = new Map<string, number>();
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly pool: FetchPool | null;
  /** Our Fetch API as the library hands it out (fetch-api.ts), once a fetch went the library's way: v13 on (topic ids both ways). */
  private directApi: DirectFetchApi | null = null;
  private readonly crc: Crc32c;
  private readonly inflate: Inflate;
  /** Fetch size in bytes (a half of the read-ahead, below fetch.max.bytes and max.partition.fetch.bytes). */
  private readonly fetchBytes: number;
  private readonly partitionBytes: number;

  constructor(
    private readonly kafka: KafkaModule,
    private readonly consumer: KafkaConsumer,
    private readonly settings: ConsumerSettings,
    private readonly label: string,
    private readonly logger: Logger,
    private readonly hooks: FetchHooks,
    fetchBytes: number,
    /** The topics to ask metadata for (the subscription, which a pattern grows). */
    private readonly topics: () => string[],
  ) {
    this.pool = fetchConnectionPool(consumer);
    // Ours, not the client's: its WebAssembly would load for it (12 MB of RSS, src/kafka/wasm-codecs.ts) at the same speed.
    this.crc = crc32c;
    this.inflate = libraryInflate(kafka);
    this.fetchBytes = Math.min(settings.maxBytes, fetchBytes);
    this.partitionBytes = Math.min(settings.maxBytesPerPartition, fetchBytes);
  }

  /**
   * Fetches from the committed offsets of the partitions assigned now (after a join); fetches
   * in flight are dropped on arrival. Resolves once the positions are known.
   */
  restart(): Promise<void> {
    this.generation++;
    this.leaders = Number.POSITIVE_INFINITY;
    // Assigned anew (the owner forgets what waited): the ones still waiting are told again by the next planning.
    this.waitingSince.clear();
    const gen = this.generation;
    const run = this.loadPositions(gen).finally(() => {
      if (this.refreshing === run) this.refreshing = null;
    });
    this.refreshing = run;
    return run.then(() => this.pump());
  }

  private async loadPositions(gen: number): Promise<void> {
    const assigned = (this.consumer.assignments ?? []).filter((a) => a.partitions.length > 0);
    const positions = new Map<string, Position>();
    if (assigned.length > 0) {
      const committed = await this.consumer.listCommittedOffsets({ topics: assigned.map((a) => ({ topic: a.topic, partitions: [...a.partitions] })) });
      const missing: Record<string, number[]> = {};
      for (const { topic, partitions } of assigned) {
        for (const partition of partitions) {
          const offset = committed.get(topic)?.[partition];
          if (offset !== undefined && offset >= 0n) positions.set(`${topic}:${partition}`, { topic, partition, offset: Number(offset), heldUntil: 0 });
          else (missing[topic] ??= []).push(partition);
        }
      }
      const topics = Object.keys(missing);
      if (topics.length > 0) {
        const reset = this.settings.autoOffsetReset;
        if (reset === "none") throw new Error(`${this.label}: consumer group ${this.settings.groupId} has no committed offset for ${topics.map((t) => `topic ${t} partition ${missing[t].join(",")}`).join("; ")} and auto.offset.reset is none`);
        const offsets = await this.consumer.listOffsets({ topics, partitions: missing, timestamp: this.resetTimestamp() });
        for (const topic of topics) {
          for (const partition of missing[topic]) {
            const offset = offsets.get(topic)?.[partition];
            if (offset === undefined || offset < 0n) throw new Error(`${this.label}: no ${reset} offset for topic ${topic} partition ${partition}`);
            positions.set(`${topic}:${partition}`, { topic, partition, offset: Number(offset), heldUntil: 0 });
          }
        }
      }
    }
    if (gen === this.generation) this.positions = positions;
  }

  private resetTimestamp(): bigint {
    const { EARLIEST, LATEST } = this.kafka.ListOffsetTimestamps as { EARLIEST: bigint; LATEST: bigint };
    return this.settings.autoOffsetReset === "earliest" ? EARLIEST : LATEST;
  }

  /** Starts a fetch from every leader of assigned partitions that has none in flight, unless the read-ahead is full. */
  pump(): void {
    if (this.halted || this.planning || this.refreshing || this.inFlight.size >= this.leaders) return;
    if (this.hooks.full()) {
      this.waitingForRoom = true;
      return;
    }
    this.planning = true;
    const gen = this.generation;
    const forceUpdate = this.staleMetadata;
    this.staleMetadata = false;
    this.consumer.metadata({ topics: this.topics(), forceUpdate }, (err, metadata) => {
      this.planning = false;
      if (this.halted) return;
      // A restart came meanwhile, and its own pump found this one planning: the fetching goes on from here.
      if (gen !== this.generation) {
        this.pump();
        return;
      }
      if (err || !metadata) {
        this.hooks.failed(err);
        return;
      }
      const now = Date.now();
      const byLeader = new Map<number, Map<string, Position[]>>();
      const leaders = new Set<number>();
      let held = false;
      // Partitions in a turning order: a broker gives a whole batch of any size only to the first partition
      // with data in a response, so the one that leads changes (as the Java consumer turns them).
      const all = [...this.positions.values()];
      const first = all.length > 0 ? this.turn++ % all.length : 0;
      for (let i = 0; i < all.length; i++) {
        const pos = all[(first + i) % all.length];
        if (pos.heldUntil > now) {
          held = true;
          // Waiting for its leader: the planning after the wait asks the brokers, not the cache.
          if (this.waitingSince.size > 0 && this.waitingSince.has(`${pos.topic}:${pos.partition}`)) this.staleMetadata = true;
          continue;
        }
        const leader = metadata.topics.get(pos.topic)?.partitions[pos.partition]?.leader;
        if (leader === undefined || leader < 0) {
          // Being elected: asked again after a while.
          held = true;
          this.staleMetadata = true;
          this.wait([pos], `the brokers name no leader for topic ${pos.topic} partition ${pos.partition}`, now);
          continue;
        }
        leaders.add(leader);
        if (this.inFlight.has(leader)) continue;
        let topics = byLeader.get(leader);
        if (!topics) byLeader.set(leader, (topics = new Map()));
        const list = topics.get(pos.topic);
        if (list) list.push(pos);
        else topics.set(pos.topic, [pos]);
      }
      this.leaders = held ? Number.POSITIVE_INFINITY : leaders.size;
      for (const [leader, topics] of byLeader) this.fetchFrom(leader, topics, metadata, gen);
      if (held) this.retrySoon();
    });
  }

  /** Whether stop() was called: nothing is fetched any more. */
  get stopped(): boolean {
    return this.halted;
  }

  /** Room in the read-ahead again: fetching goes on if it had stopped for it. */
  resume(): void {
    if (!this.waitingForRoom) return;
    this.waitingForRoom = false;
    this.pump();
  }

  /**
   * Fetches the positions of `topics` from their leader. Once a fetch went the library's way
   * (metadata, retries, leader changes, fetch sessions), the next ones go straight on the
   * leader's fetch connection with our Fetch API, a full fetch each (no fetch session: the
   * library's layers cost ~as much CPU as reading the records of a small response); one that
   * fails goes again the library's way, whose errors are then handled as before.
   */
  private fetchFrom(leader: number, topics: Map<string, Position[]>, metadata: { topics: Map<string, { id: string }>; brokers: Map<number, unknown> }, gen: number): void {
    const known = metadata.topics;
    const request: FetchRequestTopics = [];
    const names = new Map<string, string>();
    const asked = new Map<string, number>();
    for (const [topic, list] of topics) {
      const id = known.get(topic)!.id;
      names.set(id, topic);
      request.push({ topicId: id, partitions: list.map((p) => ({ partition: p.partition, fetchOffset: BigInt(p.offset), partitionMaxBytes: this.partitionBytes, currentLeaderEpoch: -1, lastFetchedEpoch: -1 })) });
      for (const p of list) asked.set(`${topic}:${p.partition}`, p.offset);
    }
    this.inFlight.add(leader);
    // One clock read a fetch, none a record: how long fetches that brought records took (the Kafka channel's KafkaEventGetTimer).
    const started = Date.now();
    const s = this.settings;
    const options = { node: leader, topics: request, maxWaitTime: s.maxWaitTime, minBytes: s.minBytes, maxBytes: this.fetchBytes, isolationLevel: s.isolationLevel, ...(this.pool ? { connectionPool: this.pool } : {}) };
    const done = (err: unknown, response: unknown, direct: boolean) => {
      this.inFlight.delete(leader);
      if (this.halted) return;
      if (gen === this.generation) {
        if (err) {
          if (this.outOfRange(err, names, asked)) {
            // Moved by auto.offset.reset: fetched again at once.
          } else if (isRetriable(err)) {
            this.retryLater(leader, topics, err);
          } else {
            this.hooks.failed(err);
            return;
          }
        } else {
          if (this.waitingSince.size > 0) this.fetched(topics);
          this.read(response as FetchResponse, names, asked, started);
          if (!direct && this.directApi === null) this.learnFetchApi();
        }
      }
      this.pump();
    };
    const viaLibrary = () => this.consumer.fetch(options as Parameters<KafkaConsumer["fetch"]>[0], (err, response) => done(err, response, false));
    const api = this.directApi;
    const broker = api ? metadata.brokers.get(leader) : undefined;
    const connection = broker !== undefined ? this.pool?.getEstablishedConnection?.(broker) : undefined;
    // Only a connection the library has up (not one connecting, authenticating or closed: the library's way waits for it or opens another).
    if (!api || (connection as { status?: string } | undefined)?.status !== "connected") {
      viaLibrary();
      return;
    }
    try {
      api(connection, s.maxWaitTime, s.minBytes, this.fetchBytes, s.isolationLevel, 0, SESSIONLESS, request, [], "", (err, response) => {
        if (err && !this.halted && gen === this.generation) viaLibrary();
        else done(err, response, true);
      });
    } catch {
      viaLibrary();
    }
  }

  /**
   * A fetch from `leader` failed in a way worth trying again (the broker down or restarting,
   * no longer the leader): its partitions keep their positions and wait a second, then are
   * fetched from whatever leader the brokers name then (the metadata is read again).
   */
  private retryLater(leader: number, topics: Map<string, Position[]>, err: unknown): void {
    const now = Date.now();
    const partitions: Position[] = [];
    for (const list of topics.values()) {
      for (const pos of list) {
        pos.heldUntil = now + RETRY_MS;
        partitions.push(pos);
      }
    }
    this.staleMetadata = true;
    this.wait(partitions, `fetching ${describePartitions(topics)} from broker ${leader} failed (${messageOf(err)}); asking the brokers for their leader again every ${RETRY_MS / 1000} s`, now);
    this.retrySoon();
  }

  /** Plans the fetches again in RETRY_MS (held partitions: a corrupt batch, a leader waited for), unless that is planned already. */
  private retrySoon(): void {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.pump();
    }, RETRY_MS);
    this.retryTimer.unref?.();
  }

  private wait(partitions: readonly Position[], problem: string, now: number): void {
    for (const pos of partitions) {
      const key = `${pos.topic}:${pos.partition}`;
      if (!this.waitingSince.has(key)) this.waitingSince.set(key, now);
    }
    this.hooks.waiting(problem, now - Math.min(...this.waitingSince.values()));
  }

  /** A fetch of these partitions answered: once none waits any more, the owner hears so. */
  private fetched(topics: Map<string, Position[]>): void {
    let since = Number.POSITIVE_INFINITY;
    for (const list of topics.values()) {
      for (const pos of list) {
        const key = `${pos.topic}:${pos.partition}`;
        since = Math.min(since, this.waitingSince.get(key) ?? since);
        this.waitingSince.delete(key);
      }
    }
    if (this.waitingSince.size === 0 && since !== Number.POSITIVE_INFINITY) this.hooks.waiting(null, Date.now() - since);
  }

  /** Asks the library once for the Fetch API it uses (ours, fetch-api.ts): fetches go straight with it from then on. */
  private learnFetchApi(): void {
    const getApi = (this.consumer as unknown as Record<symbol, ((name: string, cb: (err: Error | null, api?: unknown) => void) => void) | undefined>)[this.kafka.kGetApi];
    if (typeof getApi !== "function" || !this.pool?.getEstablishedConnection) return;
    getApi.call(this.consumer, "Fetch", (err, api) => {
      const fetchApi = api as DirectFetchApi | undefined;
      if (!err && typeof fetchApi === "function" && fetchApi.version >= FIRST_TOPIC_ID_VERSION) this.directApi = fetchApi;
    });
  }

  /** Reads a response's records (partitions asked at the position they still have: not one a rebalance or an earlier response moved). */
  private read(response: FetchResponse, names: Map<string, string>, asked: Map<string, number>, started: number): void {
    const records: FetchedRecord[] = [];
    let bytes = 0;
    const readCommitted = this.settings.isolationLevel === 1;
    for (const t of response.responses) {
      const topic = names.get(t.topicId);
      if (topic === undefined) continue;
      for (const p of t.partitions) {
        const key = `${topic}:${p.partitionIndex}`;
        const fetchOffset = asked.get(key);
        const pos = this.positions.get(key);
        if (fetchOffset === undefined || !pos || pos.offset !== fetchOffset || !p.recordBytes || p.recordBytes.length === 0) continue;
        const before = records.length;
        try {
          const r = readRecordBatches(p.recordBytes, 0, p.recordBytes.length, { topic, partition: p.partitionIndex, fetchOffset, aborted: p.aborted, readCommitted }, records, this.crc, this.inflate);
          pos.offset = r.next;
          pos.heldUntil = 0;
          bytes += r.bytes;
        } catch (err) {
          // What came before the bad batch goes on; the partition waits at the bad batch.
          for (let i = before; i < records.length; i++) bytes += records[i].valueLength + (records[i].key?.length ?? 0);
          const at = records.length > before ? records[records.length - 1].offset + 1 : fetchOffset;
          if (at !== pos.offset || pos.heldUntil === 0) this.logger.error(`${this.label}: ${messageOf(err)}; the partition is not read past it (retried every ${RETRY_MS / 1000} s)`);
          pos.offset = at;
          pos.heldUntil = Date.now() + RETRY_MS;
        }
      }
    }
    if (records.length > 0) this.hooks.arrived(records, bytes, Date.now() - started);
  }

  /** OFFSET_OUT_OF_RANGE: moves the partitions to the log's start or end (auto.offset.reset); false for any other error, or with none. */
  private outOfRange(err: unknown, names: Map<string, string>, asked: Map<string, number>): boolean {
    const response = (err as { response?: FetchResponse }).response;
    const reset = this.settings.autoOffsetReset;
    if (!response?.responses || reset === "none") return false;
    let moved = false;
    for (const t of response.responses) {
      const topic = names.get(t.topicId);
      for (const p of t.partitions) {
        if (p.errorCode === 0) continue;
        if (p.errorCode !== OFFSET_OUT_OF_RANGE || topic === undefined) return false;
        const key = `${topic}:${p.partitionIndex}`;
        const pos = this.positions.get(key);
        const to = reset === "earliest" ? p.logStartOffset : p.highWatermark;
        if (!pos || pos.offset !== asked.get(key) || to < 0n) return false;
        this.logger.warn(`${this.label}: offset ${pos.offset} of topic ${topic} partition ${p.partitionIndex} is out of the log's range; reading from the ${reset} offset ${to} (auto.offset.reset)`);
        pos.offset = Number(to);
        moved = true;
      }
    }
    return moved;
  }

  /** Stops fetching: responses still in flight are dropped; closes the fetch connections. */
  async stop(): Promise<void> {
    this.halted = true;
    this.generation++;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const pool = this.pool;
    if (pool) await new Promise<void>((resolve) => pool.close(() => resolve()));
  }
}

/** "topic t partitions 0, 2" or "topics a partition 0, b partition 1". */
function describePartitions(topics: Map<string, Position[]>): string {
  const parts = [...topics].map(([topic, list]) => `${topic} ${list.length === 1 ? "partition" : "partitions"} ${list.map((p) => p.partition).join(", ")}`);
  return `${parts.length === 1 ? "topic" : "topics"} ${parts.join(", ")}`;
}
