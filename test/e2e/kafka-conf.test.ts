import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { CLI, ROOT } from "../support/helpers.ts";

const FORBID_KAFKA = path.join(ROOT, "test", "support", "forbid-kafka.ts");

/** The CLI with a preload that fails if the Kafka client package is loaded. */
function cliWithoutKafka(args: string[]) {
  const r = spawnSync(process.execPath, ["--preload", FORBID_KAFKA, CLI, ...args], { cwd: ROOT, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  return { code: r.status, out: r.stdout + r.stderr };
}

test("conf/kafka-edge.conf and conf/kafka-collector.conf are valid, and validating them or describing kafka loads no Kafka client", () => {
  for (const [file, agent] of [
    ["conf/kafka-edge.conf", "edge"],
    ["conf/kafka-collector.conf", "collector"],
  ]) {
    const r = cliWithoutKafka(["validate", file]);
    expect(r.out).toBe(`${file}: agent ${agent} is valid\n`);
    expect(r.code).toBe(0);
  }
  const d = cliWithoutKafka(["describe", "kafka"]);
  expect(d.code).toBe(0);
  expect(d.out).toContain("channel org.apache.flume.channel.kafka.KafkaChannel");
});

test("flume simulate runs the Kafka configs: the sink and source as simulated peers, the channel as a file channel, no Kafka client loaded", () => {
  const edge = cliWithoutKafka(["simulate", "-f", "conf/kafka-edge.conf", "--events", "3000", "--crash-at", "150ms", "--no-progress"]);
  expect(edge.out).toContain("sink k1 <- c1 (org.apache.flume.sink.kafka.KafkaSink replaced by a simulated sink, batches of 1000)");
  expect(edge.out).toContain("at-least-once: HELD (0 lost");
  expect(edge.code).toBe(0);
  const collector = cliWithoutKafka(["simulate", "-f", "conf/kafka-collector.conf", "--events", "3000", "--no-progress"]);
  expect(collector.out).toContain("source r1 -> c1 (org.apache.flume.source.kafka.KafkaSource replaced by a simulated client, batches of 1000)");
  expect(collector.out).toContain("at-least-once: HELD (0 lost, 0 duplicates)");
  expect(collector.code).toBe(0);
});
