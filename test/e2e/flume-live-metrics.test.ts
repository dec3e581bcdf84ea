/**
 * The same config text run by a live Apache Flume 1.11.0 and by our agent (one of each for the
 * file), fed the same input: their /metrics JSON must have the same component keys, the same
 * counter names, and the same values for every counter the input decides. Each test feeds and
 * compares its own flows (`<flow>_r` -> `<flow>_c` -> `<flow>_k`).
 */
import { beforeAll, describe, expect } from "bun:test";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createEvent } from "../../src/core/event.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { ThriftRpcClient } from "../../src/rpc/thrift/client.ts";
import { type FlumePeer, startFlume } from "../support/flume.ts";
import { FlowsConf, flumeClasspathBeforeAll, freePorts, makeEvents, postEvents, waitForPorts, liveFlumeScope } from "../support/flume-live.ts";
import { type AgentProcess, type Metrics, sendLines, startAgentCli, waitForMetrics } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";

flumeClasspathBeforeAll();
const scope = liveFlumeScope("flume-live-metrics-");
const { tmp, cleanups } = scope;

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

/** Counters only ours keeps, each a deliberate addition the README lists. */
const OURS_ONLY: Record<string, string> = {
  PositionFileResetCount: "TAILDIR: damaged positionFiles set aside (Flume overwrites them silently)",
};

type Side = "flume" | "ours";
const SIDES: Side[] = ["flume", "ours"];
const SEQ_TOTAL = 1000;
const LINES = 120;
const FILES = ["a", "b", "c"].map((name) => ({ name: `${name}.log`, text: Array.from({ length: LINES }, (_, i) => `${name} line ${i}\n`).join("") }));
const BAD_JSON = "[{not json";

interface Agents {
  ours: AgentProcess;
  flume: FlumePeer;
  dirs: Record<Side, string>;
  metrics: Record<Side, number>;
  /** Ports of the sources two agents on one host cannot share: the only difference between the configs. */
  ports: Record<Side, { nc: number; ncfile: number; avro: number; thrift: number; http: number }>;
}
let agents: Agents | undefined;

function conf(ports: Agents["ports"][Side], logs: string): string {
  const fileChannel = (n: number) => ({ type: "file", checkpointDir: `ckpt-${n}`, dataDirs: `data-${n}`, transactionCapacity: 100 });
  const fileRoll = (dir: string) => ({ type: "file_roll", "sink.directory": dir, "sink.rollInterval": 0, "sink.batchSize": 100 });
  const memory = { type: "memory", capacity: 10000, transactionCapacity: 100 };
  return (
    new FlowsConf()
      .add("seqmem", { type: "seq", totalEvents: SEQ_TOTAL, batchSize: 50 }, { type: "null", batchSize: 100 }, memory)
      .add("seqfile", { type: "seq", totalEvents: SEQ_TOTAL, batchSize: 100 }, fileRoll("out-1"), fileChannel(1))
      .add("nc", { type: "netcat", bind: "127.0.0.1", port: ports.nc, "max-line-length": 64 }, { type: "null" }, memory)
      .add("ncfile", { type: "netcat", bind: "127.0.0.1", port: ports.ncfile }, fileRoll("out-2"), fileChannel(2))
      .add("avro", { type: "avro", bind: "127.0.0.1", port: ports.avro }, { type: "null" }, memory)
      .add("thrift", { type: "thrift", bind: "127.0.0.1", port: ports.thrift, protocol: "compact" }, { type: "null" }, memory)
      .add("http", { type: "http", bind: "127.0.0.1", port: ports.http }, { type: "null" }, memory)
      // Relative paths (positionFile, spoolDir) are each agent's own; the tailed files are shared.
      // (A positionFile without a directory part makes Flume's TAILDIR fail: its parent is null.)
      .add("tail", { type: "TAILDIR", positionFile: "state/taildir_position.json", filegroups: "f1", "filegroups.f1": path.join(logs, ".*\\\\.log"), batchSize: 50 }, { type: "null" }, memory)
      .add("spool", { type: "spooldir", spoolDir: "spool", batchSize: 50 }, { type: "null" }, memory)
      .toString()
  );
}

