import type { Status } from "../../../core/sink.ts";
import { EmitError, type SourceEmitter } from "../../../pipeline/emitter.ts";
import type { Discovery } from "./discovery.ts";
import { BYTE_OFFSET_HEADER_KEY } from "./options.ts";
import type { PositionKeeper } from "./positions.ts";
import type { TaildirScope } from "./scope.ts";
import type { TailBatch, TailFile } from "./tail-file.ts";
import type { FileEvents } from "./watching.ts";

/** Batches one process() call may cut before it returns READY, so a stop is never held up long. */
const BATCHES_PER_PROCESS = 256;
/** Batches (and at most this many lines) cut from a file ahead of their commits, for a channel that keeps no positions. */
const GROUP_BATCHES = 32;
const GROUP_EVENTS = 4096;
/** Longest a source goes on reading after batch limits before it looks at the files again (rotations, new files). */
const CONTINUE_WITHOUT_LOOK_MS = 500;

/**
 * The read loop: a look at the files when due, then batches cut from each file in turn and
 * committed, a position moving only once its batch is committed; idle files are closed and
 * files rotated away let go once drained.
 */
export class TailReader {
  /** The last process() stopped at a batch limit: the next one goes on without looking at the files first. */
  private continuing = false;
  private lastUpdate = -Infinity;
  /** The file the next round of reads starts with (the one a round stopped in), so files late in the map are not starved. */
  private resumeAt: number | null = null;

  constructor(
    private readonly scope: TaildirScope,
    private readonly positions: PositionKeeper,
    private readonly discovery: Discovery,
    private readonly events: FileEvents,
    private readonly emitter: SourceEmitter,
  ) {}

  /**
   * Commits one batch, retried until the channel takes it; false when the source stopped first.
   * A batch not committed is read again from the committed position. `group.ahead`: the
   * position after the group this batch belongs to was recorded already (see readGroup).
   */
  private async commit(batch: TailBatch, group: { ahead: boolean }): Promise<boolean> {
    const f = batch.file;
    const positions = this.positions;
    const stored = this.scope.durable ? positions.channelValue(batch) : null;
    const position = stored ? { source: this.scope.name, value: stored.value } : undefined;
    // The channel is full and may stay so: a crash meanwhile must not skip the lines waiting.
    const onRefused = group.ahead
      ? () => {
          group.ahead = false;
          positions.recordChange(f);
        }
      : undefined;
    let committed = false;
    try {
      committed = await this.emitter.deliver(batch.events, { position, onRefused });
    } finally {
      if (!committed) {
        f.rewindTo(f.pos);
        if (group.ahead) {
          group.ahead = false;
          positions.recordChange(f);
        }
      }
    }
    if (!committed) return false;
    f.committed(batch, this.scope.clock.now());
    // The record the channel stored, unless something changed meanwhile (then a fresh one).
    if (stored) positions.recordChange(f, true, stored.seq === positions.seq + 1 ? stored.own : undefined);
    else if (!group.ahead) positions.recordChange(f);
    return true;
  }

  /**
   * Cuts up to `max` batches from a file (fewer at its end), for a channel that keeps no
   * positions: their end position is recorded once, before the first is committed, instead of
   * once per commit (a write each). A crash while they are committed loses them with the
   * channel's content, and repeats none.
   */
  private async readGroup(tf: TailFile, max: number, finalRead: boolean): Promise<TailBatch[]> {
    const options = this.scope.options;
    const offsetHeader = options.byteOffsetHeader ? BYTE_OFFSET_HEADER_KEY : null;
    const fileHeader = options.fileHeader ? options.fileHeaderKey : null;
    const group: TailBatch[] = [];
    let events = 0;
    while (group.length < max && events < GROUP_EVENTS) {
      const batch = await tf.readBatch(options.batchSize, offsetHeader, fileHeader, finalRead);
      if (batch === null) break;
      group.push(batch);
      events += batch.events.length;
      if (!batch.full) break;
    }
    return group;
  }

