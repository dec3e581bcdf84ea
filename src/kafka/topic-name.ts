/** Kafka's legal topic names, checked where a configuration names a topic (`flume validate`) and where an event's headers choose one. */
import type { PropError } from "../config/schema.ts";

const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

export const TOPIC_NAME_RULE = "1 to 249 of a-z A-Z 0-9 . _ -, not . or ..";

export function isTopicName(t: string): boolean {
  return TOPIC_NAME.test(t) && t !== "." && t !== "..";
}

/** A problem at `key` for each of `topics` that Kafka would refuse (its brokers answer such a name with INVALID_TOPIC_EXCEPTION). */
export function topicNameProblems(key: string, topics: readonly string[], why = ""): PropError[] {
  return topics.filter((t) => !isTopicName(t)).map((t) => ({ key, message: `"${t}" is not a Kafka topic name (${TOPIC_NAME_RULE})${why}` }));
}
