import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { SimulationResult } from "../../src/simulate/engine.ts";
import { simulateWithHistory } from "../../src/simulate/with-history.ts";
import { DEFAULTS, parseWindows, type SimulationOptions } from "../../src/simulate/options.ts";
import { htmlReport } from "../../src/simulate/html.ts";
import { jsonReport } from "../../src/simulate/report.ts";
import { runCli, tempDir } from "../support/helpers.ts";

const COLLECTOR = path.join(import.meta.dir, "..", "..", "conf", "hdfs-collector.conf");

describe("flume simulate with an hdfs sink", () => {
  test("conf/hdfs-collector.conf with failing, slow HDFS writes: nothing lost, the duplicates explained by cause", () => {
    const r = runCli(["simulate", "-f", COLLECTOR, "--events", "2000", "--fail-sink", "0.2", "--sink-latency", "200ms", "--seed", "7"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/at-least-once: HELD \(0 lost, \d+ duplicates\)/);
    expect(r.stdout).toMatch(/duplicates by cause:\n\s+partial-batch\s+\d+\s+a batch partly got through, then rolled back and was sent again/);
    expect(r.stdout).toContain("sink k1 <- c1 (hdfs writes files hdfs://namenode:8020/flume/events/%Y-%m-%d/%H/events-%[localhost].N (in use: NAME.tmp) on the simulated HDFS, batches of 1000");
    expect(r.stdout).toMatch(/^  hdfs: \d+ files written \([\d,]+ events in \d+ writes\), [1-9]\d* closed and renamed/m);
  }, 60_000);

  test("conf/hdfs-collector.conf with the NameNode down and late writes, through the CLI: every duplicate an hdfs-timeout, the same bytes for the same seed", () => {
    const args = ["simulate", "-f", COLLECTOR, "--events", "5000", "--namenode-down", "300ms-2s", "--hdfs-timeout", "0.2", "--seed", "3", "--no-progress"];
    const r = runCli(args);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("hdfs: NameNode unavailable 300ms to 2.000s; hdfs: each write answers after callTimeout with probability 0.2");
    expect(r.stdout).toMatch(/at-least-once: HELD \(0 lost, [1-9][\d,]* duplicates\)/);
    expect(r.stdout).toMatch(/duplicates by cause:\n\s+hdfs-timeout\s+[\d,]+\s+an HDFS write landed but answered after the sink's callTimeout, so the batch was written again \(e\.g\. event \d+\)\n\n/);
    expect(runCli(args).stdout).toBe(r.stdout);
  }, 60_000);
});

const HDFS_CONF = readFileSync(COLLECTOR, "utf8");

/** conf/hdfs-collector.conf with its roll settings replaced, simulated with these options. */
async function hdfsRun(over: Partial<SimulationOptions>, roll: Record<string, string> = {}): Promise<SimulationResult> {
  const { dir, cleanup } = tempDir("flume-sim-hdfs-");
  try {
    let text = HDFS_CONF;
    for (const [key, value] of Object.entries(roll)) {
      const line = new RegExp(`^collector\\.sinks\\.k1\\.hdfs\\.${key} = .*$`, "m");
      text = line.test(text) ? text.replace(line, `collector.sinks.k1.hdfs.${key} = ${value}`) : `${text}\ncollector.sinks.k1.hdfs.${key} = ${value}\n`;
    }
    const conf = path.join(dir, "hdfs.conf");
    writeFileSync(conf, text);
    return await simulateWithHistory({ ...DEFAULTS, events: 5000, configFile: conf, workDir: dir, ...over });
  } finally {
    cleanup();
  }
}

const hdfsLine = (r: SimulationResult) => r.peers.find((l) => l.startsWith("hdfs:")) ?? "";
const causeCount = (r: SimulationResult) => Object.fromEntries(r.duplicateCauses.filter((d) => d.count > 0).map((d) => [d.cause, d.count]));
const DIR = "hdfs://namenode:8020/flume/events/%Y-%m-%d/%H/events-%[localhost]";

describe("the hdfs sink against the simulated file system", () => {
  test("files are written under their in-use name and renamed when rolled (rollCount), as the real sink does", async () => {
    const r = await hdfsRun({}, { rollCount: "1000" });
    expect(r.topology).toContain(`sink k1 <- c1 (hdfs writes files ${DIR}.N (in use: NAME.tmp) on the simulated HDFS, batches of 1000, rolled at 1000 events or 134217728 bytes or 10m00.000s, closed after 2m00.000s idle)`);
    expect(r.summary).toMatchObject({ deliveredUnique: 5000, duplicates: 0, lost: 0 });
    expect(hdfsLine(r)).toStartWith("hdfs: 5 files written (5,000 events in 50 writes), 5 closed and renamed, 0 open when the run ended, 0 left in use by a failed close;");
    expect(r.sinks[0]).toMatchObject({ kind: "hdfs", delivered: 5000, failed: 0 });
    expect(htmlReport(DEFAULTS, r)).toContain(`<h2>simulated peers</h2>\n<p>${hdfsLine(r)}</p>`);
  }, 60_000);

  test("hdfs.idleTimeout: a file without a write for that long is closed and renamed; the next batch opens a new one", async () => {
    const r = await hdfsRun({ events: 300, rate: 10 }, { idleTimeout: "2" });
    expect(r.topology.some((l) => l.endsWith(", closed after 2.000s idle)"))).toBe(true);
    expect(hdfsLine(r)).toStartWith(`hdfs: 3 files written (300 events in 3 writes), 2 closed and renamed, 1 open when the run ended (${DIR}.3.tmp)`);
  }, 60_000);

  test("the NameNode unavailable: a batch needing a new file fails before it writes (no duplicate), a roll's close waits in use until hdfs.retryInterval", async () => {
    const r = await hdfsRun({ nameNodeDown: parseWindows("150ms-3s", "--namenode-down") }, { rollCount: "1000", retryInterval: "1" });
    expect(r.verdict.line).toBe("at-least-once: HELD (0 lost, 0 duplicates)");
    expect(hdfsLine(r)).toMatch(/^hdfs: 5 files written \(5,000 events in \d+ writes\), 5 closed and renamed, 0 open when the run ended, 0 left in use by a failed close; [1-9]\d* creates refused, [1-9]\d* closes or renames failed \(retried\)/);
    expect(r.sinks[0].failed).toBeGreaterThan(0);
    expect(r.time).toBeGreaterThan(3000);
  }, 60_000);

  test("failing closes leave the files in use (retried after hdfs.retryInterval); the events are in them, nothing lost or repeated", async () => {
    const r = await hdfsRun({ hdfsFailClose: 1 }, { rollCount: "1000" });
    expect(r.verdict.line).toBe("at-least-once: HELD (0 lost, 0 duplicates)");
    expect(hdfsLine(r)).toStartWith(`hdfs: 5 files written (5,000 events in 50 writes), 0 closed and renamed, 0 open when the run ended, 5 left in use by a failed close (${DIR}.1.tmp, ${DIR}.2.tmp, ...); 0 creates refused, 5 closes or renames failed (retried)`);
  }, 60_000);

  test("a write that lands but answers after callTimeout: the sink rolls back and writes the batch again, every copy an hdfs-timeout duplicate", async () => {
    const r = await hdfsRun({ hdfsTimeout: 0.3, seed: 2 }, { callTimeout: "10000" });
    expect(r.verdict.held).toBe(true);
    expect(r.summary.duplicates).toBeGreaterThan(0);
    expect(causeCount(r)).toEqual({ "hdfs-timeout": r.summary.duplicates });
    expect(hdfsLine(r)).toMatch(/[1-9]\d* writes past callTimeout$/);
    const story = r.histories.find((h) => h.causes?.includes("hdfs-timeout"))?.lines.join("\n") ?? "";
    expect(story).toMatch(/landed, but answered after callTimeout 10000 ms; sink k1 rolls back[^]*that delivery is a duplicate: an HDFS write landed but answered after the sink's callTimeout/);
  }, 60_000);

  test("a crash leaves the open file in use; the restarted sink renames it, as the real one does at start", async () => {
    const r = await hdfsRun({ crashAt: [250] });
    expect(r.verdict.held).toBe(true);
    expect(hdfsLine(r)).toStartWith("hdfs: 2 files written (5,000 events in 50 writes), 1 closed and renamed, 1 open when the run ended");
  }, 60_000);

  test("the same seed gives the same report, byte for byte", async () => {
    const o: Partial<SimulationOptions> = { hdfsTimeout: 0.2, hdfsFailClose: 0.3, failSink: { kind: "rate", rate: 0.1 }, nameNodeDown: parseWindows("1s-2s", "--namenode-down"), seed: 5 };
    const report = (r: SimulationResult) => jsonReport({ ...DEFAULTS, ...o }, r).replaceAll(/flume-sim-hdfs-\w+/g, "DIR");
    const a = await hdfsRun(o, { rollCount: "700", callTimeout: "5000" });
    const b = await hdfsRun(o, { rollCount: "700", callTimeout: "5000" });
    expect(a.summary.duplicates).toBeGreaterThan(0);
    expect(report(b)).toBe(report(a));
  }, 60_000);
});
