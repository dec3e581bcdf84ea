/**
 * `flume channel inspect <dataDir>[,<dataDir>...] [--checkpointDir DIR] [--verify]`: prints a
 * file channel's data files, their records and checksum status, the pending events and the
 * lock holder; read-only, safe while the agent runs. With --verify it exits 1 when a data file
 * is damaged (a torn tail from a crash is not damage: the channel cuts it off on start), like
 * Flume's FileChannelIntegrityTool.
 */
import { defineCommand } from "citty";
import { existsSync } from "node:fs";
import { formatReport, inspectChannel } from "../components/channels/file/inspect.ts";
import { parseDataDirs } from "../components/channels/file/index.ts";

const inspect = defineCommand({
  meta: { name: "inspect", description: "Print a file channel's data files, pending events and checksum status" },
  args: {
    dataDir: { type: "positional", required: true, description: "the channel's dataDirs (comma-separated)" },
    checkpointDir: { type: "string", description: "the channel's checkpointDir, for an exact pending count" },
    verify: { type: "boolean", default: false, description: "exit 1 if a data file is damaged" },
  },
  run({ args }) {
    const dirs = parseDataDirs(String(args.dataDir));
    const missing = dirs.filter((d) => !existsSync(d));
    if (missing.length > 0) {
      console.error(`flume channel inspect: no such directory: ${missing.join(", ")}`);
      process.exit(2);
    }
    const report = inspectChannel(dirs, args.checkpointDir ? String(args.checkpointDir) : undefined);
    console.log(formatReport(report));
    if (args.verify && report.damaged) process.exit(1);
  },
});

export const channel = defineCommand({
  meta: { name: "channel", description: "Tools for channels: inspect a file channel's data" },
  subCommands: { inspect },
});
