/** `type = org.apache.flume.channel.kafka.KafkaChannel` (alias kafka): schema and factory of the channel kept in a Kafka topic (see kafka-channel.ts). */
import { configurationProblems } from "../../../core/errors.ts";
import { silentLogger } from "../../../core/logger.ts";
import { unusedDeadLetterTopic } from "../../../kafka/dead-letters.ts";
import { consumerSettings, producerSettings } from "../../../kafka/settings.ts";
import { topicNameProblems } from "../../../kafka/topic-name.ts";
import type { PropError } from "../../../config/schema.ts";
import { type ComponentContext, defineComponent } from "../../component.ts";
import { builtIn } from "../../registry.ts";
import { KafkaChannel } from "./kafka-channel.ts";

export { KafkaChannel, KafkaTransaction, type KafkaChannelOptions } from "./kafka-channel.ts";

const props = {
  "kafka.bootstrap.servers": { type: "string", required: true, aliases: ["brokerList"], deprecated: ["brokerList"], doc: "Kafka brokers, host1:9092,host2:9092 (brokerList: deprecated name)" },
  "kafka.topic": { type: "string", default: "flume-channel", aliases: ["topic"], deprecated: ["topic"], doc: "Topic holding the channel's events (topic: deprecated name)" },
  "kafka.consumer.group.id": { type: "string", default: "flume", aliases: ["groupId"], deprecated: ["groupId"], doc: "Consumer group; agents with the same topic and group share one channel (groupId: deprecated name)" },
  parseAsFlumeEvent: { type: "boolean", default: true, doc: "Records are Avro FlumeEvents (headers and body); false: the value is the body, for topics other producers write" },
  "kafka.pollTimeout": { type: "int", default: 500, min: 0, aliases: ["pollTimeout"], doc: "Milliseconds the consumer waits on the broker for records (its fetch.max.wait.ms unless that is set)" },
  defaultPartitionId: { type: "int", min: 0, doc: "Partition every event goes to, unless partitionIdHeader says otherwise" },
  partitionIdHeader: { type: "string", doc: "Header whose value is the partition number of the event" },
  "kafka.deadLetterTopic": { type: "string", doc: "Ours, not Flume's: with parseAsFlumeEvent, taken records that are no Avro FlumeEvent are sent to this topic at the take's commit (as they were, with headers flume.dlq.topic, flume.dlq.partition, flume.dlq.offset and flume.dlq.error) besides being logged and skipped" },
  transactionCapacity: { type: "int", default: 1000, min: 1, roles: ["transactionCapacity"], doc: "Most events one transaction may take" },
  migrateZookeeperOffsets: { type: "boolean", default: true, doc: "Flume's ZooKeeper offset migration: no longer applies (Kafka keeps the offsets); accepted and ignored" },
  readSmallestOffset: { type: "boolean", doc: "Deprecated name: true is kafka.consumer.auto.offset.reset = earliest, false latest; kafka.consumer.auto.offset.reset wins when set" },
} as const;

const groups = {
  producerProps: { prefix: "kafka.producer.", doc: "Kafka producer settings (acks, default all; compression.type, max.request.size, security.protocol, sasl.*, ssl.*...)" },
  consumerProps: { prefix: "kafka.consumer.", doc: "Kafka consumer settings (auto.offset.reset, default earliest; session.timeout.ms, fetch.*, security.protocol, sasl.*, ssl.*...)" },
} as const;

type Parsed = {
  "kafka.bootstrap.servers": string;
  "kafka.consumer.group.id": string;
  "kafka.pollTimeout": number;
  readSmallestOffset: boolean | undefined;
  producerProps: Readonly<Record<string, string>>;
  consumerProps: Readonly<Record<string, string>>;
};

