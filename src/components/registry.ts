import type { AnyOptions, ComponentKind } from "../config/schema.ts";
import type { AnyDefinition, ComponentDefinition } from "./component.ts";

/** A built-in component type's names: its kind, the type name configurations use, and Flume's class names and other aliases. */
export interface BuiltInNames {
  readonly kind: ComponentKind;
  readonly type: string;
  readonly aliases: readonly string[];
}

/**
 * A built-in component type: its names, and how to load the module that defines it. Modules
 * load on first lookup, so an agent loads only the components its configuration uses (and the
 * Node modules and packages they need): `flume run` of netcat -> memory -> logger never loads
 * TLS, HTTP, zlib or avsc. The names are written only here, as they are needed before the
 * module is loaded; the module's definition takes them from `builtIn`.
 */
interface BuiltIn extends BuiltInNames {
  load(): { definition: AnyDefinition };
  definition?: AnyDefinition;
}

// require() rather than import(): lookups are synchronous (validation, the embedded agent). Bun
// has it in ES modules, and the compiled binary bundles each module as a chunk loaded there.
function lazy(kind: ComponentKind, type: string, aliases: readonly string[], load: () => unknown): BuiltIn {
  return { kind, type, aliases, load: load as BuiltIn["load"] };
}

/** Every built-in component type, by the key its module's definition names it with (`...builtIn.seqSource`). */
const BUILT_IN_BY_KEY = {
  seqSource: lazy("source", "seq", ["org.apache.flume.source.SequenceGeneratorSource"], () => require("./sources/seq.ts")),
  netcatSource: lazy("source", "netcat", ["org.apache.flume.source.NetcatSource", "netcattcp"], () => require("./sources/netcat.ts")),
  embeddedSource: lazy("source", "embedded", ["org.apache.flume.agent.embedded.EmbeddedSource"], () => require("./sources/embedded.ts")),
  avroSource: lazy("source", "avro", ["org.apache.flume.source.AvroSource"], () => require("./sources/avro.ts")),
  avroSink: lazy("sink", "avro", ["org.apache.flume.sink.AvroSink"], () => require("./sinks/avro.ts")),
  thriftSource: lazy("source", "thrift", ["org.apache.flume.source.ThriftSource"], () => require("./sources/thrift.ts")),
  thriftSink: lazy("sink", "thrift", ["org.apache.flume.sink.ThriftSink"], () => require("./sinks/thrift.ts")),
  memoryChannel: lazy("channel", "memory", ["org.apache.flume.channel.MemoryChannel"], () => require("./channels/memory.ts")),
  fileChannel: lazy("channel", "file", ["org.apache.flume.channel.file.FileChannel"], () => require("./channels/file/index.ts")),
  spillableMemoryChannel: lazy("channel", "SPILLABLEMEMORY", ["org.apache.flume.channel.SpillableMemoryChannel"], () => require("./channels/spillable-memory/index.ts")),
  loggerSink: lazy("sink", "logger", ["org.apache.flume.sink.LoggerSink"], () => require("./sinks/logger.ts")),
  nullSink: lazy("sink", "null", ["org.apache.flume.sink.NullSink"], () => require("./sinks/null.ts")),
  jetstreamChannel: lazy("channel", "jetstream", ["nats", "org.apache.flume.channel.jetstream.JetStreamChannel"], () => require("./channels/jetstream/index.ts")),
  jetstreamSink: lazy("sink", "jetstream", ["nats", "org.apache.flume.sink.jetstream.JetStreamSink"], () => require("./sinks/jetstream.ts")),
  jetstreamSource: lazy("source", "jetstream", ["nats", "org.apache.flume.source.jetstream.JetStreamSource"], () => require("./sources/jetstream.ts")),
  kafkaSink: lazy("sink", "org.apache.flume.sink.kafka.KafkaSink", ["kafka"], () => require("./sinks/kafka.ts")),
  kafkaSource: lazy("source", "org.apache.flume.source.kafka.KafkaSource", ["kafka"], () => require("./sources/kafka.ts")),
  kafkaChannel: lazy("channel", "org.apache.flume.channel.kafka.KafkaChannel", ["kafka"], () => require("./channels/kafka/index.ts")),
  replicatingSelector: lazy("selector", "replicating", ["org.apache.flume.channel.ReplicatingChannelSelector"], () => require("./selectors/replicating.ts")),
  multiplexingSelector: lazy("selector", "multiplexing", ["org.apache.flume.channel.MultiplexingChannelSelector"], () => require("./selectors/multiplexing.ts")),
  loadBalancingSelector: lazy("selector", "load_balancing", ["org.apache.flume.channel.LoadBalancingChannelSelector"], () => require("./selectors/load-balancing.ts")),
  defaultSinkProcessor: lazy("sinkprocessor", "default", ["org.apache.flume.sink.DefaultSinkProcessor"], () => require("./sink-processors/default.ts")),
  failoverSinkProcessor: lazy("sinkprocessor", "failover", ["org.apache.flume.sink.FailoverSinkProcessor"], () => require("./sink-processors/failover.ts")),
  loadBalanceSinkProcessor: lazy("sinkprocessor", "load_balance", ["org.apache.flume.sink.LoadBalancingSinkProcessor"], () => require("./sink-processors/load-balance.ts")),
  syslogtcpSource: lazy("source", "syslogtcp", ["org.apache.flume.source.SyslogTcpSource"], () => require("./sources/syslog-tcp.ts")),
  syslogudpSource: lazy("source", "syslogudp", ["org.apache.flume.source.SyslogUDPSource"], () => require("./sources/syslog-udp.ts")),
  multiportSyslogtcpSource: lazy("source", "multiport_syslogtcp", ["org.apache.flume.source.MultiportSyslogTCPSource"], () => require("./sources/multiport-syslog-tcp.ts")),
  httpSource: lazy("source", "http", ["org.apache.flume.source.http.HTTPSource"], () => require("./sources/http.ts")),
  netcatudpSource: lazy("source", "netcatudp", ["org.apache.flume.source.NetcatUdpSource"], () => require("./sources/netcat-udp.ts")),
  stressSource: lazy("source", "stress", ["org.apache.flume.source.StressSource"], () => require("./sources/stress.ts")),
  httpSink: lazy("sink", "http", ["org.apache.flume.sink.http.HttpSink"], () => require("./sinks/http.ts")),
  fileRollSink: lazy("sink", "file_roll", ["org.apache.flume.sink.RollingFileSink"], () => require("./sinks/file-roll.ts")),
  hdfsSink: lazy("sink", "hdfs", ["org.apache.flume.sink.hdfs.HDFSEventSink"], () => require("./sinks/hdfs/index.ts")),
  textSerializer: lazy("serializer", "text", ["TEXT", "org.apache.flume.serialization.BodyTextEventSerializer$Builder"], () => require("./serializers/text.ts")),
  headerAndTextSerializer: lazy("serializer", "header_and_text", ["HEADER_AND_TEXT", "org.apache.flume.serialization.HeaderAndBodyTextEventSerializer$Builder"], () => require("./serializers/header-and-text.ts")),
  avroEventSerializer: lazy("serializer", "avro_event", ["AVRO_EVENT", "org.apache.flume.serialization.FlumeEventAvroEventSerializer$Builder"], () => require("./serializers/avro-event.ts")),
  jsonHttpHandler: lazy("httphandler", "JSON", ["org.apache.flume.source.http.JSONHandler"], () => require("./sources/http-handlers/json.ts")),
  blobHttpHandler: lazy("httphandler", "BLOB", ["org.apache.flume.source.http.BLOBHandler", "org.apache.flume.sink.solr.morphline.BlobHandler"], () => require("./sources/http-handlers/blob.ts")),
  lineDeserializer: lazy("deserializer", "LINE", ["org.apache.flume.serialization.LineDeserializer$Builder"], () => require("./deserializers/line.ts")),
  blobDeserializer: lazy("deserializer", "BLOB", ["org.apache.flume.sink.solr.morphline.BlobDeserializer$Builder"], () => require("./deserializers/blob.ts")),
  execSource: lazy("source", "exec", ["org.apache.flume.source.ExecSource"], () => require("./sources/exec.ts")),
  spooldirSource: lazy("source", "spooldir", ["org.apache.flume.source.SpoolDirectorySource"], () => require("./sources/spooldir.ts")),
  taildirSource: lazy("source", "TAILDIR", ["org.apache.flume.source.taildir.TaildirSource"], () => require("./sources/taildir.ts")),
  timestampInterceptor: lazy("interceptor", "timestamp", ["org.apache.flume.interceptor.TimestampInterceptor$Builder"], () => require("./interceptors/timestamp.ts")),
  hostInterceptor: lazy("interceptor", "host", ["org.apache.flume.interceptor.HostInterceptor$Builder"], () => require("./interceptors/host.ts")),
  staticInterceptor: lazy("interceptor", "static", ["org.apache.flume.interceptor.StaticInterceptor$Builder"], () => require("./interceptors/static.ts")),
  removeHeaderInterceptor: lazy("interceptor", "remove_header", ["org.apache.flume.interceptor.RemoveHeaderInterceptor$Builder"], () => require("./interceptors/remove-header.ts")),
  uuidInterceptor: lazy("interceptor", "uuid", ["org.apache.flume.sink.solr.morphline.UUIDInterceptor$Builder"], () => require("./interceptors/uuid.ts")),
  regexFilterInterceptor: lazy("interceptor", "regex_filter", ["org.apache.flume.interceptor.RegexFilteringInterceptor$Builder"], () => require("./interceptors/regex-filter.ts")),
  regexExtractorInterceptor: lazy("interceptor", "regex_extractor", ["org.apache.flume.interceptor.RegexExtractorInterceptor$Builder"], () => require("./interceptors/regex-extractor.ts")),
  searchReplaceInterceptor: lazy("interceptor", "search_replace", ["org.apache.flume.interceptor.SearchAndReplaceInterceptor$Builder"], () => require("./interceptors/search-replace.ts")),
};
const BUILT_IN: readonly BuiltIn[] = Object.values(BUILT_IN_BY_KEY);

