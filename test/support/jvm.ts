/**
 * JVM peers for the tests and benchmarks: Apache Flume, Kafka and Hadoop from Maven Central.
 *
 * - `resolveClasspath(set)` resolves a set of Maven artifacts with their runtime dependencies
 *   (mvn on a generated pom) into the local Maven repository (~/.m2, outside the repository) and
 *   keeps the classpath in ~/.cache/flume-ts/jvm/, so a second run asks no registry. `.ci/run`
 *   fills both before the suite (scripts/test-peers.ts), so downloads do not count against a
 *   test's timeout.
 * - `startJvm(spec)` starts `java -cp <classpath> <main>` in a temp dir, waits until it is ready
 *   (a port accepting, a log line, an HTTP answer), and stops it with SIGTERM, then SIGKILL. Its
 *   output is kept in memory and in a log file; every error quotes its tail.
 *
 * Tests that start one declare it with `needsJvm.test(...)`: skipped with the reason without
 * java or mvn, failing under CI=true (requires.ts).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, createWriteStream, type WriteStream } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { commandRuns, precondition } from "./requires.ts";
import { lastLines, peerCacheDir, runCommand } from "./build-steps.ts";

/** A set of Maven artifacts that one kind of peer needs on its classpath. */
export interface MavenSet {
  /** A short name for messages and the cache file: "flume", "kafka". */
  name: string;
  /** "group:artifact:version" or "group:artifact:version:classifier". */
  artifacts: string[];
  /** "group:artifact" of transitive dependencies to leave out (e.g. a second logging binding). */
  exclusions?: string[];
}

export const needsJvm = precondition(
  () => commandRuns("java", "-version") && commandRuns("mvn", "-v"),
  "needs java and mvn: starts JVM peers from Maven Central's jars",
);

/** Where classpaths are kept between runs; outside the repository. */
export function jvmCacheDir(): string {
  return peerCacheDir("jvm");
}

function setKey(set: MavenSet): string {
  const h = createHash("sha256").update(JSON.stringify([set.artifacts, set.exclusions ?? []])).digest("hex").slice(0, 16);
  return `${set.name}-${h}`;
}

function pomFor(set: MavenSet): string {
  const exclusions = (set.exclusions ?? [])
    .map((ga) => {
      const [g, a] = ga.split(":");
      return `<exclusion><groupId>${g}</groupId><artifactId>${a}</artifactId></exclusion>`;
    })
    .join("");
  const deps = set.artifacts
    .map((coords) => {
      const [g, a, v, classifier] = coords.split(":");
      if (!g || !a || !v) throw new Error(`Maven coordinates "${coords}" in set ${set.name}: expected group:artifact:version[:classifier]`);
      const c = classifier ? `<classifier>${classifier}</classifier>` : "";
      return `<dependency><groupId>${g}</groupId><artifactId>${a}</artifactId><version>${v}</version>${c}<exclusions>${exclusions}</exclusions></dependency>`;
    })
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>flume-ts.test</groupId><artifactId>${set.name}-peer</artifactId><version>1</version><packaging>pom</packaging>
<dependencies>
${deps}
</dependencies></project>
`;
}

function cachedClasspath(file: string): string | null {
  if (!existsSync(file)) return null;
  const cp = readFileSync(file, "utf8").trim();
  if (cp === "" || !cp.split(path.delimiter).every((jar) => existsSync(jar))) return null;
  return cp;
}

export class MavenResolveError extends Error {}

/**
 * The classpath of `set`, resolving it with mvn when it is not cached. Runs mvn at most once at a
 * time per set (a lock file beside the cache), so parallel test files do not race.
 */
export async function resolveClasspath(set: MavenSet, opts: { timeoutMs?: number; log?: (line: string) => void } = {}): Promise<string> {
  const dir = jvmCacheDir();
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${setKey(set)}.classpath`);
  const hit = cachedClasspath(file);
  if (hit) return hit;
  const work = mkdtempSync(path.join(tmpdir(), `flume-mvn-${set.name}-`));
  try {
    writeFileSync(path.join(work, "pom.xml"), pomFor(set));
    const out = path.join(work, "classpath.txt");
    opts.log?.(`resolving ${set.name}: ${set.artifacts.join(" ")} (mvn)`);
    const { code, output } = await runCommand("mvn", ["-B", "-q", "dependency:build-classpath", "-Dmdep.includeScope=runtime", `-Dmdep.outputFile=${out}`], { cwd: work, timeoutMs: opts.timeoutMs ?? 15 * 60_000 });
    if (code !== 0 || !existsSync(out)) {
      throw new MavenResolveError(`mvn could not resolve ${set.name} (${set.artifacts.join(", ")}), exit ${code}:\n${lastLines(output, 40)}`);
    }
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, readFileSync(out, "utf8").trim());
    renameSync(tmp, file);
    const cp = cachedClasspath(file);
    if (!cp) throw new MavenResolveError(`mvn resolved ${set.name} but some jars of its classpath are missing: ${file}`);
    return cp;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** What "ready" means for a peer; every given condition must hold. */
export interface Readiness {
  /** A TCP port on 127.0.0.1 that accepts connections. */
  port?: number;
  /** A line of its output. */
  log?: RegExp;
  /** A URL that answers with a status below 500. */
  http?: string;
}

