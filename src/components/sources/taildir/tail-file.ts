import { open } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import type { Event } from "../../../core/event.ts";
import { LineSplitter } from "../../../io/line-splitter.ts";
import type { Fingerprint } from "./position-file.ts";
import { HEAD_BYTES, TAIL_BYTES } from "./position-file.ts";

/** Bytes read per syscall, at most; lines are cut out of these chunks as views. */
export const CHUNK_SIZE = 1024 * 1024;
const MIN_CHUNK = 64 * 1024;

export interface TailFileOptions {
  path: string;
  inode: number;
  group: string;
  headers: Record<string, string>;
  /** Committed position: where reading starts. */
  pos: number;
  maxLineLength: number;
  onOverlong: (file: string, length: number) => void;
}

/** A batch cut from a file and not committed yet. */
export interface TailBatch {
  file: TailFile;
  events: Event[];
  /** Position after the batch's last line: the committed position once the batch commits. */
  endPos: number;
  /** The last line's bytes and its end offset, for the tail fingerprint. */
  lastLine: Uint8Array | null;
  lastLineEnd: number;
  /** Cut at a limit (lines or bytes), not for lack of data: more may follow at once. */
  full: boolean;
}

/**
 * One tailed file, identified by inode (the path may change by rename). `pos` is the
 * committed position: it moves only when a batch cut from this file has been committed to
 * the channel. Reading runs ahead of it through a LineSplitter; a line without its newline
 * stays in the splitter until it is complete.
 */
export class TailFile {
  path: string;
  readonly inode: number;
  readonly group: string;
  readonly headers: Record<string, string>;
  pos: number;
  /** File offset of the next byte to read from disk. */
  private readOffset: number;
  /** File offset where the splitter's count starts. */
  private base: number;
  private readonly splitter: LineSplitter;
  /** Byte budget of a batch: batchSize lines of up to maxLineLength bytes could be gigabytes. */
  private readonly maxBatchBytes: number;
  private handle: FileHandle | null = null;
  private opening: Promise<void> | null = null;
  /** Bumped by close(), so an open in flight knows its descriptor is not wanted any more. */
  private closes = 0;
  /** Let go for good (deleted, or rotated away and drained): never opened again. */
  private released = false;
  /** Size from the last stat. */
  size = 0;
  /** Still matched by its group's pattern (false after it was rotated away). */
  matched = true;
  /** Clock time of the last growth or commit; drives idleTimeout. */
  lastActive: number;
  /** Bytes from offset 0, when known. */
  head: Uint8Array | null = null;
  /** Bytes ending at tailEnd (just before the committed position), when known. */
  tail: Uint8Array | null = null;
  tailEnd = 0;
  /**
   * Set while this file is a copy of a tracked file that was not truncated yet
   * (copytruncate in progress): it is not read until the original shrinks or goes away.
   */
  shadowOf: number | null = null;
  /** The last read failure, logged once until a read succeeds again. */
  readError: string | null = null;
  private eof = false;

  constructor(
    options: TailFileOptions,
    now: number,
  ) {
    this.path = options.path;
    this.inode = options.inode;
    this.group = options.group;
    this.headers = options.headers;
    this.pos = options.pos;
    this.readOffset = options.pos;
    this.base = options.pos;
    this.lastActive = now;
    this.maxBatchBytes = options.maxLineLength;
    this.splitter = new LineSplitter({
      maxLineLength: options.maxLineLength,
      overlong: "split",
      stripCR: true,
      onOverlong: (length) => options.onOverlong(this.path, length),
    });
  }

  get isOpen(): boolean {
    return this.handle !== null;
  }

  async ensureOpen(): Promise<void> {
    if (this.handle) return;
    if (this.released) throw new Error(`${this.path} (inode ${this.inode}) is no longer tailed`);
    // Callers racing to open (a poll's read and a timed position write) share one open.
    this.opening ??= this.openChecked().finally(() => {
      this.opening = null;
    });
    await this.opening;
  }

