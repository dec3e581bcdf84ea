/**
 * The one way from a configuration to the typed model, for every command and the library:
 * read the file (UTF-8, or ISO-8859-1 as Java reads properties files when it is not UTF-8),
 * parse it (variables and config filters are substituted there), import the custom component
 * modules its types name, then validate it into the model the agent builder takes.
 * `flume run`, `flume validate`, the reloader, `flume simulate` and EmbeddedAgent load here.
 */
import { readFileSync } from "node:fs";
import { builtInOnly, type CustomComponentRegistry, importModules, moduleTypes } from "./custom-components.ts";
import { type ParseOptions, parseEveryAgent, parseFlumeConfig, parseFlumeConfigMap, type ParseResult } from "./flume-config.ts";
import { decodeProperties } from "./properties.ts";
import { type ComponentRegistry, type LoadResult, withModel } from "./validate.ts";

/** A loaded configuration: its problems, its model, and the registry it was checked with (custom types included). */
export type Loaded = LoadResult & { registry: CustomComponentRegistry };

/** The file could not be read (missing, a directory, no permission). */
export class ConfigReadError extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`cannot read ${file}: ${reason}`);
    this.name = "ConfigReadError";
  }
}

/** The text of a configuration file; throws ConfigReadError. */
export function readConfigFile(file: string): string {
  try {
    return decodeProperties(readFileSync(file));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigReadError(file, e.code === "ENOENT" ? "no such file" : e.message);
  }
}

/**
 * Imports the modules the parsed agents name, then validates each. Synchronous when no type
 * names a module, so such a configuration loads in the caller's tick (`flume run` starts there).
 */
function finish(parsed: ParseResult[], file: string, base: ComponentRegistry): Loaded[] | Promise<Loaded[]> {
  const types = moduleTypes(parsed, base);
  const validate = (registry: CustomComponentRegistry): Loaded[] => parsed.map((p) => ({ ...withModel(p, registry), registry }));
  if (types.length === 0) return validate(builtInOnly(base));
  return importModules(file, types, base).then(validate);
}

function first(loaded: Loaded[] | Promise<Loaded[]>): Loaded | Promise<Loaded> {
  return loaded instanceof Promise ? loaded.then((l) => l[0]) : loaded[0];
}

/** One agent of a configuration's text (`-n`, or the only one). */
export function loadConfigText(text: string, file: string, opts: ParseOptions, base: ComponentRegistry): Loaded | Promise<Loaded> {
  return first(finish([parseFlumeConfig(text, file, opts)], file, base));
}

/** Every agent of a configuration's text, each as `flume run -n <agent>` loads it (a tier for `flume simulate`). */
export function loadEveryAgentText(text: string, file: string, opts: Omit<ParseOptions, "agentName">, base: ComponentRegistry): Loaded[] | Promise<Loaded[]> {
  return finish(parseEveryAgent(text, file, opts), file, base);
}

/** Reads and loads one agent of a file; the text is returned too (the reloader compares it). Throws ConfigReadError. */
export function loadConfigFile(file: string, opts: ParseOptions, base: ComponentRegistry): { text: string; loaded: Loaded | Promise<Loaded> } {
  const text = readConfigFile(file);
  return { text, loaded: loadConfigText(text, file, opts, base) };
}

/**
 * A configuration given as key/values (EmbeddedAgent's map; `source` names it in problems).
 * Synchronous: a type naming a module is reported as unknown, as there is no file to resolve it from.
 */
export function loadConfigMap(properties: Record<string, string> | Map<string, string>, source: string, opts: ParseOptions, base: ComponentRegistry): Loaded {
  const registry = builtInOnly(base);
  return { ...withModel(parseFlumeConfigMap(properties, source, opts), registry), registry };
}
