/**
 * Custom components: a type that names a module (`a1.sinks.k1.type = ./my-sink.ts`, an absolute
 * path, or an npm package) is imported before the configuration is validated, and its exported
 * definition (made with defineComponent from "flume-ts", as the built-in components are) serves
 * that component for the run. The configuration is parsed once: the loader reads the type names
 * of the parsed model, and the validator then checks the module's schema like any other.
 *
 * config/load.ts calls this between parsing and validating. The module's own `import ... from
 * "flume-ts"` resolves to the running Flume TS: under Bun (and in the compiled binary) a runtime
 * plugin provides it, under Deno the repository's deno.json maps it. Java class names get a message saying Java components cannot run here.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type { AnyDefinition } from "../components/component.ts";
import { type ComponentEntry, interceptorEntries, type Located, type ParseResult, selectorProps, sinkProcessorProps } from "./flume-config.ts";
import type { ComponentKind } from "./schema.ts";
import type { ComponentRegistry } from "./validate.ts";

/** Where the README explains custom components and how to port a Java one. */
const GUIDE = 'README.md, "Custom components"';

/** Why a type name did not resolve, for the validator's message at the type's line. */
export interface TypeExplanation {
  message: string;
  hint: string;
}

/** True when a type name is written as a module path (relative, absolute, or a script file name). */
export function isModulePath(type: string): boolean {
  return /^(\.{1,2}[/\\]|\/|file:)/.test(type) || /\.(m|c)?[jt]sx?$/.test(type);
}

const NPM_NAME = /^(@[a-z0-9][\w.~-]*\/)?[a-z0-9][\w.~-]*$/;
/** com.example.MySink, org.example.Filter$Builder: lower-case packages, a capitalised class. */
const JAVA_CLASS = /^([a-z_][\w]*\.)+[A-Z][\w]*(\$[\w]+)?$/;

/** Flume's own classes are someone else's business: unknown ones get the usual message. */
function isCustomJavaClass(type: string): boolean {
  return JAVA_CLASS.test(type) && !type.startsWith("org.apache.flume.");
}

/** The registry of one run: the built-in components and the modules the configuration names. */
export class CustomComponentRegistry implements ComponentRegistry {
  constructor(
    private readonly base: ComponentRegistry,
    private readonly loaded: ReadonlyMap<string, AnyDefinition>,
    private readonly failures: ReadonlyMap<string, TypeExplanation>,
  ) {}

  lookupComponent(kind: ComponentKind, type: string): AnyDefinition | undefined {
    const custom = this.loaded.get(type.trim());
    if (custom) return custom.schema.kind === kind ? custom : undefined;
    return this.base.lookupComponent(kind, type);
  }

  allComponents(): AnyDefinition[] {
    return this.base.allComponents();
  }

  /** The definitions the configuration loaded, by the type name as written. */
  get custom(): ReadonlyMap<string, AnyDefinition> {
    return this.loaded;
  }

  explainUnknown(kind: ComponentKind, type: string): TypeExplanation | undefined {
    const t = type.trim();
    const failure = this.failures.get(t);
    if (failure) return failure;
    const custom = this.loaded.get(t);
    if (custom) {
      return { message: `${t} defines a ${custom.schema.kind} (type ${custom.schema.type}), but is configured as a ${kind}`, hint: `use it as a ${custom.schema.kind}, or point to a module that exports a ${kind} definition` };
    }
    if (isCustomJavaClass(t)) {
      return {
        message: `"${t}" is a Java class: Java components cannot run in Flume TS`,
        hint: `port it to TypeScript as a module exporting defineComponent({ kind: "${kind}", ... }) and set the type to its path (see ${GUIDE})`,
      };
    }
    return undefined;
  }
}

/** Every type name a configuration uses, with the kind it is used as (sources, channels, sinks and their parts). */
function typeNames(result: ParseResult): { kind: ComponentKind; type: Located }[] {
  const config = result.config;
  if (!config) return [];
  const out: { kind: ComponentKind; type: Located }[] = [];
  const add = (kind: ComponentKind, type: Located | undefined) => {
    if (type) out.push({ kind, type });
  };
  const entries = (m: Map<string, ComponentEntry>) => [...m.values()];
  for (const e of entries(config.channels)) add("channel", e.type);
  for (const e of entries(config.sinks)) add("sink", e.type);
  for (const e of entries(config.sources)) {
    add("source", e.type);
    add("selector", selectorProps(e).type);
    for (const i of interceptorEntries(e)) add("interceptor", i.type);
  }
  for (const g of entries(config.sinkgroups)) add("sinkprocessor", sinkProcessorProps(g).type);
  return out;
}

/** The parts that components' properties name (`names` in their schemas: a file_roll sink's serializer), as far as the base registry knows the components. */
function namedPartTypes(result: ParseResult, base: ComponentRegistry): { kind: ComponentKind; type: Located }[] {
  const config = result.config;
  if (!config) return [];
  const out: { kind: ComponentKind; type: Located }[] = [];
  for (const e of [...config.sources.values(), ...config.channels.values(), ...config.sinks.values()]) {
    const def = e.type ? base.lookupComponent(e.kind as ComponentKind, e.type.value) : undefined;
    for (const spec of def?.schema.props ?? []) {
      const type = spec.names ? [spec.key, ...(spec.aliases ?? [])].map((k) => e.props[k]).find((l) => l !== undefined) : undefined;
      if (spec.names && type) out.push({ kind: spec.names.kind, type });
    }
  }
  return out;
}

