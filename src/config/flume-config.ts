/**
 * Flume's configuration grammar on top of a properties file:
 *
 *   <agent>.sources|channels|sinks|sinkgroups|configfilters = names
 *   <agent>.<sources|channels|sinks|sinkgroups|configfilters>.<name>.<key> = value
 *
 * parseFlumeConfig picks one agent, substitutes variables and config filters, and returns
 * its components with the file and line of every value; parseEveryAgent does the same for each
 * agent of a file (a tier for `flume simulate`). It only checks the grammar; what the values
 * mean is checked by validateAgentConfig (validate.ts).
 */

import { createConfigFilter } from "./config-filters.ts";
import { didYouMean, type EntryKind, type Problem } from "./problems.ts";
import { type ParsedProperties, parseProperties, type PropertyEntry } from "./properties.ts";
import { type FilterLookup, hasVariables, javaSystemProperties, substitute, type SubstitutionSources } from "./substitution.ts";

export type { EntryKind, Problem } from "./problems.ts";

/** A value with where it was written. */
export interface Located {
  value: string;
  file: string;
  line: number;
}

export interface ComponentEntry {
  name: string;
  kind: EntryKind;
  type?: Located;
  /** Every key after `<agent>.<kinds>.<name>.` except `type`, values trimmed and substituted. */
  props: Record<string, Located>;
  /** Keys written with an empty value; Flume ignores them, so the default applies. */
  emptyProps: Record<string, Located>;
  file: string;
  /** First line mentioning the component. */
  line: number;
}

/** A part configured inside a component: a selector, an interceptor, a sink processor. */
export interface SubComponent {
  name: string;
  type?: Located;
  /** Keys relative to the part (e.g. "header", "mapping.CA"), without `type`. */
  props: Record<string, Located>;
  /** The key prefix inside the owning component ("selector.", "interceptors.i1.", "processor."). */
  prefix: string;
  /** First line of the part, or of the owning component when the part has no keys. */
  line: number;
}

export interface ConfigFilterEntry {
  name: string;
  type?: Located;
  props: Record<string, Located>;
  line: number;
}

export interface AgentConfig {
  agent: string;
  file: string;
  /** First line of the agent's configuration. */
  line: number;
  sources: Map<string, ComponentEntry>;
  channels: Map<string, ComponentEntry>;
  sinks: Map<string, ComponentEntry>;
  sinkgroups: Map<string, ComponentEntry>;
  /** The `<agent>.sources = ...` style lists as written (undefined when absent or empty). */
  listed: { sources?: Located; channels?: Located; sinks?: Located; sinkgroups?: Located };
  configFilters: { listed?: Located; filters: Map<string, ConfigFilterEntry> };
}

export interface ParseOptions {
  /** `-n`: the agent to configure; optional when the file configures exactly one. */
  agentName?: string;
  /** `-D` options, for `${sys:X}`; Java-like defaults (user.home, ...) are added underneath. */
  sysProps?: Record<string, string>;
  /** Environment for `${env:X}` and the env config filter; defaults to process.env. */
  env?: Record<string, string | undefined>;
}

export interface ParseResult {
  /** Every agent the file configures, in order of first appearance. */
  agents: string[];
  /** The selected agent; undefined when none could be selected (see problems). */
  config?: AgentConfig;
  problems: Problem[];
}

const LIST_KEYS = { sources: "source", channels: "channel", sinks: "sink", sinkgroups: "sinkgroup" } as const;
type ListKey = keyof typeof LIST_KEYS;
const GRAMMAR_WORDS = ["sources", "channels", "sinks", "sinkgroups", "configfilters"] as const;
type GrammarWord = (typeof GRAMMAR_WORDS)[number];

/** `sources` -> `source` etc. */
export const KIND_OF_LIST: Readonly<Record<ListKey, EntryKind>> = LIST_KEYS;
export const LIST_OF_KIND: Readonly<Record<EntryKind, ListKey>> = { source: "sources", channel: "channels", sink: "sinks", sinkgroup: "sinkgroups" };

/** How problems name a component: "source r1". */
export function componentLabel(kind: EntryKind | "configfilter", name: string): string {
  return `${kind} ${name}`;
}

interface AgentKey {
  word: GrammarWord;
  /** Component name, or undefined for the list key itself. */
  name?: string;
  /** Key inside the component. */
  sub?: string;
}

