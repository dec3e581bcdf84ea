/**
 * Offset commits sent straight on the group coordinator's connection, with the library's
 * OffsetCommit API: the library's Consumer.commit validates its options, traces and retries
 * through several layers and looks up the coordinator, its metadata and connection on every
 * commit (measured: ~70 µs of a ~120 µs commit; the Kafka source commits about every other
 * batch). The first commit, and any commit after one that failed, goes the library's way: it
 * finds the coordinator, retries, rejoins the group after a rebalance. The connection and API
 * it used are kept (seen through its API lookup, as fetch-api.ts hooks Fetch) and the next
 * commits go on them with the member's current generation; a failure there (coordinator
 * moved, generation changed, connection lost) drops them and the commit goes the library's
 * way, so the errors seen are the library's as before.
 *
 * A commit names the group generation its records were fetched in, and lands only in it: sent
 * straight, it carries that generation, which the coordinator refuses once the group moved on;
 * sent the library's way, a request under another generation (the library rejoins after a
 * rebalance and sends it again) is not sent. Offsets worked out before a rebalance could
 * otherwise land after it, and move the partition's new owner back (duplicates). The Java
 * consumer refuses a commit only while its group rebalances (CommitFailedException).
 *
 * Only under the classic group protocol (the consumer protocol's member epoch is the
 * library's private state).
 */
import type { Consumer } from "@platformatic/kafka";
import { asLibraryApi, type Callback, type LibraryApi, replaceApi } from "./api-hook.ts";
import type { KafkaModule } from "./client.ts";
import { KafkaCommitFencedError } from "./errors.ts";

export interface OffsetToCommit {
  topic: string;
  partition: number;
  offset: bigint;
  leaderEpoch: number;
}

interface CommitTopic {
  name: string;
  partitions: { partitionIndex: number; committedOffset: bigint; committedLeaderEpoch: number; committedMetadata: null }[];
}

type OffsetCommitApi = ((connection: unknown, groupId: string, generationId: number, memberId: string, groupInstanceId: null, topics: CommitTopic[], callback: Callback) => void) & LibraryApi;

type KafkaConsumer = Consumer<Buffer, Buffer, Buffer, Buffer>;

export class DirectCommits {
  private connection: unknown = null;
  private api: OffsetCommitApi | null = null;
  private readonly classic: boolean;
  /** The generation the library's commit going now was asked for (null: none going). */
  private fence: number | null = null;
  /** Why the library's commit going now was not sent (a request under another generation). */
  private fenced: KafkaCommitFencedError | null = null;

  constructor(
    kafka: KafkaModule,
    private readonly consumer: KafkaConsumer,
  ) {
    const options = (consumer as unknown as Record<symbol, { groupProtocol?: string } | undefined>)[kafka.kOptions];
    this.classic = options?.groupProtocol !== "consumer";
    // The library's commits go through as they were, unless under another generation than asked; what they were sent on is kept.
    replaceApi<OffsetCommitApi>(kafka, consumer, "OffsetCommit", (library) =>
      asLibraryApi(((connection, groupId, generationId, memberId, instanceId, topics, callback) => {
        this.connection = connection;
        this.api = library;
        if (this.fence !== null && generationId !== this.fence) {
          this.fenced = new KafkaCommitFencedError(`consumer group ${groupId} moved to generation ${generationId} (a rebalance) after the records were fetched in generation ${this.fence}: their offsets are not committed, and the records after the group's committed offsets are read again`);
          // Not retried by the library: its retries and rejoins are for errors that allow them.
          callback(new kafka.UserError(this.fenced.message));
          return;
        }
        library(connection, groupId, generationId, memberId, instanceId, topics, callback);
      }) as OffsetCommitApi, library),
    );
  }

  /**
   * Commits the offsets under the group generation their records were fetched in: on the kept
   * connection when there is one, else (or when that fails) the library's way.
   */
  commit(offsets: OffsetToCommit[], generationId: number): Promise<void> {
    const api = this.api;
    const consumer = this.consumer;
    if (api === null || this.connection === null || !this.classic || !consumer.memberId) return this.viaLibrary(offsets, generationId);
    return new Promise<void>((resolve, reject) => {
      const viaLibrary = () => this.viaLibrary(offsets, generationId).then(resolve, reject);
      try {
        api(this.connection, consumer.groupId, generationId, consumer.memberId!, null, commitTopics(offsets), (error) => {
          if (!error) return resolve();
          this.connection = null;
          viaLibrary();
        });
      } catch {
        this.connection = null;
        viaLibrary();
      }
    });
  }

  /** The library's commit (it finds the coordinator, retries, rejoins), sent only under generationId. */
  private async viaLibrary(offsets: OffsetToCommit[], generationId: number): Promise<void> {
    this.fence = this.classic ? generationId : null;
    this.fenced = null;
    try {
      await this.consumer.commit({ offsets });
    } catch (err) {
      throw this.fenced ?? err;
    } finally {
      this.fence = null;
    }
  }
}

/** The request's topics: the offsets grouped by topic. */
function commitTopics(offsets: OffsetToCommit[]): CommitTopic[] {
  const topics: CommitTopic[] = [];
  for (const o of offsets) {
    let t = topics.find((x) => x.name === o.topic);
    if (!t) topics.push((t = { name: o.topic, partitions: [] }));
    t.partitions.push({ partitionIndex: o.partition, committedOffset: o.offset, committedLeaderEpoch: o.leaderEpoch, committedMetadata: null });
  }
  return topics;
}