  private async openChecked(): Promise<void> {
    const closes = this.closes;
    const handle = await open(this.path, "r");
    try {
      // The name may point at another file by now (rotation between stat and open).
      const s = await handle.stat();
      if (s.ino !== this.inode) throw new Error(`${this.path} is now inode ${s.ino}, not ${this.inode}; it will be picked up on the next poll`);
      // Closed while opening (the file was let go): nobody would ever close this descriptor.
      if (closes !== this.closes) throw new Error(`${this.path} was closed while being opened`);
    } catch (err) {
      await handle.close().catch(() => {});
      throw err;
    }
    this.handle = handle;
  }

  /** Size through the open descriptor (the path may name another file by now). */
  async currentSize(): Promise<number> {
    if (!this.handle) return this.size;
    try {
      return (await this.handle.stat()).size;
    } catch {
      return this.size;
    }
  }

  async close(): Promise<void> {
    this.closes++;
    const h = this.handle;
    this.handle = null;
    await h?.close().catch(() => {});
  }

  /** Closes for good: a position write still fingerprinting the file must not reopen it. */
  release(): Promise<void> {
    this.released = true;
    return this.close();
  }

  /** True when bytes past what was read exist, or complete lines wait in the splitter. */
  hasUnread(): boolean {
    return this.size > this.readOffset || !this.eof;
  }

  /** Goes back to the committed position, dropping what was read ahead (after a shrink). */
  rewindTo(pos: number): void {
    this.pos = pos;
    this.readOffset = pos;
    this.base = pos;
    this.splitter.reset(0);
    this.eof = false;
    if (pos === 0) this.head = null;
    this.tail = null;
  }

  /** Marks that the file grew (or may have): the next read goes to disk again. */
  grew(size: number, now: number): void {
    if (size !== this.size) {
      this.lastActive = now;
      this.eof = false;
    }
    this.size = size;
  }

  /**
   * Cuts up to max complete lines, reading big chunks as needed. `flushPartial` also returns a
   * final line without its newline (for a file that will not grow any more).
   */
  async readBatch(max: number, offsetHeader: string | null, fileHeader: string | null, flushPartial: boolean): Promise<TailBatch | null> {
    await this.ensureOpen();
    const handle = this.handle as FileHandle;
    const events: Event[] = [];
    const groupHeaders = this.headers;
    const hasGroupHeaders = Object.keys(groupHeaders).length > 0;
    let lastLine: Uint8Array | null = null;
    let lastLineEnd = 0;
    let bytes = 0;
    while (events.length < max && bytes < this.maxBatchBytes) {
      const before = this.splitter.offset;
      let line = this.splitter.next();
      if (line === null) {
        if (!this.eof) {
          const want = Math.min(CHUNK_SIZE, Math.max(MIN_CHUNK, this.size - this.readOffset));
          let buf = new Uint8Array(want);
          const { bytesRead } = await handle.read(buf, 0, want, this.readOffset);
          if (bytesRead > 0) {
            // Events are views of the chunk and keep all of it alive: don't let a few new
            // lines pin a mostly empty buffer.
            if (bytesRead < want / 2) buf = buf.slice(0, bytesRead);
            if (this.readOffset === 0 && this.head === null) this.head = buf.slice(0, Math.min(HEAD_BYTES, bytesRead));
            this.readOffset += bytesRead;
            if (this.readOffset > this.size) this.size = this.readOffset;
            this.splitter.feed(buf.subarray(0, bytesRead));
            continue;
          }
          this.eof = true;
        }
        if (!flushPartial) break;
        line = this.splitter.flush();
        if (line === null) break;
      }
      const headers: Record<string, string> = hasGroupHeaders ? { ...groupHeaders } : {};
      if (offsetHeader !== null) headers[offsetHeader] = String(this.base + before);
      if (fileHeader !== null) headers[fileHeader] = this.path;
      events.push({ headers, body: line });
      bytes += line.length;
      lastLine = line;
      lastLineEnd = this.base + before + line.length;
    }
    if (events.length === 0) return null;
    const full = events.length >= max || bytes >= this.maxBatchBytes;
    return { file: this, events, endPos: this.base + this.splitter.offset, lastLine, lastLineEnd, full };
  }

