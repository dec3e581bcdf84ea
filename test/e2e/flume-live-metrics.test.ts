/**
 * The same config text run by a live Apache Flume 1.11.0 and by our agent, fed the same input:
 * their /metrics JSON must have the same component keys, the same counter names, and the same
 * values for every counter the input decides.
 */
import { afterAll, describe, expect } from "bun:test";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type FlumePeer, startFlume } from "../support/flume.ts";
import { FlowsConf, flumeClasspathBeforeAll, makeEvents, postEvents, waitForPorts } from "../support/flume-live.ts";
import { createEvent } from "../../src/core/event.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { ThriftRpcClient } from "../../src/rpc/thrift/client.ts";
import { freePort, type Metrics, sendLines, startAgentCli, tempDir, waitForMetrics } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";

flumeClasspathBeforeAll();
const tmp = tempDir("flume-live-metrics-");
const cleanups: (() => void)[] = [];
const flumes: FlumePeer[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0)) c();
  await Promise.all(flumes.map((f) => f.stop(2000)));
  tmp.cleanup();
}, 60_000);

/**
 * Counters that differ between two runs of the same agent on the same input, so between Flume and
 * ours too: when a component started and stopped, how often a channel was polled, and when a
 * connection count was last sampled.
 */
const TIMING: Record<string, string> = {
  StartTime: "wall clock",
  StopTime: "wall clock",
  EventTakeAttemptCount: "counts the empty take that ends every sink poll, so it follows how often the sink runner polled",
  OpenConnectionCount: "Flume's avro source samples it once a minute (its thrift source never sets it); ours counts connections as they open and close",
};

/** Every counter of both agents, side by side, where they differ (timing counters and the components named in oursOnly left out). */
function differences(flume: Metrics, ours: Metrics, oursOnly: Record<string, string> = {}): string[] {
  const out: string[] = [];
  const keys = new Set([...Object.keys(flume), ...Object.keys(ours)].filter((k) => !(k in oursOnly && !(k in flume))));
  for (const key of keys) {
    const f = flume[key];
    const o = ours[key];
    if (!f || !o) {
      out.push(`${key}: ${f ? "only Flume has it" : "only ours has it"}`);
      continue;
    }
    for (const name of new Set([...Object.keys(f), ...Object.keys(o)])) {
      if (!(name in f)) out.push(`${key}.${name}: only ours has it (${o[name]})`);
      else if (!(name in o)) out.push(`${key}.${name}: only Flume has it (${f[name]})`);
      else if (!(name in TIMING) && f[name] !== o[name]) out.push(`${key}.${name}: Flume ${f[name]}, ours ${o[name]}`);
    }
  }
  return out.sort();
}

/** Runs conf in both agents (each in its own directory, so relative paths do not clash); resolves with both. */
async function runBoth(name: string, conf: (side: "flume" | "ours") => string | Promise<string>, prepare?: (dir: string) => void) {
  const dirs = { flume: path.join(tmp.dir, name, "flume"), ours: path.join(tmp.dir, name, "ours") };
  // Flume's file_roll sink does not create its directory (ours does): made for both.
  for (const d of Object.values(dirs)) {
    mkdirSync(path.join(d, "out"), { recursive: true });
    prepare?.(d);
  }
  const [fm, om] = [await freePort(), await freePort()];
  const flume = await startFlume({ conf: await conf("flume"), metricsPort: fm, dir: dirs.flume, readyTimeoutMs: 120_000 });
  flumes.push(flume);
  const confFile = path.join(dirs.ours, "a1.properties");
  await Bun.write(confFile, await conf("ours"));
  const ours = startAgentCli(cleanups, ["run", "-f", confFile, "-n", "a1", "--metrics-port", String(om), "--metrics-bind", "127.0.0.1", "--no-reload-conf"], /agent a1 started/, { cwd: dirs.ours });
  return { flume, ours: await ours, flumeMetrics: fm, ourMetrics: om, dirs };
}

