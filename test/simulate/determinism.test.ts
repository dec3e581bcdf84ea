/**
 * `flume simulate` is deterministic with file channels: the same seed prints the same bytes
 * however long the disk takes, even with every core busy beside it. Real I/O completing must
 * never reach virtual time.
 *
 * FLUME_SIMULATE_RUNS sets how many runs are compared and FLUME_SIMULATE_EVENTS their size:
 * by default 6 runs of 5000 events (before the fix, each of 3 such checks saw two or three
 * different outputs); the full check is 20 runs of 20000.
 */
import { describe, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT, runCli, tempDir } from "../support/helpers.ts";

const RUNS = Number(process.env.FLUME_SIMULATE_RUNS ?? 6);
const EVENTS = Number(process.env.FLUME_SIMULATE_EVENTS ?? 5000);

/** conf/tier.conf with a file channel on edge1 too: two agents of the tier write to disk. */
function tierWithFileChannels(dir: string): string {
  const tier = readFileSync(path.join(ROOT, "conf", "tier.conf"), "utf8");
  const edge1 = `edge1.channels.c1.type = file\nedge1.channels.c1.checkpointDir = ${path.join(dir, "edge1", "checkpoint")}\nedge1.channels.c1.dataDirs = ${path.join(dir, "edge1", "data")}`;
  const conf = tier.replace("edge1.channels.c1.type = memory", edge1);
  expect(conf).not.toBe(tier);
  expect(conf).toContain("collector.channels.c1.type = file");
  const file = path.join(dir, "tier.conf");
  writeFileSync(file, conf);
  return file;
}

/** A busy loop on every core, as another workload on the machine would be. */
function busyEveryCore(): ChildProcess[] {
  return Array.from({ length: os.availableParallelism() }, () => spawn("node", ["-e", "for(;;){}"], { stdio: "ignore" }));
}

describe("flume simulate with file channels on a loaded machine", () => {
  test(`the same seed prints byte-identical output in ${RUNS} runs of ${EVENTS} events, with every core busy beside them`, () => {
    const { dir, cleanup } = tempDir("flume-determinism-");
    const busy = busyEveryCore();
    try {
      const conf = tierWithFileChannels(dir);
      const args = ["simulate", "-f", conf, "--events", String(EVENTS), "--seed", "5", "--partition", "edge1->collector@1s-3s", "--fail-sink", "0.1"];
      const outputs = new Map<string, number>();
      let first = "";
      for (let i = 0; i < RUNS; i++) {
        const r = runCli(args, { timeout: 240_000 });
        expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
        // What the run went through, so the comparison below compares something.
        if (i === 0) {
          first = r.stdout;
          expect(first).toContain("edge1: channel c1 (file on a scratch directory");
          expect(first).toMatch(/tier at-least-once: HELD/);
        }
        const digest = createHash("sha256").update(r.stdout).digest("hex").slice(0, 12);
        outputs.set(digest, (outputs.get(digest) ?? 0) + 1);
      }
      expect([...outputs.values()]).toEqual([RUNS]);
    } finally {
      for (const b of busy) b.kill("SIGKILL");
      cleanup();
    }
  }, 900_000);

  test("Kafka and HDFS configs (the simulated broker, with a Kafka channel too, and file system with their faults): the same seed prints byte-identical output, with every core busy", () => {
    const { dir, cleanup } = tempDir("flume-determinism-peers-");
    const busy = busyEveryCore();
    try {
      // conf/kafka-edge.conf and conf/kafka-collector.conf as one tier over the simulated topic.
      const tier = path.join(dir, "kafka-tier.conf");
      writeFileSync(tier, `${readFileSync(path.join(ROOT, "conf", "kafka-edge.conf"), "utf8").replace("kafka.producer.acks = all", "kafka.producer.acks = 1")}\n${readFileSync(path.join(ROOT, "conf", "kafka-collector.conf"), "utf8")}`);
      // A Kafka channel kept in a topic of the simulated broker.
      const channel = path.join(dir, "kafka-channel.conf");
      writeFileSync(
        channel,
        ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = seq", "a1.sources.r1.batchSize = 100", "a1.sources.r1.channels = c1", "a1.channels.c1.type = kafka", "a1.channels.c1.kafka.bootstrap.servers = kafka1:9092", "a1.channels.c1.kafka.topic = ch", "a1.sinks.k1.type = logger", "a1.sinks.k1.channel = c1", ""].join("\n"),
      );
      const runs: [string, string[]][] = [
        ["kafka channel", ["simulate", "-f", channel, "--events", String(EVENTS), "--seed", "5", "--sink-latency", "50ms", "--kafka-lose-ack", "0.1", "--kafka-failover", "ch:1@100ms+40s", "--crash", "a1@250ms+1s"]],
        ["kafka", ["simulate", "-f", tier, "--events", String(EVENTS), "--seed", "5", "--sink-latency", "100ms", "--kafka-lose-ack", "0.1", "--kafka-failover", "logs@150ms+200ms", "--crash", "collector@400ms+1s"]],
        ["hdfs", ["simulate", "-f", path.join(ROOT, "conf", "hdfs-collector.conf"), "--events", String(EVENTS), "--seed", "5", "--hdfs-timeout", "0.1", "--hdfs-fail-close", "0.5", "--namenode-down", "300ms-2s", "--fail-sink", "0.1", "--crash-at", "250ms"]],
      ];
      for (const [what, args] of runs) {
        const outputs = new Set<string>();
        for (let i = 0; i < Math.min(RUNS, 3); i++) {
          const r = runCli(args, { timeout: 240_000 });
          expect({ what, code: r.code, stderr: r.stderr }).toEqual({ what, code: 0, stderr: "" });
          expect(r.stdout).toMatch(/duplicates by cause:\n\s+[a-z-]+\s+[1-9]/);
          outputs.add(r.stdout);
        }
        expect({ what, outputs: outputs.size }).toEqual({ what, outputs: 1 });
      }
    } finally {
      for (const b of busy) b.kill("SIGKILL");
      cleanup();
    }
  }, 900_000);
});