/** Classifies the part of a key after `<agent>.`; undefined when Flume's grammar rejects it. */
function classify(rest: string): AgentKey | undefined {
  for (const word of GRAMMAR_WORDS) {
    if (rest === word) return { word };
    if (rest.startsWith(word + ".")) {
      const tail = rest.slice(word.length + 1);
      const dot = tail.indexOf(".");
      if (dot <= 0 || dot === tail.length - 1) return undefined;
      return { word, name: tail.slice(0, dot), sub: tail.slice(dot + 1) };
    }
  }
  return undefined;
}

function agentPrefix(key: string): string | undefined {
  const dot = key.indexOf(".");
  return dot > 0 ? key.slice(0, dot) : undefined;
}

export function parseFlumeConfig(text: string, file: string, opts: ParseOptions = {}): ParseResult {
  return configFromProperties(parseProperties(text, file), file, opts);
}

/**
 * Every agent the file configures (each with a channel list; other prefixes are the typos the
 * single-agent parse warns about), parsed as parseFlumeConfig parses the one picked with -n.
 * A file with no such agent gives the single-agent parse, with its problem.
 */
export function parseEveryAgent(text: string, file: string, opts: Omit<ParseOptions, "agentName"> = {}): ParseResult[] {
  const parsed = parseProperties(text, file);
  const first = configFromProperties(parsed, file, opts);
  const runnable = first.agents.filter((a) => parsed.entries.has(`${a}.channels`));
  if (runnable.length === 0) return [first];
  return runnable.map((agentName) => configFromProperties(parsed, file, { ...opts, agentName }));
}

/**
 * The same from key/values already in memory (an embedding program's configuration).
 * `source` names them in problems; lines are the keys' 1-based positions in the map.
 */
export function parseFlumeConfigMap(properties: Record<string, string> | Map<string, string>, source: string, opts: ParseOptions = {}): ParseResult {
  const entries = new Map<string, PropertyEntry>();
  let line = 0;
  for (const [key, value] of properties instanceof Map ? properties : Object.entries(properties)) {
    entries.set(key, { key, value, file: source, line: ++line });
  }
  return configFromProperties({ entries, duplicates: [], errors: [] }, source, opts);
}

function configFromProperties(parsed: ParsedProperties, file: string, opts: ParseOptions): ParseResult {
  const problems: Problem[] = parsed.errors.map((e) => ({
    file,
    line: e.line,
    component: "",
    key: "",
    message: e.message,
    hint: "write \\u followed by four hex digits, or \\\\ for a backslash",
    severity: "error",
    code: "syntax",
  }));

  // An agent is a key prefix that has at least one key of Flume's grammar.
  const agents: string[] = [];
  for (const key of parsed.entries.keys()) {
    const prefix = agentPrefix(key);
    if (prefix && !agents.includes(prefix) && classify(key.slice(prefix.length + 1))) agents.push(prefix);
  }

  let agent: string;
  if (opts.agentName !== undefined) {
    if (!agents.includes(opts.agentName)) {
      const suggestion = didYouMean(opts.agentName, agents);
      problems.push({
        file,
        line: 0,
        component: opts.agentName,
        key: "",
        message: agents.length ? `no agent named ${opts.agentName} in this file; it configures ${agents.join(", ")}` : `no agent named ${opts.agentName}: the file configures no agent`,
        hint: suggestion ? `did you mean -n ${suggestion}?` : agents.length ? `pick one with -n ${agents[0]}` : "keys look like <agent>.sources = r1",
        severity: "error",
        code: "unknown-agent",
      });
      return { agents, problems };
    }
    agent = opts.agentName;
  } else if (agents.length === 1) {
    agent = agents[0];
  } else {
    problems.push(
      agents.length === 0
        ? { file, line: 0, component: "", key: "", message: "the file configures no agent", hint: "keys look like a1.sources = r1, a1.channels.c1.type = memory", severity: "error", code: "no-agent" }
        : { file, line: 0, component: "", key: "", message: `the file configures several agents (${agents.join(", ")})`, hint: `pick one with -n, e.g. -n ${agents[0]}`, severity: "error", code: "ambiguous-agent" },
    );
    return { agents, problems };
  }

  const builder = new AgentBuilder(agent, file, parsed.entries, opts, problems);
  const config = builder.build();

  for (const { entry, overridden } of parsed.duplicates) {
    if (!belongsTo(entry.key, agent, agents)) continue;
    problems.push({
      file,
      line: entry.line,
      component: builder.labelOf(entry.key),
      // Relative to the component, like every other problem's key.
      key: /^[^.]+\.(?:sources|channels|sinks|sinkgroups|configfilters)\.[^.]+\.(.+)$/.exec(entry.key)?.[1] ?? entry.key,
      message: `is set twice; this value overrides the one on line ${overridden.line}`,
      hint: "remove one of the two lines",
      severity: "warning",
      code: "duplicate-key",
    });
  }
  for (const entry of parsed.entries.values()) {
    if (agentPrefix(entry.key) !== agent && belongsTo(entry.key, agent, agents) && !builder.referenced.has(entry.key)) {
      problems.push({
        file,
        line: entry.line,
        component: "",
        key: entry.key,
        message: "belongs to no agent and no ${...} refers to it, so it is ignored",
        hint: `agent keys start with the agent name, e.g. ${agent}.${entry.key}`,
        severity: "warning",
        code: "not-in-agent",
      });
    }
  }
  // Another "agent" without a channel list cannot run: most likely a typo of this agent's name.
  for (const other of agents) {
    if (other === agent || parsed.entries.has(`${other}.channels`)) continue;
    const first = [...parsed.entries.values()].filter((e) => agentPrefix(e.key) === other).reduce((a, b) => (b.line < a.line ? b : a));
    problems.push({
      file,
      line: first.line,
      component: other,
      key: first.key,
      message: `keys under ${other}. form an agent without channels, so no agent runs them`,
      hint: didYouMean(other, [agent]) ? `did you mean ${agent}.${first.key.slice(other.length + 1)}?` : `they are ignored while running agent ${agent}`,
      severity: "warning",
      code: "not-in-agent",
    });
  }
  return { agents, config, problems };
}

