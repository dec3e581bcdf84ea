import { describe, expect } from "bun:test";
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
});
