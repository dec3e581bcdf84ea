/**
 * Real nats-server processes for the JetStream tests: JetStream on, store in a temp dir,
 * loopback ports chosen free. A single server (Debian's) or a 3-node cluster (a newer server
 * built from the Go module proxy, see go-peers.ts); nodes can be SIGKILLed and restarted on the
 * same ports and store.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, sleep, waitBound } from "./helpers.ts";
import { goPeerPath, NATS_SERVER_CLUSTER } from "./go-peers.ts";
import { natsServerPath } from "./requires.ts";

/** The nats-server binary of single servers; tests that start one declare it with needsNatsServer (requires.ts). */
export const NATS_SERVER = natsServerPath();

export interface NatsNode {
  name: string;
  port: number;
  url: string;
  storeDir: string;
  readonly log: string;
  readonly running: boolean;
  /** The running process's id (to stop and continue it: SIGSTOP, SIGCONT). */
  readonly pid: number | undefined;
  /** SIGKILL (default) or SIGTERM; resolves when the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts again on the same ports and store; resolves when it accepts clients. */
  restart(): Promise<void>;
}

interface NodeSpec {
  /** The nats-server binary. */
  bin: string | null;
  /** Where the binary comes from, for the error when it does not run. */
  from: string;
  name: string;
  port: number;
  storeDir: string;
  cluster?: { port: number; routes: number[]; name: string };
  /** More nats-server flags (TLS, authentication). */
  extra?: string[];
}

function args(spec: NodeSpec): string[] {
  const a = ["-js", "-sd", spec.storeDir, "-a", "127.0.0.1", "-p", String(spec.port), "-n", spec.name];
  if (spec.cluster) {
    a.push("--cluster_name", spec.cluster.name, "--cluster", `nats://127.0.0.1:${spec.cluster.port}`);
    a.push("--routes", spec.cluster.routes.map((p) => `nats://127.0.0.1:${p}`).join(","));
  }
  return [...a, ...(spec.extra ?? [])];
}

function launch(spec: NodeSpec): NatsNode {
  let child: ChildProcess | null = null;
  let log = "";
  const start = async () => {
    if (!spec.bin) throw new Error(`nats-server is not installed (${spec.from})`);
    log = "";
    const c = spawn(spec.bin, args(spec), { stdio: ["ignore", "pipe", "pipe"] });
    child = c;
    let failed: Error | null = null;
    c.once("error", (err) => (failed = err));
    c.stdout?.on("data", (d) => (log += d));
    c.stderr?.on("data", (d) => (log += d));
    const started = Date.now();
    while (!/Server is ready/.test(log)) {
      if (failed) throw new Error(`nats-server ${spec.name}: could not run ${spec.bin} (${spec.from}): ${(failed as Error).message}`);
      if (c.exitCode !== null) throw new Error(`nats-server ${spec.name} exited (${c.exitCode}):\n${log}`);
      if (Date.now() - started > waitBound(10000)) throw new Error(`nats-server ${spec.name} did not get ready:\n${log}`);
      await sleep(10);
    }
  };
  const node: NatsNode = {
    name: spec.name,
    port: spec.port,
    url: `nats://127.0.0.1:${spec.port}`,
    storeDir: spec.storeDir,
    get log() {
      return log;
    },
    get running() {
      return child !== null && child.exitCode === null && child.signalCode === null;
    },
    get pid() {
      return child?.pid;
    },
    async kill(signal: NodeJS.Signals = "SIGKILL") {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => c.once("exit", () => resolve()));
      c.kill(signal);
      await gone;
    },
    restart: start,
  };
  (node as NatsNode & { boot: () => Promise<void> }).boot = start;
  return node;
}

export interface NatsSetup {
  nodes: NatsNode[];
  /** Comma-separated client URLs of every node (the `servers` property). */
  servers: string;
  stop(): Promise<void>;
}

function tempStore(): string {
  return mkdtempSync(path.join(tmpdir(), "flume-nats-"));
}

/**
 * One JetStream server on a free loopback port. `port` reuses a chosen one (a server started
 * late); `extra` adds nats-server flags (e.g. --tls --tlscert f --tlskey f, --user u --pass p).
 */