/** Keys of this agent, and keys of no agent at all (reported once, with this agent). */
function belongsTo(key: string, agent: string, agents: string[]): boolean {
  const prefix = agentPrefix(key);
  return prefix === agent || prefix === undefined || !agents.includes(prefix);
}

class AgentBuilder {
  readonly referenced = new Set<string>();
  private readonly env: Record<string, string | undefined>;
  private readonly sys: Record<string, string | undefined>;
  private readonly envFallback: boolean;
  private filters = new Map<string, FilterLookup>();
  private filterNames = new Set<string>();

  constructor(
    private readonly agent: string,
    private readonly file: string,
    private readonly entries: Map<string, PropertyEntry>,
    opts: ParseOptions,
    private readonly problems: Problem[],
  ) {
    this.env = opts.env ?? process.env;
    this.sys = { ...javaSystemProperties(), ...opts.sysProps };
    this.envFallback = this.sys.propertiesImplementation === "org.apache.flume.node.EnvVarResolverProperties";
  }

  labelOf(fullKey: string): string {
    const prefix = this.agent + ".";
    if (!fullKey.startsWith(prefix)) return "";
    const k = classify(fullKey.slice(prefix.length));
    if (!k || k.name === undefined) return this.agent;
    return componentLabel(k.word === "configfilters" ? "configfilter" : KIND_OF_LIST[k.word as ListKey], k.name);
  }

  build(): AgentConfig {
    const prefix = this.agent + ".";
    const config: AgentConfig = {
      agent: this.agent,
      file: this.file,
      line: Infinity,
      sources: new Map(),
      channels: new Map(),
      sinks: new Map(),
      sinkgroups: new Map(),
      listed: {},
      configFilters: { filters: new Map() },
    };
    const own: { entry: PropertyEntry; key: AgentKey }[] = [];
    for (const entry of this.entries.values()) {
      if (!entry.key.startsWith(prefix)) continue;
      config.line = Math.min(config.line, entry.line);
      const rest = entry.key.slice(prefix.length);
      const key = classify(rest);
      if (!key) {
        this.invalidKey(entry, rest);
        continue;
      }
      own.push({ entry, key });
    }
    if (config.line === Infinity) config.line = 0;

    // Config filters first: their settings are substituted without filters, then they serve the rest.
    for (const { entry, key } of own) {
      if (key.word !== "configfilters") continue;
      const value = this.resolve(entry, this.agent, key.name === undefined ? "configfilters" : key.sub!, false);
      if (key.name === undefined) {
        if (value !== "") config.configFilters.listed = this.located(entry, value);
        continue;
      }
      let f = config.configFilters.filters.get(key.name);
      if (!f) config.configFilters.filters.set(key.name, (f = { name: key.name, props: record(), line: entry.line }));
      f.line = Math.min(f.line, entry.line);
      if (value === "") continue;
      if (key.sub === "type") f.type = this.located(entry, value);
      else f.props[key.sub!] = this.located(entry, value);
    }
    this.setUpFilters(config);

    for (const { entry, key } of own) {
      if (key.word === "configfilters") continue;
      const listKey = key.word as ListKey;
      if (key.name === undefined) {
        const value = this.resolve(entry, this.agent, listKey, true);
        if (value === "") {
          this.problems.push({
            file: this.file,
            line: entry.line,
            component: this.agent,
            key: listKey,
            message: "is empty, so Flume ignores it",
            hint: `list the ${listKey} by name, separated by spaces`,
            severity: "warning",
            code: "empty-list",
          });
        } else config.listed[listKey] = this.located(entry, value);
        continue;
      }
      const kind = KIND_OF_LIST[listKey];
      const map = config[listKey];
      let component = map.get(key.name);
      if (!component) map.set(key.name, (component = { name: key.name, kind, props: record(), emptyProps: record(), file: this.file, line: entry.line }));
      component.line = Math.min(component.line, entry.line);
      const value = this.resolve(entry, componentLabel(kind, key.name), key.sub!, true, { kind, name: key.name });
      const located = this.located(entry, value);
      if (value === "") component.emptyProps[key.sub!] = located;
      else if (key.sub === "type") component.type = located;
      else component.props[key.sub!] = located;
    }
    return config;
  }

