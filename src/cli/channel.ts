/**
 * `flume channel inspect <dataDir>[,<dataDir>...] [--checkpointDir DIR] [--verify]`: prints a
 * file channel's data files, their records and checksum status, the pending events and the
 * lock holder (running, or dead: a stale lock the next start takes over); read-only, safe
 * while the agent runs. A directory that is not a data directory (a checkpoint directory, say)
 * is refused with exit 1. With --verify it exits 1 when a data file
 * is damaged (a torn tail from a crash is not damage: the channel cuts it off on start), like
 * Flume's FileChannelIntegrityTool.
 */
import { statSync } from "node:fs";
import { formatReport, inspectChannel, notADataDirectory } from "../components/channels/file/inspect.ts";
import { parseDataDirs } from "../components/channels/file/index.ts";
import { UsageError } from "./args.ts";
import { command, commandGroup } from "./command.ts";
import { findFlumeFiles } from "../migrate/flume-file-channel/detect.ts";

/** The directories of `dirs` that are missing or not directories, as a usage message; null when all are. */
export function badDirectories(dirs: readonly string[]): string | null {
  const missing = dirs.filter((d) => !statSync(d, { throwIfNoEntry: false }));
  if (missing.length > 0) return `no such directory: ${missing.join(", ")}`;
  const files = dirs.filter((d) => !statSync(d).isDirectory());
  return files.length > 0 ? `not a directory: ${files.join(", ")}` : null;
}

const inspect = command({
  name: "channel inspect",
  description: "Print a file channel's data files, pending events and checksum status",
  args: {
    dataDir: { type: "positional", description: "the channel's dataDirs (comma-separated)" },
    checkpointDir: { type: "string", description: "the channel's checkpointDir, for an exact pending count" },
    verify: { type: "boolean", description: "exit 1 if a data file is damaged" },
    "from-flume": { type: "boolean", description: "the directories hold an Apache Flume 1.11 file channel: show what `channel migrate` would copy" },
    dataDirs: { type: "string", description: "with --from-flume: the Flume channel's dataDirs (comma-separated)" },
    backupCheckpointDir: { type: "string", description: "with --from-flume: the Flume channel's backupCheckpointDir" },
  },
  async run(a) {
    if (a["from-flume"]) return (await import("./channel-migrate.ts")).inspectFromFlume(a, a.dataDir);
    const dirs = parseDataDirs(a.dataDir ?? "");
    if (dirs.length === 0) throw new UsageError("missing the data directory: flume channel inspect <dataDir>[,<dataDir>...]");
    const wrong = badDirectories(a.checkpointDir === undefined ? dirs : [...dirs, a.checkpointDir]);
    if (wrong) throw new UsageError(wrong);
    const flume = findFlumeFiles(a.checkpointDir === undefined ? [] : [a.checkpointDir], dirs);
    if (flume) {
      process.stderr.write(`flume channel inspect: ${flume.dir} holds an Apache Flume file channel (${flume.names.join(", ")}); inspect it with --from-flume --checkpointDir DIR --dataDirs DIR\n`);
      return 1;
    }
    const notData = dirs.map(notADataDirectory).filter((m) => m !== null);
    if (notData.length > 0) {
      for (const m of notData) process.stderr.write(`flume channel inspect: ${m}\n`);
      return 1;
    }
    const report = inspectChannel(dirs, a.checkpointDir);
    console.log(formatReport(report));
    return a.verify && report.damaged ? 1 : 0;
  },
});

/** One entry per subcommand: the usage, the dispatch and the "unknown command" check follow. */
export const channel = commandGroup({
  name: "channel",
  description: "Tools for channels: inspect a file channel's data, migrate an Apache Flume file channel",
  subCommands: { inspect, migrate: () => import("./channel-migrate.ts").then((m) => m.migrate) },
});
