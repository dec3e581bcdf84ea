/**
 * A live Apache Kafka (KRaft mode, no ZooKeeper) from Maven Central's jars, through the JVM
 * harness (jvm.ts):
 *
 * - `startKafka()` formats a storage directory in a temp dir (kafka.tools.StorageTool), writes a
 *   server.properties on free ports of 127.0.0.1 and starts kafka.Kafka as broker and controller
 *   in one process; it resolves once the broker logged that it started and its port accepts.
 * - `startKafkaCluster(3)` starts three such nodes forming one quorum (replication factor 3,
 *   min.insync.replicas 2) for the fault tests.
 * - `kafkaTool()` runs one of Kafka's own tools (topics, console producer and consumer, the perf
 *   tools) to completion, for wire tests and benchmarks.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { KAFKA, KAFKA_VERSION } from "./jvm-artifacts.ts";
import { freePort } from "./ports.ts";
import { type JvmPeer, resolveClasspath, startJvm } from "./jvm.ts";

export { KAFKA_VERSION };

const LOG4J2 = `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn">
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="%d{ISO8601} %-5p [%t] %c{1} - %m%n"/></Console></Appenders>
  <Loggers>
    <Logger name="kafka" level="info"/><Logger name="org.apache.kafka" level="warn"/>
    <Logger name="state.change.logger" level="warn"/><Logger name="kafka.log" level="warn"/>
    <Root level="warn"><AppenderRef ref="out"/></Root>
  </Loggers>
</Configuration>
`;

/** The JVM options of one broker: a small heap, fast start. */
const BROKER_JVM = ["-Xmx512m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-Djava.net.preferIPv4Stack=true", "-Djava.awt.headless=true"];
/**
 * The heap and GC options Kafka's bin/kafka-server-start.sh and kafka-run-class.sh give a
 * broker: a broker as an operator runs it, for benchmarks (tests start faster with BROKER_JVM).
 */
export const KAFKA_SERVER_START_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.net.preferIPv4Stack=true", "-Djava.awt.headless=true"];
const TOOL_JVM = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true"];

export interface KafkaNode {
  readonly nodeId: number;
  /** The client port on 127.0.0.1. */
  readonly port: number;
  readonly controllerPort: number;
  /** The SASL_SSL listener's port (with KafkaOptions.saslSsl). */
  readonly securePort: number;
  /** The SSL listener's port, TLS without SASL (with KafkaOptions.ssl). */
  readonly sslPort: number;
  readonly dir: string;
  peer: JvmPeer;
  /** Starts it again after a kill (same storage, same ports). */
  restart(): Promise<void>;
}

export interface KafkaCluster {
  readonly nodes: KafkaNode[];
  /** "127.0.0.1:p1,127.0.0.1:p2...": kafka.bootstrap.servers. */
  readonly bootstrap: string;
  readonly classpath: string;
  /** Creates a topic with Kafka's admin tool (waits for it). */
  createTopic(topic: string, opts?: TopicOptions): Promise<void>;
  /** Creates a topic with a name no other test of the process uses (uniqueName(prefix), prefix "t" by default); returns the name. */
  newTopic(opts?: TopicOptions & { prefix?: string }): Promise<string>;
  /** The node leading a partition of a topic. */
  leaderOf(topic: string, partition?: number): Promise<KafkaNode>;
  /** The node that is a consumer group's coordinator (the group must exist: a member joined). */
  coordinatorOf(group: string): Promise<KafkaNode>;
  stop(): Promise<void>;
}

export interface TopicOptions {
  /** 1 by default. */
  partitions?: number;
  /** The cluster's size up to 3 by default. */
  replicationFactor?: number;
  /** Topic settings (max.message.bytes...). */
  config?: Record<string, string>;
}

let nameNo = 0;

/** `<prefix><n>-<now>`: a topic, group or component name no other call in this process returns, nor an earlier run on the same broker. */
export function uniqueName(prefix: string): string {
  return `${prefix}${++nameNo}-${Date.now()}`;
}

