/**
 * Apache Flume's component types that Flume TS does not implement. A config naming one gets
 * a message that says so and what to use instead, not a "did you mean" as if it were a typo.
 */
import type { ComponentKind } from "./schema.ts";

interface Unsupported {
  kind: ComponentKind;
  /** Flume's alias first, then its class names. */
  names: readonly string[];
  instead: string;
}

const UNSUPPORTED: readonly Unsupported[] = [
  { kind: "sink", names: ["hive", "org.apache.flume.sink.hive.HiveSink"], instead: "send to an Apache Flume collector that has the Hive sink, with the avro sink" },
  { kind: "sink", names: ["hbase", "org.apache.flume.sink.hbase.HBaseSink"], instead: "send to an Apache Flume collector that has the HBase sink, with the avro sink" },
  { kind: "sink", names: ["hbase2", "org.apache.flume.sink.hbase2.HBase2Sink"], instead: "send to an Apache Flume collector that has the HBase2 sink, with the avro sink" },
  { kind: "sink", names: ["asynchbase", "org.apache.flume.sink.hbase.AsyncHBaseSink"], instead: "send to an Apache Flume collector that has the HBase sink, with the avro sink" },
  { kind: "sink", names: ["elasticsearch", "org.apache.flume.sink.elasticsearch.ElasticSearchSink"], instead: "use the http sink against Elasticsearch's bulk API, or an Apache Flume collector" },
  { kind: "sink", names: ["morphline_solr", "org.apache.flume.sink.solr.morphline.MorphlineSolrSink"], instead: "send to an Apache Flume collector that has the MorphlineSolrSink, with the avro sink" },
  { kind: "sink", names: ["irc", "org.apache.flume.sink.irc.IRCSink"], instead: "use the http sink against a chat webhook" },
  { kind: "sink", names: ["kite", "org.apache.flume.sink.kite.DatasetSink"], instead: "write files with file_roll (avro_event serializer) or use an Apache Flume collector" },
  { kind: "source", names: ["jms", "org.apache.flume.source.jms.JMSSource"], instead: "bridge the queue to http, avro or a NATS subject (jetstream source)" },
  { kind: "source", names: ["twitter", "org.apache.flume.source.twitter.TwitterSource"], instead: "feed the events through the http source" },
  { kind: "source", names: ["scribe", "org.apache.flume.source.scribe.ScribeSource"], instead: "use the thrift source with Flume's ThriftSourceProtocol, or avro" },
  { kind: "channel", names: ["jdbc", "org.apache.flume.channel.jdbc.JdbcChannel"], instead: "use the file channel (durable, and much faster)" },
  { kind: "interceptor", names: ["morphline", "org.apache.flume.sink.solr.morphline.MorphlineInterceptor$Builder"], instead: "use regex_extractor, search_replace and the other interceptors" },
];

/** What to tell a user whose config names a Flume type Flume TS does not implement, if it is one. */
export function unsupportedType(kind: ComponentKind, type: string): { message: string; hint: string } | undefined {
  const t = type.trim().toLowerCase();
  const entry = UNSUPPORTED.find((u) => u.kind === kind && u.names.some((n) => n.toLowerCase() === t));
  if (!entry) return undefined;
  return { message: `Flume's \`${entry.names[0]}\` ${kind} is not implemented by Flume TS`, hint: `instead, ${entry.instead}` };
}
