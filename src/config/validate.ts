/**
 * Checks a parsed agent configuration against the component schemas and Flume's wiring rules,
 * and reports every problem at once (Flume itself drops misconfigured components silently).
 */

import type { AnyDefinition } from "../components/component.ts";
import {
  type AgentConfig,
  type ComponentEntry,
  componentLabel,
  interceptorEntries,
  isFrameworkKey,
  LIST_OF_KIND,
  listNames,
  type Located,
  ownProps,
  parseEveryAgent,
  parseFlumeConfig,
  record,
  type ParseOptions,
  type ParseResult,
  rawValues,
  selectorProps,
  sinkChannel,
  sinkGroupSinks,
  sinkProcessorProps,
  sourceChannels,
  type SubComponent,
  unlistedInterceptors,
} from "./flume-config.ts";
import { buildAgentModel, type Checked, DEFAULT_SINK_PROCESSOR_TYPE } from "./build-model.ts";
import { didYouMean, type EntryKind, type Problem, type ProblemCode, type Severity, sortProblems } from "./problems.ts";
import { hasVariables } from "./substitution.ts";
import { unsupportedType } from "./unsupported.ts";
import type { AgentModel, NamedPart, PartModel } from "./model.ts";
import { type AnyOptions, capacityOf, type ComponentKind, findProp, isUnderPrefix, keysWithRole, keyWithRole, type ValidationContext } from "./schema.ts";

/** What the validator needs from src/components/registry.ts (pass the module itself). */
export interface ComponentRegistry {
  lookupComponent(kind: ComponentKind, type: string): AnyDefinition | undefined;
  allComponents(): AnyDefinition[];
  /** Why a type name is not known, when the registry can say better than "unknown type" (custom components). */
  explainUnknown?(kind: ComponentKind, type: string): { message: string; hint: string } | undefined;
  /** What a custom component module gets for `import ... from "flume-ts"` (see custom-components.ts). */
  moduleApi?(): Promise<Record<string, unknown>>;
}

/** The selector Flume uses when none is configured (the sink processor's default is in build-model.ts). */
export const DEFAULT_SELECTOR_TYPE = "replicating";
export { DEFAULT_SINK_PROCESSOR_TYPE } from "./build-model.ts";

/** Flume's wiring keys per kind, suggested when a component key is a near miss ("channels" on a sink). */
const WIRING_KEYS: Record<EntryKind, readonly string[]> = {
  source: ["channels", "interceptors", "selector.type"],
  sink: ["channel"],
  sinkgroup: ["sinks", "processor.type"],
  channel: [],
};

/** What checking a configuration gives: every problem, and the model of what can run. */
export interface LoadResult extends ParseResult {
  /** The agent's typed model (absent when the file could not be read as an agent). */
  model?: AgentModel;
}

export function validateAgentConfig(config: AgentConfig, registry: ComponentRegistry): { problems: Problem[]; model: AgentModel } {
  const v = new Validator(config, registry);
  const problems = v.run();
  return { problems, model: v.model() };
}

/** Parses, substitutes and validates in one go: what `flume validate` and `flume run` do first. */
export function validateConfigText(text: string, file: string, opts: ParseOptions, registry: ComponentRegistry): LoadResult {
  return withModel(parseFlumeConfig(text, file, opts), registry);
}

/** Each agent of a file, validated as `flume run -n <agent>` validates it (a tier for `flume simulate`). */
export function validateEveryAgent(text: string, file: string, opts: Omit<ParseOptions, "agentName">, registry: ComponentRegistry): LoadResult[] {
  return parseEveryAgent(text, file, opts).map((parsed) => withModel(parsed, registry));
}

/** The same for a configuration already parsed (EmbeddedAgent's map). */
export function withModel(parsed: ParseResult, registry: ComponentRegistry): LoadResult {
  if (!parsed.config) return { ...parsed, problems: sortProblems(parsed.problems) };
  const { problems, model } = validateAgentConfig(parsed.config, registry);
  return { ...parsed, model, problems: sortProblems([...parsed.problems, ...problems]) };
}

