import { afterEach, describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { definition as avroSource } from "../../src/components/sources/avro.ts";
import { definition as httpSource } from "../../src/components/sources/http.ts";
import { definition as netcat } from "../../src/components/sources/netcat.ts";
import { definition as syslogTcp } from "../../src/components/sources/syslog-tcp.ts";
import type { ComponentDefinition } from "../../src/components/component.ts";
import type { Source } from "../../src/core/source.ts";
import { rig, until } from "../support/network.ts";

const UNKNOWN = "an unknown peer (connection reset before its address was known)";
const stops: (() => unknown)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

/**
 * A Node client that connects, writes `payload` and resets the connection (RST). Run with
 * spawnSync, it is done before this process's event loop accepts the connection, so the
 * runtime can no longer tell the peer's address.
 */
function resetEarly(port: number, payload: string): void {
  const script = `const c=require("net").connect(${port},"127.0.0.1",()=>c.write(${JSON.stringify(payload)},()=>c.resetAndDestroy()));c.on("error",()=>{});`;
  const r = spawnSync("node", ["-e", script], { timeout: 10000 });
  expect(r.status).toBe(0);
}

async function started<T extends Source & { port: number }>(def: ComponentDefinition<T>, raw: Record<string, string>) {
  const r = rig(def, raw);
  await r.source.start();
  stops.push(() => r.source.stop());
  return r;
}

const warnings = (lines: { level: string; message: string }[]) => lines.filter((l) => l.level === "warn" || l.level === "error").map((l) => l.message);

function expectReadableNames(messages: string[]): void {
  expect(messages.length).toBeGreaterThan(0);
  expect(messages.some((m) => m.includes(UNKNOWN))).toBe(true);
  for (const m of messages) expect(m).not.toMatch(/undefined|unknown:\?|from :|from \S*:undefined/);
}

describe("peer names of clients that reset before their address was known", () => {
  test("netcat source", async () => {
    const r = await started(netcat, { bind: "127.0.0.1", port: "0" });
    resetEarly(r.source.port, "a line without its newline");
    await until(() => warnings(r.logger.lines).length > 0);
    await until(() => r.source.counter.values.OpenConnectionCount === 0);
    expectReadableNames(warnings(r.logger.lines));
  });

  test("syslogtcp source", async () => {
    const r = await started(syslogTcp, { host: "127.0.0.1", port: "0" });
    resetEarly(r.source.port, "<13>Nov 30 12:00:00 host app: half a messa");
    await until(() => warnings(r.logger.lines).length > 0);
    await until(() => r.source.counter.values.OpenConnectionCount === 0);
    expectReadableNames(warnings(r.logger.lines));
  });

  test("http source", async () => {
    const r = await started(httpSource, { bind: "127.0.0.1", port: "0" });
    resetEarly(r.source.port, "GARBAGE\r\n\r\n");
    await until(() => warnings(r.logger.lines).length > 0);
    expectReadableNames(warnings(r.logger.lines));
  });

  test("avro source", async () => {
    const r = await started(avroSource, { bind: "127.0.0.1", port: "0" });
    resetEarly(r.source.port, "\u0000\u0000\u0000\u0001\u0000\u0000");
    await until(() => warnings(r.logger.lines).length > 0);
    expectReadableNames(warnings(r.logger.lines));
  });
});

describe("http source, a client that resets after a served request", () => {
  test("the address seen when it connected names it in the log", async () => {
    const r = await started(httpSource, { bind: "127.0.0.1", port: "0" });
    // One good request; once its answer arrives, half a request and a reset.
    const script = `const net=require("net");const c=net.connect(${r.source.port},"127.0.0.1",()=>c.write('POST / HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 2\\r\\n\\r\\n[]'));c.once("data",()=>c.write('POST / HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 100\\r\\n\\r\\n[{',()=>setTimeout(()=>c.resetAndDestroy(),100)));c.on("error",()=>{});`;
    const child = spawn("node", ["-e", script], { stdio: "ignore" });
    await new Promise((res) => child.on("exit", res));
    await until(() => warnings(r.logger.lines).length >= 2);
    const messages = warnings(r.logger.lines);
    for (const m of messages) {
      expect(m).toMatch(/127\.0\.0\.1:\d+/);
      expect(m).not.toMatch(/undefined|from :/);
    }
  });
});
