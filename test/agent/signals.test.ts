import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { MemoryLogger } from "../../src/core/logger.ts";
import { EXIT, type ReloadOutcome, startAgentService } from "../../src/agent/service.ts";
import { installSignalHandlers } from "../../src/agent/signals.ts";
import { asyncCleanupsAfterEach, canConnect, freePort, netcatConf, sendLines, tempDirFor, waitUntil, waitUntilListening } from "../support/helpers.ts";

const cleanups = asyncCleanupsAfterEach();

/** netcat r1 on port into a memory channel drained by an avro sink towards a port where nothing listens. */
async function stuckAgent(log: MemoryLogger) {
  const [port, deadPort] = [await freePort(), await freePort()];
  const text = netcatConf(port, { sink: "avro" }) + `a1.sinks.k1.hostname = 127.0.0.1\na1.sinks.k1.port = ${deadPort}\n`;
  const service = await startAgentService(text, { logger: log, drainTimeoutMs: 60_000 });
  const remove = installSignalHandlers(service, log);
  cleanups.push(() => (remove(), service.stopNow()));
  return { service, port, remove };
}

describe("signal handlers of an agent service", () => {
  test("SIGTERM stops with a drain and says how to cut it short; a second one stops at once (exit 3 with events left); removed, no handler stays", async () => {
    const log = new MemoryLogger();
    const listeners = process.listenerCount("SIGTERM");
    const { service, port, remove } = await stuckAgent(log);
    expect(process.listenerCount("SIGTERM")).toBe(listeners + 1);
    expect(await sendLines(port, "held\n")).toBe("OK\n");
    process.emit("SIGTERM");
    expect(service.isStopping).toBe(true);
    expect(log.lines.some((l) => l.message.startsWith("SIGTERM received: stopping agent a1") && l.message.endsWith("send SIGTERM again to stop at once)"))).toBe(true);
    await waitUntil(async () => !(await canConnect(port)), "the netcat source closed");
    process.emit("SIGTERM");
    expect(await service.exited).toBe(EXIT.eventsLost);
    expect(log.lines.some((l) => l.level === "warn" && l.message.startsWith("SIGTERM received again: stopping at once"))).toBe(true);
    remove();
    expect(process.listenerCount("SIGTERM")).toBe(listeners);
  });

  test("SIGINT names the key to press again", async () => {
    const log = new MemoryLogger();
    const { service } = await stuckAgent(log);
    process.emit("SIGINT");
    expect(log.lines.some((l) => l.message.startsWith("SIGINT received: stopping agent a1") && l.message.includes("press Ctrl-C again (or send SIGTERM) to stop at once"))).toBe(true);
    process.emit("SIGINT");
    expect(await service.exited).toBe(EXIT.ok);
  });

  test("SIGHUP reloads the configuration file at once", async () => {
    const dir = tempDirFor(cleanups);
    const [port, port2] = [await freePort(), await freePort()];
    const file = path.join(dir, "a.conf");
    writeFileSync(file, netcatConf(port));
    const log = new MemoryLogger();
    const service = await startAgentService(readFileSync(file, "utf8"), { file, logger: log, drainTimeoutMs: 200 });
    const remove = installSignalHandlers(service, log);
    cleanups.push(() => (remove(), service.stopNow()));
    const reloaded = new Promise<ReloadOutcome>((resolve) => service.once("reloaded", resolve));
    writeFileSync(file, netcatConf(port).replace("a1.sources = r1", "a1.sources = r1 r2") + `a1.sources.r2.type = netcat\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\n`);
    process.emit("SIGHUP");
    expect((await reloaded).started).toEqual(["source r2"]);
    expect(await waitUntilListening(port2)).toBe(true);
    expect(log.lines.some((l) => l.message === "SIGHUP received: reloading the configuration")).toBe(true);
  });
});
