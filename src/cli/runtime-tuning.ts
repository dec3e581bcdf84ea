/**
 * The JavaScriptCore settings an agent runs with under Bun (`flume run --runtime-profile`). JSC
 * reads its options once, from BUN_JSC_* variables, as the runtime starts, so `flume run` sets
 * them by re-executing itself (execve: the same pid, nothing started yet) before it loads
 * anything else.
 * - footprint (the default): JSC's fourth tier (FTL) off, and a small heap may grow to twice
 *   what survived the last full collection instead of three times, so a burst's garbage is
 *   collected in half the room. One 300 MB TAILDIR file -> memory -> null peaked at 57-60 MB
 *   instead of 77-87 MB, at about a quarter more CPU; FTL alone is 6-10 MB of each peak (its
 *   compiler's code, and memory it frees that the allocator keeps for a while).
 * - throughput: Bun's own settings (seq -> memory -> null 13-15 M events/s instead of 8-10 M).
 * A BUN_JSC_ variable the user set wins over a profile's.
 */
export const RUNTIME_PROFILES = {
  footprint: { useFTLJIT: "false", heapGrowthMaxIncrease: "1" },
  throughput: {},
} as const satisfies Record<string, Readonly<Record<string, string>>>;

export type RuntimeProfile = keyof typeof RUNTIME_PROFILES;
export const DEFAULT_RUNTIME_PROFILE: RuntimeProfile = "footprint";
const PROFILE_FLAG = "--runtime-profile";

/** The profile the command line asks for (the default when it names none); null for a value that is not one, left to the argument parser to report. */
export function profileOf(args: readonly string[]): RuntimeProfile | null {
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--") break;
    if (a === PROFILE_FLAG) value = args[++i];
    else if (a.startsWith(`${PROFILE_FLAG}=`)) value = a.slice(PROFILE_FLAG.length + 1);
  }
  if (value === undefined) return DEFAULT_RUNTIME_PROFILE;
  const name = Object.keys(RUNTIME_PROFILES).find((p) => p === value.toLowerCase());
  return (name as RuntimeProfile | undefined) ?? null;
}

/** Names the variables the re-execution added, so the agent takes them off again (its children don't inherit them). */
export const ADDED_VARIABLE = "FLUME_JSC_ADDED";

export interface ProcessView {
  argv: readonly string[];
  execArgv: readonly string[];
  execPath: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** What to execute instead of this process: null when it already runs as it should. */
export function tunedCommand(p: ProcessView): { file: string; args: string[]; env: Record<string, string> } | null {
  if (p.env[ADDED_VARIABLE] !== undefined) return null;
  const profile = profileOf(p.argv.slice(2));
  if (profile === null) return null;
  const options: Readonly<Record<string, string>> = RUNTIME_PROFILES[profile];
  const added = Object.keys(options).filter((name) => p.env[`BUN_JSC_${name}`] === undefined);
  if (added.length === 0) return null;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.env)) if (v !== undefined) env[k] = v;
  for (const name of added) env[`BUN_JSC_${name}`] = options[name];
  env[ADDED_VARIABLE] = added.map((name) => `BUN_JSC_${name}`).join(",");
  // A compiled binary's argv[1] is its entry point inside the binary, which it finds itself.
  const compiled = (p.argv[1] ?? "").startsWith("/$bunfs/");
  const args = compiled ? [p.execPath, ...p.argv.slice(2)] : [p.execPath, ...p.execArgv, ...p.argv.slice(1)];
  return { file: p.execPath, args, env };
}

const applied: string[] = [];

/** The `BUN_JSC_` settings this process was re-executed with, as name=value (none when it was not). */
export function appliedSettings(): readonly string[] {
  return applied;
}

type Execve = (file: string, args: string[], env: Record<string, string>) => never;

/**
 * Re-executes this process with its runtime profile's JSC settings when it does not run with
 * them yet (Bun only); in the re-executed process, takes the added variables out of its environment.
 */
export function tuneRuntime(): void {
  if (typeof (globalThis as { Bun?: unknown }).Bun === "undefined") return;
  const added = process.env[ADDED_VARIABLE];
  if (added !== undefined) {
    for (const name of added.split(",")) {
      applied.push(`${name}=${process.env[name]}`);
      delete process.env[name];
    }
    delete process.env[ADDED_VARIABLE];
    return;
  }
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (typeof execve !== "function") return;
  const next = tunedCommand({ argv: process.argv, execArgv: process.execArgv, execPath: process.execPath, env: process.env });
  if (next === null) return;
  try {
    execve.call(process, next.file, next.args, next.env);
  } catch {
    // Not executable again (a deleted binary, a seccomp policy): run with the defaults.
  }
}
