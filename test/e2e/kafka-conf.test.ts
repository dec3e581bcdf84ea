import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { readFileSync, writeFileSync } from "node:fs";
import { CLI, ROOT, runCli, tempDir } from "../support/helpers.ts";

const FORBID_KAFKA = path.join(ROOT, "test", "support", "forbid-kafka.ts");

/** The CLI with a preload that fails if the Kafka client package is loaded. */
function cliWithoutKafka(args: string[]) {
  const r = spawnSync(process.execPath, ["--preload", FORBID_KAFKA, CLI, ...args], { cwd: ROOT, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  return { code: r.status, out: r.stdout + r.stderr };
}

test("conf/kafka-edge.conf and conf/kafka-collector.conf are valid, and validating them or describing kafka loads no Kafka client", () => {
  for (const [file, agent] of [
    ["conf/kafka-edge.conf", "edge"],
    ["conf/kafka-collector.conf", "collector"],
  ]) {
    const r = cliWithoutKafka(["validate", file]);
    expect(r.out).toBe(`${file}: agent ${agent} is valid\n`);
    expect(r.code).toBe(0);
  }
  const d = cliWithoutKafka(["describe", "kafka"]);
  expect(d.code).toBe(0);
  expect(d.out).toContain("channel org.apache.flume.channel.kafka.KafkaChannel");
});

/** `flume describe` output by component ("sink CLASS"...): each property's type and default, read at the header's columns. */
function describedProperties(out: string): Map<string, Map<string, { type: string; default: string }>> {
  const sections = new Map<string, Map<string, { type: string; default: string }>>();
  let props: Map<string, { type: string; default: string }> | null = null;
  let cols: { type: number; default: number; description: number } | null = null;
  for (const line of out.split("\n")) {
    const head = /^(sink|source|channel) (\S+)$/.exec(line);
    if (head) {
      sections.set(`${head[1]} ${head[2]}`, (props = new Map()));
      cols = null;
    } else if (props && /^ {2}property +type +default +description$/.test(line)) {
      cols = { type: line.indexOf("type"), default: line.indexOf("default"), description: line.indexOf("description") };
    } else if (props && cols && /^ {2}\S/.test(line)) {
      props.set(line.slice(2, cols.type).trim(), { type: line.slice(cols.type, cols.default).trim(), default: line.slice(cols.default, cols.description).trim() });
    } else if (line === "") cols = null;
  }
  return sections;
}

test("flume describe kafka lists Flume's Kafka sink, source and channel with Flume's property names, their deprecated names and Flume's defaults", () => {
  const d = cliWithoutKafka(["describe", "kafka"]);
  expect(d.code).toBe(0);
  const described = describedProperties(d.out);
  expect([...described.keys()]).toEqual(["sink org.apache.flume.sink.kafka.KafkaSink", "source org.apache.flume.source.kafka.KafkaSource", "channel org.apache.flume.channel.kafka.KafkaChannel"]);
  const defaults = (section: string) => Object.fromEntries([...(described.get(section) ?? [])].map(([k, v]) => [k, v.default]));
  // Flume 1.11's user guide defaults.
  expect(defaults("sink org.apache.flume.sink.kafka.KafkaSink")).toMatchObject({
    "kafka.bootstrap.servers": "(required)",
    "kafka.topic": "default-flume-topic",
    flumeBatchSize: "100",
    "kafka.producer.acks": "1",
    useFlumeEventFormat: "false",
    defaultPartitionId: "",
    partitionIdHeader: "",
    allowTopicOverride: "true",
    topicHeader: "topic",
  });
  expect(defaults("source org.apache.flume.source.kafka.KafkaSource")).toMatchObject({
    "kafka.bootstrap.servers": "(required)",
    "kafka.consumer.group.id": "flume",
    "kafka.topics": "",
    "kafka.topics.regex": "",
    batchSize: "1000",
    batchDurationMillis: "1000",
    backoffSleepIncrement: "50",
    maxBackoffSleep: "1000",
    useFlumeEventFormat: "false",
    setTopicHeader: "true",
    topicHeader: "topic",
    migrateZookeeperOffsets: "true",
  });
  expect(defaults("channel org.apache.flume.channel.kafka.KafkaChannel")).toMatchObject({
    "kafka.bootstrap.servers": "(required)",
    "kafka.topic": "flume-channel",
    "kafka.consumer.group.id": "flume",
    parseAsFlumeEvent: "true",
    "kafka.pollTimeout": "500",
    defaultPartitionId: "",
    partitionIdHeader: "",
    migrateZookeeperOffsets: "true",
  });
  // Flume's deprecated names are accepted and named.
  expect(d.out).toMatch(/^ {2}kafka\.topic +string +default-flume-topic .*\(also topic\)$/m);
  expect(d.out).toMatch(/^ {2}flumeBatchSize +int +100 .*\(min 1; also batchSize\)$/m);
  expect(d.out).toMatch(/^ {2}kafka\.producer\.acks +string +1 .*\(also requiredAcks\)$/m);
  expect(d.out).toMatch(/^ {2}kafka\.consumer\.group\.id +string +flume .*\(also groupId\)$/m);
  expect(d.out).toMatch(/^ {2}kafka\.bootstrap\.servers +string +\(required\) .*\(also brokerList\)$/m);
  expect(d.out).toMatch(/^ {2}kafka\.pollTimeout +int +500 .*also pollTimeout\)$/m);
  // Kafka's own settings pass through their prefixes.
  for (const group of ["kafka.producer.*", "kafka.consumer.*", "header.*"]) expect(d.out).toContain(`    ${group}  `);
});

test("flume simulate runs each Kafka config (file channels) against the simulated broker, no Kafka client loaded", () => {
  const edge = cliWithoutKafka(["simulate", "-f", "conf/kafka-edge.conf", "--events", "3000", "--crash-at", "150ms", "--no-progress"]);
  expect(edge.out).toContain("sink k1 <- c1 (org.apache.flume.sink.kafka.KafkaSink writes topic logs of the simulated Kafka broker (idempotent producer), batches of 1000");
  expect(edge.out).toContain("topic logs: on the simulated Kafka broker, 3 partitions, read by no source of the run (what is written there is delivered)");
  expect(edge.out).toContain("topic logs: 3,000 records in 3 partitions (1000/1000/1000)");
  expect(edge.out).toContain("at-least-once: HELD (0 lost");
  expect(edge.code).toBe(0);
  const collector = cliWithoutKafka(["simulate", "-f", "conf/kafka-collector.conf", "--events", "3000", "--no-progress"]);
  expect(collector.out).toContain("source r1 -> c1 (org.apache.flume.source.kafka.KafkaSource reads topic logs of the simulated Kafka broker in group collectors, batches of 1000");
  expect(collector.out).toContain("topic logs: written by a simulated producer outside the run");
  expect(collector.out).toContain("at-least-once: HELD (0 lost, 0 duplicates)");
  expect(collector.code).toBe(0);
});

test("flume simulate runs the two Kafka configs as one tier over the simulated topic: lost acknowledgements, a failover longer than the request timeout and a collector crash, every duplicate explained", () => {
  const { dir, cleanup } = tempDir("flume-kafka-tier-");
  try {
    const conf = path.join(dir, "kafka-tier.conf");
    // acks = 1: the producer is not idempotent, so a failover's retry writes records again.
    const edge = readFileSync(path.join(ROOT, "conf", "kafka-edge.conf"), "utf8").replace("kafka.producer.acks = all", "kafka.producer.acks = 1");
    writeFileSync(conf, `${edge}\n${readFileSync(path.join(ROOT, "conf", "kafka-collector.conf"), "utf8")}`);
    const args = ["simulate", "-f", conf, "--events", "5000", "--sink-latency", "100ms", "--kafka-lose-ack", "0.1", "--kafka-failover", "logs:1@300ms+40s", "--crash", "collector@400ms+1s", "--seed", "3", "--no-progress"];
    const r = cliWithoutKafka(args);
    expect(r.out).toContain("edge: sink k1 <- c1 (org.apache.flume.sink.kafka.KafkaSink writes topic logs of the simulated Kafka broker, batches of 1000");
    expect(r.out).toContain("topic logs: on the simulated Kafka broker, 3 partitions, read by sources of the run");
    expect(r.out).toMatch(/tier at-least-once: HELD \(0 lost, [1-9][\d,]* duplicates\)/);
    expect(r.out).toMatch(/  lost-ack +[1-9][\d,]* +the Kafka broker wrote a batch whose acknowledgement was lost/);
    expect(r.out).toMatch(/  leader-failover +[1-9][\d,]* +a partition leader failed over/);
    expect(r.out).not.toContain("unexplained");
    // The counts by cause add up to the duplicates.
    const total = Number((/tier at-least-once: HELD \(0 lost, ([\d,]+) duplicates\)/.exec(r.out) as RegExpExecArray)[1].replaceAll(",", ""));
    const byCause = [...r.out.matchAll(/^  (?:lost-ack|leader-failover|source-reread|crash-replay|partial-batch|client-retry) +([\d,]+) /gm)].reduce((n, m) => n + Number(m[1].replaceAll(",", "")), 0);
    expect(byCause).toBe(total);
    expect(r.code).toBe(0);
    // The same seed prints the same bytes.
    expect(cliWithoutKafka(args).out).toBe(r.out);
  } finally {
    cleanup();
  }
}, 120_000);

test("flume validate warns at its line when a Kafka source or channel names a dead-letter topic while reading plain records, or a Kafka sink while it sends every event as configured (nothing could ever go there)", () => {
  const { dir, cleanup } = tempDir("flume-kafka-dlq-conf-");
  try {
    const conf = path.join(dir, "dlq.conf");
    const lines = [
      "a1.sources = r1 r2",
      "a1.channels = c1 c2",
      "a1.sinks = k1 k2",
      "a1.sources.r1.type = kafka",
      "a1.sources.r1.kafka.bootstrap.servers = localhost:9092",
      "a1.sources.r1.kafka.topics = plain",
      "a1.sources.r1.batchSize = 100",
      "a1.sources.r1.kafka.deadLetterTopic = plain-dlq",
      "a1.sources.r1.channels = c1",
      // The Avro format on: the dead-letter topic is used, no warning.
      "a1.sources.r2.type = kafka",
      "a1.sources.r2.kafka.bootstrap.servers = localhost:9092",
      "a1.sources.r2.kafka.topics = avro",
      "a1.sources.r2.batchSize = 100",
      "a1.sources.r2.useFlumeEventFormat = true",
      "a1.sources.r2.kafka.deadLetterTopic = avro-dlq",
      "a1.sources.r2.channels = c2",
      "a1.channels.c1.type = memory",
      "a1.channels.c2.type = kafka",
      "a1.channels.c2.kafka.bootstrap.servers = localhost:9092",
      "a1.channels.c2.parseAsFlumeEvent = false",
      "a1.channels.c2.kafka.deadLetterTopic = c2-dlq",
      "a1.sinks.k1.type = kafka",
      "a1.sinks.k1.kafka.bootstrap.servers = localhost:9092",
      "a1.sinks.k1.allowTopicOverride = false",
      "a1.sinks.k1.kafka.deadLetterTopic = k1-dlq",
      "a1.sinks.k1.channel = c1",
      "a1.sinks.k2.type = null",
      "a1.sinks.k2.channel = c2",
    ];
    writeFileSync(conf, `${lines.join("\n")}\n`);
    const r = runCli(["validate", conf]);
    expect(r.stdout.split("\n")).toEqual([
      `${conf}:8: warning: source r1: kafka.deadLetterTopic: is set while useFlumeEventFormat is false: every record is then read as a plain body, none can fail to read, so nothing is ever sent to this topic (set useFlumeEventFormat = true if the topic holds Avro FlumeEvents, or remove kafka.deadLetterTopic)`,
      `${conf}:21: warning: channel c2: kafka.deadLetterTopic: is set while parseAsFlumeEvent is false: every record is then read as a plain body, none can fail to read, so nothing is ever sent to this topic (set parseAsFlumeEvent = true if the topic holds Avro FlumeEvents, or remove kafka.deadLetterTopic)`,
      `${conf}:25: warning: sink k1: kafka.deadLetterTopic: is set while allowTopicOverride is false and partitionIdHeader is not set: every event then goes to kafka.topic as written, none can fail to be sent as configured, so nothing is ever sent to this topic (remove kafka.deadLetterTopic, or set allowTopicOverride = true / partitionIdHeader)`,
      `${conf}: agent a1 is valid (3 warnings)`,
      "",
    ]);
    expect(r.code).toBe(0);
  } finally {
    cleanup();
  }
});

test("flume validate reports a bad kafka.producer.* or kafka.consumer.* setting, brokers given by a deprecated name, or a topic name Kafka refuses, at the line that wrote it", () => {
  const { dir, cleanup } = tempDir("flume-kafka-setting-lines-");
  try {
    const conf = path.join(dir, "settings.conf");
    const lines = [
      "a1.sources = r1 r2",
      "a1.channels = c1",
      "a1.sinks = k1 k2",
      "a1.sources.r1.type = kafka",
      "a1.sources.r1.kafka.bootstrap.servers = localhost:9092",
      "a1.sources.r1.kafka.topics = t",
      "a1.sources.r1.channels = c1",
      "a1.sources.r1.kafka.consumer.session.timeout.ms = abc",
      // heartbeat.interval.ms keeps its default (3000): the session written is what is too short.
      "a1.sources.r2.type = kafka",
      "a1.sources.r2.kafka.bootstrap.servers = localhost:9092",
      "a1.sources.r2.kafka.topics = t,logs today",
      "a1.sources.r2.channels = c1",
      "a1.sources.r2.kafka.consumer.session.timeout.ms = 2000",
      "a1.channels.c1.type = kafka",
      "a1.channels.c1.brokerList = localhost:9092,nohost",
      "a1.channels.c1.kafka.topic = ..",
      "a1.sinks.k1.type = kafka",
      "a1.sinks.k1.channel = c1",
      "a1.sinks.k1.kafka.bootstrap.servers = localhost:9092",
      "a1.sinks.k1.kafka.producer.security.protocol = SSL",
      "a1.sinks.k1.kafka.producer.ssl.truststore.type = PEM",
      `a1.sinks.k1.kafka.producer.ssl.truststore.location = ${dir}/missing-ca.pem`,
      // sasl.mechanism not written: its default, GSSAPI, is what the protocol asks for.
      "a1.sinks.k2.type = kafka",
      "a1.sinks.k2.channel = c1",
      "a1.sinks.k2.kafka.bootstrap.servers = localhost:9092",
      "a1.sinks.k2.kafka.producer.security.protocol = SASL_PLAINTEXT",
      "a1.sinks.k2.kafka.topic = %{dest}",
      "a1.sinks.k2.allowTopicOverride = false",
    ];
    writeFileSync(conf, `${lines.join("\n")}\n`);
    const r = runCli(["validate", conf]);
    const out = r.stdout.split("\n").filter((l) => l !== "");
    const RULE = "1 to 249 of a-z A-Z 0-9 . _ -, not . or ..";
    expect(out).toEqual([
      `${conf}:8: error: source r1: kafka.consumer.session.timeout.ms: expected a whole number, got "abc"`,
      `${conf}:11: error: source r2: kafka.topics: "logs today" is not a Kafka topic name (${RULE})`,
      `${conf}:13: error: source r2: kafka.consumer.session.timeout.ms: is 2000, not above kafka.consumer.heartbeat.interval.ms (3000 by default)`,
      `${conf}:15: error: channel c1: kafka.bootstrap.servers: "nohost" is not host:port`,
      `${conf}:15: warning: channel c1: brokerList: is deprecated; Flume reads it as kafka.bootstrap.servers (write kafka.bootstrap.servers instead)`,
      `${conf}:16: error: channel c1: kafka.topic: ".." is not a Kafka topic name (${RULE})`,
      `${conf}:22: error: sink k1: kafka.producer.ssl.truststore.location: cannot be read: ENOENT: no such file or directory, open '${dir}/missing-ca.pem'`,
      `${conf}:26: error: sink k2: kafka.producer.security.protocol: SASL_PLAINTEXT needs kafka.producer.sasl.mechanism = PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (its default, GSSAPI, is not supported)`,
      `${conf}:27: error: sink k2: kafka.topic: "%{dest}" is not a Kafka topic name (${RULE}); with allowTopicOverride = false, %{header} is not replaced, nor any other escape (as Flume 1.11) (set allowTopicOverride = true to choose the topic from the event's headers)`,
      `${conf}: agent a1 is invalid: 8 errors, 1 warning`,
    ]);
    expect(r.code).toBe(1);
  } finally {
    cleanup();
  }
});

test("flume validate warns at the sink's line when a Kafka source feeds a Kafka sink on the same brokers that sends each event to the topic its source set in the header (every event read again, endlessly), and --strict refuses to run it; not when they use other brokers or headers, or an interceptor may change the header", () => {
  const { dir, cleanup } = tempDir("flume-kafka-loop-conf-");
  try {
    const conf = path.join(dir, "loop.conf");
    const source = (name: string, brokers: string, channel: string, extra: string[] = []) => [`a1.sources.${name}.type = kafka`, `a1.sources.${name}.kafka.bootstrap.servers = ${brokers}`, `a1.sources.${name}.kafka.topics = in`, `a1.sources.${name}.batchSize = 100`, `a1.sources.${name}.channels = ${channel}`, ...extra];
    const sink = (name: string, brokers: string, channel: string, extra: string[] = []) => [`a1.sinks.${name}.type = kafka`, `a1.sinks.${name}.kafka.bootstrap.servers = ${brokers}`, `a1.sinks.${name}.channel = ${channel}`, ...extra];
    const lines = [
      "a1.sources = r1 r2 r3 r4",
      "a1.channels = c1 c2 c3 c4",
      "a1.sinks = k1 k2 k3 k4 k5",
      ...["c1", "c2", "c3", "c4"].map((c) => `a1.channels.${c}.type = memory`),
      // r1 -> c1 -> k1: Flume's defaults on both sides, one broker in common: the loop (k1 at line 13).
      ...source("r1", "kafka1:9092,kafka2:9092", "c1"),
      ...sink("k1", "KAFKA2:9092,kafka3:9092", "c1"),
      // k2 reads c1 too, with the header named apart from the source's: no loop.
      ...sink("k2", "kafka1:9092", "c1", ["a1.sinks.k2.topicHeader = dest"]),
      // r2 -> c2 -> k3: another cluster (mirroring under the same topic names): no loop.
      ...source("r2", "kafka1:9092", "c2"),
      ...sink("k3", "mirror:9092", "c2"),
      // r3 -> c3 -> k4: the header renamed on both sides to the same name: the loop again (k4's topicHeader line).
      ...source("r3", "kafka1:9092", "c3", ["a1.sources.r3.topicHeader = t"]),
      ...sink("k4", "kafka1:9092", "c3", ["a1.sinks.k4.topicHeader = t"]),
      // r4 -> c4 -> k5: an interceptor of the source may set or remove the header: not said.
      ...source("r4", "kafka1:9092", "c4", ["a1.sources.r4.interceptors = i1", "a1.sources.r4.interceptors.i1.type = static", "a1.sources.r4.interceptors.i1.key = topic", "a1.sources.r4.interceptors.i1.value = out", "a1.sources.r4.interceptors.i1.preserveExisting = false"]),
      ...sink("k5", "kafka1:9092", "c4"),
    ];
    writeFileSync(conf, `${lines.join("\n")}\n`);
    const lineOf = (text: string) => lines.indexOf(text) + 1;
    const r = runCli(["validate", conf]);
    const hint = (k: string, r: string) => `(set a1.sinks.${k}.allowTopicOverride = false, or give a1.sinks.${k}.topicHeader or a1.sources.${r}.topicHeader another header, or set a1.sources.${r}.setTopicHeader = false)`;
    expect(r.stdout.split("\n").filter((l) => l !== "")).toEqual([
      `${conf}:${lineOf("a1.sinks.k1.type = kafka")}: warning: sink k1: topicHeader: sends each event to the topic its header "topic" names, and source r1 sets that header to the topic it read the event from (through channel c1, on the same brokers kafka2:9092): every event goes back to its topic and is read again, endlessly ${hint("k1", "r1")}`,
      `${conf}:${lineOf("a1.sinks.k4.topicHeader = t")}: warning: sink k4: topicHeader: sends each event to the topic its header "t" names, and source r3 sets that header to the topic it read the event from (through channel c3, on the same brokers kafka1:9092): every event goes back to its topic and is read again, endlessly ${hint("k4", "r3")}`,
      `${conf}: agent a1 is valid (2 warnings)`,
    ]);
    expect(r.code).toBe(0);
    // A warning: run starts it, unless --strict.
    const strict = runCli(["run", "-f", conf, "-n", "a1", "--strict"]);
    expect(strict.code).not.toBe(0);
    expect(strict.stdout + strict.stderr).toContain("sink k1: topicHeader: sends each event to the topic its header");
    expect(strict.stdout + strict.stderr).toContain("2 warning(s) in");
  } finally {
    cleanup();
  }
});

/** An agent whose channel is a Kafka channel (acks as given), fed by a simulated client. */
function kafkaChannelConf(dir: string, acks?: string): string {
  const conf = path.join(dir, `kafka-channel-${acks ?? "default"}.conf`);
  const lines = [
    "a1.sources = r1",
    "a1.channels = c1",
    "a1.sinks = k1",
    "a1.sources.r1.type = seq",
    "a1.sources.r1.batchSize = 100",
    "a1.sources.r1.channels = c1",
    "a1.channels.c1.type = org.apache.flume.channel.kafka.KafkaChannel",
    "a1.channels.c1.kafka.bootstrap.servers = kafka1:9092",
    "a1.channels.c1.kafka.topic = channel-events",
    "a1.channels.c1.kafka.consumer.group.id = agents",
    ...(acks ? [`a1.channels.c1.kafka.producer.acks = ${acks}`] : []),
    "a1.sinks.k1.type = logger",
    "a1.sinks.k1.channel = c1",
  ];
  writeFileSync(conf, `${lines.join("\n")}\n`);
  return conf;
}

const causeCounts = (out: string) => Object.fromEntries([...out.matchAll(/^  (lost-ack|leader-failover|source-reread|crash-replay|partial-batch|client-retry|lost-answer|unexplained) +([\d,]+) /gm)].map((m) => [m[1], Number(m[2].replaceAll(",", ""))]));

test("flume simulate keeps a Kafka channel in a topic of the simulated broker: lost acknowledgements, an election past the request timeout and a crash before an offset commit make duplicates, each explained by its cause; same seed, same bytes", () => {
  const { dir, cleanup } = tempDir("flume-kafka-channel-sim-");
  try {
    const conf = kafkaChannelConf(dir);
    const args = ["simulate", "-f", conf, "--events", "5000", "--sink-latency", "50ms", "--kafka-lose-ack", "0.1", "--kafka-failover", "channel-events:1@100ms+40s", "--crash", "a1@250ms+1s", "--seed", "1", "--no-progress"];
    const r = cliWithoutKafka(args);
    expect(r.out).toContain("channel c1 (org.apache.flume.channel.kafka.KafkaChannel, kept in topic channel-events of the simulated Kafka broker, group agents, idempotent producer; put commit = records acknowledged, take commit = offsets committed)");
    expect(r.out).toContain("topic channel-events: on the simulated Kafka broker, 3 partitions, holding a Kafka channel's events");
    expect(r.out).not.toContain("simulated by a file channel");
    expect(r.out).toMatch(/topic channel-events: [\d,]+ records in 3 partitions \([\d/]+\), 1 leader failovers, [1-9]\d* acknowledgements lost; group agents: lag 0/);
    const causes = causeCounts(r.out);
    expect(Object.keys(causes).sort()).toEqual(["crash-replay", "leader-failover", "lost-ack"]);
    const total = Number((/^at-least-once: HELD \(0 lost, ([\d,]+) duplicates\)$/m.exec(r.out) as RegExpExecArray)[1].replaceAll(",", ""));
    expect(Object.values(causes).reduce((a, b) => a + b, 0)).toBe(total);
    expect(r.out).toMatch(/^delivered unique +5,000$/m);
    expect(r.code).toBe(0);
    // The same seed prints the same bytes.
    expect(cliWithoutKafka(args).out).toBe(r.out);
  } finally {
    cleanup();
  }
}, 120_000);

test("flume simulate with kafka.producer.acks = 1: a leader failover after the leader answered and before its followers had the records loses them, reported as lost with the cause; acks = all loses none", () => {
  const { dir, cleanup } = tempDir("flume-kafka-acks-sim-");
  try {
    const args = (conf: string) => ["simulate", "-f", conf, "--events", "3000", "--sink-latency", "100ms", "--kafka-failover", "channel-events@160ms+100ms", "--no-progress"];
    const one = cliWithoutKafka(args(kafkaChannelConf(dir, "1")));
    expect(one.out).toContain("channel c1 (org.apache.flume.channel.kafka.KafkaChannel, kept in topic channel-events of the simulated Kafka broker, group agents, acks 0 or 1;");
    expect(one.out).toMatch(/^at-least-once: VIOLATED \(100 lost\)$/m);
    expect(one.out).toContain("3 leader failovers, 0 acknowledgements lost, 100 acknowledged records LOST in leader failovers (acks 0 or 1: the leader answered before its followers had them; acks=all never loses them)");
    expect(one.out).toMatch(/LOST in topic channel-events partition \d: its leader had acknowledged the record and failed over before a follower had it \(acks 0 or 1\)/);
    expect(one.code).not.toBe(0);
    const all = cliWithoutKafka(args(kafkaChannelConf(dir, "all")));
    expect(all.out).toMatch(/^at-least-once: HELD \(0 lost, 0 duplicates\)$/m);
    expect(all.out).not.toContain("LOST");
    expect(all.code).toBe(0);
  } finally {
    cleanup();
  }
}, 120_000);

test("a traced simulation of a Kafka channel with broker faults (lost acknowledgements, a long election, a crash) replays to the same ledger: tracing changes no byte of the report, and the replay says so", () => {
  const { dir, cleanup } = tempDir("flume-kafka-channel-trace-");
  try {
    const trace = path.join(dir, "trace.jsonl");
    const args = ["simulate", "-f", kafkaChannelConf(dir), "--events", "5000", "--sink-latency", "50ms", "--kafka-lose-ack", "0.1", "--kafka-failover", "channel-events:1@100ms+40s", "--crash", "a1@250ms+1s", "--seed", "1", "--no-progress"];
    const plain = cliWithoutKafka(args);
    const traced = cliWithoutKafka([...args, "--trace", trace]);
    expect(traced.out).not.toContain("warning");
    expect(traced.out).toBe(`${plain.out}trace written to ${trace} (check it with: flume replay ${trace})\n`);
    const sim = cliWithoutKafka([...args, "--json"]);
    const figures = JSON.parse(sim.out) as Record<string, number>;
    expect(figures.duplicates).toBeGreaterThan(0);
    const replay = cliWithoutKafka(["replay", trace, "--json"]);
    const replayed = JSON.parse(replay.out) as { ok: boolean; ledger: Record<string, number>; mismatches: unknown[] };
    expect(replayed.mismatches).toEqual([]);
    for (const k of ["accepted", "deliveredUnique", "duplicates", "lost", "remaining", "rolledBack"]) expect({ [k]: replayed.ledger[k] }).toEqual({ [k]: figures[k] });
    expect(replay.code).toBe(0);
    const text = cliWithoutKafka(["replay", trace]);
    expect(text.out).toContain("replay reached the same ledger");
    expect(text.code).toBe(0);
  } finally {
    cleanup();
  }
}, 120_000);
