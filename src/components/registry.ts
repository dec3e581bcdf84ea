import type { AnyOptions, ComponentKind } from "../config/schema.ts";
import type { AnyDefinition, ComponentDefinition } from "./component.ts";
import { definition as memoryChannel } from "./channels/memory.ts";
import { definition as fileChannel } from "./channels/file/index.ts";
import { definition as spillableMemoryChannel } from "./channels/spillable-memory/index.ts";
import { definition as avroSink } from "./sinks/avro.ts";
import { definition as avroSource } from "./sources/avro.ts";
import { definition as thriftSink } from "./sinks/thrift.ts";
import { definition as thriftSource } from "./sources/thrift.ts";
import { definition as loggerSink } from "./sinks/logger.ts";
import { definition as nullSink } from "./sinks/null.ts";
import { definition as embeddedSource } from "./sources/embedded.ts";
import { definition as netcatSource } from "./sources/netcat.ts";
import { definition as seqSource } from "./sources/seq.ts";
import { definition as loadBalancingSelector } from "./selectors/load-balancing.ts";
import { definition as multiplexingSelector } from "./selectors/multiplexing.ts";
import { definition as replicatingSelector } from "./selectors/replicating.ts";
import { definition as defaultSinkProcessor } from "./sink-processors/default.ts";
import { definition as failoverSinkProcessor } from "./sink-processors/failover.ts";
import { definition as loadBalanceSinkProcessor } from "./sink-processors/load-balance.ts";

import { definition as syslogTcpSource } from "./sources/syslog-tcp.ts";
import { definition as syslogUdpSource } from "./sources/syslog-udp.ts";
import { definition as multiportSyslogTcpSource } from "./sources/multiport-syslog-tcp.ts";
import { definition as httpSource } from "./sources/http.ts";
import { definition as netcatUdpSource } from "./sources/netcat-udp.ts";
import { definition as stressSource } from "./sources/stress.ts";
import { definition as httpSink } from "./sinks/http.ts";
import { definition as fileRollSink } from "./sinks/file-roll.ts";
import { definition as textSerializer } from "./serializers/text.ts";
import { definition as headerAndTextSerializer } from "./serializers/header-and-text.ts";
import { definition as avroEventSerializer } from "./serializers/avro-event.ts";
import { definition as execSource } from "./sources/exec.ts";
import { definition as spoolDirSource } from "./sources/spooldir.ts";
import { definition as taildirSource } from "./sources/taildir.ts";
import { definition as timestampInterceptor } from "./interceptors/timestamp.ts";
import { definition as hostInterceptor } from "./interceptors/host.ts";
import { definition as staticInterceptor } from "./interceptors/static.ts";
import { definition as removeHeaderInterceptor } from "./interceptors/remove-header.ts";
import { definition as uuidInterceptor } from "./interceptors/uuid.ts";
import { definition as regexFilterInterceptor } from "./interceptors/regex-filter.ts";
import { definition as regexExtractorInterceptor } from "./interceptors/regex-extractor.ts";
import { definition as searchReplaceInterceptor } from "./interceptors/search-replace.ts";
/**
 * Every built-in component. Component modules must not import heavy packages (avsc) at load
 * time: `flume validate` and `flume --help` load this list.
 */
const DEFINITIONS: AnyDefinition[] = [
  seqSource,
  netcatSource,
  embeddedSource,
  avroSource,
  avroSink,
  thriftSource,
  thriftSink,
  memoryChannel,
  fileChannel,
  spillableMemoryChannel,
  loggerSink,
  nullSink,
  replicatingSelector,
  multiplexingSelector,
  loadBalancingSelector,
  defaultSinkProcessor,
  failoverSinkProcessor,
  loadBalanceSinkProcessor,
  syslogTcpSource,
  syslogUdpSource,
  multiportSyslogTcpSource,
  httpSource,
  netcatUdpSource,
  stressSource,
  httpSink,
  fileRollSink,
  textSerializer,
  headerAndTextSerializer,
  avroEventSerializer,
  execSource,
  spoolDirSource,
  taildirSource,
  timestampInterceptor,
  hostInterceptor,
  staticInterceptor,
  removeHeaderInterceptor,
  uuidInterceptor,
  regexFilterInterceptor,
  regexExtractorInterceptor,
  searchReplaceInterceptor,
] as AnyDefinition[];

const byKind = new Map<ComponentKind, Map<string, AnyDefinition>>();

function index(def: AnyDefinition): void {
  let names = byKind.get(def.schema.kind);
  if (!names) byKind.set(def.schema.kind, (names = new Map()));
  for (const name of [def.schema.type, ...(def.schema.aliases ?? [])]) {
    const key = name.toLowerCase();
    const existing = names.get(key);
    if (existing && existing !== def) throw new Error(`two ${def.schema.kind} components claim the type name "${name}"`);
    names.set(key, def);
  }
}

for (const def of DEFINITIONS) index(def);

/** Adds a component type (plugins, tests). */
export function registerComponent<T, O extends AnyOptions>(definition: ComponentDefinition<T, O>): void {
  const def = definition as unknown as AnyDefinition;
  DEFINITIONS.push(def);
  index(def);
}

/** The definition for a type name: case-insensitive, by alias or Flume's class name. */
export function lookupComponent(kind: ComponentKind, type: string): AnyDefinition | undefined {
  return byKind.get(kind)?.get(type.trim().toLowerCase());
}

export function allComponents(): AnyDefinition[] {
  return [...DEFINITIONS];
}

/** Every name a kind accepts, for "did you mean" suggestions. */
export function typeNames(kind: ComponentKind): string[] {
  return DEFINITIONS.filter((d) => d.schema.kind === kind).map((d) => d.schema.type);
}