class Validator {
  /** The typed model of what can run (build-model.ts). */
  model(): AgentModel {
    return buildAgentModel({ config: this.config, registry: this.registry, problems: this.problems, checked: this.checked, parts: this.parts, active: (kind) => this.active(kind) });
  }


  private readonly problems: Problem[] = [];
  private readonly checked = new Map<string, Checked>(); // by "kind name"
  /** Selectors, interceptors and sink processors, by "kind name prefix" of their owner. */
  private readonly parts = new Map<string, PartModel>();
  /** The parts components' properties name, by "kind name" of the component, then by property key. */
  private readonly named = new Map<string, Map<string, NamedPart>>();
  private readonly a: string;

  constructor(
    private readonly config: AgentConfig,
    private readonly registry: ComponentRegistry,
  ) {
    this.a = config.agent;
  }

  run(): Problem[] {
    this.checkAgent();
    const kinds: EntryKind[] = ["channel", "source", "sink", "sinkgroup"];
    for (const kind of kinds) this.checkListing(kind);
    for (const channel of this.active("channel")) this.checkComponent(channel);
    for (const source of this.active("source")) this.checkSource(source);
    for (const sink of this.active("sink")) this.checkSink(sink);
    this.checkSinkGroups();
    this.checkChannelUse();
    this.checkTopicLoops();
    return this.problems;
  }

  // ---- reporting ------------------------------------------------------------------------

  private add(severity: Severity, code: ProblemCode, line: number, component: string, key: string, message: string, hint?: string, ref?: Problem["ref"]): void {
    this.problems.push({ file: this.config.file, line, component, key, message, hint, severity, code, ref });
  }

  private addFor(entry: ComponentEntry, severity: Severity, code: ProblemCode, line: number, key: string, message: string, hint?: string): void {
    this.add(severity, code, line, componentLabel(entry.kind, entry.name), key, message, hint, { kind: entry.kind, name: entry.name });
  }

  private hasAnyError(entry: ComponentEntry): boolean {
    const label = componentLabel(entry.kind, entry.name);
    return this.problems.some((p) => p.severity === "error" && p.component === label);
  }

  private hasError(entry: ComponentEntry, key: string): boolean {
    const label = componentLabel(entry.kind, entry.name);
    return this.problems.some((p) => p.severity === "error" && p.component === label && p.key === key);
  }

  // ---- agent and lists ----------------------------------------------------------------------

  private mapOf(kind: EntryKind): Map<string, ComponentEntry> {
    return this.config[LIST_OF_KIND[kind]];
  }

  private listed(kind: EntryKind): string[] {
    return listNames(this.config.listed[LIST_OF_KIND[kind]]);
  }

  /** Components Flume would build: listed and configured. */
  private active(kind: EntryKind): ComponentEntry[] {
    const map = this.mapOf(kind);
    return [...new Set(this.listed(kind))].flatMap((n) => {
      const e = map.get(n);
      return e ? [e] : [];
    });
  }

  private checkAgent(): void {
    const { listed } = this.config;
    if (!listed.channels) {
      this.add("error", "no-channels", this.config.line, this.a, "channels", "the agent lists no channels, so Flume would not start it", `add ${this.a}.channels = c1 and configure ${this.a}.channels.c1.type = memory`);
    }
    if (!listed.sources && !listed.sinks) {
      this.add("error", "no-sources-or-sinks", this.config.line, this.a, "sources", "the agent lists neither sources nor sinks, so Flume would not start it", `add ${this.a}.sources = r1 and ${this.a}.sinks = k1`);
    }
  }

