/**
 * The append-only segment files of a file channel: appends whole transaction groups at the end
 * of the active segment, rolls to a new segment (round-robin over dataDirs) at maxFileSize,
 * reads events back for takes with large read-ahead, and deletes segments nobody needs.
 */
import fs from "node:fs";
import path from "node:path";
import type { Event } from "../../../core/event.ts";
import { syncDirectorySync } from "../../../io/atomic-write.ts";
import { readFullySync } from "../../../io/read-fully.ts";
import { EVENT_PREFIX, SEGMENT_HEADER_SIZE, decodeEventAt, encodeSegmentHeader, eventLengthAt, segmentFileName } from "./format.ts";
import type { InlineWrites } from "./inline-writes.ts";
import type { SegmentInfo } from "./replay.ts";

const READ_AHEAD = 1024 * 1024;

/**
 * Writes that return only once their data is on disk (O_DSYNC), where the platform has them:
 * one system call per group instead of a write and an fdatasync (about a third less time per
 * durable commit here). Where it is missing, appends are followed by fdatasync.
 */
const O_DSYNC: number | undefined = fs.constants.O_DSYNC;

/**
 * Durable appends extend the active segment by this many zero bytes ahead of the data, in the
 * same write: a synced write that grows the file also commits the new size and blocks to the
 * file system's journal, one that lands on blocks already written is data only (0.16-0.24 ms
 * instead of 0.27-0.55 ms per 18 KB commit here). Replay reads a zero tail as the end of data.
 */
const PREALLOCATE = 1024 * 1024;
let zeros: Buffer | null = null;

/** An event whose checksum does not match: the data file was damaged after it was written. */
export class CorruptEventError extends Error {
  constructor(
    readonly file: string,
    readonly offset: number,
  ) {
    super(`checksum mismatch in the event at ${file} offset ${offset}; run \`flume channel inspect ${file.replace(/\/[^/]*$/, "")} --verify\``);
  }
}

/**
 * The active data file has no name any more (deleted, or its directory was): writes to it are
 * lost at restart. The message follows "cannot write to <file>: ".
 */
export class DeletedSegmentError extends Error {
  constructor(readonly file: string) {
    super(`it was deleted while the channel was running (or its directory was); commits written to it would be lost at restart, so they are refused until the channel is restarted`);
  }
}

function writeAll(fd: number, buf: Buffer, position: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = (done: number): void => {
      if (done === buf.length) return resolve();
      fs.write(fd, buf, done, buf.length - done, position + done, (err, n) => (err ? reject(err) : step(done + n)));
    };
    step(0);
  });
}

/** One writev for a whole group; a short write (rare) finishes with plain writes. */
function writeGroup(fd: number, bufs: readonly Buffer[], total: number, position: number): Promise<void> {
  if (bufs.length === 1) return writeAll(fd, bufs[0], position);
  return new Promise((resolve, reject) => {
    fs.writev(fd, bufs as Buffer[], position, (err, n) => {
      if (err) return reject(err);
      if (n === total) return resolve();
      writeAll(fd, Buffer.concat(bufs as Buffer[], total).subarray(n), position + n).then(resolve, reject);
    });
  });
}

/** writeGroup on the calling thread. */
function writeGroupSync(fd: number, bufs: readonly Buffer[], total: number, position: number): void {
  let done = bufs.length === 1 ? fs.writeSync(fd, bufs[0], 0, total, position) : fs.writevSync(fd, bufs as Buffer[], position);
  if (done === total) return;
  const all = bufs.length === 1 ? bufs[0] : Buffer.concat(bufs as Buffer[], total);
  while (done < total) done += fs.writeSync(fd, all, done, total - done, position + done);
}

function datasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}

interface Segment {
  id: number;
  path: string;
  dir: string;
  /** Bytes whose write completed: readers never look past it. */
  end: number;
  readFd: number | null;
}

export class SegmentLog {
  private readonly segments = new Map<number, Segment>();
  private active!: Segment;
  private writeFd = -1;
  private nextDir = 0;
  private dirty = false;
  /** Bytes of the active segment on disk: its data plus the zeros written ahead of it. */
  private allocated = 0;
  /** Read-ahead window. */
  private rSeg = -1;
  private rStart = 0;
  private rEnd = 0;
  private rBuf: Buffer = Buffer.alloc(0);
  /** The one segment with an open read descriptor (see read()). */
  private reading: Segment | null = null;

  /** Appends are durable when they return (the write descriptor has O_DSYNC). */
  private readonly syncedWrites: boolean;

  /**
   * `durable`: every append is on disk before it resolves (fsyncPerTransaction). `blocking`:
   * every write and fsync on the calling thread (the simulator's file channels; `writes` then
   * keeps appends inline too).
   */
  constructor(
    private readonly dataDirs: readonly string[],
    private readonly maxFileSize: number,
    private readonly durable: boolean,
    private readonly writes: InlineWrites,
    private readonly blocking = false,
  ) {
    this.syncedWrites = durable && O_DSYNC !== undefined;
  }

