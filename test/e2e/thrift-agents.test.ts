import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { agentsAfterEach, freePort, tempDir, waitForMetrics } from "../support/helpers.ts";
import { needsThrift } from "../support/requires.ts";
import { generatedPython, pythonClient } from "../support/thrift/harness.ts";

const { cleanups, startAgent } = agentsAfterEach();
const python = generatedPython();

const metric = (port: number, group: string, key: string, value: string) =>
  waitForMetrics(port, `${group}.${key} to reach ${value}`, (m) => m[group]?.[key] === value, 15000, 50);

describe("thrift in `flume run` agents", () => {
  needsThrift.test("a python3-thrift client -> thrift source (binary) -> memory -> file_roll: the file holds the bodies in order", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const [port, metrics] = [await freePort(), await freePort()];
    const out = path.join(tmp.dir, "out");
    const a = startAgent(
      tmp.dir,
      "a1",
      `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = org.apache.flume.source.ThriftSource
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.protocol = binary
a1.sources.r1.threads = 8
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.sinks.k1.type = file_roll
a1.sinks.k1.sink.directory = ${out}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.channel = c1
`,
      metrics,
    );
    await a.waitFor(/agent a1 started/);
    const results = await pythonClient(python.dir, port, "binary", [
      { method: "append", event: { headers: { h: "ü" }, body: "line one ✓" } },
      { method: "appendBatch", events: [{ body: "line two" }, { body: "line three" }] },
    ]);
    expect(results).toEqual([{ status: "OK" }, { status: "OK" }]);
    await metric(metrics, "SINK.k1", "EventDrainSuccessCount", "3");
    const m = await metric(metrics, "SOURCE.r1", "EventAcceptedCount", "3");
    expect(m["SOURCE.r1"]).toMatchObject({ AppendAcceptedCount: "1", AppendBatchAcceptedCount: "1" });
    a.child.kill("SIGTERM");
    expect(await a.exited()).toBe(0);
    const files = readdirSync(out);
    expect(files).toHaveLength(1);
    expect(readFileSync(path.join(out, files[0]), "utf8")).toBe("line one ✓\nline two\nline three\n");
  });

  for (const protocol of ["compact", "binary"]) {
    test(`agent A (seq -> memory -> thrift sink) to agent B (thrift source -> memory -> null), ${protocol} protocol: every event arrives`, async () => {
      const tmp = tempDir();
      cleanups.push(tmp.cleanup);
      const [port, metricsA, metricsB] = [await freePort(), await freePort(), await freePort()];
      const total = 3000;
      const b = startAgent(
        tmp.dir,
        "b",
        `b.sources = r1
b.channels = c1
b.sinks = k1
b.sources.r1.type = thrift
b.sources.r1.bind = 127.0.0.1
b.sources.r1.port = ${port}
b.sources.r1.protocol = ${protocol}
b.sources.r1.channels = c1
b.channels.c1.type = memory
b.channels.c1.capacity = 100000
b.channels.c1.transactionCapacity = 1000
b.sinks.k1.type = null
b.sinks.k1.channel = c1
`,
        metricsB,
      );
      await b.waitFor(/agent b started/);
      startAgent(
        tmp.dir,
        "a",
        `a.sources = r1
a.channels = c1
a.sinks = k1
a.sources.r1.type = seq
a.sources.r1.totalEvents = ${total}
a.sources.r1.batchSize = 500
a.sources.r1.channels = c1
a.channels.c1.type = memory
a.channels.c1.capacity = 100000
a.channels.c1.transactionCapacity = 1000
a.sinks.k1.type = thrift
a.sinks.k1.hostname = 127.0.0.1
a.sinks.k1.port = ${port}
a.sinks.k1.protocol = ${protocol}
a.sinks.k1.batch-size = 1000
a.sinks.k1.channel = c1
`,
        metricsA,
      );
      const mb = await metric(metricsB, "SOURCE.r1", "EventAcceptedCount", String(total));
      expect(mb["SOURCE.r1"].AppendBatchAcceptedCount).toBe(mb["SOURCE.r1"].AppendBatchReceivedCount);
      expect(mb["SOURCE.r1"].OpenConnectionCount).toBe("1");
      const ma = await metric(metricsA, "SINK.k1", "EventDrainSuccessCount", String(total));
      expect(ma["SINK.k1"]).toMatchObject({ ConnectionCreatedCount: "1", EventWriteFail: "0" });
    });
  }
});
