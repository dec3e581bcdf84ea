import { describe, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { type Metrics, ROOT, freePort, tempDir, waitForMetrics } from "../support/helpers.ts";
import { precondition } from "../support/requires.ts";

// Deno comes from npm (devDependency `deno`); src/ must run under it unchanged.
const DENO = path.join(ROOT, "node_modules", ".bin", "deno");
const CLI = path.join(ROOT, "src", "cli.ts");
const needsDeno = precondition(() => existsSync(DENO), "needs deno from npm (npm install)");

function deno(args: string[]) {
  return spawnSync(DENO, ["run", "-A", CLI, ...args], { cwd: ROOT, encoding: "utf8", timeout: 60000, env: { ...process.env, NO_COLOR: "1" } });
}

describe("the CLI under Deno", () => {
  needsDeno.test("validate and describe", () => {
    const ok = deno(["validate", "conf/flume.conf"]);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("valid");
    const d = deno(["describe", "memory"]);
    expect(d.status).toBe(0);
    expect(d.stdout).toContain("transactionCapacity");
  });

  needsDeno.test("run: netcat -> memory -> logger answers and logs a line", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const port = await freePort();
      const conf = path.join(dir, "d.conf");
      writeFileSync(
        conf,
        `d.sources = r1\nd.channels = c1\nd.sinks = k1\nd.sources.r1.type = netcat\nd.sources.r1.bind = 127.0.0.1\nd.sources.r1.port = ${port}\nd.sources.r1.channels = c1\nd.channels.c1.type = memory\nd.sinks.k1.type = logger\nd.sinks.k1.channel = c1\n`,
      );
      const child = spawn(DENO, ["run", "-A", CLI, "run", "-f", conf, "--quiet"], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" } });
      let err = "";
      child.stderr.on("data", (d) => (err += d));
      for (let i = 0; i < 600 && !/agent d started/.test(err); i++) await new Promise((r) => setTimeout(r, 50));
      expect(err).toContain("agent d started");
      const answer: string = await new Promise((resolve, reject) => {
        const s = net.connect(port, "127.0.0.1", () => s.write("from deno\n"));
        s.on("data", (d) => {
          resolve(String(d));
          s.destroy();
        });
        s.on("error", reject);
      });
      expect(answer).toBe("OK\n");
      for (let i = 0; i < 100 && !/from deno/.test(err); i++) await new Promise((r) => setTimeout(r, 50));
      expect(err).toContain("66 72 6F 6D 20 64 65 6E 6F");
      child.kill("SIGTERM");
      const code = await new Promise((r) => child.on("exit", r));
      expect(code).toBe(0);
    } finally {
      cleanup();
    }
  }, 60000);
  needsDeno.test("run: seq -> file channel -> file_roll writes every event once, and the channel's data survives a restart", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const out = path.join(dir, "out");
      mkdirSync(out);
      const conf = path.join(dir, "f.conf");
      const lines = (events: number, sink: boolean) =>
        [
          "d.sources = r1",
          "d.channels = c1",
          ...(sink ? ["d.sinks = k1"] : []),
          "d.sources.r1.type = seq",
          `d.sources.r1.totalEvents = ${events}`,
          "d.sources.r1.batchSize = 100",
          "d.sources.r1.channels = c1",
          "d.channels.c1.type = file",
          `d.channels.c1.checkpointDir = ${path.join(dir, "checkpoint")}`,
          `d.channels.c1.dataDirs = ${path.join(dir, "data")}`,
          "d.channels.c1.transactionCapacity = 100",
          ...(sink ? ["d.sinks.k1.type = file_roll", `d.sinks.k1.sink.directory = ${out}`, "d.sinks.k1.sink.rollInterval = 0", "d.sinks.k1.batchSize = 100", "d.sinks.k1.channel = c1"] : []),
        ].join("\n");
      const metricsPort = await freePort();
      /** Runs the agent until `reached` holds for its metrics, then stops it with SIGTERM. */
      const runUntil = async (what: string, reached: (m: Metrics) => boolean) => {
        const child = spawn(DENO, ["run", "-A", CLI, "run", "-f", conf, "-n", "d", "--metrics-port", String(metricsPort), "--metrics-bind", "127.0.0.1"], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" } });
        let err = "";
        child.stderr.on("data", (d) => (err += d));
        try {
          await waitForMetrics(metricsPort, what, reached, 30000);
        } finally {
          child.kill("SIGTERM");
        }
        expect(await new Promise((r) => child.on("exit", r))).toBe(0);
        return err;
      };
      // First without a sink: 2,000 events stay in the channel's files.
      writeFileSync(conf, lines(2000, false));
      const first = await runUntil("2000 events in c1", (m) => m["CHANNEL.c1"]?.ChannelSize === "2000");
      expect(first).toContain("channel c1 keeps 2000 events on disk for the next start");
      // Then a sink drains them (the new run's seq source adds none).
      writeFileSync(conf, lines(0, true));
      await runUntil("k1 to write 2000 events", (m) => m["SINK.k1"]?.EventDrainSuccessCount === "2000");
      const written = readdirSync(out).map((f) => readFileSync(path.join(out, f), "utf8")).join("");
      expect(written.trimEnd().split("\n")).toEqual(Array.from({ length: 2000 }, (_, i) => String(i)));
    } finally {
      cleanup();
    }
  }, 60000);
});
