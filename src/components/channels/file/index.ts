/** `type = file`: schema and factory of the durable file channel (see file-channel.ts). */
import os from "node:os";
import path from "node:path";
import type { OptionsOf } from "../../../config/schema.ts";
import { defineComponent } from "../../component.ts";
import { builtIn } from "../../registry.ts";
import { directoryLockFile } from "../../../io/owner-lock.ts";
import { FileChannel, type FileChannelOptions } from "./file-channel.ts";

export { FileChannel, FileTransaction, type FileChannelOptions } from "./file-channel.ts";
export { FileChannelCounter } from "./counter.ts";

/** Flume's largest (and default) data file size: Integer.MAX_VALUE - 500 MB. */
export const DEFAULT_MAX_FILE_SIZE = 2146435071;
const HOME_BASE = path.join(os.homedir(), ".flume", "file-channel");

/** The file channel's properties, Flume's names and defaults. */
const props = {
  checkpointDir: { type: "path", default: path.join(HOME_BASE, "checkpoint"), doc: "Directory for checkpoints of the queue" },
  useDualCheckpoints: { type: "boolean", default: false, doc: "Also write every checkpoint to backupCheckpointDir" },
  backupCheckpointDir: { type: "path", doc: "Directory for the backup checkpoint (must differ from checkpointDir)" },
  dataDirs: { type: "path", default: path.join(HOME_BASE, "data"), doc: "Comma-separated directories for the data files; new files go round-robin over them" },
  transactionCapacity: { type: "int", default: 10000, min: 1, roles: ["transactionCapacity"], doc: "Maximum number of events one transaction may put or take" },
  checkpointInterval: { type: "int", default: 30000, min: 1000, doc: "Milliseconds between checkpoints" },
  maxFileSize: { type: "int", default: DEFAULT_MAX_FILE_SIZE, min: 1024, doc: "Maximum size in bytes of one data file (at most the default)" },
  minimumRequiredSpace: { type: "int", default: 524288000, min: 0, doc: "Free bytes the data disk must keep; below it puts fail (values under 1048576 count as 1048576, as in Flume)" },
  capacity: { type: "int", default: 1000000, min: 1, roles: ["capacity"], doc: "Maximum number of events in the channel" },
  "keep-alive": { type: "int", default: 3, min: 0, roles: ["keepAlive"], doc: "Seconds a commit waits for room in a full channel" },
  "use-log-replay-v1": { type: "boolean", default: false, doc: "Accepted for compatibility; has no effect (one replay algorithm)" },
  "use-fast-replay": { type: "boolean", default: false, doc: "Accepted for compatibility; has no effect (replay is always fast)" },
  checkpointOnClose: { type: "boolean", default: true, doc: "Write a checkpoint when the channel stops" },
  compressBackupCheckpoint: { type: "boolean", default: false, doc: "Accepted for compatibility; the backup checkpoint is not compressed" },
  fsyncPerTransaction: { type: "boolean", default: true, doc: "fsync the data file before each commit returns (false: every fsyncInterval seconds)" },
  fsyncInterval: { type: "int", default: 5, min: 1, doc: "Seconds between fsyncs when fsyncPerTransaction is false" },
  inlineWriteLimit: {
    type: "int",
    default: 2,
    min: 0,
    doc: "Data file writes run on the agent's main thread, which saves a thread hand-off per commit, while recent writes took at most this many milliseconds on average; slower ones go to the I/O thread pool, so the other components keep running, until writes are fast again. 0: always the thread pool (Flume TS only)",
  },
} as const;

export function parseDataDirs(value: string): string[] {
  return value
    .split(",")
    .map((d) => d.trim())
    .filter((d) => d !== "");
}

export const definition = defineComponent({
  ...builtIn.fileChannel,
  doc: "Durable channel: events are written to append-only data files and fsynced before a commit returns; survives kill -9.",
  props,
  groups: { encryption: { prefix: "encryption.", doc: "Flume's data file encryption: not supported (the channel refuses to start if set)" } },
  durability: { crash: (channel: FileChannel) => channel.crash() },
  claims(o, ctx) {
    const dirs = [o.checkpointDir, ...parseDataDirs(o.dataDirs), ...(o.useDualCheckpoints && o.backupCheckpointDir ? [o.backupCheckpointDir] : [])];
    return dirs.map((d) => ctx.storagePath(d)).map((d) => ({ file: directoryLockFile(d), what: `directory ${d}` }));
  },
  validate(o) {
    const errors: { key: string; message: string }[] = [];
    if (o.transactionCapacity > o.capacity) {
      errors.push({ key: "transactionCapacity", message: `File Channel transaction capacity (${o.transactionCapacity}) cannot be greater than the capacity of the channel (${o.capacity})` });
    }
    if (parseDataDirs(o.dataDirs).length === 0) errors.push({ key: "dataDirs", message: "needs at least one directory" });
    if (o.useDualCheckpoints && !o.backupCheckpointDir) errors.push({ key: "backupCheckpointDir", message: "is required when useDualCheckpoints is true" });
    if (Object.keys(o.encryption).length > 0) {
      errors.push({ key: "encryption.*", message: "data file encryption is not supported by Flume TS; remove the encryption.* keys (use disk encryption instead)" });
    }
    return errors;
  },
  create(o, ctx) {
    const storage = (p: string) => ctx.storagePath(p);
    return new FileChannel(ctx.name, channelOptions({ ...o, checkpointDir: storage(o.checkpointDir), dataDirs: parseDataDirs(o.dataDirs).map(storage).join(","), backupCheckpointDir: o.backupCheckpointDir && storage(o.backupCheckpointDir) }), {
      clock: ctx.clock,
      logger: ctx.logger,
      blockingIo: ctx.blockingIo,
    });
  },
});

type Options = OptionsOf<typeof props>;

/** The channel's settings from its options (what the schema parsed, defaults filled in). */
export function channelOptions(o: Options): FileChannelOptions {
  return {
    checkpointDir: o.checkpointDir,
    dataDirs: parseDataDirs(o.dataDirs),
    backupCheckpointDir: o.backupCheckpointDir || undefined,
    useDualCheckpoints: o.useDualCheckpoints,
    capacity: o.capacity,
    transactionCapacity: o.transactionCapacity,
    checkpointInterval: o.checkpointInterval,
    maxFileSize: Math.min(o.maxFileSize, DEFAULT_MAX_FILE_SIZE),
    minimumRequiredSpace: o.minimumRequiredSpace,
    keepAlive: o["keep-alive"],
    checkpointOnClose: o.checkpointOnClose,
    fsyncPerTransaction: o.fsyncPerTransaction,
    fsyncInterval: o.fsyncInterval,
    inlineWriteLimit: o.inlineWriteLimit,
  };
}

/**
 * Settings for a channel on `dir` (checkpoint/ and data/ inside it) with Flume's defaults and
 * the given properties, as written in a config: for tools, benchmarks and tests that open a
 * file channel themselves.
 */
export function fileChannelOptions(dir: string, props: Readonly<Record<string, string>> = {}): FileChannelOptions {
  const { options, errors } = definition.parse({ checkpointDir: path.join(dir, "checkpoint"), dataDirs: path.join(dir, "data"), ...props });
  if (errors.length > 0) throw new Error(`file channel options: ${errors.map((e) => `${e.key} ${e.message}`).join("; ")}`);
  return channelOptions(options);
}