  private checkListing(kind: EntryKind): void {
    const listKey = LIST_OF_KIND[kind];
    const list = this.config.listed[listKey];
    const names = this.listed(kind);
    const map = this.mapOf(kind);
    const seen = new Set<string>();
    for (const name of names) {
      if (seen.has(name)) {
        this.add("warning", "duplicate-name", list!.line, this.a, listKey, `lists ${name} twice`, "remove the repetition");
        continue;
      }
      seen.add(name);
      if (!map.has(name)) {
        const similar = didYouMean(name, [...map.keys()].filter((k) => !names.includes(k)));
        this.add(
          "error",
          "listed-not-configured",
          list!.line,
          componentLabel(kind, name),
          "",
          `is listed in ${this.a}.${listKey} but not configured`,
          similar ? `did you mean ${similar}, which is configured?` : kind === "sinkgroup" ? `add ${this.a}.sinkgroups.${name}.sinks = ...` : `add ${this.a}.${listKey}.${name}.type = ...`,
          { kind, name },
        );
      }
    }
    for (const entry of map.values()) {
      if (seen.has(entry.name)) continue;
      // A listed name without configuration is the likeliest intent; then any listed name.
      const similar = didYouMean(entry.name, names.filter((n) => !map.has(n))) ?? didYouMean(entry.name, names);
      const addIt = `add it: ${this.a}.${listKey} = ${[...names, entry.name].join(" ")}`;
      this.addFor(
        entry,
        "warning",
        "configured-not-listed",
        entry.line,
        "",
        `is configured but not listed in ${this.a}.${listKey}, so it is ignored`,
        similar ? `did you mean ${similar}, which is listed? otherwise ${addIt}` : addIt,
      );
    }
  }

  // ---- types and properties ----------------------------------------------------------------

  /** Canonical type names of a kind, and with short aliases when `withAliases` (for suggestions). */
  private typeNames(kind: ComponentKind, withAliases = false): string[] {
    return this.registry
      .allComponents()
      .filter((d) => d.schema.kind === kind)
      .flatMap((d) => [d.schema.type, ...(withAliases ? (d.schema.aliases ?? []).filter((a) => !a.includes(".")) : [])]);
  }

  /** Resolves a type name, reporting a missing or unknown type. */
  private resolveType(kind: ComponentKind, type: Located | undefined, report: (code: ProblemCode, line: number, message: string, hint: string) => void, missingLine: number, missingHint: string): AnyDefinition | undefined {
    if (!type) {
      report("missing-type", missingLine, "has no type", missingHint);
      return undefined;
    }
    const def = this.registry.lookupComponent(kind, type.value);
    if (def) return def;
    const why = this.registry.explainUnknown?.(kind, type.value);
    if (why) {
      report("unknown-type", type.line, why.message, why.hint);
      return undefined;
    }
    const missing = unsupportedType(kind, type.value);
    if (missing) {
      report("unsupported-type", type.line, missing.message, missing.hint);
      return undefined;
    }
    const names = this.typeNames(kind);
    const candidates = this.typeNames(kind, true);
    // For a class name, also try its last part (org.example.Netcat -> Netcat).
    const guess = didYouMean(type.value, candidates) ?? didYouMean(type.value.split(/[.$]/).filter(Boolean).pop() ?? "", candidates);
    report(
      "unknown-type",
      type.line,
      `unknown ${kind} type "${type.value}"`,
      guess ? `did you mean "${guess}"?` : names.length ? `known ${kind} types: ${names.join(", ")}` : `Flume TS has no ${kind} types yet; \`flume describe\` lists what it has`,
    );
    return undefined;
  }

