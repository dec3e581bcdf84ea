import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { CLI, ROOT, runCli, tempDir } from "../../helpers.ts";

const FORBID_NATS = path.join(ROOT, "test", "support", "forbid-nats.ts");

/** The CLI with a preload that fails if any @nats-io package is loaded. */
function cliWithoutNats(args: string[]) {
  const r = spawnSync(process.execPath, ["--preload", FORBID_NATS, CLI, ...args], { cwd: ROOT, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  return { code: r.status, out: r.stdout + r.stderr };
}

test("conf/jetstream-edge.conf and conf/jetstream-collector.conf are valid, and validating them loads no NATS package", () => {
  for (const [file, agent] of [
    ["conf/jetstream-edge.conf", "edge"],
    ["conf/jetstream-collector.conf", "collector"],
  ]) {
    const r = cliWithoutNats(["validate", file]);
    expect(r.out).toBe(`${file}: agent ${agent} is valid\n`);
    expect(r.code).toBe(0);
  }
});

test("flume --help and flume describe jetstream load no NATS package; describe lists the jetstream properties", () => {
  expect(cliWithoutNats(["--help"]).code).toBe(0);
  const r = cliWithoutNats(["describe", "jetstream", "--kind", "channel"]);
  expect(r.code).toBe(0);
  for (const key of ["servers", "stream", "consumer", "replicas", "ack-wait", "max-deliver", "capacity", "discard", "creds-file", "truststore", "transactionCapacity"]) expect(r.out).toContain(key);
});

test("flume simulate treats a jetstream channel as durable: a crash loses nothing (a scratch file channel stands in; no server is contacted)", () => {
  const tmp = tempDir();
  try {
    const conf = path.join(tmp.dir, "shared.conf");
    writeFileSync(
      conf,
      `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = 44444
a1.sources.r1.channels = c1
a1.channels.c1.type = jetstream
a1.channels.c1.servers = nats://127.0.0.1:1
a1.channels.c1.stream = LOGS
a1.channels.c1.capacity = 20000
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
`,
    );
    const r = runCli(["simulate", "-f", conf, "--events", "3000", "--crash-at", "150ms", "--no-progress"]);
    expect(r.stdout).toContain("channel c1 (jetstream, durable: simulated by a file channel on a scratch directory");
    expect(r.stdout).toMatch(/crash at 150ms +no committed event lost/);
    expect(r.stdout).toContain("at-least-once: HELD (0 lost");
    expect(r.code).toBe(0);
  } finally {
    tmp.cleanup();
  }
});