export interface JvmSpec {
  /** For messages and the log file name: "flume a1", "kafka broker 1". */
  name: string;
  classpath: string;
  mainClass: string;
  args?: string[];
  /** JVM options; the default is a small heap and the serial collector. */
  jvmArgs?: string[];
  /** Working directory; a new temp dir when absent (removed at stop). */
  cwd?: string;
  env?: Record<string, string>;
  ready?: Readiness;
  /** Bound on getting ready; 120 s by default (a loaded 2-core machine starts a JVM slowly). */
  readyTimeoutMs?: number;
}

export const DEFAULT_JVM_ARGS = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true"];

export class JvmPeerError extends Error {}

export interface JvmPeer {
  readonly name: string;
  readonly pid: number;
  readonly cwd: string;
  /** Everything it printed so far (the last 4 MB). */
  readonly log: string;
  /** Its log file (kept until stop). */
  readonly logFile: string;
  readonly running: boolean;
  /** Resolves when the process has exited (with its code, or null after a signal). */
  readonly exited: Promise<number | null>;
  /** Waits until `cond` holds for its output, or fails with the log's tail. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Sends a signal (SIGKILL by default) and waits until it is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, then SIGKILL after `graceMs` (10 s); removes its temp dir. */
  stop(graceMs?: number): Promise<void>;
  /** The last `lines` lines of its output, for a failure message. */
  tail(lines?: number): string;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function killAllOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const c of live) c.kill("SIGKILL");
  });
}

/** Starts a JVM and resolves once it is ready (see Readiness), or rejects with its log's tail. */
export async function startJvm(spec: JvmSpec): Promise<JvmPeer> {
  killAllOnExit();
  const ownDir = spec.cwd === undefined;
  const cwd = spec.cwd ?? mkdtempSync(path.join(tmpdir(), `flume-jvm-${spec.name.replace(/[^\w.-]+/g, "-")}-`));
  const logFile = path.join(cwd, `${spec.name.replace(/[^\w.-]+/g, "-")}.jvm.log`);
  const logStream: WriteStream = createWriteStream(logFile, { flags: "a" });
  const args = [...(spec.jvmArgs ?? DEFAULT_JVM_ARGS), "-cp", spec.classpath, spec.mainClass, ...(spec.args ?? [])];
  const child = spawn("java", args, { cwd, env: { ...process.env, ...spec.env }, stdio: ["ignore", "pipe", "pipe"] });
  live.add(child);
  let log = "";
  const append = (d: Buffer) => {
    log = (log + d.toString("utf8")).slice(-4_000_000);
    logStream.write(d);
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const exited = new Promise<number | null>((resolve) => {
    child.on("exit", (code) => {
      live.delete(child);
      resolve(code);
    });
    child.on("error", (e) => {
      log += `\n${e.message}`;
      live.delete(child);
      resolve(-1);
    });
  });
  const isRunning = () => child.exitCode === null && child.signalCode === null;
  const tailOf = (lines = 60) => lastLines(log, lines);

  const waitFor = async (what: string, cond: () => boolean | Promise<boolean>, timeoutMs: number) => {
    const started = Date.now();
    for (;;) {
      if (await cond()) return;
      if (!isRunning()) throw new JvmPeerError(`${spec.name} exited (code ${child.exitCode}, signal ${child.signalCode}) before ${what}; log ${logFile}:\n${tailOf()}`);
      if (Date.now() - started > timeoutMs) throw new JvmPeerError(`${spec.name}: ${what} did not happen within ${timeoutMs} ms; log ${logFile}:\n${tailOf()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const peer: JvmPeer = {
    name: spec.name,
    pid: child.pid ?? -1,
    cwd,
    logFile,
    get log() {
      return log;
    },
    get running() {
      return isRunning();
    },
    exited,
    waitForLog: (pattern, timeoutMs = 60_000) => waitFor(`a log line matching ${pattern}`, () => pattern.test(log), timeoutMs),
    async kill(signal: NodeJS.Signals = "SIGKILL") {
      if (!isRunning()) return;
      child.kill(signal);
      await exited;
    },
    async stop(graceMs = 10_000) {
      if (isRunning()) {
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(t);
      }
      logStream.end();
      if (ownDir) rmSync(cwd, { recursive: true, force: true });
    },
    tail: tailOf,
  };

  const ready = spec.ready ?? {};
  const timeoutMs = spec.readyTimeoutMs ?? 120_000;
  try {
    if (ready.log) await waitFor(`a log line matching ${ready.log}`, () => ready.log!.test(log), timeoutMs);
    if (ready.port !== undefined) await waitFor(`port ${ready.port} accepting`, () => accepts(ready.port!), timeoutMs);
    if (ready.http) await waitFor(`${ready.http} answering`, () => answers(ready.http!), timeoutMs);
  } catch (e) {
    await peer.stop(2000);
    throw e;
  }
  return peer;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

async function answers(url: string): Promise<boolean> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await r.arrayBuffer();
    return r.status < 500;
  } catch {
    return false;
  }
}

/** Whether java runs (for the bench, which has no test runner's preconditions). */
export function javaVersion(): string | null {
  const r = spawnSync("java", ["-version"], { encoding: "utf8" });
  if (r.status !== 0) return null;
  return (r.stderr || r.stdout).split("\n")[0]?.trim() ?? null;
}
