import type { CounterGroup } from "../core/counters.ts";

/** A counter group with what Prometheus labels it by. */
export interface LabeledGroup {
  group: CounterGroup<string>;
  /** The component's type name (memory, TAILDIR, avro...). */
  componentType: string;
}

/** Anything that can list the counter groups to report (the running agent). */
export interface MetricsProvider {
  readonly name: string;
  counterGroups(): Iterable<CounterGroup<string>>;
  /** The groups with their component types, for Prometheus labels. */
  labeledGroups?(): Iterable<LabeledGroup>;
}

/** Flume's /metrics JSON: `{"TYPE.name": {"Counter": "value", ...}}`, every value a string. */
export function metricsJson(provider: MetricsProvider): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const group of provider.counterGroups()) out[`${group.type}.${group.name}`] = group.snapshot();
  return out;
}

interface Metric {
  /** The name without the flume_<kind>_ prefix. */
  name: string;
  type: "counter" | "gauge";
  help: string;
  /** From Flume's value to Prometheus's (ms -> seconds, percent -> ratio). */
  scale?: number;
}

const c = (name: string, help: string): Metric => ({ name: `${name}_total`, type: "counter", help });
const g = (name: string, help: string, scale?: number): Metric => ({ name, type: "gauge", help, scale });
/** A Flume timer (milliseconds summed) as a counter of seconds. */
const t = (name: string, help: string): Metric => ({ name: `${name}_seconds_total`, type: "counter", help, scale: 0.001 });

/** The Kafka components' counters (Flume's KafkaSourceCounter, KafkaSinkCounter, KafkaChannelCounter). */
const KAFKA_GET = t("kafka_event_get", "Time spent getting records from Kafka");
const KAFKA_SEND = t("kafka_event_send", "Time spent sending records to Kafka until acknowledged");
const KAFKA_COMMIT = t("kafka_commit", "Time spent committing consumer offsets to Kafka");
const ROLLBACKS = c("rollbacks", "Transactions rolled back");

/**
 * Flume's counters with Prometheus names, base units and help. Names follow the Prometheus
 * conventions promtool checks: counters end in _total, times are seconds, ratios are 0..1.
 */
const METRICS: Record<string, Record<string, Metric>> = {
  CHANNEL: {
    ChannelSize: g("size", "Events in the channel (as of its last commit or rollback)"),
    ChannelCapacity: g("capacity", "Most events the channel holds"),
    ChannelFillPercentage: g("fill_ratio", "Channel size over capacity, 0 to 1", 0.01),
    EventPutAttemptCount: c("event_put_attempts", "Events offered to the channel in put transactions"),
    EventPutSuccessCount: c("event_put_successes", "Events committed into the channel"),
    EventTakeAttemptCount: c("event_take_attempts", "Take calls on the channel, including empty ones"),
    EventTakeSuccessCount: c("event_take_successes", "Events taken from the channel and committed"),
    EventPutErrorCount: c("event_put_errors", "Events whose put failed on a storage error"),
    EventTakeErrorCount: c("event_take_errors", "Events whose take failed on a storage error"),
    CheckpointWriteErrorCount: c("checkpoint_write_errors", "Checkpoints that could not be written"),
    CheckpointBackupWriteErrorCount: c("checkpoint_backup_write_errors", "Backup checkpoints that could not be written"),
    Open: g("open", "1 while the channel is open for transactions"),
    Closed: g("closed", "1 while the channel is closed"),
    Unhealthy: g("unhealthy", "1 when the channel failed to start"),
    EventReadFail: c("event_read_failures", "Records the channel could not read as events, skipped (Kafka channel with parseAsFlumeEvent)"),
    KafkaEventGetTimer: KAFKA_GET,
    KafkaEventSendTimer: KAFKA_SEND,
    KafkaCommitTimer: KAFKA_COMMIT,
    // Flume's KafkaChannel counts events here, the sink transactions.
    RollbackCount: c("rollbacks", "Events of take transactions rolled back (Kafka channel)"),
  },
  SOURCE: {
    EventReceivedCount: c("events_received", "Events the source received"),
    EventAcceptedCount: c("events_accepted", "Events the source put into its channels"),
    AppendReceivedCount: c("appends_received", "Single-event calls received"),
    AppendAcceptedCount: c("appends_accepted", "Single-event calls whose event was put into the channels"),
    AppendBatchReceivedCount: c("append_batches_received", "Batches received"),
    AppendBatchAcceptedCount: c("append_batches_accepted", "Batches put into the channels"),
    OpenConnectionCount: g("open_connections", "Client connections open now"),
    EventReadFail: c("event_read_failures", "Events that could not be read or parsed"),
    ChannelWriteFail: c("channel_write_failures", "Batches a channel refused"),
    GenericProcessingFail: c("processing_failures", "Batches lost to an unexpected error"),
    KafkaEventGetTimer: KAFKA_GET,
    KafkaCommitTimer: KAFKA_COMMIT,
    KafkaEmptyCount: c("kafka_empty_polls", "Polls of Kafka that found no record"),
    KafkaDeadLetterFailCount: c("kafka_dead_letter_failures", "Writes of bad records the dead-letter topic refused, each holding their batch for another try (one per retry)"),
  },
  SINK: {
    ConnectionCreatedCount: c("connections_created", "Connections opened to the destination"),
    ConnectionClosedCount: c("connections_closed", "Connections closed"),
    ConnectionFailedCount: c("connection_failures", "Connections that failed"),
    BatchEmptyCount: c("batches_empty", "Take transactions that found the channel empty"),
    BatchUnderflowCount: c("batches_underflow", "Batches smaller than the batch size"),
    BatchCompleteCount: c("batches_complete", "Batches of the full batch size"),
    EventDrainAttemptCount: c("event_drain_attempts", "Events taken to be delivered"),
    EventDrainSuccessCount: c("events_drained", "Events delivered and committed"),
    EventWriteFail: c("event_write_failures", "Batches the destination did not take"),
    ChannelReadFail: c("channel_read_failures", "Take transactions that failed on the channel"),
    KafkaEventSendTimer: KAFKA_SEND,
    RollbackCount: ROLLBACKS,
  },
};