  private located(entry: PropertyEntry, value: string): Located {
    return { value, file: entry.file, line: entry.line };
  }

  private invalidKey(entry: PropertyEntry, rest: string): void {
    const first = rest.split(".")[0];
    const suggestion = didYouMean(first, GRAMMAR_WORDS);
    const bare = (GRAMMAR_WORDS as readonly string[]).includes(first);
    this.problems.push({
      file: this.file,
      line: entry.line,
      component: this.agent,
      key: rest,
      message: bare ? `is not a valid key: a component key needs a name and a property, as ${first}.<name>.<property>` : `is not part of Flume's configuration grammar, so Flume ignores it`,
      hint: suggestion ? `did you mean ${this.agent}.${suggestion}${rest.slice(first.length)}?` : `keys under ${this.agent}. start with sources, channels, sinks, sinkgroups or configfilters`,
      severity: "error",
      code: "invalid-key",
    });
  }

  private sources(withFilters: boolean): SubstitutionSources {
    return {
      env: this.env,
      sys: this.sys,
      property: (k) => this.entries.get(k)?.value,
      filters: withFilters ? this.filters : undefined,
      filterNames: this.filterNames,
      envFallback: this.envFallback,
    };
  }

  /** Trims (as Flume does) and substitutes a value, reporting what cannot be resolved. */
  private resolve(entry: PropertyEntry, component: string, key: string, withFilters: boolean, ref?: Problem["ref"]): string {
    const raw = entry.value.trim();
    if (!hasVariables(raw)) return raw;
    const r = substitute(raw, this.sources(withFilters), this.referenced);
    for (const issue of r.issues) {
      this.problems.push({ file: entry.file, line: entry.line, component, key, message: issue.message, hint: issue.hint, severity: "error", code: issue.code, ref });
    }
    return r.value.trim();
  }

  private setUpFilters(config: AgentConfig): void {
    const listed = (config.configFilters.listed?.value ?? "").split(/\s+/).filter(Boolean);
    for (const name of listed) this.filterNames.add(name);
    for (const name of listed) {
      const f = config.configFilters.filters.get(name);
      const label = componentLabel("configfilter", name);
      const fail = (line: number, key: string, message: string, hint: string) =>
        this.problems.push({ file: this.file, line, component: label, key, message, hint, severity: "error", code: "config-filter" });
      if (!f) {
        fail(config.configFilters.listed!.line, "", "is listed in configfilters but not configured", `add ${this.agent}.configfilters.${name}.type = env or external`);
        continue;
      }
      if (!f.type) {
        fail(f.line, "type", "is missing", `add ${this.agent}.configfilters.${name}.type = env or external`);
        continue;
      }
      const raw = record<string>();
      for (const [k, v] of Object.entries(f.props)) raw[k] = v.value;
      const setup = createConfigFilter(f.type.value, raw, this.env);
      if ("error" in setup) {
        fail(setup.key === "type" ? f.type.line : (f.props[setup.key]?.line ?? f.line), setup.key, setup.error, setup.hint);
        continue;
      }
      this.filters.set(name, setup.filter);
    }
    for (const f of config.configFilters.filters.values()) {
      if (listed.includes(f.name)) continue;
      this.problems.push({
        file: this.file,
        line: f.line,
        component: componentLabel("configfilter", f.name),
        key: "",
        message: `is configured but not listed in ${this.agent}.configfilters, so it is ignored`,
        hint: `add it: ${this.agent}.configfilters = ${[...listed, f.name].join(" ")}`,
        severity: "warning",
        code: "configured-not-listed",
      });
    }
  }
}