  /** Records a committed batch: the position moves, the tail fingerprint follows. */
  committed(batch: TailBatch, now: number): void {
    this.pos = batch.endPos;
    this.lastActive = now;
    if (batch.lastLine !== null && batch.lastLine.length > 0) {
      this.tail = batch.lastLine.subarray(Math.max(0, batch.lastLine.length - TAIL_BYTES));
      this.tailEnd = batch.lastLineEnd;
    }
  }

  /** The fingerprint at the committed position from memory, when both parts are known. */
  memoryFingerprint(): Fingerprint | null {
    if (!this.head || !this.tail || this.tailEnd > this.pos || this.tail.length === 0) return null;
    return { head: Buffer.from(this.head).toString("base64"), tail: Buffer.from(this.tail).toString("base64"), tailEnd: this.tailEnd };
  }

  /** False when the bytes before the committed position changed (truncated and rewritten). */
  async tailStillMatches(): Promise<boolean> {
    if (!this.tail || this.tail.length === 0 || this.tailEnd > this.pos) return true;
    try {
      const now = await this.readAt(this.tailEnd - this.tail.length, this.tail.length);
      return Buffer.from(now).equals(Buffer.from(this.tail));
    } catch {
      return true;
    }
  }

  /** Reads `length` bytes at `offset` (short at the end of the file). */
  async readAt(offset: number, length: number): Promise<Uint8Array> {
    await this.ensureOpen();
    const buf = new Uint8Array(length);
    const { bytesRead } = await (this.handle as FileHandle).read(buf, 0, length, offset);
    return buf.subarray(0, bytesRead);
  }

  /** The fingerprint at the committed position, reading the file when it is not in memory. */
  async fingerprint(): Promise<Fingerprint | null> {
    try {
      if (this.head === null || this.head.length === 0) {
        const head = await this.readAt(0, this.pos > 0 ? Math.min(HEAD_BYTES, this.pos) : Math.min(HEAD_BYTES, this.size));
        if (head.length === 0) return null;
        this.head = head;
      }
      if (this.pos === 0) {
        this.tail = new Uint8Array(0);
        this.tailEnd = 0;
      } else if (this.tail === null || this.tailEnd > this.pos || this.tail.length === 0) {
        const n = Math.min(TAIL_BYTES, this.pos);
        this.tail = await this.readAt(this.pos - n, n);
        this.tailEnd = this.pos;
      }
    } catch {
      return null;
    }
    return { head: Buffer.from(this.head).toString("base64"), tail: Buffer.from(this.tail).toString("base64"), tailEnd: this.tailEnd };
  }
}

/** True when the file at `path` holds the fingerprinted content up to tailEnd. */
export async function matchesFingerprint(filePath: string, fp: Fingerprint): Promise<boolean> {
  const head = Buffer.from(fp.head, "base64");
  const tail = Buffer.from(fp.tail, "base64");
  let handle: FileHandle | null = null;
  try {
    handle = await open(filePath, "r");
    const h = Buffer.alloc(head.length);
    const t = Buffer.alloc(tail.length);
    const r1 = await handle.read(h, 0, head.length, 0);
    const r2 = await handle.read(t, 0, tail.length, fp.tailEnd - tail.length);
    return r1.bytesRead === head.length && r2.bytesRead === tail.length && h.equals(head) && t.equals(tail);
  } catch {
    return false;
  } finally {
    await handle?.close().catch(() => {});
  }
}
