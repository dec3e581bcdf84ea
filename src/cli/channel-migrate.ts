/**
 * `flume channel migrate --from-flume ...` and `flume channel inspect --from-flume ...`: copy the
 * pending events of a stopped Apache Flume 1.11 file channel into a new Flume TS file channel,
 * or show what that would copy (src/migrate/flume-file-channel/). Exit codes: 0 done, 1 refused
 * (a running agent, damage, a target that is not empty), 2 usage errors.
 */
import { type ArgsDef, defineCommand } from "citty";
import path from "node:path";
import { parseDataDirs } from "../components/channels/file/index.ts";
import { ChannelException } from "../core/errors.ts";
import type { FlumeChannelDirs } from "../migrate/flume-file-channel/channel-reader.ts";
import { FlumeMigrationError } from "../migrate/flume-file-channel/errors.ts";
import { formatFlumeReport, inspectFlumeChannel } from "../migrate/flume-file-channel/inspect.ts";
import { DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, type MigrationReport, migrateFlumeChannel } from "../migrate/flume-file-channel/migrate.ts";
import { exitUsage, unknownArgument } from "./args.ts";
import { badDirectories } from "./channel.ts";

const SOURCE_ARGS = {
  fromFlume: { type: "boolean", default: false, description: "the channel is an Apache Flume 1.11 file channel" },
  checkpointDir: { type: "string", description: "the Flume channel's checkpointDir" },
  dataDirs: { type: "string", description: "the Flume channel's dataDirs (comma-separated)" },
  backupCheckpointDir: { type: "string", description: "the Flume channel's backupCheckpointDir (useDualCheckpoints), used when the checkpoint is bad" },
} satisfies ArgsDef;

const MIGRATE_ARGS = {
  ...SOURCE_ARGS,
  toCheckpointDir: { type: "string", alias: ["to-checkpointDir"], description: "checkpointDir of the new Flume TS file channel" },
  toDataDirs: { type: "string", alias: ["to-dataDirs"], description: "dataDirs of the new Flume TS file channel (comma-separated)" },
  batchSize: { type: "string", description: `events per transaction (default ${DEFAULT_BATCH_SIZE}, at most ${MAX_BATCH_SIZE})` },
  assumeStopped: { type: "boolean", default: false, description: "where /proc/locks is missing (not Linux): you checked the Flume agent is stopped" },
} satisfies ArgsDef;

const dirsOf = (value: unknown): string[] => (typeof value === "string" ? parseDataDirs(value) : []);

/** The Flume directories named by the arguments, or a usage exit. */
function flumeDirs(command: string, args: { checkpointDir?: unknown; dataDirs?: unknown; backupCheckpointDir?: unknown }, positional?: unknown): FlumeChannelDirs {
  const dataDirs = dirsOf(args.dataDirs);
  if (dataDirs.length === 0) dataDirs.push(...dirsOf(positional));
  const checkpointDir = typeof args.checkpointDir === "string" && args.checkpointDir !== "" ? args.checkpointDir : undefined;
  if (!checkpointDir) exitUsage(command, "--from-flume needs the Flume channel's --checkpointDir DIR");
  if (dataDirs.length === 0) exitUsage(command, "--from-flume needs the Flume channel's --dataDirs DIR[,DIR...]");
  const backupCheckpointDir = typeof args.backupCheckpointDir === "string" && args.backupCheckpointDir !== "" ? args.backupCheckpointDir : undefined;
  const wrong = badDirectories([checkpointDir, ...dataDirs, ...(backupCheckpointDir ? [backupCheckpointDir] : [])]);
  if (wrong) exitUsage(command, wrong);
  return { checkpointDir, dataDirs, backupCheckpointDir };
}

/** `flume channel inspect --from-flume`, called by inspect. Exits 1 with --verify when the channel cannot be migrated. */
export function inspectFromFlume(args: Record<string, unknown>, positional: unknown): void {
  const report = inspectFlumeChannel(flumeDirs("channel inspect", args, positional));
  console.log(formatFlumeReport(report));
  if (args.verify && report.error) process.exit(1);
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

export const migrate = defineCommand({
  meta: { name: "migrate", description: "Copy the pending events of a stopped Apache Flume file channel into a new Flume TS file channel" },
  args: MIGRATE_ARGS,
  async run({ args, rawArgs }) {
    const command = "channel migrate";
    const bad = unknownArgument(rawArgs, MIGRATE_ARGS);
    if (bad) exitUsage(command, bad);
    if (!args.fromFlume) exitUsage(command, "name the source kind: --from-flume (an Apache Flume 1.11 file channel) is the only one");
    const source = flumeDirs(command, args);
    const toCheckpointDir = typeof args.toCheckpointDir === "string" && args.toCheckpointDir !== "" ? args.toCheckpointDir : undefined;
    const toDataDirs = dirsOf(args.toDataDirs);
    if (!toCheckpointDir) exitUsage(command, "missing --to-checkpointDir DIR: the checkpointDir of the new Flume TS channel");
    if (toDataDirs.length === 0) exitUsage(command, "missing --to-dataDirs DIR[,DIR...]: the dataDirs of the new Flume TS channel");
    let batchSize = DEFAULT_BATCH_SIZE;
    if (args.batchSize !== undefined) {
      const text = String(args.batchSize);
      if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_BATCH_SIZE) exitUsage(command, `--batchSize needs a whole number from 1 to ${MAX_BATCH_SIZE}, got "${text}"`);
      batchSize = Number(text);
    }
    try {
      const report = await migrateFlumeChannel({ source, target: { checkpointDir: toCheckpointDir, dataDirs: toDataDirs }, batchSize, assumeStopped: args.assumeStopped });
      console.log(summary(report));
    } catch (err) {
      if (err instanceof FlumeMigrationError || err instanceof ChannelException) {
        process.stderr.write(`flume ${command}: ${err.message}\n`);
        process.exit(1);
      }
      throw err;
    }
  },
});
