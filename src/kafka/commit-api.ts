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
 * Only under the classic group protocol (the consumer protocol's member epoch is the
 * library's private state).
 */
import type { Consumer } from "@platformatic/kafka";
import { asLibraryApi, type Callback, type LibraryApi, replaceApi } from "./api-hook.ts";
import type { KafkaModule } from "./client.ts";

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

  constructor(
    kafka: KafkaModule,
    private readonly consumer: KafkaConsumer,
  ) {
    const options = (consumer as unknown as Record<symbol, { groupProtocol?: string } | undefined>)[kafka.kOptions];
    this.classic = options?.groupProtocol !== "consumer";
    // The library's commits go through as they were; what they were sent on is kept.
    replaceApi<OffsetCommitApi>(kafka, consumer, "OffsetCommit", (library) =>
      asLibraryApi(((connection, ...args) => {
        this.connection = connection;
        this.api = library;
        library(connection, ...args);
      }) as OffsetCommitApi, library),
    );
  }

  /** Commits the offsets: on the kept connection when there is one, else (or when that fails) the library's way. */
  commit(offsets: OffsetToCommit[]): Promise<void> {
    const api = this.api;
    const consumer = this.consumer;
    if (api === null || this.connection === null || !this.classic || !consumer.memberId) return consumer.commit({ offsets });
    return new Promise<void>((resolve, reject) => {
      const viaLibrary = () => consumer.commit({ offsets }).then(resolve, reject);
      try {
        api(this.connection, consumer.groupId, consumer.generationId, consumer.memberId!, null, commitTopics(offsets), (error) => {
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
