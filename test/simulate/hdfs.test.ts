import { describe, expect, test } from "bun:test";
import path from "node:path";
import { runCli } from "../support/helpers.ts";

const COLLECTOR = path.join(import.meta.dir, "..", "..", "conf", "hdfs-collector.conf");

describe("flume simulate with an hdfs sink", () => {
  test("conf/hdfs-collector.conf with failing, slow HDFS writes: nothing lost, the duplicates explained by cause", () => {
    const r = runCli(["simulate", "-f", COLLECTOR, "--events", "2000", "--fail-sink", "0.2", "--sink-latency", "200ms", "--seed", "7"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/at-least-once: HELD \(0 lost, \d+ duplicates\)/);
    expect(r.stdout).toMatch(/duplicates by cause:\n\s+partial-batch\s+\d+\s+a batch partly got through, then rolled back and was sent again/);
  }, 60_000);
});
