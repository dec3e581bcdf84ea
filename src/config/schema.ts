/**
 * Component schemas: each component file declares the properties it reads (key, type, default,
 * one-line doc, aliases, roles) next to its code, in the style of Fluent Bit's config_map. The
 * same declaration drives parsing, validation, error messages, `flume describe`, and the type
 * of the options object the component is created with: a misspelled key does not compile.
 */

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

/** Keys read as an open-ended group (e.g. "headers." for TAILDIR): keys under it are not "unknown". */
export interface Group {
  prefix: string;
  doc: string;
}

export type ComponentKind = "source" | "channel" | "sink" | "interceptor" | "serializer" | "selector" | "sinkprocessor" | "configfilter";

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

/** The options object a schema parses into: one field per property, one record per group. */
export type OptionsOf<P extends Props, G extends Groups = Record<never, Group>> = {
  readonly [K in keyof P]: AlwaysSet<P[K]> extends true ? ValueOf<P[K]> : ValueOf<P[K]> | undefined;
} & { readonly [K in keyof G]: Readonly<Record<string, string>> };

/** Options of some component, seen from code that does not know which (the builder, the validator). */
export type AnyOptions = Readonly<Record<string, PropValue | Readonly<Record<string, string>> | undefined>>;

export interface ComponentSchema {
  kind: ComponentKind;
  /** The canonical type name, as written in Flume configs (e.g. "memory", "TAILDIR"). */
  type: string;
  /** Other accepted type names: Flume's fully qualified class names and historical aliases. */
  aliases?: readonly string[];
  doc: string;
  props: readonly PropSpec[];
  /** Key prefixes read as open-ended groups, with the options field each one fills. */
  prefixes?: readonly (Group & { name?: string })[];
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
    props: Object.entries(decl.props).map(([key, p]) => ({ key, ...p }) as PropSpec),
    prefixes: decl.groups ? Object.entries(decl.groups).map(([name, g]) => ({ name, ...g })) : undefined,
  };
}

export interface PropError {
  key: string;
  message: string;
}

/** Parses one raw string value by its spec; returns the value or an error message. */
export function parseValue(spec: PropSpec, raw: string): { value: PropValue } | { error: string } {
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

function checkRange(spec: NumberProp, n: number): { value: number } | { error: string } {
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
  const options: Record<string, PropValue | Record<string, string> | undefined> = Object.create(null);
  const errors: PropError[] = [];
  for (const spec of schema.props) {
    const present = raw[spec.key] !== undefined ? spec.key : spec.aliases?.find((n) => raw[n] !== undefined);
    if (present === undefined) {
      if (spec.required) errors.push({ key: spec.key, message: `is required: ${spec.doc}` });
      options[spec.key] = spec.default;
      continue;
    }
    const parsed = parseValue(spec, raw[present]);
    if ("error" in parsed) {
      errors.push({ key: present, message: spec.secret ? parsed.error.replace(/got ".*"$/, "got a bad value") : parsed.error });
      options[spec.key] = spec.default;
    } else {
      options[spec.key] = parsed.value;
    }
  }
  for (const g of schema.prefixes ?? []) {
    if (g.name === undefined) continue;
    const group: Record<string, string> = Object.create(null);
    for (const [k, v] of Object.entries(raw)) if (k.startsWith(g.prefix)) group[k.slice(g.prefix.length)] = v;
    options[g.name] = group;
  }
  return { options, errors };
}