/** Each built-in type's names, for its module: `defineComponent({ ...builtIn.seqSource, doc, props, create })`. */
export const builtIn = Object.fromEntries(
  Object.entries(BUILT_IN_BY_KEY).map(([key, b]): [string, BuiltInNames] => [key, { kind: b.kind, type: b.type, aliases: b.aliases }]),
) as { readonly [K in keyof typeof BUILT_IN_BY_KEY]: BuiltInNames };

/** Loads a module through a literal require() (see lazy); Deno's ES modules have none, so it gets one for the call. */
function loadBuiltIn(entry: BuiltIn): AnyDefinition {
  if (entry.definition) return entry.definition;
  const g = globalThis as { require?: unknown };
  let def: AnyDefinition;
  if (typeof g.require === "function") {
    def = entry.load().definition;
  } else {
    const { createRequire } = process.getBuiltinModule("node:module") as typeof import("node:module");
    g.require = createRequire(import.meta.url);
    try {
      def = entry.load().definition;
    } finally {
      delete g.require;
    }
  }
  if (def.schema.kind !== entry.kind || def.schema.type !== entry.type) {
    throw new Error(`registry: the module for ${entry.kind} ${entry.type} defines ${def.schema.kind} ${def.schema.type}`);
  }
  entry.definition = def;
  return def;
}