describe("the same config in a live Apache Flume 1.11.0 and in ours: /metrics compared", () => {
  needsJvm.test(
    "seq -> memory -> null and seq -> file channel -> file_roll: same keys, same counters",
    async () => {
      const total = 1000;
      const conf = () => `a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = ${total}
a1.sources.r1.batchSize = 50
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.channels.c1.capacity = 10000
a1.channels.c1.transactionCapacity = 100
a1.sinks.k1.type = null
a1.sinks.k1.batchSize = 100
a1.sinks.k1.channel = c1
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = ${total}
a1.sources.r2.batchSize = 100
a1.sources.r2.channels = c2
a1.channels.c2.type = file
a1.channels.c2.checkpointDir = ckpt
a1.channels.c2.dataDirs = data
a1.channels.c2.transactionCapacity = 100
a1.sinks.k2.type = file_roll
a1.sinks.k2.sink.directory = out
a1.sinks.k2.sink.rollInterval = 0
a1.sinks.k2.sink.batchSize = 100
a1.sinks.k2.channel = c2
`;
      const both = await runBoth("seq", conf);
      // Flume's null sink has no counters (nor has ours): its channel tells when it drained.
      const done = (m: Metrics) => m["CHANNEL.c1"]?.EventTakeSuccessCount === String(total) && m["SINK.k2"]?.EventDrainSuccessCount === String(total);
      const f = await waitForMetrics(both.flumeMetrics, "Flume's sinks to drain every event", done, 120_000, 200);
      const o = await waitForMetrics(both.ourMetrics, "our sinks to drain every event", done, 120_000, 200);
      expect(Object.keys(o).sort()).toEqual(Object.keys(f).sort());
      expect(differences(f, o)).toEqual([]);
    },
    300_000,
  );
  needsJvm.test(
    "netcat -> memory -> null and netcat -> file channel -> file_roll, a line too long among them: same answers, Flume's keys and counters in ours",
    async () => {
      const ports = { flume: [await freePort(), await freePort()], ours: [await freePort(), await freePort()] };
      // The same text but for the netcat ports, which two agents on one host cannot share.
      const conf = (side: "flume" | "ours") => `a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${ports[side][0]}
a1.sources.r1.max-line-length = 64
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
a1.sources.r2.type = netcat
a1.sources.r2.bind = 127.0.0.1
a1.sources.r2.port = ${ports[side][1]}
a1.sources.r2.channels = c2
a1.channels.c2.type = file
a1.channels.c2.checkpointDir = ckpt
a1.channels.c2.dataDirs = data
a1.sinks.k2.type = file_roll
a1.sinks.k2.sink.directory = out
a1.sinks.k2.sink.rollInterval = 0
a1.sinks.k2.channel = c2
`;
      const both = await runBoth("netcat", conf);
      const lines = Array.from({ length: 200 }, (_, i) => `line ${i}`);
      const input = [...lines.slice(0, 100), "x".repeat(100), ...lines.slice(100)].map((l) => `${l}\n`).join("");
      const answers: Record<string, string[]> = {};
      for (const side of ["flume", "ours"] as const) {
        answers[`${side} r1`] = (await sendLines(ports[side][0], input, 1000, 201)).split("\n");
        answers[`${side} r2`] = (await sendLines(ports[side][1], lines.map((l) => `${l}\n`).join(""), 1000, 200)).split("\n");
      }
      // What each agent answered, line by line (OK, or the error for the line too long).
      expect(answers["ours r1"]).toEqual(answers["flume r1"]);
      expect(answers["ours r2"]).toEqual(answers["flume r2"]);
      // Both answer the line too long with FAILED and close the connection: r1 takes the 100 lines before it.
      expect(answers["flume r1"].slice(99, 102)).toEqual(["OK", "FAILED: Event exceeds the maximum length (64 chars, including newline)", ""]);
      const done = (m: Metrics) => m["CHANNEL.c1"]?.EventTakeSuccessCount === "100" && m["SINK.k2"]?.EventDrainSuccessCount === "200";
      const f = await waitForMetrics(both.flumeMetrics, "Flume's sinks to drain every event", done, 120_000, 200);
      const o = await waitForMetrics(both.ourMetrics, "our sinks to drain every event", done, 120_000, 200);
      // Flume 1.11's netcat source keeps no SourceCounter, so Flume shows no SOURCE key for it;
      // ours counts its events (a superset: a dashboard made for Flume finds all it reads).
      const oursOnly = { "SOURCE.r1": "netcat source", "SOURCE.r2": "netcat source" };
      expect(Object.keys(f).sort()).toEqual(["CHANNEL.c1", "CHANNEL.c2", "SINK.k2"]);
      expect(Object.keys(o).sort()).toEqual([...Object.keys(f), ...Object.keys(oursOnly)].sort());
      expect(o["SOURCE.r1"]).toMatchObject({ EventReceivedCount: "100", EventAcceptedCount: "100" });
      expect(o["SOURCE.r2"]).toMatchObject({ EventReceivedCount: "200", EventAcceptedCount: "200" });
      expect(differences(f, o, oursOnly)).toEqual([]);
    },
    300_000,
  );
  needsJvm.test(
    "avro, thrift and http sources given the same calls by one client: same keys, same counters",
    async () => {
      const ports = { flume: [await freePort(), await freePort(), await freePort()], ours: [await freePort(), await freePort(), await freePort()] };
      // The same text but for the ports, which two agents on one host cannot share.
      const conf = (side: "flume" | "ours") => {
        const [avro, thrift, http] = ports[side];
        return new FlowsConf()
          .add("avro", { type: "avro", bind: "127.0.0.1", port: avro }, { type: "null" })
          .add("thrift", { type: "thrift", bind: "127.0.0.1", port: thrift, protocol: "compact" }, { type: "null" })
          .add("http", { type: "http", bind: "127.0.0.1", port: http }, { type: "null" })
          .toString();
      };
      const both = await runBoth("rpc", conf);
      await waitForPorts(ports.flume, "Flume's sources");
      // Flume's thrift source listens before its counter starts, and starting it zeroes it: wait for every source's counter.
      const sources = ["SOURCE.avro_r", "SOURCE.thrift_r", "SOURCE.http_r"];
      await waitForMetrics(both.flumeMetrics, "Flume's source counters to start", (m) => sources.every((k) => Number(m[k]?.StartTime) > 0), 120_000, 100);
      const batch = (n: number) => Array.from({ length: n }, (_, i) => createEvent(`event ${i}`, { i: String(i) }));
      const open: { close(): void }[] = [];
      cleanups.push(() => open.forEach((c) => c.close()));
      for (const side of ["flume", "ours"] as const) {
        const [avroPort, thriftPort, httpPort] = ports[side];
        // Three batches and two single events on a connection that is closed, one batch on one left open.
        const avro = [await AvroRpcClient.connect({ host: "127.0.0.1", port: avroPort }), await AvroRpcClient.connect({ host: "127.0.0.1", port: avroPort })];
        const thrift = [await ThriftRpcClient.connect({ host: "127.0.0.1", port: thriftPort, protocol: "compact" }), await ThriftRpcClient.connect({ host: "127.0.0.1", port: thriftPort, protocol: "compact" })];
        for (const client of [avro[0], thrift[0]]) {
          for (let b = 0; b < 3; b++) await client.appendBatch(batch(10));
          await client.append(createEvent("one"));
          await client.append(createEvent("two"));
          await client.appendBatch(batch(5));
          client.close();
        }
        await avro[1].appendBatch(batch(4));
        await thrift[1].appendBatch(batch(4));
        open.push(avro[1], thrift[1]);
        for (let b = 0; b < 3; b++) await postEvents(httpPort, makeEvents("http", 10));
        // A request the JSON handler cannot read: 400 from both.
        const bad = await fetch(`http://127.0.0.1:${httpPort}/`, { method: "POST", headers: { "content-type": "application/json" }, body: "[{not json" });
        expect(`${side}: ${bad.status}`).toBe(`${side}: 400`);
      }
      const done = (m: Metrics) =>
        m["CHANNEL.avro_c"]?.EventTakeSuccessCount === "41" &&
        m["CHANNEL.thrift_c"]?.EventTakeSuccessCount === "41" &&
        m["CHANNEL.http_c"]?.EventTakeSuccessCount === "30";
      const f = await waitForMetrics(both.flumeMetrics, "Flume's channels to be drained", done, 120_000, 200);
      const o = await waitForMetrics(both.ourMetrics, "our channels to be drained", done, 120_000, 200);
      // The connection left open, counted as it is (see OpenConnectionCount above).
      expect([o["SOURCE.avro_r"].OpenConnectionCount, o["SOURCE.thrift_r"].OpenConnectionCount]).toEqual(["1", "1"]);
      expect(Object.keys(o).sort()).toEqual(Object.keys(f).sort());
      expect(differences(f, o)).toEqual([]);
    },
    300_000,
  );
  needsJvm.test(
    "TAILDIR and spooldir sources reading the same files: same keys, same counters",
    async () => {
      const logs = path.join(tmp.dir, "files", "logs");
      mkdirSync(logs, { recursive: true });
      const files = ["a", "b", "c"].map((name) => ({ name: `${name}.log`, text: Array.from({ length: 120 }, (_, i) => `${name} line ${i}\n`).join("") }));
      for (const f of files) writeFileSync(path.join(logs, f.name), f.text);
      // Relative paths (positionFile, spoolDir) are each agent's own; the tailed files are shared.
      // (A positionFile without a directory part makes Flume's TAILDIR fail: its parent is null.)
      const conf = new FlowsConf()
        .add("tail", { type: "TAILDIR", positionFile: "state/taildir_position.json", filegroups: "f1", "filegroups.f1": path.join(logs, ".*\\.log"), batchSize: 50 }, { type: "null" })
        .add("spool", { type: "spooldir", spoolDir: "spool", batchSize: 50 }, { type: "null" })
        .toString();
      const both = await runBoth("files", () => conf, (dir) => mkdirSync(path.join(dir, "spool")));
      // Flume's spooldir starts reading before its counter starts, and starting it zeroes it:
      // the files are moved in once it started (renamed: a spooled file must be complete).
      await waitForMetrics(both.flumeMetrics, "Flume's spooldir counter to start", (m) => Number(m["SOURCE.spool_r"]?.StartTime) > 0, 120_000, 100);
      for (const dir of Object.values(both.dirs)) {
        for (const f of files) {
          writeFileSync(path.join(dir, f.name), f.text);
          renameSync(path.join(dir, f.name), path.join(dir, "spool", f.name));
        }
      }
      const done = (m: Metrics) => m["CHANNEL.tail_c"]?.EventTakeSuccessCount === "360" && m["CHANNEL.spool_c"]?.EventTakeSuccessCount === "360";
      const f = await waitForMetrics(both.flumeMetrics, "Flume's channels to be drained", done, 120_000, 200);
      const o = await waitForMetrics(both.ourMetrics, "our channels to be drained", done, 120_000, 200);
      expect(Object.keys(o).sort()).toEqual(Object.keys(f).sort());
      expect(differences(f, o)).toEqual([]);
    },
    300_000,
  );
});