  /** Flags of a write descriptor: read-write, plus `create` ones, plus O_DSYNC for durable appends. */
  private writeFlags(create: boolean): number {
    const c = fs.constants;
    return c.O_RDWR | (create ? c.O_CREAT | c.O_TRUNC : 0) | (this.syncedWrites ? (O_DSYNC as number) : 0);
  }

  /** Opens the log after recovery: appends to the newest segment, or starts the first one. */
  open(recovered: readonly SegmentInfo[], minNewId: number): void {
    for (const s of recovered) this.segments.set(s.id, { id: s.id, path: s.path, dir: s.dir, end: s.size, readFd: null });
    const last = recovered[recovered.length - 1];
    if (last && last.size < this.maxFileSize) {
      this.active = this.segments.get(last.id)!;
      this.writeFd = fs.openSync(last.path, this.writeFlags(false));
      this.allocated = fs.fstatSync(this.writeFd).size;
      this.nextDir = (this.dataDirs.indexOf(last.dir) + 1) % this.dataDirs.length;
    } else {
      this.createSegment(Math.max(last ? last.id + 1 : 1, minNewId));
    }
  }

  get activeId(): number {
    return this.active.id;
  }
  get activeEnd(): number {
    return this.active.end;
  }
  get activeDir(): string {
    return this.active.dir;
  }
  segmentIds(): number[] {
    return [...this.segments.keys()];
  }
  pathOf(id: number): string | undefined {
    return this.segments.get(id)?.path;
  }

  private createSegment(id: number): void {
    const dir = this.dataDirs[this.nextDir];
    this.nextDir = (this.nextDir + 1) % this.dataDirs.length;
    const file = path.join(dir, segmentFileName(id));
    const fd = fs.openSync(file, this.writeFlags(true));
    try {
      const header = encodeSegmentHeader(id);
      fs.writeSync(fd, header, 0, header.length, 0);
      fs.fdatasyncSync(fd);
    } catch (err) {
      // No half-made segment: the caller keeps appending to the old one and retries the roll.
      fs.closeSync(fd);
      fs.rmSync(file, { force: true });
      throw err;
    }
    syncDirectorySync(dir);
    this.writeFd = fd;
    this.allocated = SEGMENT_HEADER_SIZE;
    this.active = { id, path: file, dir, end: SEGMENT_HEADER_SIZE, readFd: null };
    this.segments.set(id, this.active);
  }

  /**
   * Makes room for `bytes` more: rolls to a new segment when the active one would pass
   * maxFileSize (a group larger than maxFileSize still goes whole into a fresh segment).
   */
  prepare(bytes: number): void {
    if (this.active.end > SEGMENT_HEADER_SIZE && this.active.end + bytes > this.maxFileSize) {
      if (this.dirty) fs.fdatasyncSync(this.writeFd);
      this.dirty = false;
      this.trimTail();
      // Close the old segment only once the new one exists: a roll that fails (no space, no
      // inode) must leave a valid write descriptor, or every later append fails (EBADF) or
      // writes into whatever file reused the descriptor number.
      const old = this.writeFd;
      this.createSegment(this.active.id + 1);
      fs.closeSync(old);
    }
  }

  /**
   * Appends buffers at the end of the active segment and returns their file offset; durable on
   * return when the log is (see the constructor). On failure the segment is cut back so no
   * partial record stays in the middle of the log.
   */
  async append(bufs: readonly Buffer[], total: number): Promise<{ segment: number; offset: number }> {
    const seg = this.active;
    const fd = this.writeFd;
    const offset = seg.end;
    try {
      const pad = this.syncedWrites && offset + total > this.allocated ? Math.min(PREALLOCATE, Math.max(0, this.maxFileSize - offset - total)) : 0;
      if (pad > 0) {
        zeros ??= Buffer.alloc(PREALLOCATE);
        try {
          // Growing the file commits its new size to the journal too: 3-4 ms here, so never inline
          // (but in the simulator, whose runs must not depend on when the disk answers).
          const padded = [...bufs, zeros.subarray(0, pad)];
          if (this.blocking) writeGroupSync(fd, padded, total + pad, offset);
          else await writeGroup(fd, padded, total + pad, offset);
          this.allocated = offset + total + pad;
        } catch (err) {
          // The disk may hold the group but not the zeros after it.
          if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
          fs.ftruncateSync(fd, offset);
          await this.write(fd, bufs, total, offset);
          this.allocated = offset + total;
        }
      } else {
        await this.write(fd, bufs, total, offset);
        if (offset + total > this.allocated) this.allocated = offset + total;
      }
      if (!this.durable) this.dirty = true;
      else if (!this.syncedWrites) await this.datasync(fd);
      // One fstat per group, not per event: a file without links takes writes that vanish.
      if (fs.fstatSync(fd).nlink === 0) throw new DeletedSegmentError(seg.path);
    } catch (err) {
      try {
        fs.ftruncateSync(fd, offset);
        this.allocated = offset;
      } catch {
        // The next append rewrites this region anyway; replay would cut it as a torn tail.
      }
      throw err;
    }
    seg.end = offset + total;
    return { segment: seg.id, offset };
  }

