/**
 * What the hdfs sink needs of a file system: whole-batch writes that are durable when they
 * resolve (an HDFS write acknowledged by the DataNodes, or fsync'd on a local disk), renames that
 * never replace, and listings for crash recovery. Two implementations: WebHDFS (webhdfs.ts) for
 * hdfs:// and webhdfs:// paths, the local file system (local.ts) for file:// paths.
 */
import { FlumeError } from "../../core/errors.ts";

export interface FileStatus {
  /** The entry's name in its directory. */
  name: string;
  type: "FILE" | "DIRECTORY";
  length: number;
  modificationTime: number;
}

export interface DfsClient {
  /** Where the client writes, for messages: "webhdfs://host:port", "file://". */
  readonly label: string;
  /** Creates `path` (and its parents) holding `bytes`; fails if it exists. Durable when it resolves. */
  create(path: string, bytes: Uint8Array): Promise<void>;
  /** Appends `bytes` to `path`. Durable when it resolves. */
  append(path: string, bytes: Uint8Array): Promise<void>;
  /** Renames without replacing; false when `to` exists or `from` does not. */
  rename(from: string, to: string): Promise<boolean>;
  /** Deletes a file; false when it was not there. */
  delete(path: string): Promise<boolean>;
  /** The entries of a directory; null when it does not exist. */
  list(dir: string): Promise<FileStatus[] | null>;
  /** Marks a file with a small extended attribute (user.*); false where the file system has none. */
  setMark(path: string, name: string, value: string): Promise<boolean>;
  /** The mark set by setMark, or null. */
  getMark(path: string, name: string): Promise<string | null>;
  close(): Promise<void>;
  /**
   * Gives the client up: every operation under way fails at once with `why`, and so does every
   * later one (the sink is stopping and HDFS does not answer). Files left open stay in use
   * until lease recovery closes them.
   */
  abort(why: string): void;
}

/** An operation on the file system failed; names the operation, the path and the cause. */
export class HdfsError extends FlumeError {
  constructor(
    readonly op: string,
    readonly path: string,
    readonly detail: string,
    /** Hadoop's exception class when the server named one (AccessControlException, DSQuotaExceededException...). */
    readonly remote?: string,
    options?: { cause?: unknown },
  ) {
    super(`${op} ${path}: ${detail}`, options);
  }
}