  /**
   * Parses props against a schema: bad values, missing required keys, unknown keys, the
   * component's own cross-checks, and empty values that let a default apply.
   */
  private checkProps(
    entry: ComponentEntry,
    def: AnyDefinition,
    props: Record<string, Located>,
    keyPrefix: string,
    fallbackLine: number,
    empty: Record<string, Located> = record(),
    beforeOwnChecks?: (options: AnyOptions) => void,
    wiringKeys: readonly string[] = [],
    context: ValidationContext = {},
  ): AnyOptions {
    const schema = def.schema;
    const { options, errors } = def.parse(rawValues(props));
    // A key not written (a record's missing field) is reported at its record's first line.
    const recordLine = (key: string) => (isUnderPrefix(schema, key) ? Object.entries(props).find(([k]) => k.startsWith(key.slice(0, key.lastIndexOf(".") + 1)))?.[1].line : undefined);
    // A property written under one of its aliases (brokerList) is reported at that line.
    const writtenLine = (key: string) => [key, ...(findProp(schema, key)?.aliases ?? [])].map((k) => props[k]).find((l) => l !== undefined)?.line;
    const lineOf = (key: string) => writtenLine(key) ?? recordLine(key) ?? fallbackLine;
    for (const e of errors) {
      // A value still holding ${...} was reported as an unresolved variable already.
      if (hasVariables(props[e.key]?.value ?? "")) continue;
      const spec = findProp(schema, e.key);
      const missing = props[e.key] === undefined;
      const hint = e.hint ?? (missing ? `add ${this.fullKey(entry, keyPrefix + e.key)} = ...` : spec ? describeSpec(spec) : undefined);
      this.addFor(entry, e.severity ?? "error", e.severity === "warning" ? "unknown-property" : "bad-value", lineOf(e.key), keyPrefix + e.key, e.message, hint);
    }
    for (const [key, loc] of Object.entries(props)) {
      const known = findProp(schema, key);
      if (known?.deprecated?.includes(key)) {
        this.addFor(entry, "warning", "deprecated-property", loc.line, keyPrefix + key, `is deprecated; Flume reads it as ${keyPrefix}${known.key}`, `write ${keyPrefix}${known.key} instead`);
      }
      if (known || isUnderPrefix(schema, key)) continue;
      const candidates = [...schema.props.flatMap((p) => [p.key, ...(p.aliases ?? [])]), ...(schema.prefixes ?? []).map((p) => p.prefix.replace(/\.$/, "")), ...wiringKeys];
      const guess = didYouMean(key, candidates);
      this.addFor(
        entry,
        "warning",
        "unknown-property",
        loc.line,
        keyPrefix + key,
        `is not a property of ${schema.kind} type ${schema.type}, so it is ignored`,
        guess ? `did you mean ${keyPrefix}${guess}?` : schema.props.length ? `${schema.type} reads: ${schema.props.map((p) => p.key).join(", ")}` : `${schema.type} takes no properties`,
      );
    }
    for (const [key, loc] of Object.entries(empty)) {
      const spec = findProp(schema, key);
      if (!spec || spec.default === undefined || spec.default === "" || (Array.isArray(spec.default) && spec.default.length === 0)) continue;
      this.addFor(entry, "warning", "bad-value", loc.line, keyPrefix + key, `is empty, so Flume ignores it and the default ${formatDefault(spec.default)} applies`, "remove the line or give a value");
    }
    this.checkNamedParts(entry, def, props, keyPrefix, fallbackLine, options);
    beforeOwnChecks?.(options);
    // The component's own checks need every required value (a refused one has its default).
    if (schema.props.every((p) => !p.required || options[p.key] !== undefined)) {
      for (const e of def.validate?.(options, context) ?? []) {
        const key = e.atOwner ? e.key : keyPrefix + e.key;
        if (this.hasError(entry, key)) continue;
        this.addFor(entry, e.severity ?? "error", e.code ?? "bad-value", e.atOwner ? (entry.props[e.key]?.line ?? entry.line) : lineOf(e.key), key, e.message, e.hint?.replaceAll("{owner}", this.fullKey(entry, "")));
      }
    }
    return options;
  }

