/**
 * The Kafka channel's configuration (src/components/channels/kafka/index.ts), as `flume
 * validate` and an agent's start check it: Flume's deprecated readSmallestOffset.
 */
import { expect, test } from "bun:test";
import { definition, type KafkaChannel } from "../../../../src/components/channels/kafka/index.ts";
import { componentContext } from "../../../../src/components/component.ts";
import * as registry from "../../../../src/components/registry.ts";
import { MemoryLogger } from "../../../../src/core/logger.ts";
import { validateConfigText } from "../../../../src/config/validate.ts";
import { seqConf } from "../../../support/agent.ts";

/** seq -> kafka channel c1 -> null, the channel's extra lines from line 9 on: its problems, as `flume validate` reports them. */
function check(extra: string[]) {
  const channel = ["a1.channels.c1.type = org.apache.flume.channel.kafka.KafkaChannel", "a1.channels.c1.kafka.bootstrap.servers = b1:9092", ...extra.map((l) => `a1.channels.c1.${l}`)].join("\n");
  return validateConfigText(seqConf(1, { channel }), "flume.conf", { agentName: "a1", env: {} }, registry).problems.map((p) => ({ line: p.line, severity: p.severity, code: p.code, key: p.key, message: p.message, hint: p.hint }));
}

/** Where the channel's consumer starts a group that has no committed offset. */
function offsetReset(props: Record<string, string>): string {
  const { options } = definition.parse({ "kafka.bootstrap.servers": "b1:9092", ...props });
  const channel = definition.create(options, componentContext("c1", { logger: new MemoryLogger() })) as KafkaChannel;
  return channel.options.consumer.autoOffsetReset;
}

test("Flume's deprecated readSmallestOffset is read as kafka.consumer.auto.offset.reset (true earliest, false latest), with a warning naming it", () => {
  expect(check(["readSmallestOffset = false"])).toEqual([
    { line: 9, severity: "warning", code: "deprecated-property", key: "readSmallestOffset", message: "is deprecated; Flume reads it as kafka.consumer.auto.offset.reset = latest", hint: "write kafka.consumer.auto.offset.reset = latest instead" },
  ]);
  expect(offsetReset({ readSmallestOffset: "false" })).toBe("latest");
  expect(check(["readSmallestOffset = true"])).toEqual([
    { line: 9, severity: "warning", code: "deprecated-property", key: "readSmallestOffset", message: "is deprecated; Flume reads it as kafka.consumer.auto.offset.reset = earliest", hint: "write kafka.consumer.auto.offset.reset = earliest instead" },
  ]);
  expect(offsetReset({ readSmallestOffset: "true" })).toBe("earliest");
  // Without either, Flume's channel default: a new group reads the topic from the beginning.
  expect(check([])).toEqual([]);
  expect(offsetReset({})).toBe("earliest");
});

test("kafka.consumer.auto.offset.reset set wins over readSmallestOffset, which is warned about as ignored", () => {
  expect(check(["readSmallestOffset = false", "kafka.consumer.auto.offset.reset = earliest"])).toEqual([
    { line: 9, severity: "warning", code: "deprecated-property", key: "readSmallestOffset", message: "is deprecated, and ignored: kafka.consumer.auto.offset.reset is set", hint: "remove readSmallestOffset" },
  ]);
  expect(offsetReset({ readSmallestOffset: "false", "kafka.consumer.auto.offset.reset": "earliest" })).toBe("earliest");
  expect(offsetReset({ readSmallestOffset: "true", "kafka.consumer.auto.offset.reset": "latest" })).toBe("latest");
});

test("a readSmallestOffset that is no boolean is an error at its line", () => {
  expect(check(["readSmallestOffset = maybe"])).toEqual([expect.objectContaining({ line: 9, severity: "error", key: "readSmallestOffset" })]);
});
