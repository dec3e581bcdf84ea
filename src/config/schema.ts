/**
 * Component schemas: each component file declares the properties it reads (key, type, default,
 * one-line doc). The same declaration drives parsing, validation, error messages and
 * `flume describe`.
 */

export type PropType =
  | "string"
  | "int" // a whole number (Java int/long)
  | "number" // any finite number
  | "boolean" // true/false, case-insensitive, as Java's Boolean.parseBoolean
  | "enum" // one of `values`, case-insensitive unless caseSensitive
  | "list" // whitespace-separated names (Flume's lists)
  | "path"; // a file-system path

export type PropValue = string | number | boolean | string[];

export interface PropSpec {
  key: string;
  type: PropType;
  default?: PropValue;
  doc: string;
  /** Other spellings Flume accepts for the same property. */
  aliases?: string[];
  required?: boolean;
  min?: number;
  max?: number;
  values?: readonly string[];
  caseSensitive?: boolean;
  /** Holds a secret: never printed back in errors. */
  secret?: boolean;
}

export type ComponentKind = "source" | "channel" | "sink" | "interceptor" | "serializer" | "selector" | "sinkprocessor" | "configfilter";

export interface ComponentSchema {
  kind: ComponentKind;
  /** The canonical type name, as written in Flume configs (e.g. "memory", "TAILDIR"). */
  type: string;
  /** Other accepted type names: Flume's fully qualified class names and historical aliases. */
  aliases?: readonly string[];
  doc: string;
  props: readonly PropSpec[];
  /**
   * Key prefixes the component reads as open-ended groups (e.g. "headers." for TAILDIR,
   * "mapping." for the multiplexing selector); keys under them are not "unknown".
   */
  prefixes?: readonly { prefix: string; doc: string }[];
}

export interface PropError {
  key: string;
  message: string;
}

const TRUE = new Set(["true"]);

/** Parses one raw string value by its spec; returns the value or an error message. */
export function parseValue(spec: PropSpec, raw: string): { value: PropValue } | { error: string } {
  const text = raw.trim();
  switch (spec.type) {
    case "string":
    case "path":
      return { value: raw };
    case "int": {
      if (!/^[-+]?\d+$/.test(text)) return { error: `expected a whole number, got "${raw}"` };
      const n = Number(text);
      return checkRange(spec, n);
    }
    case "number": {
      const n = Number(text);
      if (text === "" || !Number.isFinite(n)) return { error: `expected a number, got "${raw}"` };
      return checkRange(spec, n);
    }
    case "boolean": {
      const lower = text.toLowerCase();
      if (lower !== "true" && lower !== "false") return { error: `expected true or false, got "${raw}"` };
      return { value: TRUE.has(lower) };
    }
    case "enum": {
      const values = spec.values ?? [];
      const found = spec.caseSensitive ? values.find((v) => v === text) : values.find((v) => v.toLowerCase() === text.toLowerCase());
      if (found === undefined) return { error: `expected one of ${values.join(", ")}, got "${raw}"` };
      return { value: found };
    }
    case "list":
      return { value: text === "" ? [] : text.split(/\s+/) };
  }
}

function checkRange(spec: PropSpec, n: number): { value: number } | { error: string } {
  if (spec.min !== undefined && n < spec.min) return { error: `must be at least ${spec.min}, got ${n}` };
  if (spec.max !== undefined && n > spec.max) return { error: `must be at most ${spec.max}, got ${n}` };
  return { value: n };
}

/** Finds the spec for a key, by name or alias. */
export function findProp(schema: ComponentSchema, key: string): PropSpec | undefined {
  return schema.props.find((p) => p.key === key || p.aliases?.includes(key));
}

export function isUnderPrefix(schema: ComponentSchema, key: string): boolean {
  return (schema.prefixes ?? []).some((p) => key.startsWith(p.prefix));
}

/**
 * Typed view of a component's configuration: defaults filled in, values parsed.
 * `raw` keeps every key as written (including prefix groups) for components that read them.
 */
export class ComponentConfig {
  constructor(
    readonly values: Record<string, PropValue | undefined>,
    readonly raw: Record<string, string>,
  ) {}

  string(key: string): string {
    const v = this.values[key];
    return v === undefined ? "" : String(v);
  }
  optionalString(key: string): string | undefined {
    const v = this.values[key];
    return v === undefined || v === "" ? undefined : String(v);
  }
  int(key: string): number {
    return Number(this.values[key] ?? 0);
  }
  number(key: string): number {
    return Number(this.values[key] ?? 0);
  }
  boolean(key: string): boolean {
    return this.values[key] === true;
  }
  list(key: string): string[] {
    const v = this.values[key];
    return Array.isArray(v) ? v : v === undefined || v === "" ? [] : String(v).split(/\s+/);
  }
  /** Every raw key under prefix, with the prefix removed (e.g. "headers." -> {"g1.k": "v"}). */
  group(prefix: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.raw)) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = v;
    return out;
  }
}

/**
 * Parses raw key/values against a schema. Errors for bad values and missing required keys;
 * unknown keys are reported separately by the validator (they are warnings).
 */
export function parseConfig(schema: ComponentSchema, raw: Record<string, string>): { config: ComponentConfig; errors: PropError[] } {
  const values: Record<string, PropValue | undefined> = {};
  const errors: PropError[] = [];
  for (const spec of schema.props) {
    const names = [spec.key, ...(spec.aliases ?? [])];
    const present = names.find((n) => raw[n] !== undefined);
    if (present === undefined) {
      if (spec.required) errors.push({ key: spec.key, message: `is required: ${spec.doc}` });
      values[spec.key] = spec.default;
      continue;
    }
    const parsed = parseValue(spec, raw[present]);
    if ("error" in parsed) {
      errors.push({ key: present, message: spec.secret ? parsed.error.replace(/got ".*"$/, "got a bad value") : parsed.error });
      values[spec.key] = spec.default;
    } else {
      values[spec.key] = parsed.value;
    }
  }
  return { config: new ComponentConfig(values, raw), errors };
}
