/**
 * Wire compatibility with Apache Flume 1.11's Kafka components, on one live Kafka broker: a real
 * Flume agent (test/support/flume.ts, with Flume's Kafka sink, source and channel jars) writes
 * what our source and channel read, and reads what our sink and channel write.
 */
import { expect } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import type { FlumePeer } from "../support/flume.ts";
import { freePort, type Metrics, startAgentCli, tempDir, waitForMetrics, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { cleanupsAfterEach, kafkaChannel, kafkaForFile, kafkaSink, kafkaSource, putEvents, startFlumeWithKafka, takeEvents } from "../support/kafka-tests.ts";

const kafka = kafkaForFile({ autoCreateTopics: false, withFlumeKafka: true });
const cleanups = cleanupsAfterEach();

function flume(conf: string): Promise<FlumePeer> {
  return startFlumeWithKafka(cleanups, conf);
}

/** The lines Flume's file_roll sink wrote into `dir` (header_and_text: "{k=v, ...} body"). */
function rolled(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((f) => readFileSync(path.join(dir, f), "utf8").split("\n"))
    .filter((l) => l !== "");
}

/**
 * The headers a Flume source's interceptors (below) give each event: several static ones, text
 * beyond ASCII, a timestamp and a topic of its own, and an empty value (from a regex extractor:
 * Flume gives a static interceptor's empty value its default); plus flumeTime, the time its
 * timestamp interceptor set.
 */
const STATIC_HEADERS = { origin: "flume-1.11", colour: "blue", text: "café ✓", timestamp: "1234567890123", topic: "set-by-flume" };
const FLUME_HEADERS = { ...STATIC_HEADERS, empty: "" };

/** Interceptors of source `r` giving FLUME_HEADERS; non-ASCII text as \u escapes, which Java's properties reading decodes whatever the JVM's charset. */
function interceptors(r: string): string {
  const statics = Object.entries(STATIC_HEADERS);
  const ascii = (v: string) => v.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const i = `a1.sources.${r}.interceptors`;
  return [
    `${i} = ${statics.map((_, n) => `s${n}`).join(" ")} ts re`,
    ...statics.flatMap(([k, v], n) => [`${i}.s${n}.type = static`, `${i}.s${n}.key = ${k}`, `${i}.s${n}.value = ${ascii(v)}`]),
    `${i}.ts.type = timestamp`,
    `${i}.ts.headerName = flumeTime`,
    `${i}.re.type = regex_extractor`,
    `${i}.re.regex = ^()`,
    `${i}.re.serializers = e`,
    `${i}.re.serializers.e.name = empty`,
  ].join("\n");
}

needsJvm.test(
  "Flume's KafkaSink with useFlumeEventFormat into our KafkaSource keeps every header",
  async () => {
    const topic = "from-flume-sink";
    await kafka.createTopic(topic);
    await flume(`a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 20
a1.sources.r1.channels = c1
${interceptors("r1")}
a1.channels.c1.type = memory
a1.sinks.k1.type = org.apache.flume.sink.kafka.KafkaSink
a1.sinks.k1.channel = c1
a1.sinks.k1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sinks.k1.kafka.topic = ${topic}
a1.sinks.k1.useFlumeEventFormat = true
a1.sinks.k1.allowTopicOverride = false
a1.sinks.k1.kafka.producer.acks = all
`);
    const { source: r, channel } = kafkaSource({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topics": topic, useFlumeEventFormat: "true", batchDurationMillis: "100", "kafka.consumer.auto.offset.reset": "earliest" }, { cleanups });
    await r.start();
    const got: Event[] = [];
    await waitUntil(
      async () => {
        await r.process();
        await takeEvents(channel, got);
        return got.length >= 20;
      },
      "20 events from Flume's sink",
      120_000,
      0,
    );
    expect(got.map(bodyText)).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    // Flume's headers as its interceptors set them, its timestamp and topic winning over the
    // record's (as Flume's own Kafka source keeps them); partition and offset, which the events
    // lack, added from the record.
    got.forEach((e, i) => {
      expect({ ...e.headers }).toEqual({ ...FLUME_HEADERS, flumeTime: expect.stringMatching(/^\d{13}$/), partition: "0", offset: String(i) });
      expect(Math.abs(Number(e.headers.flumeTime) - Date.now())).toBeLessThan(600_000);
    });
  },
  300_000,
);

needsJvm.test(
  "our KafkaSink into Flume's KafkaSource, with useFlumeEventFormat on both sides",
  async () => {
    const topic = "to-flume-source";
    await kafka.createTopic(topic);
    const { sink: k, channel } = kafkaSink({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topic": topic, useFlumeEventFormat: "true" }, { cleanups });
    await k.start();
    await putEvents(channel, Array.from({ length: 10 }, (_, i) => createEvent(`line ${i}`, { n: String(i), origin: "flume-ts" })));
    expect(await k.process()).toBe("READY");

    const out = tempDir("flume-kafka-out-");
    cleanups.push(out.cleanup);
    const reader = await flume(`a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = org.apache.flume.source.kafka.KafkaSource
a1.sources.r1.channels = c1
a1.sources.r1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.sources.r1.kafka.topics = ${topic}
a1.sources.r1.kafka.consumer.group.id = flume-reader
a1.sources.r1.kafka.consumer.auto.offset.reset = earliest
a1.sources.r1.useFlumeEventFormat = true
a1.sources.r1.batchDurationMillis = 200
a1.sources.r1.batchSize = 100
a1.channels.c1.type = memory
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${out.dir}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.serializer = header_and_text
`);
    await waitUntil(() => rolled(out.dir).length >= 10, "10 lines written by Flume", 120_000, 200).catch((err) => {
      throw new Error(`${(err as Error).message}; Flume's log:\n${reader.tail(40)}`);
    });
    const lines = rolled(out.dir);
    expect(lines.map((l) => l.replace(/^\{.*\} /, ""))).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i}`));
    for (let i = 0; i < 10; i++) {
      expect(lines[i]).toContain(`n=${i}`);
      expect(lines[i]).toContain("origin=flume-ts");
      expect(lines[i]).toContain(`topic=${topic}`);
    }
  },
  300_000,
);

needsJvm.test(
  "one KafkaChannel topic: written by a Flume agent and read by ours, then written by ours and read by Flume",
  async () => {
    const topic = "shared-channel";
    await kafka.createTopic(topic);
    // Flume puts 10 events into its Kafka channel; no sink takes them there.
    const writer = await flume(`a1.sources = r1
a1.channels = c1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 10
a1.sources.r1.channels = c1
${interceptors("r1")}
a1.channels.c1.type = org.apache.flume.channel.kafka.KafkaChannel
a1.channels.c1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.channels.c1.kafka.topic = ${topic}
a1.channels.c1.kafka.consumer.group.id = flume-writer
`);
    const ours = kafkaChannel({ "kafka.bootstrap.servers": kafka.bootstrap, "kafka.topic": topic, "kafka.consumer.group.id": "ours" }, { cleanups, name: "c1" });
    await ours.start();
    const got: Event[] = [];
    await waitUntil(
      async () => {
        await takeEvents(ours, got);
        return got.length >= 10;
      },
      "10 events of Flume's channel",
      120_000,
      100,
    );
    expect(got.map(bodyText)).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
    // Exactly Flume's headers: a channel adds none.
    for (const e of got) expect({ ...e.headers }).toEqual({ ...FLUME_HEADERS, flumeTime: expect.stringMatching(/^\d{13}$/) });
    await writer.stop();

    // The reverse: ours puts, a Flume agent with the same channel topic drains it to files.
    await putEvents(ours, Array.from({ length: 5 }, (_, i) => createEvent(`ours ${i}`, { writer: "flume-ts" })));
    const out = tempDir("flume-kafka-channel-out-");
    cleanups.push(out.cleanup);
    await flume(`a1.channels = c1
a1.sinks = k1
a1.channels.c1.type = org.apache.flume.channel.kafka.KafkaChannel
a1.channels.c1.kafka.bootstrap.servers = ${kafka.bootstrap}
a1.channels.c1.kafka.topic = ${topic}
a1.channels.c1.kafka.consumer.group.id = flume-reader
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${out.dir}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.serializer = header_and_text
`);
    // Flume's group reads the topic from the beginning: Flume's 10 events, then our 5.
    await waitUntil(() => rolled(out.dir).length >= 15, "15 lines written by Flume", 120_000, 200);
    const ourLines = rolled(out.dir).filter((l) => l.includes("writer=flume-ts"));
    expect(ourLines.map((l) => l.replace(/^\{.*\} /, ""))).toEqual(Array.from({ length: 5 }, (_, i) => `ours ${i}`));
  },
  300_000,
);

/**
 * One agent config with a kafka sink, a kafka source and a kafka channel, for one side (its own
 * topics and groups): seq -> memory -> kafka sink -> topic -> kafka source -> memory -> null,
 * and seq -> kafka channel -> null.
 */
function metricsConf(side: string, events: number): string {
  const common = `kafka.bootstrap.servers = ${kafka.bootstrap}`;
  return `a1.sources = seq_r kin_r chs_r
a1.channels = seq_c kin_c kch_c
a1.sinks = seq_k kin_k kch_k
a1.sources.seq_r.type = seq
a1.sources.seq_r.totalEvents = ${events}
a1.sources.seq_r.channels = seq_c
a1.channels.seq_c.type = memory
a1.sinks.seq_k.type = org.apache.flume.sink.kafka.KafkaSink
a1.sinks.seq_k.channel = seq_c
a1.sinks.seq_k.${common}
a1.sinks.seq_k.kafka.topic = metrics-${side}
a1.sources.kin_r.type = org.apache.flume.source.kafka.KafkaSource
a1.sources.kin_r.channels = kin_c
a1.sources.kin_r.${common}
a1.sources.kin_r.kafka.topics = metrics-${side}
a1.sources.kin_r.kafka.consumer.group.id = metrics-${side}
a1.sources.kin_r.kafka.consumer.auto.offset.reset = earliest
a1.sources.kin_r.batchDurationMillis = 100
a1.sources.kin_r.batchSize = 100
a1.channels.kin_c.type = memory
a1.sinks.kin_k.type = null
a1.sinks.kin_k.channel = kin_c
a1.sources.chs_r.type = seq
a1.sources.chs_r.totalEvents = ${events}
a1.sources.chs_r.channels = kch_c
a1.channels.kch_c.type = org.apache.flume.channel.kafka.KafkaChannel
a1.channels.kch_c.${common}
a1.channels.kch_c.kafka.topic = metrics-channel-${side}
a1.channels.kch_c.kafka.consumer.group.id = metrics-channel-${side}
a1.sinks.kch_k.type = null
a1.sinks.kch_k.channel = kch_c
`;
}

needsJvm.test(
  "Kafka's counters: the same Kafka flows in Flume 1.11 and in our agent show the same /metrics keys and counter names, and ours in Prometheus text",
  async () => {
    const events = 200;
    for (const side of ["flume", "ours"]) for (const t of [`metrics-${side}`, `metrics-channel-${side}`]) await kafka.createTopic(t);
    const [flumePort, oursPort] = [await freePort(), await freePort()];
    const peer = await startFlumeWithKafka(cleanups, metricsConf("flume", events), { metricsPort: flumePort });
    const dir = tempDir("flume-kafka-metrics-");
    cleanups.push(dir.cleanup);
    const confFile = path.join(dir.dir, "a1.conf");
    writeFileSync(confFile, metricsConf("ours", events));
    const agentCleanups: (() => void)[] = [];
    cleanups.push(() => agentCleanups.forEach((c) => c()));
    await startAgentCli(agentCleanups, ["run", "-f", confFile, "-n", "a1", "--metrics-port", String(oursPort), "--metrics-bind", "127.0.0.1", "--no-reload-conf"]);
    const done = (m: Metrics) => m["SOURCE.kin_r"]?.EventAcceptedCount === String(events) && m["CHANNEL.kch_c"]?.EventTakeSuccessCount === String(events);
    const [flume, ours] = await Promise.all([
      waitForMetrics(flumePort, "Flume's flows done", done, 120_000, 200).catch((err) => {
        throw new Error(`${(err as Error).message}\nFlume's log:\n${peer.tail(40)}`);
      }),
      waitForMetrics(oursPort, "our flows done", done, 120_000, 200),
    ]);
    expect(Object.keys(ours).sort()).toEqual(Object.keys(flume).sort());
    const names = (m: Metrics) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Object.keys(v).sort()]));
    // Flume 1.11's KafkaSourceCounter and KafkaSinkCounter do not show the failure counters its
    // other sources and sinks have; ours do (EventReadFail counts records that are no FlumeEvent, on the channel too),
    // and the source counts batches held by a refusing dead-letter topic (ours, as the topic):
    // a superset, so a dashboard made for Flume finds all it reads.
    const oursOnly: Record<string, string[]> = {
      "SOURCE.kin_r": ["ChannelWriteFail", "EventReadFail", "GenericProcessingFail", "KafkaDeadLetterFailCount"],
      "SINK.seq_k": ["ChannelReadFail", "EventWriteFail"],
      "CHANNEL.kch_c": ["EventReadFail"],
    };
    const withoutOursOnly = Object.fromEntries(Object.entries(names(ours)).map(([k, v]) => [k, v.filter((n) => !oursOnly[k]?.includes(n))]));
    expect(withoutOursOnly).toEqual(names(flume));
    for (const [k, extra] of Object.entries(oursOnly)) expect(names(ours)[k]).toEqual(expect.arrayContaining(extra));
    // Flume's Kafka counter names, in both.
    expect(names(ours)["SOURCE.kin_r"]).toEqual(expect.arrayContaining(["KafkaEventGetTimer", "KafkaCommitTimer", "KafkaEmptyCount"]));
    expect(names(ours)["SINK.seq_k"]).toEqual(expect.arrayContaining(["KafkaEventSendTimer", "RollbackCount"]));
    expect(names(ours)["CHANNEL.kch_c"]).toEqual(expect.arrayContaining(["KafkaEventGetTimer", "KafkaEventSendTimer", "KafkaCommitTimer", "RollbackCount"]));
    // The counts the input decides.
    for (const m of [flume, ours]) {
      expect(m["SINK.seq_k"].EventDrainSuccessCount).toBe(String(events));
      expect(m["SOURCE.kin_r"].EventReceivedCount).toBe(String(events));
      expect(m["CHANNEL.kch_c"].EventPutSuccessCount).toBe(String(events));
    }
    // Where the values differ (README): ours counts its producer's connection once a start; Flume 1.11's KafkaSink leaves it at 0.
    expect([flume["SINK.seq_k"].ConnectionCreatedCount, ours["SINK.seq_k"].ConnectionCreatedCount]).toEqual(["0", "1"]);
    // The source waited on empty polls once the topic was read.
    await waitForMetrics(oursPort, "an empty poll counted", (m) => Number(m["SOURCE.kin_r"]?.KafkaEmptyCount) > 0, 60_000, 200);

    const prom = await (await fetch(`http://127.0.0.1:${oursPort}/prometheus`)).text();
    const series = (name: string, component: string) => new RegExp(`^${name}\\{agent="a1",component="${component}",type="[^"]*"\\} [0-9.e+-]+$`, "m");
    expect(prom).toMatch(series("flume_source_kafka_event_get_seconds_total", "kin_r"));
    expect(prom).toMatch(series("flume_source_kafka_commit_seconds_total", "kin_r"));
    expect(prom).toMatch(series("flume_source_kafka_empty_polls_total", "kin_r"));
    expect(prom).toMatch(series("flume_sink_kafka_event_send_seconds_total", "seq_k"));
    expect(prom).toMatch(series("flume_sink_rollbacks_total", "seq_k"));
    expect(prom).toMatch(series("flume_channel_kafka_commit_seconds_total", "kch_c"));
    expect(prom).toContain("# TYPE flume_source_kafka_event_get_seconds_total counter");
  },
  300_000,
);