// ---- Helpers for the agent builder and the validator -------------------------------------

/** A record without prototype: keys come from the file, and "__proto__" must stay a plain key. */
export function record<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** The names of a whitespace-separated list value. */
export function listNames(list: Located | string | undefined): string[] {
  const text = typeof list === "string" ? list : list?.value;
  return text ? text.split(/\s+/).filter(Boolean) : [];
}

/** The channels a source writes to (`channels`). */
export function sourceChannels(source: ComponentEntry): string[] {
  return listNames(source.props.channels);
}

/** The channel a sink reads from (`channel`). */
export function sinkChannel(sink: ComponentEntry): string | undefined {
  return sink.props.channel?.value;
}

/** The sinks of a sink group (`sinks`). */
export function sinkGroupSinks(group: ComponentEntry): string[] {
  return listNames(group.props.sinks);
}

function subComponent(entry: ComponentEntry, name: string, prefix: string): SubComponent {
  const props = record<Located>();
  let type: Located | undefined;
  let line = Infinity;
  for (const [k, v] of Object.entries(entry.props)) {
    if (!k.startsWith(prefix)) continue;
    line = Math.min(line, v.line);
    const sub = k.slice(prefix.length);
    if (sub === "type") type = v;
    else props[sub] = v;
  }
  return { name, type, props, prefix, line: line === Infinity ? entry.line : line };
}

/** A source's channel selector: `selector.type` and the other `selector.*` keys. */
export function selectorProps(source: ComponentEntry): SubComponent {
  return subComponent(source, "selector", "selector.");
}

/** A sink group's processor: `processor.type` and the other `processor.*` keys. */
export function sinkProcessorProps(group: ComponentEntry): SubComponent {
  return subComponent(group, "processor", "processor.");
}

/** The interceptors listed in a source's `interceptors`, in order, each with its type and keys. */
export function interceptorEntries(source: ComponentEntry): SubComponent[] {
  return listNames(source.props.interceptors).map((name) => subComponent(source, name, `interceptors.${name}.`));
}

/** Interceptor names that have keys but are not listed in `interceptors`. */
export function unlistedInterceptors(source: ComponentEntry): string[] {
  const listed = new Set(listNames(source.props.interceptors));
  const seen = new Set<string>();
  for (const k of Object.keys(source.props)) {
    const m = /^interceptors\.([^.]+)\./.exec(k);
    if (m && !listed.has(m[1])) seen.add(m[1]);
  }
  return [...seen];
}

/** Whether a key of a component belongs to Flume's wiring rather than to the component itself. */
export function isFrameworkKey(kind: EntryKind, key: string): boolean {
  switch (kind) {
    case "source":
      return key === "channels" || key === "interceptors" || key.startsWith("interceptors.") || key.startsWith("selector.");
    case "sink":
      return key === "channel";
    case "sinkgroup":
      return key === "sinks" || key.startsWith("processor.");
    case "channel":
      return false;
  }
}

/** The component's own keys (what its schema describes): props without the wiring keys. */
export function ownProps(entry: ComponentEntry): Record<string, Located> {
  const out = record<Located>();
  for (const [k, v] of Object.entries(entry.props)) if (!isFrameworkKey(entry.kind, k)) out[k] = v;
  return out;
}

/**
 * What a component's configuration amounts to, without lines: equal fingerprints across a
 * reload mean the component can keep running. Includes the wiring keys (channels, selector,
 * interceptors, sinks, processor).
 */
export function fingerprint(entry: ComponentEntry): string {
  const keys = Object.keys(entry.props).sort();
  return JSON.stringify([entry.kind, entry.name, entry.type?.value ?? null, keys.map((k) => [k, entry.props[k].value])]);
}

/** Plain values of located props, as parseConfig takes them. */
export function rawValues(props: Record<string, Located>): Record<string, string> {
  const out = record<string>();
  for (const [k, v] of Object.entries(props)) out[k] = v.value;
  return out;
}
