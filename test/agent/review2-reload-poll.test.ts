import { describe, expect, test } from "bun:test";
import { statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseRunArgs, runAgent } from "../../src/cli/run.ts";
import type { ComponentDefinition } from "../../src/components/component.ts";
import * as registry from "../../src/components/registry.ts";
import { cleanupsAfterEach, freePort, netcatConf, tempDir, waitUntilListening } from "../support/helpers.ts";

const cleanups = cleanupsAfterEach();

// A netcat source whose first create() fails, as one whose resource is briefly unavailable.
const netcat = registry.lookupComponent("source", "netcat")!;
let flakyCreates = 0;
registry.registerComponent({
  ...netcat,
  schema: { ...netcat.schema, type: "review2-flaky-netcat", aliases: [] },
  create(config, ctx) {
    if (flakyCreates++ === 0) throw new Error("resource temporarily unavailable");
    return netcat.create(config, ctx);
  },
} as ComponentDefinition<unknown>);

const base = (port: number) => netcatConf(port);

const withR2 = (port: number, port2: number, type = "netcat") =>
  base(port).replace("a1.sources = r1", "a1.sources = r1 r2") +
  `a1.sources.r2.type = ${type}\na1.sources.r2.bind = 127.0.0.1\na1.sources.r2.port = ${port2}\na1.sources.r2.channels = c1\n`;

describe("flume run: reload detection", () => {
  test("a save that leaves the file's mtime unchanged is still reloaded (content is compared)", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const [port, port2] = [await freePort(), await freePort()];
    const file = path.join(dir, "a.conf");
    // Whole seconds, so the timestamp can be set back exactly.
    const tick = Math.floor(Date.now() / 1000);
    writeFileSync(file, base(port));
    utimesSync(file, tick, tick);
    const { options } = parseRunArgs(["-f", file, "--quiet", "--poll-interval", "0.05", "--drain-timeout", "200"]);
    const code = runAgent(options);
    expect(await waitUntilListening(port)).toBe(true);
    // A second save within the same mtime tick: the timestamp reads as before.
    const { mtimeMs } = statSync(file);
    writeFileSync(file, withR2(port, port2));
    utimesSync(file, tick, tick);
    expect(statSync(file).mtimeMs).toBe(mtimeMs);
    const up = await waitUntilListening(port2);
    process.emit("SIGTERM");
    expect(await code).toBe(0);
    expect(up).toBe(true);
  });

  test("a reload whose build failed is tried again on the next poll without the file changing", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const [port, port2] = [await freePort(), await freePort()];
    const file = path.join(dir, "a.conf");
    writeFileSync(file, base(port));
    const { options } = parseRunArgs(["-f", file, "--quiet", "--poll-interval", "0.05", "--drain-timeout", "200"]);
    const code = runAgent(options);
    expect(await waitUntilListening(port)).toBe(true);
    flakyCreates = 0;
    writeFileSync(file, withR2(port, port2, "review2-flaky-netcat"));
    const up = await waitUntilListening(port2);
    process.emit("SIGTERM");
    expect(await code).toBe(0);
    // The first build failed, the retry built r2.
    expect(flakyCreates).toBeGreaterThanOrEqual(2);
    expect(up).toBe(true);
  });
});