  /** The parts a component's properties name (`names` in its schema): their types, and their settings against their schemas. */
  private checkNamedParts(entry: ComponentEntry, def: AnyDefinition, props: Record<string, Located>, keyPrefix: string, fallbackLine: number, options: AnyOptions): void {
    for (const spec of def.schema.props) {
      const type = options[spec.key];
      if (!spec.names || typeof type !== "string" || this.hasError(entry, keyPrefix + spec.key)) continue;
      const at = [spec.key, ...(spec.aliases ?? [])].map((k) => props[k]).find((l) => l !== undefined);
      const line = at?.line ?? fallbackLine;
      const report = (code: ProblemCode, l: number, message: string, hint: string) => this.addFor(entry, "error", code, l, keyPrefix + spec.key, message, hint);
      const part = this.resolveType(spec.names.kind, { value: type, file: entry.file, line }, report, line, "");
      const settings = spec.names.settings === undefined ? undefined : def.schema.prefixes?.find((g) => g.name === spec.names?.settings);
      if (!part || !settings) continue;
      const own = record<Located>();
      for (const [k, v] of Object.entries(props)) if (k.startsWith(settings.prefix)) own[k.slice(settings.prefix.length)] = v;
      const partOptions = this.checkProps(entry, part, own, keyPrefix + settings.prefix, line);
      const owner = `${entry.kind} ${entry.name}`;
      if (!this.named.has(owner)) this.named.set(owner, new Map());
      this.named.get(owner)?.set(keyPrefix + spec.key, { definition: part, options: partOptions });
    }
  }

  private fullKey(entry: ComponentEntry, key: string): string {
    return `${this.a}.${LIST_OF_KIND[entry.kind]}.${entry.name}.${key}`;
  }

  private checkComponent(entry: ComponentEntry): Checked | undefined {
    const def = this.resolveType(
      entry.kind as ComponentKind,
      entry.type,
      (code, line, message, hint) => this.addFor(entry, "error", code, line, "type", message, hint),
      entry.line,
      `add ${this.fullKey(entry, "type")} = ...; \`flume describe\` lists the types`,
    );
    if (!def) return undefined;
    const own = ownProps(entry);
    const ownEmpty = record<Located>();
    for (const [k, v] of Object.entries(entry.emptyProps)) if (!isFrameworkKey(entry.kind, k)) ownEmpty[k] = v;
    // Generic cross-checks run before the component's own, which then stay quiet on the same key.
    const generic = entry.kind === "channel" ? (options: AnyOptions) => this.checkCapacity({ entry, definition: def, schema: def.schema, options }) : undefined;
    const options = this.checkProps(entry, def, own, "", entry.line, ownEmpty, generic, WIRING_KEYS[entry.kind]);
    const checked = { entry, definition: def, schema: def.schema, options, named: this.named.get(`${entry.kind} ${entry.name}`) };
    this.checked.set(`${entry.kind} ${entry.name}`, checked);
    return checked;
  }

  private checkSub(entry: ComponentEntry, kind: PartModel["kind"], sub: SubComponent, defaultType: string | undefined, missingLine: number, context: ValidationContext = {}): AnyDefinition | undefined {
    let def: AnyDefinition | undefined;
    if (!sub.type && defaultType !== undefined) {
      def = this.registry.lookupComponent(kind, defaultType);
      if (!def) return undefined; // the default is not registered (yet): nothing to check against
    } else {
      def = this.resolveType(
        kind,
        sub.type,
        (code, line, message, hint) => this.addFor(entry, "error", code, line, `${sub.prefix}type`, message, hint),
        missingLine,
        `add ${this.fullKey(entry, `${sub.prefix}type`)} = ...`,
      );
    }
    if (def) {
      const options = this.checkProps(entry, def, sub.props, sub.prefix, sub.line, record(), undefined, [], context);
      this.parts.set(`${entry.kind} ${entry.name} ${sub.prefix}`, { kind, name: sub.name, type: def.schema.type, definition: def, options });
    }
    return def;
  }