/** Finds the file a module type name stands for: paths against the config's folder, then the working directory. */
function resolveModule(type: string, dirs: readonly string[]): string | undefined {
  if (isModulePath(type)) {
    const p = type.startsWith("file:") ? new URL(type).pathname : type;
    if (path.isAbsolute(p)) return existsSync(p) ? p : undefined;
    for (const dir of dirs) {
      const candidate = path.resolve(dir, p);
      if (existsSync(candidate)) return candidate;
    }
    return undefined;
  }
  for (const dir of dirs) {
    try {
      // Bun's resolver honours a package's "import" condition; Node's require.resolve does not.
      const bun = (globalThis as { Bun?: { resolveSync(name: string, from: string): string } }).Bun;
      if (bun) return bun.resolveSync(type, dir);
      const { createRequire } = process.getBuiltinModule("node:module") as typeof import("node:module");
      return createRequire(path.join(dir, "package.json")).resolve(type);
    } catch {
      // not from this folder
    }
  }
  return undefined;
}

let apiProvided = false;

/**
 * Lets a custom module `import ... from "flume-ts"` under Bun and in the compiled binary (Deno:
 * deno.json). The exports come from the registry the caller passes (src/components/registry.ts
 * gives the library's), so this folder imports nothing above it.
 */
async function provideApi(base: ComponentRegistry): Promise<void> {
  if (apiProvided || !base.moduleApi) return;
  const bun = (globalThis as { Bun?: { plugin(p: { name: string; setup(b: { module(id: string, load: () => { exports: Record<string, unknown>; loader: "object" }): void }): void }): void } }).Bun;
  if (!bun) return;
  apiProvided = true;
  const api = await base.moduleApi();
  bun.plugin({ name: "flume-ts", setup: (build) => build.module("flume-ts", () => ({ exports: api, loader: "object" })) });
}

function isDefinition(x: unknown): x is AnyDefinition {
  const d = x as AnyDefinition | null;
  return typeof d === "object" && d !== null && typeof d.parse === "function" && typeof d.create === "function" && typeof d.schema?.kind === "string" && Array.isArray(d.schema?.props);
}

/** A type name that stands for a module to import, with the kind it is used as. */
export interface ModuleType {
  kind: ComponentKind;
  name: string;
}

/** The type names of parsed configurations (the agents of one file) that stand for modules to import. */
export function moduleTypes(results: readonly ParseResult[], base: ComponentRegistry): ModuleType[] {
  const out = new Map<string, ComponentKind>();
  for (const { kind, type } of results.flatMap((r) => [...typeNames(r), ...namedPartTypes(r, base)])) {
    const name = type.value.trim();
    if (out.has(name) || base.lookupComponent(kind, name)) continue;
    if (isModulePath(name) || (NPM_NAME.test(name) && !isCustomJavaClass(name))) out.set(name, kind);
  }
  return [...out].map(([name, kind]) => ({ kind, name }));
}

/**
 * Imports the modules a parsed configuration names as types and returns the registry to
 * validate and build it with. A module that cannot be found, fails to load or exports no
 * definition becomes a problem at its type's line (through explainUnknown).
 */
export async function loadCustomComponents(result: ParseResult, base: ComponentRegistry, opts: { cwd?: string } = {}): Promise<CustomComponentRegistry> {
  return importModules(result.config?.file, moduleTypes([result], base), base, opts);
}

/** The registry of a configuration that names no module: the built-in types, with the Java class message. */
export function builtInOnly(base: ComponentRegistry): CustomComponentRegistry {
  return new CustomComponentRegistry(base, new Map(), new Map());
}

/** Imports the modules of `types`, looking for paths next to the configuration `file`, then in the working directory. */
export async function importModules(file: string | undefined, types: readonly ModuleType[], base: ComponentRegistry, opts: { cwd?: string } = {}): Promise<CustomComponentRegistry> {
  const loaded = new Map<string, AnyDefinition>();
  const failures = new Map<string, TypeExplanation>();
  const dirs = [...new Set([file ? path.dirname(path.resolve(file)) : undefined, opts.cwd ?? process.cwd()].filter((d): d is string => d !== undefined))];
  for (const { kind, name } of types) {
    const file = resolveModule(name, dirs);
    if (!file) {
      // A bare word that is no installed package is most likely a misspelt built-in type.
      if (isModulePath(name)) failures.set(name, { message: `cannot find the ${kind} module ${name} (looked in ${dirs.join(" and ")})`, hint: `give the path of a .ts or .js file, absolute or relative to the configuration file (see ${GUIDE})` });
      continue;
    }
    let mod: Record<string, unknown>;
    try {
      await provideApi(base);
      const { pathToFileURL } = process.getBuiltinModule("node:url") as typeof import("node:url");
      mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (err) {
      failures.set(name, { message: `cannot load the ${kind} module ${file}: ${(err as Error).message.split("\n")[0]}`, hint: `it must import the API from "flume-ts" and export a definition (see ${GUIDE})` });
      continue;
    }
    const def = [mod.default, mod.definition].find(isDefinition);
    if (!def) {
      failures.set(name, { message: `the module ${file} exports no component definition`, hint: `export default defineComponent({ kind: "${kind}", ... }) (or export const definition = ...), with defineComponent from "flume-ts"` });
      continue;
    }
    loaded.set(name, def);
  }
  return new CustomComponentRegistry(base, loaded, failures);
}
