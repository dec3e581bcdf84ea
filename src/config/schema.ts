/**
 * Component schemas: each component file declares the properties it reads (key, type, default,
 * one-line doc, aliases, roles) next to its code, in the style of Fluent Bit's config_map. The
 * same declaration drives parsing, validation, error messages, `flume describe`, and the type
 * of the options object the component is created with: a misspelled key does not compile.
 */

import type { ProblemCode } from "./problems.ts";

export type PropType =
  | "string"
  | "int" // a whole number (Java int/long)
  | "number" // any finite number
  | "boolean" // true/false, case-insensitive, as Java's Boolean.parseBoolean
  | "enum" // one of `values`, case-insensitive unless caseSensitive
  | "list" // whitespace-separated names (Flume's lists)
  | "path"; // a file-system path

export type PropValue = string | number | boolean | readonly string[];

/**
 * What a property means to the rest of the system, so validation and the simulator find it
 * whatever the component calls it (batchSize, batch-size, sink.batchSize...).
 */
export type Role = "batchSize" | "capacity" | "transactionCapacity" | "keepAlive";

interface PropBase {
  doc: string;
  /** Other spellings Flume accepts for the same property. */
  aliases?: readonly string[];
  /** Those of the aliases Flume still reads but warns about (its deprecated names). */
  deprecated?: readonly string[];
  required?: boolean;
  /** Holds a secret: never printed back in errors. */
  secret?: boolean;
  roles?: readonly Role[];
  /**
   * The value names a component of another kind (a file_roll sink's `sink.serializer`), found in
   * the registry of the run, custom modules included: `flume validate` reports an unknown one at
   * its line, and checks the keys of the group `settings` (the part's own properties) against
   * the part's schema. The component finds it with ComponentContext.lookup.
   */
  names?: { kind: ComponentKind; settings?: string };
}

export interface StringProp extends PropBase {
  type: "string" | "path";
  default?: string;
}
export interface NumberProp extends PropBase {
  type: "int" | "number";
  default?: number;
  min?: number;
  max?: number;
}
export interface BooleanProp extends PropBase {
  type: "boolean";
  default?: boolean;
}
export interface EnumProp extends PropBase {
  type: "enum";
  values: readonly string[];
  default?: string;
  caseSensitive?: boolean;
}
export interface ListProp extends PropBase {
  type: "list";
  default?: readonly string[];
}
export type Prop = StringProp | NumberProp | BooleanProp | EnumProp | ListProp;

/** A property with its key: the list form validate and describe walk. */
export type PropSpec = Prop & { key: string; min?: number; max?: number; values?: readonly string[]; caseSensitive?: boolean; default?: PropValue };

/**
 * Keys read as an open-ended group: every key under `prefix` (TAILDIR's `headers.<group>.<name>`,
 * failover's `priority.<sink>`, a Kafka sink's `kafka.producer.<setting>`) goes into one field of
 * the options, a record by the rest of the key. Keys under it are never "unknown".
 *
 *   groups: { priority: { prefix: "priority.", doc: "...", value: { type: "int" } } }
 *   -> options.priority: Readonly<Record<string, number>>   ("priority.k1 = 5" -> { k1: 5 })
 *
 * `value` types each value as a property of that spec is typed (int, number, boolean, enum with
 * its values, list, string; min and max): a bad value is a problem at its own key and line
 * (file:line), as a property's is, and the component gets typed values. Without `value` the
 * values are the strings as written. Checks across a group and the rest of the configuration (a
 * priority for a sink that is not in the group) go in the component's own `validate`, which
 * gets the parsed options and its ValidationContext, in the component's file.
 */
export interface Group {
  prefix: string;
  doc: string;
  /** How each value is read: a property's type and limits (no default: a key is there or not). */
  value?: GroupValue;
  /**
   * The group holds records, one per id: `<prefix><id>.<field>` (regex_extractor's
   * `serializers.s1.name`, `.type`, `.pattern`). Each field is read as the property of that
   * name, defaults filled in for every id written; a key naming no field is a warning at its
   * line. Ids that must exist (those of a list property) are the component's own check.
   */
  fields?: Props;
}

/** The spec of a group's values (see Group). */
export type GroupValue =
  | { type: "string" | "path" }
  | { type: "int" | "number"; min?: number; max?: number }
  | { type: "boolean" }
  | { type: "enum"; values: readonly string[]; caseSensitive?: boolean }
  | { type: "list" };

/**
 * What a component's own `validate` sees besides its options: where it is wired in the agent.
 * Present for the kinds it applies to.
 */
export interface ValidationContext {
  /** A sink processor: the sinks of its group, in their configured order. */
  readonly sinks?: readonly string[];
  /** A channel selector: the channels of its source. */
  readonly channels?: readonly string[];
}

export type ComponentKind = "source" | "channel" | "sink" | "interceptor" | "serializer" | "httphandler" | "deserializer" | "selector" | "sinkprocessor" | "configfilter";

