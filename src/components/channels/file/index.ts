/** `type = file`: schema and factory of the durable file channel (see file-channel.ts). */
import os from "node:os";
import path from "node:path";
import type { ComponentSchema } from "../../../config/schema.ts";
import type { ComponentDefinition } from "../../component.ts";
import { FileChannel } from "./file-channel.ts";

export { FileChannel, FileTransaction, type FileChannelOptions } from "./file-channel.ts";
export { FileChannelCounter } from "./counter.ts";

/** Flume's largest (and default) data file size: Integer.MAX_VALUE - 500 MB. */
export const DEFAULT_MAX_FILE_SIZE = 2146435071;
const HOME_BASE = path.join(os.homedir(), ".flume", "file-channel");

export const schema: ComponentSchema = {
  kind: "channel",
  type: "file",
  aliases: ["org.apache.flume.channel.file.FileChannel"],
  doc: "Durable channel: events are written to append-only data files and fsynced before a commit returns; survives kill -9.",
  props: [
    { key: "checkpointDir", type: "path", default: path.join(HOME_BASE, "checkpoint"), doc: "Directory for checkpoints of the queue" },
    { key: "useDualCheckpoints", type: "boolean", default: false, doc: "Also write every checkpoint to backupCheckpointDir" },
    { key: "backupCheckpointDir", type: "path", doc: "Directory for the backup checkpoint (must differ from checkpointDir)" },
    { key: "dataDirs", type: "path", default: path.join(HOME_BASE, "data"), doc: "Comma-separated directories for the data files; new files go round-robin over them" },
    { key: "transactionCapacity", type: "int", default: 10000, min: 1, doc: "Maximum number of events one transaction may put or take" },
    { key: "checkpointInterval", type: "int", default: 30000, min: 1000, doc: "Milliseconds between checkpoints" },
    { key: "maxFileSize", type: "int", default: DEFAULT_MAX_FILE_SIZE, min: 1024, doc: "Maximum size in bytes of one data file (at most the default)" },
    { key: "minimumRequiredSpace", type: "int", default: 524288000, min: 0, doc: "Free bytes the data disk must keep; below it puts fail (values under 1048576 count as 1048576, as in Flume)" },
    { key: "capacity", type: "int", default: 1000000, min: 1, doc: "Maximum number of events in the channel" },
    { key: "keep-alive", type: "int", default: 3, min: 0, doc: "Seconds a commit waits for room in a full channel" },
    { key: "use-log-replay-v1", type: "boolean", default: false, doc: "Accepted for compatibility; has no effect (one replay algorithm)" },
    { key: "use-fast-replay", type: "boolean", default: false, doc: "Accepted for compatibility; has no effect (replay is always fast)" },
    { key: "checkpointOnClose", type: "boolean", default: true, doc: "Write a checkpoint when the channel stops" },
    { key: "compressBackupCheckpoint", type: "boolean", default: false, doc: "Accepted for compatibility; the backup checkpoint is not compressed" },
    { key: "fsyncPerTransaction", type: "boolean", default: true, doc: "fsync the data file before each commit returns (false: every fsyncInterval seconds)" },
    { key: "fsyncInterval", type: "int", default: 5, min: 1, doc: "Seconds between fsyncs when fsyncPerTransaction is false" },
  ],
  prefixes: [{ prefix: "encryption.", doc: "Flume's data file encryption: not supported (the channel refuses to start if set)" }],
};

export function parseDataDirs(value: string): string[] {
  return value
    .split(",")
    .map((d) => d.trim())
    .filter((d) => d !== "");
}

export const definition: ComponentDefinition<FileChannel> = {
  schema,
  durability: { crash: (channel) => channel.crash() },
  validate(config) {
    const errors: { key: string; message: string }[] = [];
    if (config.int("transactionCapacity") > config.int("capacity")) {
      errors.push({ key: "transactionCapacity", message: `File Channel transaction capacity (${config.int("transactionCapacity")}) cannot be greater than the capacity of the channel (${config.int("capacity")})` });
    }
    if (parseDataDirs(config.string("dataDirs")).length === 0) errors.push({ key: "dataDirs", message: "needs at least one directory" });
    if (config.boolean("useDualCheckpoints") && !config.optionalString("backupCheckpointDir")) {
      errors.push({ key: "backupCheckpointDir", message: "is required when useDualCheckpoints is true" });
    }
    if (Object.keys(config.group("encryption.")).length > 0) {
      errors.push({ key: "encryption.*", message: "data file encryption is not supported by Flume TS; remove the encryption.* keys (use disk encryption instead)" });
    }
    return errors;
  },
  create(config, ctx) {
    return new FileChannel(
      ctx.name,
      {
        checkpointDir: config.string("checkpointDir"),
        dataDirs: parseDataDirs(config.string("dataDirs")),
        backupCheckpointDir: config.optionalString("backupCheckpointDir"),
        useDualCheckpoints: config.boolean("useDualCheckpoints"),
        capacity: config.int("capacity"),
        transactionCapacity: config.int("transactionCapacity"),
        checkpointInterval: config.int("checkpointInterval"),
        maxFileSize: Math.min(config.int("maxFileSize"), DEFAULT_MAX_FILE_SIZE),
        minimumRequiredSpace: config.int("minimumRequiredSpace"),
        keepAlive: config.int("keep-alive"),
        checkpointOnClose: config.boolean("checkpointOnClose"),
        fsyncPerTransaction: config.boolean("fsyncPerTransaction"),
        fsyncInterval: config.int("fsyncInterval"),
      },
      { clock: ctx.clock, logger: ctx.logger },
    );
  },
};