export interface KafkaOptions {
  /** Whether a produce or metadata request for an unknown topic creates it: true by default (as Kafka's default). */
  autoCreateTopics?: boolean;
  /** More broker properties. */
  properties?: Record<string, string>;
  /** The client port of each node (free ports by default): a test that starts a broker where an agent already looks for one. */
  ports?: number[];
  /**
   * A SASL_SSL listener besides PLAINTEXT, with the PKCS12 keystore given: SASL PLAIN (user
   * alice, password alice-secret) and SCRAM-SHA-512 (user bob, password bob-secret).
   */
  saslSsl?: { keystore: string; password: string };
  /** An SSL listener (TLS, no SASL) besides PLAINTEXT, with the PKCS12 keystore given (the same as saslSsl's when both are given). */
  ssl?: { keystore: string; password: string };
  /** The brokers' JVM options: a small heap and C1 only by default (fast start); KAFKA_SERVER_START_JVM for a broker as shipped. */
  brokerJvm?: string[];
}

export const SASL_USERS = { plain: { username: "alice", password: "alice-secret" }, scram: { username: "bob", password: "bob-secret" } };

export function kafkaClasspath(): Promise<string> {
  return resolveClasspath(KAFKA);
}

/** A Kafka cluster id: 16 random bytes in URL-safe base64 without padding (what `kafka-storage random-uuid` prints). */
function clusterId(): string {
  return randomBytes(16).toString("base64url");
}

function propertiesText(props: Record<string, string | number | boolean>): string {
  return `${Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n")}\n`;
}

/** Starts one broker (`startKafkaCluster(1)`). */
export function startKafka(opts: KafkaOptions = {}): Promise<KafkaCluster> {
  return startKafkaCluster(1, opts);
}