  async process(): Promise<Status> {
    const scope = this.scope;
    const { clock, options, logger, counter, name } = scope;
    if (!scope.started) return "BACKOFF";
    try {
      // Going on after a batch limit needs no new look at the files, unless that is getting old.
      if (!this.continuing || clock.now() - this.lastUpdate >= CONTINUE_WITHOUT_LOOK_MS) {
        this.lastUpdate = clock.now();
        await this.discovery.updateFiles(this.continuing);
        this.events.indexPaths();
      }
      this.continuing = false;
      let status: Status = "BACKOFF";
      let batches = 0;
      const now = clock.now();
      const all = [...scope.files.values()];
      const resume = this.resumeAt === null ? -1 : all.findIndex((f) => f.inode === this.resumeAt);
      const start = Math.max(0, resume);
      this.resumeAt = null;
      for (let k = 0; k < all.length; k++) {
        const index = (start + k) % all.length;
        const tf = all[index];
        if (!scope.started) break;
        if (tf.shadowOf !== null || !scope.files.has(tf.inode)) continue;
        const idle = now - tf.lastActive >= options.idleTimeout;
        // A file rotated away that stayed idle will not grow: its last line is complete now.
        const finalRead = !tf.matched && idle;
        if (batches >= BATCHES_PER_PROCESS && (tf.hasUnread() || finalRead)) {
          // This call's batches are spent between files: go on with this one at once (many
          // files of a line or two each would otherwise wait a backoff sleep per 256 files).
          status = "READY";
          this.continuing = true;
          this.resumeAt = tf.inode;
          break;
        }
        let fileBatches = 0;
        let limited = false;
        while (scope.started && (tf.hasUnread() || finalRead)) {
          const room = Math.min(scope.durable ? 1 : GROUP_BATCHES, options.maxBatchCount - fileBatches, BATCHES_PER_PROCESS - batches);
          let group: TailBatch[];
          try {
            group = await this.readGroup(tf, room, finalRead);
            tf.readError = null;
          } catch (err) {
            // One file that cannot be read (permissions, I/O error) must not hold up the others.
            const message = (err as Error).message;
            if (tf.readError !== message) logger.error(`${name}: Unable to read ${tf.path} (inode ${tf.inode}): ${message}; will try again`);
            tf.readError = message;
            counter.values.EventReadFail++;
            // Lines cut before the failure were not delivered: read again from the committed position.
            tf.rewindTo(tf.pos);
            await tf.close();
            break;
          }
          if (group.length === 0) break;
          const ahead = { ahead: !scope.durable };
          if (ahead.ahead) this.positions.recordAhead(group[group.length - 1]);
          for (const batch of group) if (!(await this.commit(batch, ahead))) return "BACKOFF";
          this.positions.aheadDone(tf.inode);
          batches += group.length;
          fileBatches += group.length;
          if (!group[group.length - 1].full) break;
          if (fileBatches >= options.maxBatchCount || batches >= BATCHES_PER_PROCESS) {
            limited = true;
            break;
          }
        }
        if (limited && batches >= BATCHES_PER_PROCESS) {
          // Go on with this file next time (it has more, and keeps what it read ahead), then the ones after it.
          status = "READY";
          this.continuing = true;
          this.resumeAt = tf.inode;
          break;
        }
        tf.park();
        if (limited) {
          status = "READY";
          this.continuing = true;
          continue;
        }
        if (finalRead && !tf.hasUnread()) await this.discovery.retire(tf, "rotated away and drained");
        else if (idle && tf.matched && tf.isOpen && !tf.hasUnread()) {
          await tf.close();
          logger.info(`Closed file: ${tf.path}, inode: ${tf.inode}, pos: ${tf.pos} (idle)`);
        }
      }
      this.positions.snapshotIfStructural();
      return status;
    } catch (err) {
      this.continuing = false;
      if (err instanceof EmitError) {
        this.emitter.failed(err, "the batch is read again at the next poll");
      } else {
        logger.error(`${name}: Unable to tail files: ${(err as Error).message}`);
        counter.inc("EventReadFail");
      }
      return "BACKOFF";
    }
  }
}