  private write(fd: number, bufs: readonly Buffer[], total: number, offset: number): Promise<void> | undefined {
    return this.writes.write(
      () => writeGroupSync(fd, bufs, total, offset),
      () => writeGroup(fd, bufs, total, offset),
    );
  }

  /** For fsyncPerTransaction=false: the periodic fsync. */
  async syncIfDirty(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    await this.datasync(this.writeFd);
  }

  private datasync(fd: number): Promise<void> | undefined {
    if (!this.blocking) return datasync(fd);
    fs.fdatasyncSync(fd);
    return undefined;
  }

  /**
   * Reads the event at (segment, offset), using and refilling the read-ahead window (one read
   * per window, not per event). Throws naming the file and offset when the event is damaged.
   */
  read(segment: number, offset: number): Event {
    if (segment === this.rSeg && offset >= this.rStart) {
      const e = decodeEventAt(this.rBuf, offset - this.rStart, this.rEnd - this.rStart);
      if (e === "corrupt") throw new CorruptEventError(this.pathOf(segment) ?? `segment ${segment}`, offset);
      if (e) return e;
    }
    const seg = this.segments.get(segment);
    if (!seg) throw new Error(`data file for segment ${segment} is gone`);
    if (seg.readFd === null) {
      // One read descriptor at a time: takes move through the log in order, and a descriptor
      // per segment kept until the next checkpoint runs out of descriptors (EMFILE) when a
      // small maxFileSize makes thousands of segments.
      const prev = this.reading;
      if (prev && prev !== seg && prev.readFd !== null) {
        fs.closeSync(prev.readFd);
        prev.readFd = null;
      }
      seg.readFd = fs.openSync(seg.path, "r");
      this.reading = seg;
    }
    const limit = seg.end;
    let want = Math.min(READ_AHEAD, limit - offset);
    if (want < EVENT_PREFIX) throw new Error(`event at ${seg.path}:${offset} lies beyond the written data (${limit} bytes)`);
    // Events are copied out of the window, so one window buffer serves every read.
    let buf = this.rBuf.length >= want ? this.rBuf : Buffer.allocUnsafe(Math.max(want, READ_AHEAD));
    let got = fs.readSync(seg.readFd, buf, 0, want, offset);
    if (got >= EVENT_PREFIX) {
      const need = eventLengthAt(buf, 0);
      if (need > got) {
        want = Math.min(Math.max(need, READ_AHEAD), limit - offset);
        if (buf.length < want) buf = Buffer.allocUnsafe(want);
        got = readFullySync(seg.readFd, buf, want, offset);
      }
    }
    this.rSeg = segment;
    this.rStart = offset;
    this.rEnd = offset + got;
    this.rBuf = buf;
    const e = decodeEventAt(buf, 0, got);
    if (e === "corrupt") throw new CorruptEventError(seg.path, offset);
    if (!e) throw new Error(`cannot read the event at ${seg.path}:${offset}: the data file ends early`);
    return e;
  }

  /** Deletes a segment that holds no pending event and that replay no longer needs. */
  remove(id: number): void {
    const seg = this.segments.get(id);
    if (!seg || seg === this.active) return;
    if (seg.readFd !== null) fs.closeSync(seg.readFd);
    seg.readFd = null;
    if (this.reading === seg) this.reading = null;
    if (this.rSeg === id) this.rSeg = -1;
    this.segments.delete(id);
    fs.rmSync(seg.path, { force: true });
  }

  async close(): Promise<void> {
    if (this.writeFd >= 0 && this.dirty) await this.datasync(this.writeFd);
    if (this.writeFd >= 0) this.trimTail();
    this.closeNow();
  }

  /**
   * Cuts the zeros written ahead off the active segment, so only a running channel's newest
   * segment has them. Not synced: a zero tail that comes back after a crash reads as the end.
   */
  private trimTail(): void {
    if (this.allocated <= this.active.end) return;
    try {
      fs.ftruncateSync(this.writeFd, this.active.end);
      this.allocated = this.active.end;
    } catch {
      // Left as it is: replay stops at the zeros all the same.
    }
  }

  /** Closes every descriptor without syncing (what a process that dies leaves to the kernel). */
  closeNow(): void {
    if (this.writeFd >= 0) {
      fs.closeSync(this.writeFd);
      this.writeFd = -1;
    }
    for (const seg of this.segments.values()) {
      if (seg.readFd !== null) fs.closeSync(seg.readFd);
      seg.readFd = null;
    }
    this.reading = null;
    this.rBuf = Buffer.alloc(0);
    this.rSeg = -1;
  }
}