  // ---- sources, sinks, groups ----------------------------------------------------------------

  private channelRef(entry: ComponentEntry, name: string, line: number, key: string): boolean {
    const configured = this.config.channels.has(name);
    const listed = this.listed("channel").includes(name);
    if (configured && listed) return true;
    if (listed) return false; // reported at the list already
    if (configured) {
      this.addFor(entry, "error", "undefined-channel", line, key, `channel ${name} is configured but not listed in ${this.a}.channels`, `add it: ${this.a}.channels = ${[...this.listed("channel"), name].join(" ")}`);
      return false;
    }
    const guess = didYouMean(name, this.listed("channel"));
    this.addFor(entry, "error", "undefined-channel", line, key, `channel ${name} is not defined`, guess ? `did you mean ${guess}?` : `define it: ${this.a}.channels = ${[...this.listed("channel"), name].join(" ")} and ${this.a}.channels.${name}.type = memory`);
    return false;
  }

  private checkSource(source: ComponentEntry): void {
    const checked = this.checkComponent(source);
    const channels = sourceChannels(source);
    if (channels.length === 0) {
      const line = source.emptyProps.channels?.line ?? source.line;
      this.addFor(source, "error", "missing-channels", line, "channels", "the source has no channels, so Flume would drop it", `add ${this.fullKey(source, "channels")} = ${this.listed("channel")[0] ?? "c1"}`);
    }
    const good: string[] = [];
    for (const ch of channels) if (this.channelRef(source, ch, source.props.channels.line, "channels")) good.push(ch);

    // Selector: its type and keys, and channels it names must be among the source's channels.
    const selector = selectorProps(source);
    this.checkSub(source, "selector", selector, DEFAULT_SELECTOR_TYPE, selector.line, { channels });

    // Interceptors, in their listed order.
    for (const i of interceptorEntries(source)) {
      this.checkSub(source, "interceptor", i, undefined, Object.keys(i.props).length ? i.line : source.props.interceptors.line);
    }
    for (const name of unlistedInterceptors(source)) {
      const line = Math.min(...Object.entries(source.props).filter(([k]) => k.startsWith(`interceptors.${name}.`)).map(([, v]) => v.line));
      this.addFor(source, "warning", "configured-not-listed", line, `interceptors.${name}`, `interceptor ${name} is configured but not listed in interceptors, so it is ignored`, `add it: ${this.fullKey(source, "interceptors")} = ${[...listNames(source.props.interceptors), name].join(" ")}`);
    }

    if (checked) for (const ch of good) this.checkBatch(checked, ch, "writes to");
  }

  private checkSink(sink: ComponentEntry): void {
    const checked = this.checkComponent(sink);
    const ch = sinkChannel(sink);
    if (ch === undefined) {
      const line = sink.emptyProps.channel?.line ?? sink.line;
      this.addFor(sink, "error", "missing-channel", line, "channel", "the sink has no channel, so Flume would drop it", `add ${this.fullKey(sink, "channel")} = ${this.listed("channel")[0] ?? "c1"}`);
      return;
    }
    if (listNames(ch).length > 1) {
      this.addFor(sink, "error", "undefined-channel", sink.props.channel.line, "channel", `a sink reads from exactly one channel, got "${ch}"`, "use one sink per channel");
      return;
    }
    if (this.channelRef(sink, ch, sink.props.channel.line, "channel") && checked) this.checkBatch(checked, ch, "reads from");
  }

