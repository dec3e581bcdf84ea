import type { Clock } from "../../../core/clock.ts";
import type { SourceCounter } from "../../../core/counters.ts";
import type { Logger } from "../../../core/logger.ts";
import type { FileGroupMatcher } from "./matcher.ts";
import type { POSITION_RESET_COUNTER, TaildirOptions } from "./options.ts";
import type { PositionEntry } from "./position-file.ts";
import type { FileRecord } from "./state.ts";
import { TailFile } from "./tail-file.ts";

/**
 * What the parts of a TAILDIR source (discovery, watching, positions, rotation, reading) share:
 * its configuration, the files it tracks, and whether it runs.
 */
export class TaildirScope {
  /** Tracked files by inode. */
  readonly files = new Map<number, TailFile>();
  /** Records of files not found at start (deleted or moved away), to recognise a copy of one. */
  readonly missing = new Map<number, FileRecord>();
  /** Bytes of a shadow (copytruncate copy) known to equal its original's, by inode. */
  readonly verifiedCopy = new Map<number, number>();
  started = false;
  /** Some channel of this source keeps positions (a file channel). */
  durable = false;

  constructor(
    readonly name: string,
    readonly options: TaildirOptions,
    readonly matchers: FileGroupMatcher[],
    readonly clock: Clock,
    readonly logger: Logger,
    readonly counter: SourceCounter<typeof POSITION_RESET_COUNTER>,
  ) {}

  /** Committed positions of the tracked files (what the position file holds). */
  positions(): PositionEntry[] {
    const out: PositionEntry[] = [];
    for (const f of this.files.values()) if (f.shadowOf === null) out.push({ inode: f.inode, pos: f.pos, file: f.path });
    return out;
  }

  /** A file to track (not yet in `files`), read from `pos`. */
  openFile(p: string, inode: number, group: string, pos: number): TailFile {
    const tf = new TailFile(
      {
        path: p,
        inode,
        group,
        headers: this.options.headers[group] ?? {},
        pos,
        maxLineLength: this.options.maxLineLength,
        onOverlong: (file, length) => this.logger.warn(`${this.name}: line of ${length}+ bytes in ${file} exceeds maxLineLength ${this.options.maxLineLength}; emitting it in pieces`),
      },
      this.clock.now(),
    );
    this.logger.info(`Opening file: ${p}, inode: ${inode}, pos: ${pos}`);
    return tf;
  }
}
