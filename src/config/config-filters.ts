/**
 * Flume's config filters (`<agent>.configfilters = f1`, `<agent>.configfilters.f1.type = ...`)
 * that resolve `${f1['key']}` in component settings: `env` reads an environment variable,
 * `external` runs a command with the key as its last argument and takes the first line it
 * prints. `hadoop` (the Hadoop credential store) is not available in Flume TS.
 */

import type { ComponentSchema } from "./schema.ts";
import type { FilterLookup } from "./substitution.ts";

export const envConfigFilterSchema: ComponentSchema = {
  kind: "configfilter",
  type: "env",
  aliases: ["org.apache.flume.configfilter.EnvironmentVariableConfigFilter"],
  doc: "Replaces ${name['KEY']} with the value of the environment variable KEY.",
  props: [],
};

export const DEFAULT_EXTERNAL_TIMEOUT_MS = 10_000;

export const externalConfigFilterSchema: ComponentSchema = {
  kind: "configfilter",
  type: "external",
  aliases: ["org.apache.flume.configfilter.ExternalProcessConfigFilter"],
  doc: "Replaces ${name['KEY']} with the first line printed by `command KEY` (e.g. a secrets tool).",
  props: [
    { key: "command", type: "string", required: true, doc: "Command to run; split on whitespace, the key is appended as last argument" },
    { key: "charset", type: "string", default: "UTF-8", doc: "Character set of the command's output" },
    { key: "timeout", type: "int", default: DEFAULT_EXTERNAL_TIMEOUT_MS, min: 1, doc: "Milliseconds the command may run before it is killed (Flume TS addition)" },
  ],
};

const HADOOP_TYPES = ["hadoop", "org.apache.flume.configfilter.HadoopCredentialStoreConfigFilter"];

export const configFilterSchemas: readonly ComponentSchema[] = [envConfigFilterSchema, externalConfigFilterSchema];

export function lookupConfigFilterSchema(type: string): ComponentSchema | undefined {
  const t = type.toLowerCase();
  return configFilterSchemas.find((s) => s.type.toLowerCase() === t || s.aliases?.some((a) => a.toLowerCase() === t));
}

export type ConfigFilterSetup = { filter: FilterLookup } | { error: string; hint: string; key: string };

/**
 * Creates the filter for a type and its (already substituted) settings, or explains why not.
 * Lookups are cached: Flume TS resolves each key once per load.
 */
export function createConfigFilter(type: string, props: Record<string, string>, env: Record<string, string | undefined>): ConfigFilterSetup {
  if (HADOOP_TYPES.some((h) => h.toLowerCase() === type.toLowerCase())) {
    return {
      key: "type",
      error: "the hadoop credential store config filter is not supported by Flume TS",
      hint: "use type = env or type = external with a command that prints the secret",
    };
  }
  const schema = lookupConfigFilterSchema(type);
  if (!schema) {
    return { key: "type", error: `unknown config filter type "${type}"`, hint: "use env or external" };
  }
  if (schema === envConfigFilterSchema) {
    return {
      filter: {
        lookup(key) {
          const value = env[key];
          return value === undefined
            ? { error: `environment variable ${key} is not set`, hint: `export ${key}=... before starting` }
            : { value };
        },
      },
    };
  }
  const command = (props.command ?? "").trim();
  if (command === "") return { key: "command", error: "is required: the command that prints a value for a key", hint: "e.g. command = /usr/bin/passwordResolver.sh" };
  const charset = (props.charset ?? "UTF-8").trim();
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset as ConstructorParameters<typeof TextDecoder>[0]);
  } catch {
    return { key: "charset", error: `unsupported charset "${charset}"`, hint: "use UTF-8" };
  }
  const timeoutRaw = (props.timeout ?? String(DEFAULT_EXTERNAL_TIMEOUT_MS)).trim();
  const timeout = /^\d+$/.test(timeoutRaw) ? Number(timeoutRaw) : NaN;
  if (!(timeout >= 1)) return { key: "timeout", error: `expected a positive whole number of milliseconds, got "${timeoutRaw}"`, hint: `the default is ${DEFAULT_EXTERNAL_TIMEOUT_MS}` };
  const cache = new Map<string, ReturnType<FilterLookup["lookup"]>>();
  return {
    filter: {
      lookup(key) {
        let r = cache.get(key);
        if (!r) {
          r = runExternal(command, key, decoder, timeout);
          cache.set(key, r);
        }
        return r;
      },
    },
  };
}

function runExternal(command: string, key: string, decoder: TextDecoder, timeout: number): ReturnType<FilterLookup["lookup"]> {
  const [program, ...args] = command.split(/\s+/);
  // spawnSync: configuration loading is synchronous and happens before anything starts.
  // Loaded here, not at start: most configurations use no filter.
  const { spawnSync } = process.getBuiltinModule("node:child_process") as typeof import("node:child_process");
  const r = spawnSync(program, [...args, key], { timeout, stdio: ["ignore", "pipe", "pipe"], killSignal: "SIGKILL" });
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    if (code === "ETIMEDOUT") return { error: `command "${command}" did not finish within ${timeout} ms`, hint: "make it faster or raise configfilters.<name>.timeout" };
    return { error: `cannot run "${program}": ${r.error.message}`, hint: "check configfilters.<name>.command" };
  }
  if (r.signal) return { error: `command "${command}" was killed by ${r.signal}`, hint: "check the command" };
  if (r.status !== 0) {
    const stderr = decoder.decode(r.stderr ?? new Uint8Array()).trim().split(/\r?\n/)[0] ?? "";
    return { error: `command "${command} ${key}" exited with status ${r.status}${stderr ? `: ${stderr}` : ""}`, hint: "check that the command knows this key" };
  }
  const out = decoder.decode(r.stdout ?? new Uint8Array());
  if (out.length === 0) return { error: `command "${command} ${key}" printed nothing`, hint: "the command must print the value on its first line" };
  // Only the first line counts, as in Flume.
  return { value: out.split(/\r?\n/)[0] };
}