  /** A batch larger than the channel's transactionCapacity can never be committed. */
  private checkBatch(component: Checked, channelName: string, verb: string): void {
    const channel = this.checked.get(`channel ${channelName}`);
    const tcKey = channel && keyWithRole(channel.schema, "transactionCapacity");
    if (!channel || !tcKey) return;
    const tc = channel.options[tcKey] as number;
    for (const key of component.schema.props.filter((p) => p.roles?.includes("batchSize")).map((p) => p.key)) {
      const batch = component.options[key] as number;
      if (!(batch > tc)) continue;
      const loc = component.entry.props[key] ?? Object.entries(component.entry.props).find(([k]) => findProp(component.schema, k)?.key === key)?.[1];
      const tcLoc = channel.entry.props[tcKey];
      this.addFor(
        component.entry,
        "error",
        "batch-exceeds-transaction",
        loc?.line ?? component.entry.line,
        key,
        `${key} ${batch}${loc ? "" : " (the default)"} is larger than the transactionCapacity ${tc}${tcLoc ? ` (line ${tcLoc.line})` : " (the default)"} of channel ${channelName} it ${verb}, so no batch could ever commit`,
        `lower ${key} to at most ${tc} or raise ${this.a}.channels.${channelName}.transactionCapacity`,
      );
    }
  }

  private checkSinkGroups(): void {
    const owner = new Map<string, string>();
    for (const group of this.active("sinkgroup")) {
      const sinks = sinkGroupSinks(group);
      if (sinks.length === 0) {
        this.addFor(group, "error", "missing-sinks", group.emptyProps.sinks?.line ?? group.line, "sinks", "the sink group has no sinks", `add ${this.fullKey(group, "sinks")} = k1 k2`);
      }
      for (const s of sinks) {
        const line = group.props.sinks.line;
        const configured = this.config.sinks.has(s);
        const listed = this.listed("sink").includes(s);
        if (!configured && !listed) {
          const guess = didYouMean(s, this.listed("sink"));
          this.addFor(group, "error", "undefined-sink", line, "sinks", `sink ${s} is not defined`, guess ? `did you mean ${guess}?` : `define it: ${this.a}.sinks = ${[...this.listed("sink"), s].join(" ")} and ${this.a}.sinks.${s}.type = ...`);
        } else if (!listed) {
          this.addFor(group, "error", "undefined-sink", line, "sinks", `sink ${s} is configured but not listed in ${this.a}.sinks`, `add it: ${this.a}.sinks = ${[...this.listed("sink"), s].join(" ")}`);
        }
        const first = owner.get(s);
        if (first !== undefined && first !== group.name) {
          this.addFor(group, "error", "sink-in-two-groups", line, "sinks", `sink ${s} is already in sink group ${first}; a sink can belong to one group only`, `remove ${s} from one of the groups`);
        } else owner.set(s, group.name);
      }
      const processor = sinkProcessorProps(group);
      // The processor's own checks against the group's sinks are in its file (failover's priorities).
      this.checkSub(group, "sinkprocessor", processor, DEFAULT_SINK_PROCESSOR_TYPE, processor.line, { sinks });
    }
  }

  // ---- channels ------------------------------------------------------------------------------

  private checkChannelUse(): void {
    const writers = new Set(this.active("source").flatMap(sourceChannels));
    const readers = new Set(this.active("sink").flatMap((s) => listNames(sinkChannel(s))));
    for (const channel of this.active("channel")) {
      if (!writers.has(channel.name)) {
        this.addFor(channel, "warning", "channel-unused", channel.line, "", "no source writes to this channel", `add it to a source: ${this.a}.sources.<source>.channels = ${channel.name}`);
      }
      if (!readers.has(channel.name)) {
        this.addFor(channel, "warning", "channel-unused", channel.line, "", "no sink reads from this channel, so it fills up and then blocks its sources", `add a sink with ${this.a}.sinks.<sink>.channel = ${channel.name}`);
      }
    }
  }

