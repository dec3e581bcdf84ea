/**
 * `flume channel migrate --from-flume ...` and `flume channel inspect --from-flume ...`: copy the
 * pending events of a stopped Apache Flume 1.11 file channel into a new Flume TS file channel,
 * or show what that would copy (src/migrate/flume-file-channel/). Exit codes: 0 done, 1 refused
 * (a running agent, damage, a target that is not empty), 2 usage errors.
 */
import path from "node:path";
import { parseDataDirs } from "../components/channels/file/index.ts";
import { ChannelException } from "../core/errors.ts";
import type { FlumeChannelDirs } from "../migrate/flume-file-channel/channel-reader.ts";
import { FlumeMigrationError } from "../migrate/flume-file-channel/errors.ts";
import { formatFlumeReport, inspectFlumeChannel } from "../migrate/flume-file-channel/inspect.ts";
import { DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, type MigrationReport, migrateFlumeChannel } from "../migrate/flume-file-channel/migrate.ts";
import { int, UsageError } from "./args.ts";
import { command } from "./command.ts";
import { badDirectories } from "./channel.ts";

const SOURCE_ARGS = {
  "from-flume": { type: "boolean", description: "the channel is an Apache Flume 1.11 file channel" },
  checkpointDir: { type: "string", description: "the Flume channel's checkpointDir" },
  dataDirs: { type: "string", description: "the Flume channel's dataDirs (comma-separated)" },
  backupCheckpointDir: { type: "string", description: "the Flume channel's backupCheckpointDir (useDualCheckpoints), used when the checkpoint is bad" },
} as const;

const dirsOf = (value: string | undefined): string[] => (value ? parseDataDirs(value) : []);

/** The Flume directories named by the arguments; a UsageError when one is missing or wrong. */
function flumeDirs(args: { checkpointDir?: string; dataDirs?: string; backupCheckpointDir?: string }, positional?: string): FlumeChannelDirs {
  const dataDirs = dirsOf(args.dataDirs);
  if (dataDirs.length === 0) dataDirs.push(...dirsOf(positional));
  const checkpointDir = args.checkpointDir || undefined;
  if (!checkpointDir) throw new UsageError("--from-flume needs the Flume channel's --checkpointDir DIR");
  if (dataDirs.length === 0) throw new UsageError("--from-flume needs the Flume channel's --dataDirs DIR[,DIR...]");
  const backupCheckpointDir = args.backupCheckpointDir || undefined;
  const wrong = badDirectories([checkpointDir, ...dataDirs, ...(backupCheckpointDir ? [backupCheckpointDir] : [])]);
  if (wrong) throw new UsageError(wrong);
  return { checkpointDir, dataDirs, backupCheckpointDir };
}

/** `flume channel inspect --from-flume`, called by inspect: exit 1 with --verify when the channel cannot be migrated. */
export function inspectFromFlume(args: { checkpointDir?: string; dataDirs?: string; backupCheckpointDir?: string; verify: boolean }, positional: string | undefined): number {
  const report = inspectFlumeChannel(flumeDirs(args, positional));
  console.log(formatFlumeReport(report));
  return args.verify && report.error ? 1 : 0;
}

function summary(r: MigrationReport): string {
  const s = r.snapshot;
  const c = s.checkpoint;
  const lines = c.rejected.map((x) => `checkpoint not used: ${x.reason}`);
  lines.push(c.used === "none" ? "checkpoint: none usable; replayed the whole log, as Flume does" : `checkpoint: ${c.used === "backup" ? "backup " : ""}${c.dir} (write order id ${c.writeOrderID}), then the log after it`);
  for (const f of r.staleLocks) lines.push(`lock: ${f} is left over from an agent that did not exit cleanly (no process holds it)`);
  if (s.replay.openTransactions > 0) lines.push(`not migrated: ${s.replay.uncommittedPuts} puts of ${s.replay.openTransactions} transactions that never committed`);
  lines.push(`events found: ${s.pending.length}`);
  lines.push(`events migrated: ${r.migrated} (${r.bodyBytes} bytes of bodies, ${r.transactions} transaction${r.transactions === 1 ? "" : "s"})`);
  lines.push(`files read: ${s.filesRead.length} (${s.logFiles.length} data files); Flume's files were not changed`);
  lines.push(
    `the Flume TS file channel in checkpointDir ${path.resolve(r.target.checkpointDir)}, dataDirs ${r.target.dataDirs.map((d) => path.resolve(d)).join(",")} now holds them: ` +
      `point the channel's checkpointDir and dataDirs there${r.raisedCapacity === null ? "" : ` and set its capacity to at least ${r.raisedCapacity}`}`,
  );
  return lines.join("\n");
}

export const migrate = command({
  name: "channel migrate",
  description: "Copy the pending events of a stopped Apache Flume file channel into a new Flume TS file channel",
  args: {
    ...SOURCE_ARGS,
    "to-checkpointDir": { type: "string", description: "checkpointDir of the new Flume TS file channel" },
    "to-dataDirs": { type: "string", description: "dataDirs of the new Flume TS file channel (comma-separated)" },
    batchSize: { type: "string", parse: int(1, MAX_BATCH_SIZE), default: String(DEFAULT_BATCH_SIZE), description: `events per transaction (at most ${MAX_BATCH_SIZE})` },
    "assume-stopped": { type: "boolean", description: "where /proc/locks is missing (not Linux): you checked the Flume agent is stopped" },
  },
  async run(args) {
    if (!args["from-flume"]) throw new UsageError("name the source kind: --from-flume (an Apache Flume 1.11 file channel) is the only one");
    const source = flumeDirs(args);
    const toCheckpointDir = args["to-checkpointDir"] || undefined;
    const toDataDirs = dirsOf(args["to-dataDirs"]);
    if (!toCheckpointDir) throw new UsageError("missing --to-checkpointDir DIR: the checkpointDir of the new Flume TS channel");
    if (toDataDirs.length === 0) throw new UsageError("missing --to-dataDirs DIR[,DIR...]: the dataDirs of the new Flume TS channel");
    try {
      const report = await migrateFlumeChannel({ source, target: { checkpointDir: toCheckpointDir, dataDirs: toDataDirs }, batchSize: args.batchSize, assumeStopped: args["assume-stopped"] });
      console.log(summary(report));
      return 0;
    } catch (err) {
      if (err instanceof FlumeMigrationError || err instanceof ChannelException) {
        process.stderr.write(`flume channel migrate: ${err.message}\n`);
        return 1;
      }
      throw err;
    }
  },
});
