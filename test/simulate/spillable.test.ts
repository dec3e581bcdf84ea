// flume simulate and flume replay with a channel that keeps only part of its events through a
// crash: SPILLABLEMEMORY loses what it held in memory, keeps its overflow; both count the same.
import { expect, test } from "bun:test";
import path from "node:path";
import { cleanupsAfterEach, runCli, tempConf } from "../support/helpers.ts";

const cleanups = cleanupsAfterEach();

test("a crash loses exactly the memory part of a SPILLABLEMEMORY channel; replay reaches the same ledger", () => {
  const { conf, dir } = tempConf(cleanups, [
      "a1.sources = r1",
      "a1.channels = c1",
      "a1.sinks = k1",
      "a1.sources.r1.type = seq",
      "a1.sources.r1.channels = c1",
      "a1.channels.c1.type = SPILLABLEMEMORY",
      "a1.channels.c1.memoryCapacity = 50",
      "a1.channels.c1.overflowCapacity = 5000",
      "a1.channels.c1.transactionCapacity = 100",
      "a1.sinks.k1.type = null",
      "a1.sinks.k1.channel = c1",
      "",
    ].join("\n"), "spill.conf", "flume-sim-spill-");
  const trace = path.join(dir, "run.jsonl");
  const r = runCli(["simulate", "-f", conf, "--crash-at", "8s", "--events", "20000", "--rate", "1000", "--sink-latency", "200", "--json", "--trace", trace], { timeout: 60000 });
  const report = JSON.parse(r.stdout);
  // At the crash the memory queue held 50 events (memoryCapacity), the overflow the rest.
  expect(report.crashes).toMatchObject([{ agent: "a1", at: 8000, down: 0, dropped: [{ channel: "c1", events: 50 }] }]);
  // Lost for good: those not delivered before the crash by a sink batch whose commit it cut off.
  expect(report.lost).toBeGreaterThan(0);
  expect(report.lost).toBeLessThanOrEqual(50);
  // Every lost event is owed to the crash.
  expect(report.crashes[0].lost).toBe(report.lost);
  expect(report.deliveredUnique + report.lost).toBe(20000);
  expect(report.firstLost.history.join("\n")).toContain("CRASH: SPILLABLEMEMORY channel c1 loses the events it holds in memory, this event with them");
  const replay = runCli(["replay", trace], { timeout: 60000 });
  expect(replay.stdout).toContain("replay reached the same ledger");
}, 60000);