  /**
   * A source that puts each event's topic in a header, feeding (through a channel) a sink that
   * sends each event to the topic its header names, on the same brokers: every event goes back
   * to the topic it came from and is read again (Flume's User Guide warns of it for its Kafka
   * source and sink, whose defaults do it). Not said when the source has interceptors, which
   * may change or remove the header.
   */
  private checkTopicLoops(): void {
    for (const source of this.active("source")) {
      const from = this.checked.get(`source ${source.name}`);
      const origin = from?.definition.brokerLink?.topicHeader?.(from.options);
      if (!from || !origin || listNames(source.props.interceptors).length > 0 || this.hasAnyError(source)) continue;
      const channels = new Set(sourceChannels(source));
      for (const sink of this.active("sink")) {
        const ch = sinkChannel(sink);
        const to = this.checked.get(`sink ${sink.name}`);
        if (ch === undefined || !channels.has(ch) || !to || this.hasAnyError(sink) || to.definition.brokerLink?.protocol !== from.definition.brokerLink?.protocol) continue;
        const dest = to.definition.brokerLink?.topicHeader?.(to.options);
        const shared = dest?.brokers.filter((b) => origin.brokers.includes(b)) ?? [];
        if (!dest || dest.header !== origin.header || shared.length === 0) continue;
        this.addFor(
          sink,
          "warning",
          "topic-loop",
          (sink.props[dest.name] ?? sink.props[dest.off])?.line ?? sink.line,
          dest.name,
          `sends each event to the topic its header "${dest.header}" names, and source ${source.name} sets that header to the topic it read the event from (through channel ${ch}, on the same brokers ${shared.join(",")}): every event goes back to its topic and is read again, endlessly`,
          `set ${this.fullKey(sink, dest.off)} = false, or give ${this.fullKey(sink, dest.name)} or ${this.fullKey(source, origin.name)} another header, or set ${this.fullKey(source, origin.off)} = false`,
        );
      }
    }
  }

  private checkCapacity(channel: Checked): void {
    const tcKey = keyWithRole(channel.schema, "transactionCapacity");
    // A channel with several capacity properties holds their sum (SPILLABLEMEMORY).
    const capKeys = keysWithRole(channel.schema, "capacity");
    const cap = capacityOf(channel.schema, channel.options);
    if (!tcKey || cap === undefined) return;
    const tc = channel.options[tcKey] as number;
    if (tc <= cap || this.hasError(channel.entry, tcKey)) return;
    const tcLoc = channel.entry.props[tcKey];
    const capLoc = capKeys.map((k) => channel.entry.props[k]).find((l) => l !== undefined);
    const capText =
      capKeys.length === 1
        ? `${capKeys[0]} ${cap}${capLoc ? "" : " (the default)"}`
        : `the capacity ${cap} (${capKeys.map((k) => `${k} ${channel.options[k] as number}`).join(" + ")})`;
    this.addFor(
      channel.entry,
      "error",
      "transaction-exceeds-capacity",
      (tcLoc ?? capLoc)?.line ?? channel.entry.line,
      tcKey,
      `${tcKey} ${tc}${tcLoc ? "" : " (the default)"} is larger than ${capText}`,
      `lower ${tcKey} to at most ${cap} or raise ${capKeys.join(" or ")}`,
    );
  }
}

function formatDefault(v: unknown): string {
  return Array.isArray(v) ? `"${v.join(" ")}"` : JSON.stringify(v);
}

const TYPE_WORDS: Record<string, string> = {
  int: "a whole number",
  number: "a number",
  boolean: "true or false",
  list: "a space-separated list",
  string: "a string",
  path: "a path",
};

/** What a property accepts, as a fix hint: "a whole number, at least 1; default 100". */
export function describeSpec(spec: { type: string; values?: readonly string[]; min?: number; max?: number; default?: unknown }): string {
  const parts = [spec.type === "enum" && spec.values ? `one of ${spec.values.join(", ")}` : (TYPE_WORDS[spec.type] ?? spec.type)];
  if (spec.min !== undefined) parts.push(`at least ${spec.min}`);
  if (spec.max !== undefined) parts.push(`at most ${spec.max}`);
  const accepts = parts.join(", ");
  return spec.default !== undefined ? `${accepts}; default ${formatDefault(spec.default)}` : accepts;
}
