// `flume run` with seq -> SPILLABLEMEMORY and no sink, killed with SIGKILL: the restarted agent
// delivers the overflowed events in order, once; the memory part is gone, as Flume documents.
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePort, startCli, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";

const MEMORY = 100;
const TOTAL = 300;

test(`kill -9 with ${TOTAL} events in a SPILLABLEMEMORY channel (memoryCapacity ${MEMORY}): the ${TOTAL - MEMORY} overflowed come back in order, the memory part is lost`, async () => {
  const { dir, cleanup } = tempDir("flume-spill-crash-");
  try {
    const channel = [
      "a1.channels = c1",
      "a1.channels.c1.type = SPILLABLEMEMORY",
      `a1.channels.c1.memoryCapacity = ${MEMORY}`,
      "a1.channels.c1.overflowCapacity = 10000",
      "a1.channels.c1.overflowTimeout = 0",
      "a1.channels.c1.transactionCapacity = 10",
      `a1.channels.c1.checkpointDir = ${path.join(dir, "checkpoint")}`,
      `a1.channels.c1.dataDirs = ${path.join(dir, "data")}`,
      "a1.channels.c1.minimumRequiredSpace = 1048576",
    ];
    const fill = path.join(dir, "fill.conf");
    writeFileSync(fill, [...channel, "a1.sources = r1", "a1.sources.r1.type = seq", "a1.sources.r1.batchSize = 10", `a1.sources.r1.totalEvents = ${TOTAL}`, "a1.sources.r1.channels = c1", ""].join("\n"));
    const port = await freePort();
    const writer = startCli(["run", "-f", fill, "--no-reload-conf", "--quiet", "--metrics-port", String(port)]);
    await writer.waitFor(/agent a1 started/);
    await waitForMetrics(port, `${TOTAL} events committed`, (m) => m["CHANNEL.c1"]?.EventPutSuccessCount === String(TOTAL));
    writer.child.kill("SIGKILL");
    await writer.exited();

    // Restarted without the source, with a sink that writes every body on a line.
    const out = path.join(dir, "out");
    const read = path.join(dir, "read.conf");
    writeFileSync(
      read,
      [...channel, "a1.sinks = k1", "a1.sinks.k1.type = file_roll", `a1.sinks.k1.sink.directory = ${out}`, "a1.sinks.k1.sink.rollInterval = 0", "a1.sinks.k1.sink.batchSize = 10", "a1.sinks.k1.channel = c1", ""].join("\n"),
    );
    const reader = startCli(["run", "-f", read, "--no-reload-conf", "--quiet"]);
    try {
      await reader.waitFor(/agent a1 started/);
      expect(reader.stderr).toContain(`the overflow holds ${TOTAL - MEMORY} events from before`);
      const lines = () => (existsSync(out) ? readdirSync(out).flatMap((f) => readFileSync(path.join(out, f), "utf8").split("\n").filter(Boolean)) : []);
      await waitUntil(() => lines().length >= TOTAL - MEMORY, `${TOTAL - MEMORY} lines in ${out}`);
      // A moment more: nothing else arrives (no memory event, no duplicate).
      await new Promise((r) => setTimeout(r, 300));
      const expected = Array.from({ length: TOTAL - MEMORY }, (_, i) => String(MEMORY + i));
      expect(lines()).toEqual(expected);
    } finally {
      reader.child.kill("SIGTERM");
      await reader.exited();
    }
  } finally {
    cleanup();
  }
}, 90_000);
