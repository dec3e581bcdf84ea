import { afterEach, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ChannelProcessor } from "../../src/core/channel-processor.ts";

export const ROOT = path.resolve(import.meta.dir, "..", "..");
/** Golden data the tests compare against (test/fixtures/). */
export const FIXTURES = path.join(ROOT, "test", "fixtures");
export const CLI = path.join(ROOT, "src", "cli.ts");

/** Runs the CLI to completion with the same Bun that runs the tests. */
export function runCli(args: string[], opts: { input?: string; env?: Record<string, string>; cwd?: string; timeout?: number } = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    input: opts.input,
    env: { ...process.env, NO_COLOR: "1", ...opts.env },
    cwd: opts.cwd ?? ROOT,
    timeout: opts.timeout ?? 20000,
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, signal: r.signal };
}

/** Starts the CLI (the repository's, or `opts.cli`) as a long-running child process (an agent). */
export function startCli(args: string[], opts: { env?: Record<string, string>; cwd?: string; cli?: string } = {}) {
  const child = spawn(process.execPath, [opts.cli ?? CLI, ...args], {
    env: { ...process.env, NO_COLOR: "1", ...opts.env },
    cwd: opts.cwd ?? ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    /** Resolves once the combined output matches, or rejects after waitBound(ms). */
    waitFor(pattern: RegExp, ms = 15000): Promise<void> {
      const bound = waitBound(ms);
      return new Promise((resolve, reject) => {
        const started = Date.now();
        const tick = () => {
          if (pattern.test(stdout) || pattern.test(stderr)) return resolve();
          if (child.exitCode !== null) return reject(new Error(`process exited (${child.exitCode}) before ${pattern}\n${stdout}\n${stderr}`));
          if (Date.now() - started > bound) return reject(new Error(`timed out waiting for ${pattern} (${bound} ms)\n${stdout}\n${stderr}`));
          setTimeout(tick, 25);
        };
        tick();
      });
    },
    exited(): Promise<number | null> {
      return new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.on("exit", (code) => resolve(code));
      });
    },
  };
}

export function tempDir(prefix = "flume-test-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A temp dir removed with the test's cleanups. */
export function tempDirFor(cleanups: (() => unknown)[], prefix?: string): string {
  const { dir, cleanup } = tempDir(prefix);
  cleanups.push(cleanup);
  return dir;
}

/** Writes a configuration file `name` into a temp dir removed with the test's cleanups; returns its path and the dir. */
export function tempConf(cleanups: (() => unknown)[], text: string, name = "agent.conf", prefix?: string): { conf: string; dir: string } {
  const dir = tempDirFor(cleanups, prefix);
  const conf = path.join(dir, name);
  writeFileSync(conf, text);
  return { conf, dir };
}

/**
 * Every bound of the waits below is multiplied by this (env FLUME_TEST_WAIT_SCALE, default 3).
 * A test names what an idle machine needs with room to spare; a loaded 2-core machine (CI
 * beside other jobs, a busy loop per core) takes several times as long, and a wait that gives
 * up early fails a test for nothing. Waits end as soon as their condition holds, so a larger
 * bound costs nothing when the test passes.
 */
export const WAIT_SCALE = Math.max(1, Number(process.env.FLUME_TEST_WAIT_SCALE ?? "") || 3);

/** A wait's bound on this machine: ms times WAIT_SCALE. */
export function waitBound(ms: number): number {
  return ms * WAIT_SCALE;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls cond every pollMs until it holds; throws "timed out waiting for <what>" after waitBound(ms). */
export async function waitUntil(cond: () => boolean | Promise<boolean>, what: string, ms = 8000, pollMs = 10): Promise<void> {
  const start = Date.now();
  const bound = waitBound(ms);
  while (!(await cond())) {
    if (Date.now() - start > bound) throw new Error(`timed out waiting for ${what} (${bound} ms)`);
    await sleep(pollMs);
  }
}

/**
 * Waits until done() holds for as long as progress() keeps changing: for work whose length
 * depends on the machine's speed (a backlog of many thousand calls). Throws "stopped making
 * progress" once progress() stood still for waitBound(stallMs).
 */
export async function waitWhileProgressing(done: () => boolean, progress: () => number, what: string, stallMs = 5000, pollMs = 20): Promise<void> {
  let last = progress();
  let since = Date.now();
  while (!done()) {
    await sleep(pollMs);
    const now = progress();
    if (now !== last) (last = now), (since = Date.now());
    else if (Date.now() - since > waitBound(stallMs)) throw new Error(`${what} stopped making progress at ${now} (${waitBound(stallMs)} ms)`);
  }
}

export { freePort, freePorts } from "./ports.ts";

/** Listens on an ephemeral port of 127.0.0.1; resolves with the port. */
export function listenLocal(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)));
}

/** GET /metrics of an agent: Flume's JSON. */
export async function fetchMetrics(port: number): Promise<Record<string, Record<string, string>>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return (await res.json()) as Record<string, Record<string, string>>;
}

export type Metrics = Record<string, Record<string, string>>;