/** Starts `size` combined broker+controller nodes forming one KRaft quorum. */
export async function startKafkaCluster(size: number, opts: KafkaOptions = {}): Promise<KafkaCluster> {
  const classpath = await kafkaClasspath();
  const root = mkdtempSync(path.join(tmpdir(), "flume-kafka-"));
  writeFileSync(path.join(root, "log4j2.xml"), LOG4J2);
  const id = clusterId();
  const ports: { port: number; controllerPort: number; securePort: number; sslPort: number }[] = [];
  for (let i = 0; i < size; i++) ports.push({ port: opts.ports?.[i] ?? (await freePort()), controllerPort: await freePort(), securePort: await freePort(), sslPort: await freePort() });
  const voters = ports.map((p, i) => `${i + 1}@127.0.0.1:${p.controllerPort}`).join(",");
  const rf = Math.min(size, 3);
  const nodes: KafkaNode[] = [];
  const logOpt = `-Dlog4j2.configurationFile=${path.join(root, "log4j2.xml")}`;
  try {
    await Promise.all(
      ports.map(async ({ port, controllerPort, securePort, sslPort }, i) => {
        const nodeId = i + 1;
        const dir = path.join(root, `node${nodeId}`);
        mkdirSync(dir, { recursive: true });
        const conf = path.join(dir, "server.properties");
        const secure = opts.saslSsl;
        const secureProps: Record<string, string> = secure
          ? {
              "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
              "listener.name.sasl_ssl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_${SASL_USERS.plain.username}="${SASL_USERS.plain.password}";`,
              "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            }
          : {};
        const tls = opts.ssl ?? secure;
        const keystoreProps: Record<string, string> = tls ? { "ssl.keystore.type": "PKCS12", "ssl.keystore.location": tls.keystore, "ssl.keystore.password": tls.password } : {};
        const extraListeners = `${secure ? `,SASL_SSL://127.0.0.1:${securePort}` : ""}${opts.ssl ? `,SSL://127.0.0.1:${sslPort}` : ""}`;
        writeFileSync(
          conf,
          propertiesText({
            "process.roles": "broker,controller",
            "node.id": nodeId,
            "controller.quorum.voters": voters,
            listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}${extraListeners}`,
            "advertised.listeners": `PLAINTEXT://127.0.0.1:${port}${extraListeners}`,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
            ...secureProps,
            ...keystoreProps,
            "log.dirs": path.join(dir, "data"),
            "num.partitions": 1,
            "default.replication.factor": rf,
            "min.insync.replicas": size >= 3 ? 2 : 1,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": 4,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": size >= 3 ? 2 : 1,
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": size >= 3 ? 2 : 1,
            "group.initial.rebalance.delay.ms": 0,
            "auto.create.topics.enable": opts.autoCreateTopics ?? true,
            "num.network.threads": 2,
            "num.io.threads": 2,
            "background.threads": 2,
            "log.cleaner.enable": false,
            ...opts.properties,
          }),
        );
        const scram = opts.saslSsl ? ["--add-scram", `SCRAM-SHA-512=[name=${SASL_USERS.scram.username},password=${SASL_USERS.scram.password}]`] : [];
        // "--cluster-id=<id>": an id may begin with "-", which as a separate argument reads as an option.
        const format = await runJava(classpath, "kafka.tools.StorageTool", ["format", `--cluster-id=${id}`, "-c", conf, "--ignore-formatted", ...scram], [...TOOL_JVM, logOpt], dir, 120_000);
        if (format.code !== 0) throw new Error(`kafka storage format of node ${nodeId} failed (exit ${format.code}):\n${format.output.slice(-4000)}`);
        const start = async () =>
          startJvm({
            name: `kafka node ${nodeId}`,
            classpath,
            mainClass: "kafka.Kafka",
            args: [conf],
            jvmArgs: [...(opts.brokerJvm ?? BROKER_JVM), logOpt],
            cwd: dir,
            // A single node is ready when its port answers; in a cluster every node waits for
            // the quorum, so they start together and are waited for below.
            ready: { log: /Kafka Server started|\[KafkaRaftServer nodeId=\d+\] Kafka Server started/, port },
            readyTimeoutMs: 120_000,
          });
        const node: KafkaNode = {
          nodeId,
          port,
          controllerPort,
          securePort,
          sslPort,
          dir,
          peer: await start(),
          async restart() {
            this.peer = await start();
          },
        };
        nodes[i] = node;
      }),
    );
  } catch (e) {
    await Promise.all(nodes.filter(Boolean).map((n) => n.peer.stop(2000)));
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
  const bootstrap = nodes.map((n) => `127.0.0.1:${n.port}`).join(",");
  const cluster: KafkaCluster = {
    nodes,
    bootstrap,
    classpath,
    async createTopic(topic, o = {}) {
      const args = ["--bootstrap-server", bootstrap, "--create", "--if-not-exists", "--topic", topic, "--partitions", String(o.partitions ?? 1), "--replication-factor", String(o.replicationFactor ?? rf)];
      for (const [k, v] of Object.entries(o.config ?? {})) args.push("--config", `${k}=${v}`);
      const r = await kafkaTool(classpath, "org.apache.kafka.tools.TopicCommand", args, { timeoutMs: 120_000 });
      if (r.code !== 0) throw new Error(`creating topic ${topic} failed (exit ${r.code}):\n${r.output.slice(-4000)}`);
    },
    async newTopic(o = {}) {
      const topic = uniqueName(o.prefix ?? "t");
      await this.createTopic(topic, o);
      return topic;
    },
    async leaderOf(topic, partition = 0) {
      const r = await kafkaTool(classpath, "org.apache.kafka.tools.TopicCommand", ["--bootstrap-server", bootstrap, "--describe", "--topic", topic], { timeoutMs: 120_000 });
      const line = r.output.split("\n").find((l) => new RegExp(`Topic:\\s*${topic}\\s+Partition:\\s*${partition}\\s`).test(l));
      const m = line?.match(/Leader:\s*(\d+)/);
      const node = m ? nodes.find((n) => n.nodeId === Number(m[1])) : undefined;
      if (!node) throw new Error(`no leader for ${topic}-${partition} in:\n${r.output}`);
      return node;
    },
    async coordinatorOf(group) {
      const r = await kafkaTool(classpath, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", ["--bootstrap-server", bootstrap, "--describe", "--group", group, "--state"], { timeoutMs: 120_000 });
      // GROUP  COORDINATOR (ID)  ASSIGNMENT-STRATEGY  STATE  #MEMBERS: "g  127.0.0.1:9092  (1)  range ..."
      const m = r.output.split("\n").find((l) => l.startsWith(`${group} `))?.match(/\(\s*(\d+)\)/);
      const node = m ? nodes.find((n) => n.nodeId === Number(m[1])) : undefined;
      if (!node) throw new Error(`no coordinator for group ${group} in:\n${r.output}`);
      return node;
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.peer.stop(5000)));
      rmSync(root, { recursive: true, force: true });
    },
  };
  return cluster;
}

