/**
 * `flume describe` lists every component type by kind; `flume describe <type>` prints the
 * type's properties (type, default, doc), key groups and aliases, from the same schemas the
 * validator uses.
 */

import * as registry from "../components/registry.ts";
import { configFilterSchemas } from "../config/config-filters.ts";
import { didYouMean } from "../config/problems.ts";
import { unsupportedType } from "../config/unsupported.ts";
import { oneOf, UsageError } from "./args.ts";
import { command } from "./command.ts";
import type { ComponentKind, ComponentSchema, PropSpec, PropValue } from "../config/schema.ts";

const KIND_TITLES: [ComponentKind, string][] = [
  ["source", "Sources"],
  ["channel", "Channels"],
  ["sink", "Sinks"],
  ["interceptor", "Interceptors"],
  ["selector", "Channel selectors (selector.type)"],
  ["sinkprocessor", "Sink processors (processor.type)"],
  ["serializer", "Serializers"],
  ["httphandler", "HTTP source handlers (handler)"],
  ["deserializer", "Spooling directory deserializers (deserializer)"],
  ["configfilter", "Config filters (configfilters.<name>.type)"],
];

/** Every schema: the registry's, plus the config filters that live in src/config. */
export function allSchemas(): ComponentSchema[] {
  const schemas = registry.allComponents().map((d) => d.schema);
  for (const s of configFilterSchemas) if (!schemas.some((x) => x.kind === s.kind && x.type === s.type)) schemas.push(s);
  return schemas;
}

export function findSchemas(type: string, kind?: string): ComponentSchema[] {
  const t = type.toLowerCase();
  return allSchemas().filter(
    (s) => (kind === undefined || s.kind === kind) && (s.type.toLowerCase() === t || (s.aliases ?? []).some((a) => a.toLowerCase() === t)),
  );
}

function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join("  ").trimEnd());
}

function formatValue(v: PropValue | undefined): string {
  if (v === undefined) return "";
  if (Array.isArray(v)) return v.length ? v.join(" ") : '""';
  if (v === "") return '""';
  return String(v);
}

function typeColumn(p: PropSpec): string {
  return p.type === "enum" && p.values ? p.values.join("|") : p.type;
}

function docColumn(p: PropSpec): string {
  const extra: string[] = [];
  if (p.min !== undefined) extra.push(`min ${p.min}`);
  if (p.max !== undefined) extra.push(`max ${p.max}`);
  if (p.aliases?.length) extra.push(`also ${p.aliases.join(", ")}`);
  return extra.length ? `${p.doc} (${extra.join("; ")})` : p.doc;
}

export function describeList(): string {
  const schemas = allSchemas();
  const lines: string[] = [];
  for (const [kind, title] of KIND_TITLES) {
    const of = schemas.filter((s) => s.kind === kind).sort((a, b) => a.type.localeCompare(b.type));
    if (of.length === 0) continue;
    lines.push(`${title}:`);
    lines.push(...table(of.map((s) => [`  ${s.type}`, s.doc])));
    lines.push("");
  }
  lines.push("`flume describe <type>` shows a type's properties.");
  return lines.join("\n") + "\n";
}

export function describeSchema(s: ComponentSchema): string {
  const lines = [`${s.kind} ${s.type}`, `  ${s.doc}`];
  if (s.aliases?.length) lines.push(`  aliases: ${s.aliases.join(", ")}`);
  lines.push("");
  if (s.props.length === 0) {
    lines.push("  no properties");
  } else {
    const rows = [["  property", "type", "default", "description"]];
    for (const p of s.props) rows.push([`  ${p.key}`, typeColumn(p), p.required ? "(required)" : formatValue(p.default), docColumn(p)]);
    lines.push(...table(rows));
  }
  if (s.prefixes?.length) {
    lines.push("", "  key groups:");
    lines.push(...table(s.prefixes.flatMap((p) => [[`    ${p.prefix}*`, p.doc], ...(p.fieldSpecs ?? []).map((f) => [`      ${p.prefix}<id>.${f.key}`, docColumn(f)])])));
  }
  return lines.join("\n") + "\n";
}

/** Prints the list, or the types named `type`; returns the exit code: 0, or 2 for an unknown type. */
function runDescribe(type: string | undefined, kind: ComponentKind | undefined): number {
  const out = (s: string) => process.stdout.write(s);
  if (type === undefined) {
    out(kind ? describeList().split("\n\n").filter((block) => block.startsWith(KIND_TITLES.find(([k]) => k === kind)![1])).join("\n\n") + "\n" : describeList());
    return 0;
  }
  const found = findSchemas(type, kind);
  const missing = found.length === 0 ? KIND_TITLES.map(([k]) => (kind === undefined || kind === k ? unsupportedType(k, type) : undefined)).find(Boolean) : undefined;
  if (missing) throw new UsageError(`${missing.message}; ${missing.hint}`);
  if (found.length === 0) {
    const names = allSchemas()
      .filter((s) => kind === undefined || s.kind === kind)
      .map((s) => s.type);
    const guess = didYouMean(type, names);
    throw new UsageError(`unknown component type "${type}"${guess ? ` (did you mean "${guess}"?)` : ""}; \`flume describe\` lists them all`);
  }
  out(found.map(describeSchema).join("\n"));
  return 0;
}

export const describe = command({
  name: "describe",
  description: "List component types, or show one type's properties, defaults and docs",
  args: {
    type: { type: "positional", description: "A type name, alias or Flume class name (e.g. memory, TAILDIR)" },
    kind: { type: "string", parse: oneOf(...KIND_TITLES.map(([k]) => k)), description: "Only this kind" },
  },
  run: (a) => runDescribe(a.type, a.kind),
});
