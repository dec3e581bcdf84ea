/** What a TAILDIR source is configured with (see the schema in ../taildir.ts). */
export interface TaildirOptions {
  /** Group name -> path whose last element is a regex on file names. */
  filegroups: Record<string, string>;
  /** Group name -> headers added to its events. */
  headers: Record<string, Record<string, string>>;
  positionFile: string;
  skipToEnd: boolean;
  idleTimeout: number;
  writePosInterval: number;
  batchSize: number;
  maxBatchCount: number;
  fileHeader: boolean;
  fileHeaderKey: string;
  byteOffsetHeader: boolean;
  cachePatternMatching: boolean;
  maxLineLength: number;
  backoffSleepIncrement: number;
  maxBackoffSleep: number;
  /** A positionFile (or its state file) that cannot be read: set it aside and read every file anew, or refuse to start. */
  onCorrupt: "reset" | "fail";
}

/** Counts starts that found the positionFile damaged and began without its positions (files read again). */
export const POSITION_RESET_COUNTER = "PositionFileResetCount";

/** Flume's byte offset header name. */
export const BYTE_OFFSET_HEADER_KEY = "byteoffset";

/** The lock file held while a source uses a position file. */
export function positionLockFile(positionFile: string): string {
  return `${positionFile}.lock`;
}
