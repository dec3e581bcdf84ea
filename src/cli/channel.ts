/**
 * `flume channel inspect <dataDir>[,<dataDir>...] [--checkpointDir DIR] [--verify]`: prints a
 * file channel's data files, their records and checksum status, the pending events and the
 * lock holder; read-only, safe while the agent runs. With --verify it exits 1 when a data file
 * is damaged (a torn tail from a crash is not damage: the channel cuts it off on start), like
 * Flume's FileChannelIntegrityTool. `--from-flume` and `channel migrate` are in channel-migrate.ts.
 */
import { type ArgsDef, type CommandDef, defineCommand, showUsage } from "citty";
import { statSync } from "node:fs";
import { formatReport, inspectChannel } from "../components/channels/file/inspect.ts";
import { parseDataDirs } from "../components/channels/file/index.ts";
import { findFlumeFiles } from "../migrate/flume-file-channel/detect.ts";
import { exitUsage, requireSubcommand, unknownArgument } from "./args.ts";

const INSPECT_ARGS = {
  // Not required for citty: a missing one is reported by run() with exit 2, as every usage error.
  dataDir: { type: "positional", required: false, description: "the channel's dataDirs (comma-separated)" },
  checkpointDir: { type: "string", description: "the channel's checkpointDir, for an exact pending count" },
  verify: { type: "boolean", default: false, description: "exit 1 if a data file is damaged" },
  fromFlume: { type: "boolean", default: false, description: "the directories hold an Apache Flume 1.11 file channel: show what `channel migrate` would copy" },
  dataDirs: { type: "string", description: "with --from-flume: the Flume channel's dataDirs (comma-separated)" },
  backupCheckpointDir: { type: "string", description: "with --from-flume: the Flume channel's backupCheckpointDir" },
} satisfies ArgsDef;

/** The directories of `dirs` that are missing or not directories, as a usage message; null when all are. */
export function badDirectories(dirs: readonly string[]): string | null {
  const missing = dirs.filter((d) => !statSync(d, { throwIfNoEntry: false }));
  if (missing.length > 0) return `no such directory: ${missing.join(", ")}`;
  const files = dirs.filter((d) => !statSync(d).isDirectory());
  return files.length > 0 ? `not a directory: ${files.join(", ")}` : null;
}

const inspect = defineCommand({
  meta: { name: "inspect", description: "Print a file channel's data files, pending events and checksum status" },
  args: INSPECT_ARGS,
  async run({ args, rawArgs }) {
    const bad = unknownArgument(rawArgs, INSPECT_ARGS);
    if (bad) exitUsage("channel inspect", bad);
    if (args.fromFlume) return (await import("./channel-migrate.ts")).inspectFromFlume(args, args.dataDir);
    const dirs = typeof args.dataDir === "string" ? parseDataDirs(args.dataDir).filter((d) => d !== "") : [];
    if (dirs.length === 0) exitUsage("channel inspect", "missing the data directory: flume channel inspect <dataDir>[,<dataDir>...]");
    const checkpointDir = typeof args.checkpointDir === "string" ? args.checkpointDir : undefined;
    const wrong = badDirectories(checkpointDir === undefined ? dirs : [...dirs, checkpointDir]);
    if (wrong) exitUsage("channel inspect", wrong);
    const flume = findFlumeFiles(checkpointDir === undefined ? [] : [checkpointDir], dirs);
    if (flume) {
      process.stderr.write(`flume channel inspect: ${flume.dir} holds an Apache Flume file channel (${flume.names.join(", ")}); inspect it with --from-flume --checkpointDir DIR --dataDirs DIR\n`);
      process.exit(1);
    }
    const report = inspectChannel(dirs, checkpointDir);
    console.log(formatReport(report));
    if (args.verify && report.damaged) process.exit(1);
  },
});

export const channel: CommandDef = defineCommand({
  meta: { name: "channel", description: "Tools for channels: inspect a file channel's data, migrate an Apache Flume file channel" },
  setup: requireSubcommand("channel", ["inspect", "migrate"], () => showUsage(channel)),
  subCommands: { inspect, migrate: () => import("./channel-migrate.ts").then((m) => m.migrate) },
});