function settingsOf(o: Parsed, ctx: Pick<ComponentContext, "agentName" | "name" | "logger">) {
  const label = `kafka channel ${ctx.name}`;
  const clientId = `flume-${ctx.agentName}-${ctx.name}`;
  const common = { bootstrap: o["kafka.bootstrap.servers"], bootstrapKey: "kafka.bootstrap.servers", clientId, label, logger: ctx.logger };
  const consumerProps = { "fetch.max.wait.ms": String(o["kafka.pollTimeout"]), ...o.consumerProps };
  return {
    // Flume's channel defaults: acks all, and a new group reads the topic from the beginning.
    producer: producerSettings({ ...common, props: o.producerProps, defaultAcks: "all" }),
    consumer: consumerSettings({ ...common, props: consumerProps, groupId: o["kafka.consumer.group.id"], defaultOffsetReset: o.readSmallestOffset === false ? "latest" : "earliest" }),
  };
}

/** Flume's KafkaChannel.translateOldProps: readSmallestOffset is read as auto.offset.reset, with a warning, unless that is set. */
function oldOffsetReset(o: Parsed): PropError[] {
  if (o.readSmallestOffset === undefined) return [];
  const reset = `kafka.consumer.auto.offset.reset = ${o.readSmallestOffset ? "earliest" : "latest"}`;
  const problem = { key: "readSmallestOffset", severity: "warning", code: "deprecated-property" } as const;
  if (o.consumerProps["auto.offset.reset"] !== undefined) return [{ ...problem, message: "is deprecated, and ignored: kafka.consumer.auto.offset.reset is set", hint: "remove readSmallestOffset" }];
  return [{ ...problem, message: `is deprecated; Flume reads it as ${reset}`, hint: `write ${reset} instead` }];
}

export const definition = defineComponent({
  ...builtIn.kafkaChannel,
  doc: "Durable channel in a Kafka topic, shared by every agent naming the same topic and consumer group (Flume's KafkaChannel); replicated by the cluster.",
  props,
  groups,
  // A killed agent commits no offsets: what it had taken is read again after a restart, and so
  // are committed takes above one still open (the group keeps one offset per partition).
  durability: { crash: (channel: KafkaChannel) => channel.crash(), repeatedOnCrash: (channel) => channel.repeatable(), repeatedOnStop: (channel) => channel.repeatable() },
  // As Flume's: no capacity of its own, the topic's retention bounds it.
  unbounded: "the topic's retention bounds it",
  // `flume simulate` keeps it in a topic of its simulated broker (brokerLink.channel); `flume replay`, which has no broker, takes what the trace says the broker did (src/simulate/replay-broker-channel.ts).
  simulation: { standIn: "file" },
  brokerLink: {
    protocol: "kafka",
    channel(o) {
      const { producer } = settingsOf(o, { agentName: "a1", name: "c", logger: silentLogger });
      return { topic: o["kafka.topic"], group: o["kafka.consumer.group.id"], idempotent: producer.idempotent, requestTimeoutMs: producer.requestTimeout, lossy: producer.acks !== -1 };
    },
  },
  validate(o) {
    const settings = configurationProblems(() => settingsOf(o, { agentName: "a1", name: "c", logger: silentLogger }), "kafka.bootstrap.servers");
    const topics = [...topicNameProblems("kafka.topic", [o["kafka.topic"]]), ...(o["kafka.deadLetterTopic"] ? topicNameProblems("kafka.deadLetterTopic", [o["kafka.deadLetterTopic"]]) : [])];
    // Without the Avro format every record is a body: none can fail to read, none is dead-lettered.
    return [...settings, ...topics, ...oldOffsetReset(o), ...(o["kafka.deadLetterTopic"] && !o.parseAsFlumeEvent ? [unusedDeadLetterTopic("parseAsFlumeEvent")] : [])];
  },
  create(o, ctx) {
    const { producer, consumer } = settingsOf(o, ctx);
    return new KafkaChannel(
      ctx.name,
      {
        topic: o["kafka.topic"],
        producer,
        consumer,
        parseAsFlumeEvent: o.parseAsFlumeEvent,
        pollTimeout: o["kafka.pollTimeout"],
        partitionIdHeader: o.partitionIdHeader || undefined,
        defaultPartitionId: o.defaultPartitionId,
        transactionCapacity: o.transactionCapacity,
        deadLetterTopic: o["kafka.deadLetterTopic"] || undefined,
      },
      { logger: ctx.logger },
    );
  },
});
