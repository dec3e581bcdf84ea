/**
 * A live Apache Flume 1.11.0 agent, started from Maven Central's jars through the JVM harness
 * (jvm.ts): `startFlume({ conf })` writes the config and a log4j2 config into a temp dir, runs
 * org.apache.flume.node.Application and resolves when the given readiness holds (by default the
 * log line Flume writes once every component of the configuration was started).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { FLUME, FLUME_VERSION } from "./jvm-artifacts.ts";
import { type JvmPeer, type MavenSet, type Readiness, resolveClasspath, startJvm } from "./jvm.ts";

export { FLUME_VERSION };

export interface FlumeOptions {
  /** The agent's properties file's text. */
  conf: string;
  /** The agent's name (-n); a1 by default. */
  agent?: string;
  /** Serve Flume's /metrics JSON on this port (-Dflume.monitoring.type=http). */
  metricsPort?: number;
  /** More Maven sets on the classpath (Flume's Kafka or HDFS modules). */
  extraSets?: MavenSet[];
  /** JVM options besides the log settings; a small heap by default. */
  jvmArgs?: string[];
  /** What "ready" means; by default every source, channel and sink was started (and metricsPort answers). */
  ready?: Readiness;
  readyTimeoutMs?: number;
  /** The directory for the config and the log; a new temp dir by default (removed at stop). */
  dir?: string;
  /** log4j level of the root logger: info by default. */
  logLevel?: "debug" | "info" | "warn";
}

export interface FlumePeer extends JvmPeer {
  /** The config file Flume was started with. */
  readonly confFile: string;
  /** Flume's /metrics JSON (needs metricsPort). */
  metrics(): Promise<Record<string, Record<string, string>>>;
}

const LOG4J2 = (level: string) => `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn">
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="%d{ISO8601} %-5p [%t] %c{1} - %m%n"/></Console></Appenders>
  <Loggers><Root level="${level}"><AppenderRef ref="out"/></Root></Loggers>
</Configuration>
`;

export async function flumeClasspath(extraSets: MavenSet[] = []): Promise<string> {
  const parts = [await resolveClasspath(FLUME)];
  for (const set of extraSets) parts.push(await resolveClasspath(set));
  return parts.join(path.delimiter);
}

/** Starts Flume 1.11.0 with `opts.conf`; see FlumeOptions. */
export async function startFlume(opts: FlumeOptions): Promise<FlumePeer> {
  const agent = opts.agent ?? "a1";
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), "flume-live-"));
  mkdirSync(dir, { recursive: true });
  const confFile = path.join(dir, `${agent}.properties`);
  writeFileSync(confFile, opts.conf);
  const log4j = path.join(dir, "log4j2.xml");
  writeFileSync(log4j, LOG4J2(opts.logLevel ?? "info"));
  const monitoring = opts.metricsPort === undefined ? [] : ["-Dflume.monitoring.type=http", `-Dflume.monitoring.port=${opts.metricsPort}`];
  const ready: Readiness = opts.ready ?? {
    // Flume logs "Starting Source <name>" for the last component it starts; the line below is
    // written once per configuration, after the channels were started.
    log: /Starting new configuration/,
    ...(opts.metricsPort === undefined ? {} : { http: `http://127.0.0.1:${opts.metricsPort}/metrics` }),
  };
  const peer = await startJvm({
    name: `flume ${agent}`,
    classpath: await flumeClasspath(opts.extraSets),
    mainClass: "org.apache.flume.node.Application",
    args: ["-f", confFile, "-n", agent],
    jvmArgs: [...(opts.jvmArgs ?? ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]), "-Djava.net.preferIPv4Stack=true", `-Dlog4j.configurationFile=${log4j}`, ...monitoring],
    cwd: dir,
    ready,
    readyTimeoutMs: opts.readyTimeoutMs,
  });
  const owned = opts.dir === undefined;
  return {
    name: peer.name,
    pid: peer.pid,
    cwd: peer.cwd,
    logFile: peer.logFile,
    get log() {
      return peer.log;
    },
    get running() {
      return peer.running;
    },
    exited: peer.exited,
    waitForLog: peer.waitForLog,
    kill: peer.kill,
    tail: peer.tail,
    confFile,
    async metrics() {
      if (opts.metricsPort === undefined) throw new Error("startFlume: metrics() needs metricsPort");
      const r = await fetch(`http://127.0.0.1:${opts.metricsPort}/metrics`);
      return (await r.json()) as Record<string, Record<string, string>>;
    },
    async stop(graceMs?: number) {
      await peer.stop(graceMs);
      if (owned) rmSync(dir, { recursive: true, force: true });
    },
  };
}