/** Polls an agent's /metrics until ok(metrics) holds; throws with the last reading after waitBound(ms). */
export async function waitForMetrics(port: number, what: string, ok: (m: Metrics) => boolean, ms = 15000, pollMs = 20): Promise<Metrics> {
  const start = Date.now();
  const bound = waitBound(ms);
  let last: Metrics = {};
  while (Date.now() - start < bound) {
    try {
      last = await fetchMetrics(port);
      if (ok(last)) return last;
    } catch {
      // not listening yet
    }
    await sleep(pollMs);
  }
  throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
}

/** A list of cleanups that run (last pushed first) after every test of the file that calls this. */
export function cleanupsAfterEach(): (() => void)[] {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    while (cleanups.length) cleanups.pop()?.();
  });
  return cleanups;
}

/** Whether something accepts TCP connections on 127.0.0.1:port right now. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/** Polls until 127.0.0.1:port accepts connections (waitBound(2000) at most). */
export async function waitUntilListening(port: number): Promise<boolean> {
  const start = Date.now();
  while (Date.now() - start < waitBound(2000)) {
    if (await canConnect(port)) return true;
    await sleep(20);
  }
  return false;
}

/** Sends lines over TCP and returns what the server answered once it closes or goes quiet. */
export function sendLines(port: number, text: string, waitMs = 500, expectLines = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let answer = "";
    let timer: ReturnType<typeof setTimeout>;
    const done = () => {
      socket.destroy();
      resolve(answer);
    };
    socket.on("connect", () => socket.write(text));
    socket.on("data", (d) => {
      answer += d;
      clearTimeout(timer);
      if (expectLines > 0 && answer.split("\n").length > expectLines) return done();
      timer = setTimeout(done, waitMs);
    });
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
    timer = setTimeout(done, waitMs * 4);
  });
}

/** Starts the CLI as an agent that the cleanups SIGKILL; resolves once its output matches ready. */
export async function startAgentCli(cleanups: (() => void)[], args: string[], ready = /agent a1 started/, opts: { env?: Record<string, string>; cwd?: string } = {}) {
  const agent = startCli(args, opts);
  cleanups.push(() => agent.child.kill("SIGKILL"));
  await agent.waitFor(ready);
  // The metrics server starts after the agent: a test that reads it next needs it listening.
  if (args.some((a) => a === "--metrics-port" || a.startsWith("-Dflume.monitoring.port"))) await agent.waitFor(/metrics on/);
  return agent;
}

/** The lines of a file channel c1 of agent a1 keeping its checkpoint and data below dir. */
export function fileChannelLines(dir: string): string {
  return `a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${path.join(dir, "ckpt")}
a1.channels.c1.dataDirs = ${path.join(dir, "data")}`;
}

/** Agent a1: a netcat source r1 on 127.0.0.1:port into channel c1 (its lines), drained by sink k1 of type sink. */
export function netcatConf(port: number, { channel = "a1.channels.c1.type = memory", sink = "null" } = {}): string {
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.channels = c1
${channel}
a1.sinks.k1.type = ${sink}
a1.sinks.k1.channel = c1
`;
}

export type AgentProcess = ReturnType<typeof startCli>;

/**
 * For files that run `flume run` agents: after each test the agents still running are SIGKILLed
 * (and awaited), then the cleanups run in the order they were pushed.
 */
export function agentsAfterEach() {
  const running: AgentProcess[] = [];
  const cleanups: (() => void)[] = [];
  afterEach(async () => {
    for (const a of running.splice(0)) {
      if (a.child.exitCode === null && a.child.signalCode === null) {
        a.child.kill("SIGKILL");
        await a.exited();
      }
    }
    for (const c of cleanups.splice(0)) c();
  });
  /** Writes conf to dir/<name>.conf and runs agent name with /metrics on 127.0.0.1:metricsPort (env added to the process's). */
  function startAgent(dir: string, name: string, conf: string, metricsPort: number, env?: Record<string, string>): AgentProcess {
    const file = path.join(dir, `${name}.conf`);
    writeFileSync(file, conf);
    const a = startCli(["run", "-f", file, "-n", name, "--metrics-port", String(metricsPort), "--metrics-bind", "127.0.0.1", "--quiet", "--no-reload-conf"], { env });
    running.push(a);
    return a;
  }
  return { cleanups, startAgent };
}

/** Sends SIGTERM and expects the agent to exit by itself within ms (waitBound), with code 0. */
export async function expectStopsOnSigterm(agent: AgentProcess, ms: number): Promise<void> {
  agent.child.kill("SIGTERM");
  let code: number | null | undefined;
  void agent.exited().then((c) => (code = c));
  await waitUntil(() => code !== undefined, "the agent exiting after SIGTERM", ms, 50);
  expect(agent.child.signalCode).toBeNull();
  expect(code).toBe(0);
}

/** Makes every batch the source hands on wait ms before it reaches the channel, as a file channel's commit does. */
export function slowCommits(source: { getChannelProcessor(): ChannelProcessor }, ms = 50): void {
  const processor = source.getChannelProcessor();
  const original = processor.processEventBatch.bind(processor);
  processor.processEventBatch = async (events) => {
    await new Promise((res) => setTimeout(res, ms));
    return original(events);
  };
}

/** Like cleanupsAfterEach, for cleanups that may return a promise: each is awaited, last pushed first. */
export function asyncCleanupsAfterEach(): (() => unknown)[] {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return cleanups;
}