export interface ToolResult {
  code: number | null;
  output: string;
  stdout: string;
}

/** Runs a java main class to completion, feeding `input` to its stdin; its output kept. */
function runJava(classpath: string, mainClass: string, args: string[], jvmArgs: string[], cwd: string | undefined, timeoutMs: number, input?: string | Buffer): Promise<ToolResult> {
  return new Promise((resolve) => {
    const child = spawn("java", [...jvmArgs, "-cp", classpath, mainClass, ...args], { cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let output = "";
    child.stdout.on("data", (d) => {
      stdout += d;
      output = (output + d).slice(-400_000);
    });
    child.stderr.on("data", (d) => (output = (output + d).slice(-400_000)));
    const timer = setTimeout(() => {
      output += `\n(killed after ${timeoutMs} ms)`;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output, stdout });
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ code: -1, output: `${output}\n${e.message}`, stdout });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(input ?? "");
  });
}

/**
 * Runs one of Kafka's tools (org.apache.kafka.tools.TopicCommand, ...ConsoleProducer,
 * ...consumer.ConsoleConsumer, ...ProducerPerformance, ...ConsumerPerformance) to completion.
 */
export function kafkaTool(classpath: string, mainClass: string, args: string[], opts: { input?: string | Buffer; timeoutMs?: number; jvmArgs?: string[] } = {}): Promise<ToolResult> {
  return runJava(classpath, mainClass, args, opts.jvmArgs ?? TOOL_JVM, undefined, opts.timeoutMs ?? 120_000, opts.input);
}

/** Kafka's console producer: one record per line of `lines`; `key\tvalue` lines with keys. */
export async function consoleProduce(cluster: KafkaCluster, topic: string, lines: string[], opts: { keys?: boolean } = {}): Promise<void> {
  const props = opts.keys ? ["--property", "parse.key=true", "--property", "key.separator=\t"] : [];
  const r = await kafkaTool(cluster.classpath, "org.apache.kafka.tools.ConsoleProducer", ["--bootstrap-server", cluster.bootstrap, "--topic", topic, ...props], { input: `${lines.join("\n")}\n` });
  if (r.code !== 0) throw new Error(`console producer failed (exit ${r.code}):\n${r.output.slice(-4000)}`);
}

/** Kafka's console consumer from the beginning of `topic`, until `count` records were read; prints headers and keys when asked. */
export async function consoleConsume(cluster: KafkaCluster, topic: string, count: number, opts: { printHeaders?: boolean; printKey?: boolean; printPartition?: boolean; printTimestamp?: boolean; timeoutMs?: number } = {}): Promise<string[]> {
  const props: string[] = [];
  if (opts.printHeaders) props.push("--formatter-property", "print.headers=true");
  if (opts.printKey) props.push("--formatter-property", "print.key=true");
  if (opts.printPartition) props.push("--formatter-property", "print.partition=true");
  if (opts.printTimestamp) props.push("--formatter-property", "print.timestamp=true");
  const r = await kafkaTool(
    cluster.classpath,
    "org.apache.kafka.tools.consumer.ConsoleConsumer",
    ["--bootstrap-server", cluster.bootstrap, "--topic", topic, "--from-beginning", "--max-messages", String(count), "--timeout-ms", String(opts.timeoutMs ?? 60_000), ...props],
    { timeoutMs: (opts.timeoutMs ?? 60_000) + 60_000 },
  );
  if (r.code !== 0) throw new Error(`console consumer failed (exit ${r.code}):\n${r.output.slice(-4000)}`);
  return r.stdout.split("\n").filter((l) => l !== "");
}