export type Props = Readonly<Record<string, Prop>>;
export type Groups = Readonly<Record<string, Group>>;

type ValueOf<P> = P extends { type: "int" | "number" }
  ? number
  : P extends { type: "boolean" }
    ? boolean
    : P extends { type: "list" }
      ? readonly string[]
      : P extends { type: "enum"; values: readonly (infer V)[] }
        ? V
        : string;
type AlwaysSet<P> = P extends { default: unknown } ? true : P extends { required: true } ? true : false;

type PropsOptions<P extends Props> = { readonly [K in keyof P]: AlwaysSet<P[K]> extends true ? ValueOf<P[K]> : ValueOf<P[K]> | undefined };
type GroupEntry<G> = G extends { fields: infer F extends Props } ? PropsOptions<F> : G extends { value: infer V } ? ValueOf<V> : string;

/** The options object a schema parses into: one field per property, one record per group (typed by its `value` or `fields`). */
export type OptionsOf<P extends Props, G extends Groups = Record<never, Group>> = PropsOptions<P> & { readonly [K in keyof G]: Readonly<Record<string, GroupEntry<G[K]>>> };

/** Options of some component, seen from code that does not know which (the builder, the validator). */
export type AnyOptions = Readonly<Record<string, PropValue | Readonly<Record<string, PropValue | Readonly<Record<string, PropValue | undefined>>>> | undefined>>;

export interface ComponentSchema {
  kind: ComponentKind;
  /** The canonical type name, as written in Flume configs (e.g. "memory", "TAILDIR"). */
  type: string;
  /** Other accepted type names: Flume's fully qualified class names and historical aliases. */
  aliases?: readonly string[];
  doc: string;
  props: readonly PropSpec[];
  /** Key prefixes read as open-ended groups, with the options field each one fills. */
  prefixes?: readonly (Group & { name?: string; fieldSpecs?: readonly PropSpec[] })[];
}

/** Builds a schema from the record form components declare. */
export function schemaOf(decl: { kind: ComponentKind; type: string; aliases?: readonly string[]; doc: string; props: Props; groups?: Groups }): ComponentSchema {
  for (const name of Object.keys(decl.groups ?? {})) {
    if (name in decl.props) throw new Error(`${decl.kind} ${decl.type}: group "${name}" has the name of a property; the options object needs them apart`);
  }
  return {
    kind: decl.kind,
    type: decl.type,
    aliases: decl.aliases,
    doc: decl.doc,
    props: specsOf(decl.props),
    prefixes: decl.groups ? Object.entries(decl.groups).map(([name, g]) => ({ name, ...g, fieldSpecs: g.fields && specsOf(g.fields) })) : undefined,
  };
}

function specsOf(props: Props): PropSpec[] {
  return Object.entries(props).map(([key, p]) => ({ key, ...p }) as PropSpec);
}

/** A problem with a component's options: at `key` (its line, when the key is written), an error unless said otherwise. */
export interface PropError {
  key: string;
  message: string;
  severity?: "error" | "warning";
  /** What to do about it, when the message alone does not say; `{owner}` stands for the owner's full key prefix (`a1.sinkgroups.g1.`). */
  hint?: string;
  /** A part's problem at a key of its owner (a sink processor's at its group's `sinks`), not at its own. */
  atOwner?: boolean;
  /** Its category, when more precise than a bad value (a selector naming a channel its source lacks). */
  code?: ProblemCode;
}

/** Parses one raw string value by its spec (a property's, or a group's value spec); returns the value or an error message. */
export function parseValue(spec: PropSpec | GroupValue, raw: string): { value: PropValue } | { error: string } {
  const text = raw.trim();
  switch (spec.type) {
    case "string":
    case "path":
      return { value: raw };
    case "int": {
      if (!/^[-+]?\d+$/.test(text)) return { error: `expected a whole number, got "${raw}"` };
      return checkRange(spec, Number(text));
    }
    case "number": {
      const n = Number(text);
      if (text === "" || !Number.isFinite(n)) return { error: `expected a number, got "${raw}"` };
      return checkRange(spec, n);
    }
    case "boolean": {
      const lower = text.toLowerCase();
      if (lower !== "true" && lower !== "false") return { error: `expected true or false, got "${raw}"` };
      return { value: lower === "true" };
    }
    case "enum": {
      const values = spec.values;
      const found = spec.caseSensitive ? values.find((v) => v === text) : values.find((v) => v.toLowerCase() === text.toLowerCase());
      if (found === undefined) return { error: `expected one of ${values.join(", ")}, got "${raw}"` };
      return { value: found };
    }
    case "list":
      return { value: text === "" ? [] : text.split(/\s+/) };
  }
}

function checkRange(spec: { min?: number; max?: number }, n: number): { value: number } | { error: string } {
  if (spec.min !== undefined && n < spec.min) return { error: `must be at least ${spec.min}, got ${n}` };
  if (spec.max !== undefined && n > spec.max) return { error: `must be at most ${spec.max}, got ${n}` };
  return { value: n };
}

