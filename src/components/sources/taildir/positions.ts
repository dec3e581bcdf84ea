import path from "node:path";
import type { Channel } from "../../../core/channel.ts";
import { ConfigurationError } from "../../../core/errors.ts";
import { ioReason } from "../../../io/writable-dir.ts";
import { readPositionFile, setAside } from "./position-file.ts";
import type { TaildirScope } from "./scope.ts";
import { type ChannelState, type FileRecord, type JournalState, StateJournal, formatChannelState, goneJson, parseChannelState, recordJson } from "./state.ts";
import type { TailBatch, TailFile } from "./tail-file.ts";

/** A durable channel's commit carries the records changed since the last snapshot; past this many, a snapshot is due. */
const CHANGED_BEFORE_SNAPSHOT = 64;
/** The state file gets a fresh snapshot when this much was appended since the last one. */
const JOURNAL_BYTES_BEFORE_SNAPSHOT = 4 * 1024 * 1024;

/** What a start finds saved: the state file's (or Flume's position file's) records and a durable channel's. */
export interface SavedState {
  journal: JournalState | null;
  channel: ChannelState | null;
  /** Why this start has no saved positions although it had some (damaged files set aside), for the log after restore. */
  resetBecause: string | null;
}

/**
 * The position journal: every change of a tracked file's record gets a sequence number and is
 * appended to the state file (or, for a durable channel, stored with the commit), and
 * snapshots (the state file and Flume's position file) are written now and then.
 */
export class PositionKeeper {
  private readonly journal: StateJournal;
  /** Sequence number of the last state change. */
  seq = 0;
  /** Sequence number of the last snapshot flushed to disk (what a durable channel's records build on). */
  private durableBase = -1;
  private snapshotSeq = -1;
  /** For a durable channel: records changed and files let go since durableBase, as JSON. */
  private readonly changed = new Map<number, string>();
  private readonly gone = new Map<number, { seq: number; json: string }>();
  /** Records written ahead of the commits of a group of batches, until those commits are done (see TailReader.readGroup). */
  private readonly recordedAhead = new Map<number, string>();
  private snapshotRun: Promise<void> | null = null;
  private snapshotAgain = false;
  /** A change other than a commit happened: a snapshot makes it survive a power loss too. */
  private structuralChange = false;

  constructor(private readonly scope: TaildirScope) {
    this.journal = new StateJournal(scope.options.positionFile, (m) => this.stateWriteFailed(m));
  }

  close(): void {
    this.journal.close();
  }

  private stateWriteFailed(message: string): void {
    this.scope.counter.inc("GenericProcessingFail");
    this.scope.logger.error(`${this.scope.name}: ${message}; after a crash, lines read since the last position write may be read again`);
  }

  /**
   * Writes the state file and Flume's position file (atomically, flushed) when anything
   * changed since the last time; writes never overlap, a request during one runs after it.
   */
  snapshot(): Promise<void> {
    if (this.snapshotRun) {
      this.snapshotAgain = true;
      return this.snapshotRun;
    }
    const run = async () => {
      do {
        this.snapshotAgain = false;
        await this.writeSnapshot();
      } while (this.snapshotAgain);
    };
    this.snapshotRun = run().finally(() => {
      this.snapshotRun = null;
    });
    return this.snapshotRun;
  }

  /** A snapshot, if anything but a commit changed since the last look. */
  snapshotIfStructural(): void {
    if (this.structuralChange) {
      this.structuralChange = false;
      void this.snapshot();
    }
  }

  private async writeSnapshot(): Promise<void> {
    const { files, options, counter, logger, name } = this.scope;
    const seq = this.seq;
    if (seq === this.snapshotSeq) return;
    const records: string[] = [];
    for (const f of files.values()) records.push(this.recordedAhead.get(f.inode) ?? recordJson(this.recordOf(f)));
    try {
      await this.journal.snapshot(records, seq, this.scope.positions());
    } catch (err) {
      counter.inc("GenericProcessingFail");
      logger.error(`${name}: Failed writing positionFile ${options.positionFile} in ${path.dirname(options.positionFile)}: ${ioReason(err)}`);
      return;
    }
    this.snapshotSeq = seq;
    this.durableBase = seq;
    for (const [inode] of this.changed) if ((files.get(inode)?.seq ?? 0) <= seq) this.changed.delete(inode);
    for (const [inode, g] of this.gone) if (g.seq <= seq) this.gone.delete(inode);
  }

  private recordOf(f: TailFile, pos = f.pos, fp = f.fingerprint(), seq = f.seq): FileRecord {
    if (f.shadowOf !== null) return { inode: f.inode, pos: this.scope.verifiedCopy.get(f.inode) ?? 0, file: f.path, fp: null, copyOf: f.shadowOf, seq };
    return { inode: f.inode, pos, file: f.path, fp, seq };
  }

