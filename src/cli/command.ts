/**
 * Commands from one declaration: `command()` turns an ArgsSpec and a run function into a citty
 * command whose --help, parsing and usage errors (`flume <command>: <message>`, exit 2) all come
 * from that spec; `commandGroup()` does the same for a command made of subcommands.
 */
import { type ArgsDef, type CommandDef, defineCommand, renderUsage, type Resolvable } from "citty";
import { forStream } from "../io/terminal.ts";
import { aliasesOf, type ArgsSpec, type Parsed, parseCommandLine, UsageError } from "./args.ts";

/** The exit code of every usage error. */
export const EXIT_USAGE = 2;

export interface CommandSpec<S extends ArgsSpec> {
  /** The words after `flume`, as messages name the command: "validate", "channel inspect". */
  name: string;
  description: string;
  args: S;
  /** Returns the exit code (nothing: 0). A UsageError thrown here exits 2 with its message. */
  run(args: Parsed<S>): number | void | Promise<number | void>;
}

export function command<const S extends ArgsSpec>(spec: CommandSpec<S>): CommandDef {
  return defineCommand({
    meta: { name: spec.name.split(" ").at(-1), description: spec.description },
    args: helpArgs(spec.args),
    async run({ rawArgs }) {
      let args: Parsed<S>;
      try {
        args = parseCommandLine(rawArgs, spec.args);
      } catch (err) {
        if (err instanceof UsageError) return exitUsage(spec.name, `${err.message}; see flume ${spec.name} --help`);
        throw err;
      }
      let code: number | void;
      try {
        code = await spec.run(args);
      } catch (err) {
        if (err instanceof UsageError) return exitUsage(spec.name, err.message);
        throw err;
      }
      finish(code ?? 0);
    },
  });
}

export interface GroupSpec {
  /** "flume" for the root, else the words after `flume`. */
  name: string;
  description: string;
  version?: string;
  subCommands: Record<string, Resolvable<CommandDef>>;
}

/** A command made of subcommands: none, an unknown one or an option before it exits 2 naming it. */
export function commandGroup(spec: GroupSpec): CommandDef {
  const where = spec.name === "flume" ? "flume" : `flume ${spec.name}`;
  const words = where.split(" ");
  // citty names a command after its parent's meta: the words before the last one, for the usage.
  const parent: CommandDef | undefined = words.length > 1 ? { meta: { name: words.slice(0, -1).join(" ") } } : undefined;
  const group: CommandDef = defineCommand({
    meta: { name: words.at(-1), description: spec.description, version: spec.version },
    subCommands: spec.subCommands,
    async setup({ rawArgs }) {
      const first = rawArgs[0];
      const fail = (message: string) => exitUsage(spec.name, `${message}; see ${where} --help`);
      if (first === undefined) {
        await printUsage(group, parent);
        fail("no command given");
      } else if (first.startsWith("-")) fail(`unknown option "${first}"`);
      else if (!Object.hasOwn(spec.subCommands, first)) fail(`unknown command "${first}"`);
    },
  });
  return group;
}

/** Prints a command's --help to stdout; the one place help is printed (citty colours it by its own rule). */
export async function printUsage<T extends ArgsDef = ArgsDef>(cmd: CommandDef<T>, parent?: CommandDef<T>): Promise<void> {
  process.stdout.write(forStream(process.stdout, await renderUsage(cmd, parent)) + "\n\n");
}

/** Prints `flume <command>: <message>` and exits 2. */
export function exitUsage(command: string, message: string): never {
  process.stderr.write(`${command === "flume" ? "flume" : `flume ${command}`}: ${message}\n`);
  process.exit(EXIT_USAGE);
}

/**
 * Ends a finished command with `code`. The exit code is set, not forced: Bun's process.exit drops
 * output still queued for a slow pipe. A handle left open (a socket a component did not close)
 * still ends the process a moment later.
 */
function finish(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 1000).unref();
}

/** citty's view of a spec, for --help: short aliases as citty shows them, the rest in the description. */
function helpArgs(spec: ArgsSpec): ArgsDef {
  const out: ArgsDef = {};
  for (const [key, a] of Object.entries(spec)) {
    const aliases = aliasesOf(a);
    const notes = [
      ...aliases.filter((x) => x.length > 1).map((x) => `also --${x}`),
      ...(a.type === "string" && a.default !== undefined ? [`default ${a.default}`] : []),
    ];
    const description = notes.length > 0 ? `${a.description} (${notes.join("; ")})` : a.description;
    const alias = aliases.filter((x) => x.length === 1);
    if (a.type === "positional") out[key] = { type: "positional", required: false, description };
    else if (a.type === "boolean") out[key] = { type: "boolean", alias, description };
    else out[key] = { type: "string", alias, valueHint: a.valueHint ?? a.parse?.hint, description };
  }
  return out;
}