/** Finds the spec for a key, by name or alias. */
export function findProp(schema: ComponentSchema, key: string): PropSpec | undefined {
  return schema.props.find((p) => p.key === key || p.aliases?.includes(key));
}

/** The key of the property that plays a role (e.g. the batch size), if the schema has one. */
export function keyWithRole(schema: ComponentSchema, role: Role): string | undefined {
  return schema.props.find((p) => p.roles?.includes(role))?.key;
}

/** Every property that plays a role, in schema order. */
export function keysWithRole(schema: ComponentSchema, role: Role): string[] {
  return schema.props.filter((p) => p.roles?.includes(role)).map((p) => p.key);
}

/**
 * A channel's capacity: the sum of its properties with the capacity role (one for most
 * channels; SPILLABLEMEMORY's memoryCapacity and overflowCapacity both count), or undefined
 * when it has none or one is not a number.
 */
export function capacityOf(schema: ComponentSchema, options: AnyOptions): number | undefined {
  const keys = keysWithRole(schema, "capacity");
  if (keys.length === 0) return undefined;
  let sum = 0;
  for (const key of keys) {
    const v = options[key];
    if (typeof v !== "number") return undefined;
    sum += v;
  }
  return sum;
}

export function isUnderPrefix(schema: ComponentSchema, key: string): boolean {
  return (schema.prefixes ?? []).some((p) => key.startsWith(p.prefix));
}

/**
 * Parses raw key/values against a schema into an options object: defaults filled in, values
 * typed, group keys collected with their prefix removed. Errors for bad values and missing
 * required keys; unknown keys are reported separately by the validator (they are warnings).
 */
export function parseOptions(schema: ComponentSchema, raw: Readonly<Record<string, string>>): { options: AnyOptions; errors: PropError[] } {
  const options: Record<string, AnyOptions[string]> = Object.create(null);
  const errors: PropError[] = [];
  readProps(schema.props, raw, "", options, errors);
  for (const g of schema.prefixes ?? []) {
    if (g.name === undefined) continue;
    options[g.name] = g.fieldSpecs ? readRecords(g.prefix, g.fieldSpecs, raw, errors) : readGroup(g, raw, errors);
  }
  return { options, errors };
}

/** Reads the properties of `specs` from raw keys `<at><key>` into `into`, defaults filled in. */
function readProps(specs: readonly PropSpec[], raw: Readonly<Record<string, string>>, at: string, into: Record<string, AnyOptions[string]>, errors: PropError[]): void {
  for (const spec of specs) {
    const present = [spec.key, ...(spec.aliases ?? [])].find((n) => raw[at + n] !== undefined);
    if (present === undefined) {
      if (spec.required) errors.push({ key: at + spec.key, message: `is required: ${spec.doc}` });
      into[spec.key] = spec.default;
      continue;
    }
    const parsed = parseValue(spec, raw[at + present]);
    if ("error" in parsed) {
      errors.push({ key: at + present, message: spec.secret ? parsed.error.replace(/got ".*"$/, "got a bad value") : parsed.error });
      into[spec.key] = spec.default;
    } else {
      into[spec.key] = parsed.value;
    }
  }
}

function readGroup(g: Group, raw: Readonly<Record<string, string>>, errors: PropError[]): Record<string, PropValue> {
  const group: Record<string, PropValue> = Object.create(null);
  for (const [k, v] of Object.entries(raw)) {
    if (!k.startsWith(g.prefix)) continue;
    if (!g.value) {
      group[k.slice(g.prefix.length)] = v;
      continue;
    }
    const parsed = parseValue(g.value, v);
    if ("error" in parsed) errors.push({ key: k, message: parsed.error });
    else group[k.slice(g.prefix.length)] = parsed.value;
  }
  return group;
}

/** A group of records (Group.fields): one options record per id written under the prefix. */
function readRecords(prefix: string, fields: readonly PropSpec[], raw: Readonly<Record<string, string>>, errors: PropError[]): Record<string, Record<string, PropValue | undefined>> {
  const ids = new Set<string>();
  for (const k of Object.keys(raw)) {
    if (!k.startsWith(prefix)) continue;
    const rest = k.slice(prefix.length);
    const dot = rest.indexOf(".");
    const field = dot < 0 ? undefined : rest.slice(dot + 1);
    if (field === undefined || !fields.some((f) => f.key === field || f.aliases?.includes(field))) {
      errors.push({ key: k, severity: "warning", message: `is not a setting of ${prefix}<id>, so it is ignored`, hint: `${prefix}<id> takes: ${fields.map((f) => f.key).join(", ")}` });
      continue;
    }
    ids.add(rest.slice(0, dot));
  }
  const out: Record<string, Record<string, PropValue | undefined>> = Object.create(null);
  for (const id of ids) readProps(fields, raw, `${prefix}${id}.`, (out[id] = Object.create(null)), errors);
  return out;
}