  /** A file's record changed: it gets the next sequence number and is recorded. */
  recordChange(f: TailFile, byCommit = false, committedJson?: string): void {
    const durable = this.scope.durable;
    this.recordedAhead.delete(f.inode);
    f.seq = ++this.seq;
    const json = committedJson ?? recordJson(this.recordOf(f));
    if (durable) {
      this.changed.set(f.inode, json);
      // Not while starting: a snapshot of the files placed so far would forget the others.
      if (this.changed.size > CHANGED_BEFORE_SNAPSHOT && this.scope.started) void this.snapshot();
    }
    // A durable channel stored this commit's records already.
    if (!(byCommit && durable)) this.appendState(`${json}\n`);
    if (!byCommit) this.structuralChange = true;
  }

  recordGone(f: TailFile): void {
    this.recordedAhead.delete(f.inode);
    const seq = ++this.seq;
    const json = goneJson(f.inode, seq);
    if (this.scope.durable) {
      this.changed.delete(f.inode);
      this.gone.set(f.inode, { seq, json });
    }
    this.appendState(`${json}\n`);
    this.structuralChange = true;
  }

  /** Records a file's position and fingerprint as they will be once `last` is committed. */
  recordAhead(last: TailBatch): void {
    const f = last.file;
    f.seq = ++this.seq;
    const json = recordJson(this.recordOf(f, last.endPos, f.fingerprintAfter(last), f.seq));
    // A snapshot taken while the group is committed must not take the state back before it.
    this.recordedAhead.set(f.inode, json);
    this.appendState(`${json}\n`);
  }

  /** The commits of a group recorded ahead are done: snapshots take the file's own record again. */
  aheadDone(inode: number): void {
    this.recordedAhead.delete(inode);
  }

  private appendState(lines: string): void {
    this.journal.append(lines);
    if (this.journal.appended > JOURNAL_BYTES_BEFORE_SNAPSHOT && this.scope.started) void this.snapshot();
  }

  /** What a durable channel stores with the commit of `batch`: every record changed since durableBase, as after the commit. */
  channelValue(batch: TailBatch): { value: string; own: string; seq: number } {
    const f = batch.file;
    const seq = this.seq + 1;
    const own = recordJson(this.recordOf(f, batch.endPos, f.fingerprintAfter(batch), seq));
    const records: string[] = [];
    for (const [inode, json] of this.changed) if (inode !== f.inode) records.push(json);
    records.push(own);
    const gone: string[] = [];
    for (const g of this.gone.values()) gone.push(g.json);
    return { value: formatChannelState(seq, this.durableBase, records, gone), own, seq };
  }

  // ---- what a start finds ----

  /**
   * A saved-state file that cannot be read: with onCorrupt = fail the start is refused;
   * otherwise the file is renamed aside (kept for a look, not overwritten by the next write)
   * and what happened is returned for the log.
   */
  private damaged(file: string, err: unknown): string {
    const reason = err instanceof SyntaxError ? `not valid JSON: ${err.message}` : ioReason(err);
    if (this.scope.options.onCorrupt === "fail") {
      throw new ConfigurationError(
        "positionFile.onCorrupt",
        `${file} cannot be read (${reason}); not starting (positionFile.onCorrupt = fail): repair it, or move it away to start without positions`,
        this.scope.name,
      );
    }
    try {
      return `${file} cannot be read (${reason}), kept as ${setAside(file, this.scope.clock.now())}`;
    } catch (renameErr) {
      return `${file} cannot be read (${reason}) nor kept aside (${ioReason(renameErr)})`;
    }
  }

  async savedState(channels: readonly Channel[]): Promise<SavedState> {
    const { name, logger, options } = this.scope;
    let journal: JournalState | null = null;
    let resetBecause: string | null = null;
    const damage: string[] = [];
    try {
      journal = this.journal.load();
      if (journal && journal.skipped > 0) logger.warn(`${name}: ${journal.skipped} unreadable line(s) in ${this.journal.file} ignored (a write cut short by a power loss?)`);
    } catch (err) {
      damage.push(this.damaged(this.journal.file, err));
    }
    if (!journal) {
      // Flume's position file (a first start, or one after Flume): positions without fingerprints.
      try {
        const entries = await readPositionFile(options.positionFile);
        if (entries.length > 0) {
          journal = { snapshotSeq: -1, seq: 0, records: new Map(entries.map((e) => [e.inode, { ...e, fp: null, seq: 0 }])), skipped: 0 };
        }
      } catch (err) {
        damage.push(this.damaged(options.positionFile, err));
      }
      if (journal && damage.length > 0) logger.warn(`${name}: ${damage.join("; ")}; using the positions of positionFile ${options.positionFile}`);
    }
    let channel: ChannelState | null = null;
    for (const c of channels) {
      if (!c.durable || !c.sourcePosition) continue;
      const value = c.sourcePosition(name);
      if (value === undefined) continue;
      try {
        const parsed = parseChannelState(value);
        if (!channel || parsed.seq > channel.seq) channel = parsed;
        logger.info(`${name}: resuming from the positions stored in channel ${c.name}`);
      } catch (err) {
        logger.warn(`${name}: ignoring the position stored in channel ${c.name}: ${(err as Error).message}`);
      }
    }
    if (!journal && damage.length > 0) {
      if (channel) logger.warn(`${name}: ${damage.join("; ")}; using the positions stored in the channel`);
      else resetBecause = damage.join("; ");
    }
    return { journal, channel, resetBecause };
  }
}
