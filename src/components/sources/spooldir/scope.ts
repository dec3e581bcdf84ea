import type { FileHandle } from "node:fs/promises";
import type { ChannelProcessor } from "../../../core/channel-processor.ts";
import type { Clock } from "../../../core/clock.ts";
import type { SourceCounter } from "../../../core/counters.ts";
import type { Logger } from "../../../core/logger.ts";
import type { DecodeErrorPolicy, Deserializer, DeserializerFactory } from "./deserializers.ts";
import type { Tracker } from "./tracker.ts";

export interface SpoolDirOptions {
  spoolDir: string;
  fileSuffix: string;
  deletePolicy: "never" | "immediate";
  trackingPolicy: "rename" | "tracker_dir";
  trackerDir: string;
  consumeOrder: "oldest" | "youngest" | "random";
  pollDelay: number;
  batchSize: number;
  maxBackoff: number;
  includePattern: string;
  ignorePattern: string;
  recursiveDirectorySearch: boolean;
  deserializer: DeserializerFactory;
  inputCharset: string;
  decodeErrorPolicy: DecodeErrorPolicy;
  fileHeader: boolean;
  fileHeaderKey: string;
  basenameHeader: boolean;
  basenameHeaderKey: string;
}

/** The file being read: identity at pickup, committed position, open deserializer. */
export interface Current {
  path: string;
  ino: number;
  size: number;
  mtimeMs: number;
  pos: number;
  handle: FileHandle;
  deserializer: Deserializer;
  /** Nothing was read from it yet in this run (Flume sends one empty event for an empty file). */
  firstRead: boolean;
}

/** A file that breaks the spooling rules; it is set aside, the source goes on. */
export class SpoolViolation extends Error {}

/**
 * What the parts of a spooldir source (picking the next file, completing or setting files
 * aside, the read loop) share: its configuration, its tracker, and whether it runs.
 */
export class SpoolScope {
  running = false;
  /** Some channel of this source stores positions with its commits (a file channel). */
  durable = false;
  /** The file being read, if any. */
  current: Current | null = null;

  constructor(
    readonly name: string,
    readonly options: SpoolDirOptions,
    readonly tracker: Tracker,
    readonly clock: Clock,
    readonly logger: Logger,
    readonly counter: SourceCounter,
    readonly processor: () => ChannelProcessor,
  ) {}
}