beforeAll(async () => {
  if (!needsJvm.holds) return;
  const logs = path.join(tmp.dir, "logs");
  mkdirSync(logs);
  for (const f of FILES) writeFileSync(path.join(logs, f.name), f.text);
  const dirs = { flume: path.join(tmp.dir, "flume"), ours: path.join(tmp.dir, "ours") };
  // Flume's file_roll sink does not create its directory (ours does): made for both.
  for (const d of Object.values(dirs)) for (const sub of ["out-1", "out-2", "spool"]) mkdirSync(path.join(d, sub), { recursive: true });
  const free = await freePorts(12);
  const portsOf = () => ({ nc: free.pop()!, ncfile: free.pop()!, avro: free.pop()!, thrift: free.pop()!, http: free.pop()! });
  const ports = { flume: portsOf(), ours: portsOf() };
  const metrics = { flume: free.pop()!, ours: free.pop()! };
  const flume = (scope.flume = await startFlume({ conf: conf(ports.flume, logs), metricsPort: metrics.flume, dir: dirs.flume, readyTimeoutMs: 120_000 }));
  const confFile = path.join(dirs.ours, "a1.properties");
  writeFileSync(confFile, conf(ports.ours, logs));
  const ours = await startAgentCli(cleanups, ["run", "-f", confFile, "-n", "a1", "--metrics-port", String(metrics.ours), "--metrics-bind", "127.0.0.1", "--no-reload-conf"], /agent a1 started/, { cwd: dirs.ours });
  await waitForPorts(Object.values(ports.flume), "Flume's sources");
  // Flume's thrift, avro, http and spooldir sources listen or read before their counter starts,
  // and starting a counter zeroes it: the tests feed them once every counter started.
  const counted = ["seqmem", "seqfile", "avro", "thrift", "http", "tail", "spool"].map((f) => `SOURCE.${f}_r`);
  await waitForMetrics(metrics.flume, "Flume's source counters to start", (m) => counted.every((k) => Number(m[k]?.StartTime) > 0), 120_000, 100);
  agents = { dirs, metrics, ports, ours, flume };
}, 180_000);

/** Both agents' metrics of the flows, once done holds for each. */
async function settled(flows: string[], what: string, done: (m: Metrics) => boolean): Promise<Record<Side, Metrics>> {
  const ofFlows = (m: Metrics) => Object.fromEntries(Object.entries(m).filter(([k]) => flows.some((f) => k.endsWith(`.${f}_r`) || k.endsWith(`.${f}_c`) || k.endsWith(`.${f}_k`))));
  const a = agents!;
  try {
    const [f, o] = await Promise.all(SIDES.map((side) => waitForMetrics(a.metrics[side], `${side}: ${what}`, done, 120_000, 200)));
    return { flume: ofFlows(f), ours: ofFlows(o) };
  } catch (err) {
    const ours = `our agent (${a.ours.child.exitCode === null && a.ours.child.signalCode === null ? "running" : `exited: ${a.ours.child.exitCode ?? a.ours.child.signalCode}`}):\n${(a.ours.stdout + a.ours.stderr).slice(-4000)}`;
    throw new Error(`${(err as Error).message}\n${ours}\nFlume (${a.flume.running ? "running" : "exited"}):\n${a.flume.tail(40)}`);
  }
}

/** Every counter of both agents, side by side, where they differ (timing counters and the components named in oursOnly left out). */
function differences(flume: Metrics, ours: Metrics, oursOnly: string[] = []): string[] {
  const out: string[] = [];
  const keys = new Set([...Object.keys(flume), ...Object.keys(ours)].filter((k) => !(oursOnly.includes(k) && !(k in flume))));
  for (const key of keys) {
    const f = flume[key];
    const o = ours[key];
    if (!f || !o) {
      out.push(`${key}: ${f ? "only Flume has it" : "only ours has it"}`);
      continue;
    }
    for (const name of new Set([...Object.keys(f), ...Object.keys(o)])) {
      if (!(name in f)) {
        if (!(name in OURS_ONLY)) out.push(`${key}.${name}: only ours has it (${o[name]})`);
      } else if (!(name in o)) out.push(`${key}.${name}: only Flume has it (${f[name]})`);
      else if (!(name in TIMING) && f[name] !== o[name]) out.push(`${key}.${name}: Flume ${f[name]}, ours ${o[name]}`);
    }
  }
  return out.sort();
}