/** Types added at run time (plugins, tests), after the built-in ones. */
const REGISTERED: AnyDefinition[] = [];

type Slot = BuiltIn | { definition: AnyDefinition };
const byKind = new Map<ComponentKind, Map<string, Slot>>();

function index(kind: ComponentKind, names: readonly string[], slot: Slot): void {
  let m = byKind.get(kind);
  if (!m) byKind.set(kind, (m = new Map()));
  for (const name of names) {
    const key = name.toLowerCase();
    const existing = m.get(key);
    if (existing && existing !== slot) throw new Error(`two ${kind} components claim the type name "${name}"`);
    m.set(key, slot);
  }
}

for (const b of BUILT_IN) index(b.kind, [b.type, ...b.aliases], b);

/** Adds a component type (plugins, tests). */
export function registerComponent<T, O extends AnyOptions>(definition: ComponentDefinition<T, O>): void {
  const def = definition as unknown as AnyDefinition;
  index(def.schema.kind, [def.schema.type, ...(def.schema.aliases ?? [])], { definition: def });
  REGISTERED.push(def);
}

/** The definition for a type name: case-insensitive, by alias or Flume's class name. Loads its module on first use. */
export function lookupComponent(kind: ComponentKind, type: string): AnyDefinition | undefined {
  const slot = byKind.get(kind)?.get(type.trim().toLowerCase());
  if (!slot) return undefined;
  return "load" in slot ? loadBuiltIn(slot) : slot.definition;
}

/** Every component type, each module loaded (for `flume describe` and the conformance suites). */
export function allComponents(): AnyDefinition[] {
  return [...BUILT_IN.map(loadBuiltIn), ...REGISTERED];
}

/** The canonical type names of a kind, without loading anything (for "did you mean" suggestions). */
export function typeNames(kind: ComponentKind): string[] {
  return [...BUILT_IN.filter((b) => b.kind === kind).map((b) => b.type), ...REGISTERED.filter((d) => d.schema.kind === kind).map((d) => d.schema.type)];
}

/** The names of the built-in types and whether each module is loaded (the registry test checks the names). */
export function builtInNames(): { kind: ComponentKind; type: string; aliases: readonly string[]; loaded: boolean }[] {
  return BUILT_IN.map((b) => ({ kind: b.kind, type: b.type, aliases: b.aliases, loaded: b.definition !== undefined }));
}

/**
 * What a custom component module gets for `import ... from "flume-ts"`: the library's exports,
 * loaded on the first module a configuration names (config/custom-components.ts provides them).
 */
export async function moduleApi(): Promise<Record<string, unknown>> {
  return { ...(await import("../index.ts")) };
}
