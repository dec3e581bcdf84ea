/**
 * A file channel filled by a live Apache Flume 1.11.0 whose sink cannot deliver (an avro sink
 * to a closed port: its takes are rolled back again and again), SIGKILLed, migrated by
 * `flume channel migrate --from-flume`, then drained by our agent: every pending event once.
 */
import { describe, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { startFlume } from "../support/flume.ts";
import { deliveryReport, flumeClasspathBeforeAll, FlowsConf, freePorts, makeEvents, postAll, rolledEvents, waitForPorts, liveFlumeScope } from "../support/flume-live.ts";
import { listenLocal, runCli, startAgentCli, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";

flumeClasspathBeforeAll();
const scope = liveFlumeScope("flume-live-file-channel-");
const { tmp, cleanups } = scope;

const checkpoints = (log: string) => (log.match(/Updated checkpoint for file/g) ?? []).length;

describe("a live Apache Flume 1.11.0 file channel, SIGKILLed, migrated and drained by ours", () => {
  needsJvm.test(
    "events before and after Flume's last checkpoint, takes rolled back by a failing sink: each delivered once by our agent",
    async () => {
      const flumeDirs = { checkpointDir: path.join(tmp.dir, "flume-ckpt"), dataDirs: path.join(tmp.dir, "flume-data") };
      const [httpPort, metrics, netcatPort] = await freePorts(3);
      // Accepts connections and never answers: each batch Flume's avro sink takes times out and is rolled back.
      const silent = net.createServer(() => {});
      const silentPort = await listenLocal(silent);
      cleanups.push(() => silent.close());
      const conf = new FlowsConf().add(
        "f",
        { type: "http", bind: "127.0.0.1", port: httpPort },
        { type: "avro", hostname: "127.0.0.1", port: silentPort, "batch-size": 100, "connect-timeout": 1000, "request-timeout": 1000 },
        { type: "file", ...flumeDirs, checkpointInterval: 5000, transactionCapacity: 1000 },
      );
      const flume = (scope.flume = await startFlume({ conf: conf.toString(), dir: path.join(tmp.dir, "flume"), readyTimeoutMs: 120_000 }));
      await waitForPorts([httpPort], "Flume's http source");
      const before = makeEvents("before-checkpoint", 600);
      const after = makeEvents("after-checkpoint", 400);
      await postAll(httpPort, before);
      // The sink took a batch, its call timed out, and the take was rolled back.
      await flume.waitForLog(/Failed to send events/, 60_000);
      // Then a checkpoint (every 5 s here): the events posted right after it are only in Flume's log files.
      const seen = checkpoints(flume.log);
      await waitUntil(() => checkpoints(flume!.log) > seen, "a Flume checkpoint after the first events", 60_000, 20);
      await postAll(httpPort, after);
      await flume.kill("SIGKILL");

      const ours = { checkpointDir: path.join(tmp.dir, "ours-ckpt"), dataDirs: path.join(tmp.dir, "ours-data") };
      const migrated = runCli(["channel", "migrate", "--from-flume", "--checkpointDir", flumeDirs.checkpointDir, "--dataDirs", flumeDirs.dataDirs, "--to-checkpointDir", ours.checkpointDir, "--to-dataDirs", ours.dataDirs], { timeout: 60_000 });
      expect({ code: migrated.code, stderr: migrated.stderr }).toEqual({ code: 0, stderr: "" });
      expect(migrated.stdout).toContain("events migrated: 1000 ");
      // It used Flume's checkpoint and replayed the log after it; the kill left Flume's locks behind.
      expect(migrated.stdout).toMatch(/^checkpoint: \S+flume-ckpt \(write order id \d+\), then the log after it$/m);
      expect(migrated.stdout).toContain("in_use.lock is left over from an agent that did not exit cleanly");

      const out = path.join(tmp.dir, "out");
      const drain = new FlowsConf().add(
        "f",
        { type: "netcat", bind: "127.0.0.1", port: netcatPort },
        { type: "file_roll", "sink.directory": out, "sink.rollInterval": 0, "sink.serializer": "header_and_text" },
        { type: "file", ...ours },
      );
      const confFile = path.join(tmp.dir, "ours.properties");
      writeFileSync(confFile, drain.toString());
      await startAgentCli(cleanups, ["run", "-f", confFile, "-n", "a1", "--metrics-port", String(metrics), "--metrics-bind", "127.0.0.1", "--no-reload-conf"]);
      await waitForMetrics(metrics, "our agent to drain the migrated channel", (m) => m["CHANNEL.f_c"]?.ChannelSize === "0" && m["SINK.f_k"]?.EventDrainSuccessCount === "1000", 60_000, 100);
      const received = rolledEvents(out);
      expect(deliveryReport([...before, ...after], received)).toEqual({ missing: 0, repeated: [], unexpected: [], firstMissing: [] });
      expect(received).toHaveLength(1000);
    },
    300_000,
  );
});
