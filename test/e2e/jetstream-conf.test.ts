import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CLI, ROOT, tempDir } from "../support/helpers.ts";

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

test("flume simulate -f conf/jetstream-edge.conf --crash-at: the jetstream channel runs as the file channel its definition names, a crash loses nothing, and no NATS package is loaded", () => {
  const r = cliWithoutNats(["simulate", "-f", "conf/jetstream-edge.conf", "--events", "3000", "--crash-at", "150ms", "--no-progress"]);
  expect(r.out).toContain("channel c1 (jetstream, simulated by a file channel on a scratch directory, capacity 100,000, transactionCapacity 500)");
  expect(r.out).toMatch(/crash at 150ms +no committed event lost/);
  expect(r.out).toContain("at-least-once: HELD (0 lost, 0 duplicates)");
  expect(r.code).toBe(0);
});

test("flume simulate: two jetstream channels each get a stand-in of their own; a memory channel beside them still loses its events in a crash", () => {
  const tmp = tempDir();
  try {
    const conf = path.join(tmp.dir, "shared.conf");
    writeFileSync(
      conf,
      `a1.sources = r1
a1.channels = c1 c2 c3
a1.sinks = k1 k2 k3
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = 44444
a1.sources.r1.channels = c1 c2 c3
a1.channels.c1.type = jetstream
a1.channels.c1.servers = nats://127.0.0.1:1
a1.channels.c1.stream = ONE
a1.channels.c1.capacity = 20000
a1.channels.c2.type = jetstream
a1.channels.c2.stream = TWO
a1.channels.c2.capacity = 30000
a1.channels.c2.transactionCapacity = 200
a1.channels.c3.type = memory
a1.channels.c3.capacity = 20000
a1.channels.c3.transactionCapacity = 1000
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
a1.sinks.k2.type = null
a1.sinks.k2.channel = c2
a1.sinks.k3.type = null
a1.sinks.k3.channel = c3
`,
    );
    const r = cliWithoutNats(["simulate", "-f", conf, "--events", "3000", "--crash-at", "150ms", "--no-progress"]);
    expect(r.out).toContain("channel c1 (jetstream, simulated by a file channel on a scratch directory, capacity 20,000, transactionCapacity 1000)");
    expect(r.out).toContain("channel c2 (jetstream, simulated by a file channel on a scratch directory, capacity 30,000, transactionCapacity 200)");
    expect(r.out).toMatch(/crash at 150ms +c3 dropped \d+: \d+ lost/);
    expect(r.out).not.toMatch(/c[12] lost/);
    expect(r.out).toContain("at-least-once: VIOLATED");
  } finally {
    tmp.cleanup();
  }
});

test("flume replay of a trace naming a jetstream channel runs its stand-in: the same ledger, no NATS package loaded", () => {
  const tmp = tempDir();
  try {
    const trace = path.join(tmp.dir, "edge.trace");
    const sim = cliWithoutNats(["simulate", "-f", "conf/jetstream-edge.conf", "--events", "500", "--crash-at", "20ms", "--no-progress", "--trace", trace]);
    expect(sim.code).toBe(0);
    // As `flume run --trace` records it: the configured type with its limits.
    const [header, ...rest] = readFileSync(trace, "utf8").split("\n");
    const h = JSON.parse(header) as { channels: Record<string, unknown>[] };
    h.channels[0] = { name: "c1", type: "jetstream", durable: true, capacity: 100000, transactionCapacity: 500, keepAlive: 3 };
    writeFileSync(trace, [JSON.stringify(h), ...rest].join("\n"));
    const r = cliWithoutNats(["replay", trace]);
    expect(r.out).toContain("at-least-once: HELD (0 lost, 0 duplicates)");
    expect(r.out).toContain("replay reached the same ledger");
    expect(r.code).toBe(0);
  } finally {
    tmp.cleanup();
  }
});