export async function startNats(opts: { port?: number; dir?: string; extra?: string[] } = {}): Promise<NatsSetup & { node: NatsNode }> {
  const dir = opts.dir ?? tempStore();
  const node = launch({ bin: NATS_SERVER, from: "apt-get install nats-server", name: "n1", port: opts.port ?? (await freePort()), storeDir: path.join(dir, "n1"), extra: opts.extra });
  await (node as NatsNode & { boot: () => Promise<void> }).boot();
  return {
    node,
    nodes: [node],
    servers: node.url,
    async stop() {
      await node.kill("SIGKILL");
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A 3-node JetStream cluster on loopback; resolves once a stream of `size` replicas can be
 * placed on it (waitForPlacement), not only once JetStream has a meta leader. Its servers are
 * NATS_SERVER_CLUSTER (go-peers.ts; built by buildGoPeer before), not Debian's 2.9.10, whose
 * replicated consumers can get stuck after a leader change.
 */
export async function startCluster(size = 3): Promise<NatsSetup> {
  const dir = tempStore();
  const clientPorts: number[] = [];
  const routePorts: number[] = [];
  for (let i = 0; i < size; i++) {
    clientPorts.push(await freePort());
    routePorts.push(await freePort());
  }
  const nodes = clientPorts.map((port, i) => {
    const storeDir = path.join(dir, `n${i + 1}`);
    mkdirSync(storeDir, { recursive: true });
    return launch({ bin: goPeerPath(NATS_SERVER_CLUSTER), from: "built from the Go module proxy by buildGoPeer(NATS_SERVER_CLUSTER), go-peers.ts", name: `n${i + 1}`, port, storeDir, cluster: { name: "flume", port: routePorts[i], routes: routePorts.filter((_, j) => j !== i) } });
  });
  await Promise.all(nodes.map((n) => (n as NatsNode & { boot: () => Promise<void> }).boot()));
  const setup: NatsSetup = {
    nodes,
    servers: nodes.map((n) => n.url).join(","),
    async stop() {
      await Promise.all(nodes.map((n) => n.kill("SIGKILL")));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await waitForJetStream(setup.servers);
  await waitForPlacement(setup.servers, size);
  return setup;
}

/**
 * Polls until a stream of `replicas` replicas can be created (then deletes it). The meta leader
 * places a stream only on peers whose server statistics (statsz) it has received; a server sends
 * them soon after it starts and then at growing intervals, so one whose first ones went out
 * before the meta leader was elected is left out ("no suitable peers for placement") until its
 * next ones. Seen once in about thirty runs of the 3-node tests on a loaded machine: the agent
 * then could not create its stream for over 30 s. The bound (waitBound(20 s): 60 s) leaves the
 * 3-node tests (120 s) time to fail with this error rather than their own timeout.
 */
export async function waitForPlacement(servers: string, replicas: number, ms = 20_000): Promise<void> {
  const { connect } = await import("@nats-io/transport-node");
  const { jetstreamManager, StorageType } = await import("@nats-io/jetstream");
  const nc = await connect({ servers: servers.split(","), timeout: 2000 });
  const started = Date.now();
  let last: unknown = null;
  try {
    const jsm = await jetstreamManager(nc, { timeout: 2000 });
    while (Date.now() - started < waitBound(ms)) {
      try {
        await jsm.streams.add({ name: "PLACEMENT_PROBE", subjects: ["placement.probe"], num_replicas: replicas, storage: StorageType.Memory });
        await jsm.streams.delete("PLACEMENT_PROBE");
        return;
      } catch (err) {
        last = err;
        await sleep(200);
      }
    }
  } finally {
    await nc.close();
  }
  throw new Error(`JetStream at ${servers} could not place a stream of ${replicas} replicas within ${waitBound(ms)} ms: ${(last as Error)?.message}`);
}

/** Polls until JetStream answers API calls (a cluster has elected its meta leader). */
export async function waitForJetStream(servers: string, ms = 15000): Promise<void> {
  const { connect } = await import("@nats-io/transport-node");
  const { jetstreamManager } = await import("@nats-io/jetstream");
  const started = Date.now();
  let last: unknown = null;
  while (Date.now() - started < waitBound(ms)) {
    try {
      const nc = await connect({ servers: servers.split(","), timeout: 1000 });
      try {
        const jsm = await jetstreamManager(nc, { timeout: 1000 });
        await jsm.getAccountInfo();
        return;
      } finally {
        await nc.close();
      }
    } catch (err) {
      last = err;
      await sleep(100);
    }
  }
  throw new Error(`JetStream did not become available at ${servers}: ${(last as Error)?.message}`);
}

/** A plain client for tests: publish, read back, inspect streams. */
export async function natsClient(servers: string) {
  const transport = await import("@nats-io/transport-node");
  const js = await import("@nats-io/jetstream");
  const nc = await transport.connect({ servers: servers.split(","), timeout: 2000, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const jsm = await js.jetstreamManager(nc, { timeout: 5000 });
  return { nc, jsm, js: js.jetstream(nc, { timeout: 5000 }), mod: js, headers: transport.headers, close: () => nc.close() };
}
