/**
 * How the group leader spreads partitions over the members of a consumer group, when one of ours
 * leads it. The client library's own assigners give every member partitions of the LEADER's
 * topics, whatever each member subscribed to: a Kafka source on topic t and a Kafka channel on
 * topic c in Flume's default group "flume" then both got partitions of one topic and one of them
 * waited forever. This one is Kafka's RangeAssignor (the first of the Java consumer's default
 * partition.assignment.strategy, and the only one of the client Flume 1.11 ships): for each topic,
 * the members subscribed to it, sorted by member id, take consecutive ranges of its partitions,
 * the first (partitions % members) one more. A partition goes to exactly one member, and only to
 * a member subscribed to its topic; a topic the metadata does not know is skipped.
 *
 * The members also offer the protocol by Java's name, "range", first: the broker picks a protocol
 * every member offers, so Flume's own (Java) consumers can share a group with ours; "roundrobin"
 * (the client's default name, what our earlier members offered) stays second, so those still
 * join too. Whichever name the broker picks, one of ours leading assigns with rangeAssigner.
 */
import type { GroupPartitionsAssigner, GroupPartitionsAssignments } from "@platformatic/kafka";

/** The assignment protocols our members offer, the preferred first (the client's `protocols` option). */
export const GROUP_PROTOCOLS = [
  { name: "range", version: 1 },
  { name: "roundrobin", version: 1 },
];

/** Member id -> the topics it subscribed to (what the members' JoinGroup metadata carries). */
export type Subscriptions = ReadonlyMap<string, { readonly topics?: readonly string[] }>;

/** Topic -> its partition count, for the topics the cluster metadata knows. */
export type PartitionCounts = ReadonlyMap<string, { readonly partitionsCount: number }>;

/** Member id -> topic -> the partitions it gets (sorted); every member is there, maybe with none. */
export function rangeAssignment(members: Subscriptions, topics: PartitionCounts): Map<string, Map<string, number[]>> {
  const out = new Map<string, Map<string, number[]>>();
  const subscribers = new Map<string, string[]>();
  for (const [memberId, subscription] of members) {
    out.set(memberId, new Map());
    for (const topic of new Set(subscription.topics ?? [])) {
      const list = subscribers.get(topic);
      if (list) list.push(memberId);
      else subscribers.set(topic, [memberId]);
    }
  }
  for (const [topic, memberIds] of subscribers) {
    const count = topics.get(topic)?.partitionsCount ?? 0;
    if (count <= 0) continue;
    // Java sorts by member id too (group.instance.id first, which we never set): same leader input, same answer.
    memberIds.sort();
    const each = Math.floor(count / memberIds.length);
    const extra = count % memberIds.length;
    for (let i = 0; i < memberIds.length; i++) {
      const start = each * i + Math.min(i, extra);
      const length = each + (i < extra ? 1 : 0);
      if (length === 0) continue;
      out.get(memberIds[i])!.set(topic, Array.from({ length }, (_, k) => start + k));
    }
  }
  return out;
}

/** The assigner handed to the client (its partitionAssigner option); the client's own `topics` argument (the leader's) is ignored. */
export const rangeAssigner: GroupPartitionsAssigner = (_leader, members, _leaderTopics, metadata) => {
  const result: GroupPartitionsAssignments[] = [];
  for (const [memberId, byTopic] of rangeAssignment(members, metadata.topics)) {
    const assignments = new Map<string, { topic: string; partitions: number[] }>();
    for (const [topic, partitions] of byTopic) assignments.set(topic, { topic, partitions });
    result.push({ memberId, assignments });
  }
  return result;
};

/**
 * rangeAssigner, telling `assigned` the partition count of each topic the members subscribed to
 * as this assignment saw it: the leader watches those counts and makes the group rebalance when
 * one changes, as the Java consumer's leader does (its assignment snapshot), or partitions
 * added to a topic would never be read.
 */
export function watchedRangeAssigner(assigned: (counts: Map<string, number>) => void): GroupPartitionsAssigner {
  return (leader, members, leaderTopics, metadata) => {
    const counts = new Map<string, number>();
    for (const subscription of members.values()) {
      for (const topic of subscription.topics ?? []) counts.set(topic, metadata.topics.get(topic)?.partitionsCount ?? 0);
    }
    const result = rangeAssigner(leader, members, leaderTopics, metadata);
    assigned(counts);
    return result;
  };
}