describe("the same config in a live Apache Flume 1.11.0 and in ours: /metrics compared", () => {
  needsJvm.test(
    "seq -> memory -> null and seq -> file channel -> file_roll: same keys, same counters",
    async () => {
      // Flume's null sink has no counters (nor has ours): its channel tells when it drained.
      const total = String(SEQ_TOTAL);
      const m = await settled(["seqmem", "seqfile"], "both seq flows drained", (x) => x["CHANNEL.seqmem_c"]?.EventTakeSuccessCount === total && x["SINK.seqfile_k"]?.EventDrainSuccessCount === total);
      expect(Object.keys(m.flume).sort()).toEqual(["CHANNEL.seqfile_c", "CHANNEL.seqmem_c", "SINK.seqfile_k", "SOURCE.seqfile_r", "SOURCE.seqmem_r"]);
      expect(Object.keys(m.ours).sort()).toEqual(Object.keys(m.flume).sort());
      expect(differences(m.flume, m.ours)).toEqual([]);
    },
    300_000,
  );

  needsJvm.test(
    "netcat -> memory -> null and netcat -> file channel -> file_roll, a line too long among them: same answers, Flume's keys and counters in ours",
    async () => {
      const lines = Array.from({ length: 200 }, (_, i) => `line ${i}`);
      const input = [...lines.slice(0, 100), "x".repeat(100), ...lines.slice(100)].map((l) => `${l}\n`).join("");
      const answers: Record<string, string[]> = {};
      for (const side of SIDES) {
        answers[`${side} nc`] = (await sendLines(agents!.ports[side].nc, input, 1000, 201)).split("\n");
        answers[`${side} ncfile`] = (await sendLines(agents!.ports[side].ncfile, lines.map((l) => `${l}\n`).join(""), 1000, 200)).split("\n");
      }
      // What each agent answered, line by line.
      expect(answers["ours nc"]).toEqual(answers["flume nc"]);
      expect(answers["ours ncfile"]).toEqual(answers["flume ncfile"]);
      // Both answer the line too long with FAILED and close the connection: nc takes the 100 lines before it.
      expect(answers["flume nc"].slice(99, 102)).toEqual(["OK", "FAILED: Event exceeds the maximum length (64 chars, including newline)", ""]);
      const m = await settled(["nc", "ncfile"], "both netcat flows drained", (x) => x["CHANNEL.nc_c"]?.EventTakeSuccessCount === "100" && x["SINK.ncfile_k"]?.EventDrainSuccessCount === "200");
      // Flume 1.11's netcat source keeps no SourceCounter, so Flume shows no SOURCE key for it;
      // ours counts its events (a superset: a dashboard made for Flume finds all it reads).
      const oursOnly = ["SOURCE.nc_r", "SOURCE.ncfile_r"];
      expect(Object.keys(m.flume).sort()).toEqual(["CHANNEL.nc_c", "CHANNEL.ncfile_c", "SINK.ncfile_k"]);
      expect(Object.keys(m.ours).sort()).toEqual([...Object.keys(m.flume), ...oursOnly].sort());
      expect(m.ours["SOURCE.nc_r"]).toMatchObject({ EventReceivedCount: "100", EventAcceptedCount: "100" });
      expect(m.ours["SOURCE.ncfile_r"]).toMatchObject({ EventReceivedCount: "200", EventAcceptedCount: "200" });
      expect(differences(m.flume, m.ours, oursOnly)).toEqual([]);
    },
    300_000,
  );

  needsJvm.test(
    "avro, thrift and http sources given the same calls by one client: same keys, same counters",
    async () => {
      const batch = (n: number) => Array.from({ length: n }, (_, i) => createEvent(`event ${i}`, { i: String(i) }));
      const open: { close(): void }[] = [];
      cleanups.push(() => open.forEach((c) => c.close()));
      for (const side of SIDES) {
        const { avro: avroPort, thrift: thriftPort, http: httpPort } = agents!.ports[side];
        // Three batches, two single events and a batch on a connection that is closed, one batch on one left open.
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
        // A request the JSON handler cannot read: 400 from both (and EventReadFail).
        const bad = await fetch(`http://127.0.0.1:${httpPort}/`, { method: "POST", headers: { "content-type": "application/json" }, body: BAD_JSON });
        expect(`${side}: ${bad.status}`).toBe(`${side}: 400`);
      }
      const m = await settled(["avro", "thrift", "http"], "the rpc flows drained", (x) => x["CHANNEL.avro_c"]?.EventTakeSuccessCount === "41" && x["CHANNEL.thrift_c"]?.EventTakeSuccessCount === "41" && x["CHANNEL.http_c"]?.EventTakeSuccessCount === "30");
      // The connection left open, counted as it is (see OpenConnectionCount above).
      expect([m.ours["SOURCE.avro_r"].OpenConnectionCount, m.ours["SOURCE.thrift_r"].OpenConnectionCount]).toEqual(["1", "1"]);
      expect(Object.keys(m.flume).sort()).toEqual(["CHANNEL.avro_c", "CHANNEL.http_c", "CHANNEL.thrift_c", "SOURCE.avro_r", "SOURCE.http_r", "SOURCE.thrift_r"]);
      expect(Object.keys(m.ours).sort()).toEqual(Object.keys(m.flume).sort());
      expect(differences(m.flume, m.ours)).toEqual([]);
    },
    300_000,
  );

  needsJvm.test(
    "TAILDIR and spooldir sources reading the same files: same keys, same counters",
    async () => {
      // Spooled files must be complete when they appear: written beside the spool, then renamed in.
      for (const dir of Object.values(agents!.dirs)) {
        for (const f of FILES) {
          writeFileSync(path.join(dir, f.name), f.text);
          renameSync(path.join(dir, f.name), path.join(dir, "spool", f.name));
        }
      }
      const total = String(FILES.length * LINES);
      const m = await settled(["tail", "spool"], "the file flows drained", (x) => x["CHANNEL.tail_c"]?.EventTakeSuccessCount === total && x["CHANNEL.spool_c"]?.EventTakeSuccessCount === total);
      expect(Object.keys(m.flume).sort()).toEqual(["CHANNEL.spool_c", "CHANNEL.tail_c", "SOURCE.spool_r", "SOURCE.tail_r"]);
      expect(Object.keys(m.ours).sort()).toEqual(Object.keys(m.flume).sort());
      expect(differences(m.flume, m.ours)).toEqual([]);
    },
    300_000,
  );
});