const COMMON: Record<string, Metric> = {
  StartTime: g("start_time_seconds", "When the component started (Unix time)", 0.001),
  StopTime: g("stop_time_seconds", "When the component stopped (Unix time; 0 while running)", 0.001),
};

function snake(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();
}

/** A counter a component adds beyond Flume's standard ones: named from its key. */
function fallback(key: string): Metric {
  const base = snake(key).replace(/_count$/, "");
  return /(Count|Fail)$/.test(key) ? c(base, `Flume counter ${key}`) : g(base, `Flume attribute ${key}`);
}

/** A label value escaped as the text format wants it. */
export function labelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function groupsOf(provider: MetricsProvider): Iterable<LabeledGroup> {
  if (provider.labeledGroups) return provider.labeledGroups();
  return [...provider.counterGroups()].map((group) => ({ group, componentType: "" }));
}

/** The counters in the Prometheus text exposition format (version 0.0.4), HELP and TYPE for each. */
export function prometheusText(provider: MetricsProvider): string {
  const series = new Map<string, { metric: Metric; lines: string[] }>();
  for (const { group, componentType } of groupsOf(provider)) {
    const kind = group.type.toLowerCase();
    const labels = `agent="${labelValue(provider.name)}",component="${labelValue(group.name)}",type="${labelValue(componentType)}"`;
    for (const [key, raw] of Object.entries(group.snapshot())) {
      if (key === "Type") continue;
      const value = raw === "true" ? 1 : raw === "false" ? 0 : Number(raw);
      if (!Number.isFinite(value)) continue;
      const metric = METRICS[group.type]?.[key] ?? COMMON[key] ?? fallback(key);
      const name = `flume_${kind}_${metric.name}`;
      let s = series.get(name);
      if (!s) series.set(name, (s = { metric, lines: [] }));
      s.lines.push(`${name}{${labels}} ${metric.scale ? value * metric.scale : value}`);
    }
  }
  const out: string[] = [];
  for (const [name, s] of series) {
    out.push(`# HELP ${name} ${s.metric.help}`, `# TYPE ${name} ${s.metric.type}`, ...s.lines);
  }
  return `${out.join("\n")}\n`;
}

/** Whether a scraper asked for Prometheus text rather than Flume's JSON. */
export function wantsPrometheus(accept: string | undefined): boolean {
  if (!accept) return false;
  return /application\/openmetrics-text|text\/plain;\s*version=0\.0\.4/i.test(accept);
}
