import { type Event, lineEvent } from "../../../core/event.ts";
import { freeNow } from "../../../io/free-buffer.ts";
import { LineSplitter } from "../../../io/line-splitter.ts";
import { ReadOnlyFile } from "../../../io/read-only-file.ts";
import { type Fingerprint, HEAD_BYTES, TAIL_BYTES, hashBytes, holdsFingerprint, readRange } from "./fingerprint.ts";

/**
 * Bytes read per syscall, at most (for a file with much to read). A chunk is a fresh buffer (events are views of it, so it
 * lives as long as they are queued) and no file keeps one between its reads: what a source
 * holds in buffers is bounded by the file it is reading and the events in flight, not by the
 * number of files it tails.
 */
const CHUNK_SIZE = 1024 * 1024;
/** Chunks for files with less than BIG_FILE unread: many such files read in turn would otherwise churn through 1 MiB buffers. */
const SMALL_CHUNK = 256 * 1024;
/**
 * A chunk is handed to the splitter as copies of this size, so no event holds the read buffer.
 * Small files: the buffer is freed at once. Measured at 1,000 files of 1 MB: 57-65 KiB peak RSS
 * per file against 65-69 for the chunks themselves; 64 KiB reads did as well but cost about a
 * quarter more CPU (an asynchronous read is 35-50 us in Bun). Big files: the same, with the next
 * chunk read while the copies of the last are cut (one 300 MB file, 6 alternated runs: peak
 * 85 against 95.5 MB for events holding 1 MiB chunks, at 4.92 against 4.57 M lines/s; copies
 * of 16 KiB were slower, of 256 KiB no lower; reading into one reused buffer peaked higher).
 */
const SLICE = 64 * 1024;
const BIG_FILE = 4 * CHUNK_SIZE;
const MIN_CHUNK = 16 * 1024;

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
  /** The last line's bytes and the offset where they end, for the fingerprint. */
  lastLine: Uint8Array | null;
  lastLineEnd: number;
  /** Cut at a limit (lines or bytes), not for lack of data: more may follow at once. */
  full: boolean;
}

const EMPTY = new Uint8Array(0);

/**
 * One tailed file, identified by inode (the path may change by rename). `pos` is the
 * committed position: it moves only when a batch cut from this file has been committed.
 * Reading runs ahead of it through a LineSplitter while the file is being read; park() drops
 * what was read ahead (an unfinished last line is read again next time), so an idle file
 * holds no buffer.
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
  /** Copies of the last chunk read, not fed to the splitter yet (their bytes are before readOffset). */
  private ahead: Uint8Array[] = [];
  /** Byte budget of a batch: batchSize lines of up to maxLineLength bytes could be gigabytes. */
  private readonly maxBatchBytes: number;
  private handle: ReadOnlyFile | null = null;
  /**
   * The read of the next chunk of a big file, started once the last one was copied out: while
   * its lines are cut the main thread does not wait for the disk. Used only while still the
   * read due (same descriptor, same offset).
   */
  private prefetch: { handle: ReadOnlyFile; offset: number; buf: Uint8Array; read: Promise<number> } | null = null;
  private opening: Promise<void> | null = null;
  /** Bumped by close(), so an open in flight knows its descriptor is not wanted any more. */
  private closes = 0;
  /** Let go for good (deleted, or rotated away and drained): never opened again. */
  private released = false;
  /** Size from the last stat. */
  size = 0;
  /** The size at which the last read found no complete line after pos: nothing to do until it changes. */
  private drainedAt = -1;
  /** Still matched by its group's pattern (false after it was rotated away). */
  matched = true;
  /** Clock time of the last growth or commit; drives idleTimeout. */
  lastActive: number;
  /** The file's first bytes (up to HEAD_BYTES), once read. */
  private head: Uint8Array | null = null;
  private headHash = "";
  /** Head of the fingerprint a restart brought, until the bytes are read again. */
  private savedHead: { len: number; hash: string } | null = null;
  /** Hash of the bytes of the last line before pos, and where they end (<= pos). */
  private tail: { end: number; len: number; hash: string } | null = null;
  /** The last committed line's bytes (a view of its chunk) until tailInfo() hashes them. */
  private lastLine: { end: number; bytes: Uint8Array } | null = null;
  /**
   * Set while this file is a copy of a tracked file that was not truncated yet
   * (copytruncate in progress): it is not read until the original shrinks or goes away.
   */
  shadowOf: number | null = null;
  /** The last read failure, logged once until a read succeeds again. */
  readError: string | null = null;
  /** Sequence number of this file's last state change (see state.ts). */
  seq = 0;
  private eof = false;

  constructor(options: TailFileOptions, now: number) {
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
    // Callers racing to open (a poll's read and a copy check) share one open.
    this.opening ??= this.openChecked().finally(() => {
      this.opening = null;
    });
    await this.opening;
  }

  private async openChecked(): Promise<void> {
    const closes = this.closes;
    const handle = await ReadOnlyFile.open(this.path);
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
    this.park();
    await h?.close().catch(() => {});
  }

  /** Closes for good: a copy check still reading the file must not reopen it. */
  release(): Promise<void> {
    this.released = true;
    return this.close();
  }

  /** The read of the next chunk: the read ahead when it is the one due, else a read now. */
  private nextChunk(handle: ReadOnlyFile): { buf: Uint8Array; big: boolean; read: Promise<number> } {
    const ahead = this.prefetch;
    this.prefetch = null;
    if (ahead !== null && ahead.handle === handle && ahead.offset === this.readOffset) return { buf: ahead.buf, big: true, read: ahead.read };
    const unread = this.size - this.readOffset;
    const big = unread > BIG_FILE;
    const buf = new Uint8Array(big ? CHUNK_SIZE : Math.min(SMALL_CHUNK, Math.max(MIN_CHUNK, unread)));
    return { buf, big, read: handle.readInto(buf, 0, buf.length, this.readOffset) };
  }

  private readAhead(handle: ReadOnlyFile): void {
    const buf = new Uint8Array(CHUNK_SIZE);
    const read = handle.readInto(buf, 0, buf.length, this.readOffset);
    // A read ahead that is dropped (the file parked, rewound or closed) may fail unseen; one used is awaited.
    read.catch(() => {});
    this.prefetch = { handle, offset: this.readOffset, buf, read };
  }

  /** Forgets the read ahead (a read in flight keeps its buffer until it ends, then lets it go). */
  private dropReadAhead(): void {
    this.prefetch = null;
  }

  /** True when there may be complete lines after pos that were not read yet. */
  hasUnread(): boolean {
    return this.splitter.pending > 0 || this.ahead.length > 0 || (this.size > this.readOffset && this.size !== this.drainedAt);
  }

  /**
   * Ends a read of this file: lines read ahead and not cut are dropped (read again from disk
   * next time, from the page cache), so the file keeps no buffer while others are read.
   */
  park(): void {
    this.dropReadAhead();
    this.tailInfo(); // drops the view of the chunk
    const cut = this.base + this.splitter.offset;
    this.readOffset = cut;
    this.base = cut;
    this.ahead = [];
    this.splitter.reset(0);
  }

  /** Goes back to `pos`, dropping what was read ahead (after a shrink, or a batch not committed). */
  rewindTo(pos: number): void {
    this.dropReadAhead();
    this.pos = pos;
    this.readOffset = pos;
    this.base = pos;
    this.ahead = [];
    this.splitter.reset(0);
    this.eof = false;
    this.drainedAt = -1;
    if (pos === 0) {
      this.head = null;
      this.savedHead = null;
    }
    const tail = this.tailInfo();
    if (tail && tail.end > pos) this.tail = null;
  }

  /** Records the size of the last stat; the next read goes to disk again when it changed. */
  grew(size: number, now: number): void {
    if (size !== this.size) {
      this.lastActive = now;
      this.eof = false;
    }
    this.size = size;
  }

  private noteHead(offset: number, bytes: Uint8Array): void {
    const have = this.head?.length ?? 0;
    if (have >= HEAD_BYTES || offset > have || offset + bytes.length <= have) return;
    const add = bytes.subarray(have - offset, Math.min(bytes.length, HEAD_BYTES - offset));
    const head = new Uint8Array(have + add.length);
    if (this.head) head.set(this.head, 0);
    head.set(add, have);
    this.head = head;
    this.headHash = hashBytes(head);
    this.savedHead = null;
  }

  /**
   * Cuts up to max complete lines, reading chunks as needed. `flushPartial` also returns a
   * final line without its newline (for a file that will not grow any more).
   */
  async readBatch(max: number, offsetHeader: string | null, fileHeader: string | null, flushPartial: boolean): Promise<TailBatch | null> {
    if (this.handle === null) await this.ensureOpen();
    const handle = this.handle as ReadOnlyFile;
    const events: Event[] = [];
    const groupHeaders = this.headers;
    const hasGroupHeaders = Object.keys(groupHeaders).length > 0;
    const plain = !hasGroupHeaders && offsetHeader === null && fileHeader === null;
    const splitter = this.splitter;
    // The last line as a span of its bytes: its view is made once per batch, not per line.
    let lastBytes: Uint8Array | null = null;
    let lastStart = 0;
    let lastEnd = 0;
    let lastLineEnd = 0;
    let bytes = 0;
    while (events.length < max && bytes < this.maxBatchBytes) {
      if (plain) {
        if (splitter.cutInChunk(events, max - events.length, this.maxBatchBytes - bytes, lineEvent) > 0) {
          bytes += splitter.cutBytes;
          lastBytes = splitter.spanBytes;
          lastStart = splitter.spanStart;
          lastEnd = splitter.spanEnd;
          lastLineEnd = this.base + splitter.spanOffset + (lastEnd - lastStart);
          continue;
        }
      }
      const before = splitter.offset;
      let lineBytes: Uint8Array;
      let start = 0;
      let end: number;
      if (splitter.nextSpan()) {
        lineBytes = splitter.spanBytes;
        start = splitter.spanStart;
        end = splitter.spanEnd;
      } else {
        const next = this.ahead.shift();
        if (next !== undefined) {
          splitter.feed(next);
          continue;
        }
        // Up to the size of the last stat (and what a read finds beyond it): no read to learn
        // that the end was reached.
        if (!this.eof && this.size > this.readOffset) {
          const { buf, big, read: reading } = this.nextChunk(handle);
          const bytesRead = await reading;
          if (bytesRead > 0) {
            const read = buf.subarray(0, bytesRead);
            this.noteHead(this.readOffset, read);
            this.readOffset += bytesRead;
            if (this.readOffset > this.size) this.size = this.readOffset;
            // Events are views of what the splitter is fed and keep all of its buffer alive: a
            // read goes on as SLICE copies (a mostly empty one, or a big file's last, as one copy)
            // and the buffer is freed at once. (A Uint8Array's slice() copies; a Buffer's would
            // be a view of the freed read.)
            if (bytesRead > SLICE) {
              for (let at = 0; at < bytesRead; at += SLICE) this.ahead.push(read.slice(at, at + SLICE));
              freeNow(buf);
            } else if (big || bytesRead < buf.length / 2) {
              splitter.feed(read.slice());
              freeNow(buf);
            } else splitter.feed(read);
            if (big && this.size > this.readOffset) this.readAhead(handle);
            continue;
          }
        }
        this.eof = true;
        if (!flushPartial) break;
        const partial = splitter.flush();
        if (partial === null) break;
        lineBytes = partial;
        end = partial.length;
      }
      if (plain) events.push(lineEvent(lineBytes, start, end));
      else {
        const headers: Record<string, string> = hasGroupHeaders ? { ...groupHeaders } : {};
        if (offsetHeader !== null) headers[offsetHeader] = String(this.base + before);
        if (fileHeader !== null) headers[fileHeader] = this.path;
        events.push({ headers, body: lineBytes.subarray(start, end) });
      }
      bytes += end - start;
      lastBytes = lineBytes;
      lastStart = start;
      lastEnd = end;
      lastLineEnd = this.base + before + (end - start);
    }
    if (events.length === 0) {
      if (this.eof) {
        this.drainedAt = this.size;
        this.eof = false;
      }
      return null;
    }
    const full = events.length >= max || bytes >= this.maxBatchBytes;
    if (!full && this.eof) {
      this.drainedAt = this.size;
      this.eof = false;
    }
    const lastLine = lastBytes === null ? null : lastBytes.subarray(lastStart, lastEnd);
    return { file: this, events, endPos: this.base + splitter.offset, lastLine, lastLineEnd, full };
  }

  /** Records a committed batch: the position moves, the fingerprint follows. */
  committed(batch: TailBatch, now: number): void {
    this.pos = batch.endPos;
    this.lastActive = now;
    const line = batch.lastLine;
    // Hashed only when needed (a record, a check, park()): most batches are followed by another.
    if (line !== null && line.length > 0) this.lastLine = { end: batch.lastLineEnd, bytes: line.subarray(Math.max(0, line.length - TAIL_BYTES)) };
  }

  /** The tail part of the fingerprint, hashing the last committed line if that was not done yet. */
  private tailInfo(): { end: number; len: number; hash: string } | null {
    const l = this.lastLine;
    if (l) {
      this.tail = { end: l.end, len: l.bytes.length, hash: hashBytes(l.bytes) };
      this.lastLine = null;
    }
    return this.tail;
  }

  /** The fingerprint at the committed position, from memory; null when not known (yet). */
  fingerprint(): Fingerprint | null {
    if (this.pos === 0) return null;
    const t = this.tailInfo();
    return this.fingerprintWith(t && t.end <= this.pos ? t : null);
  }

  /** The fingerprint this file will have once `batch` is committed. */
  fingerprintAfter(batch: TailBatch): Fingerprint | null {
    const line = batch.lastLine;
    if (line === null || line.length === 0) {
      const t = this.tailInfo();
      return this.fingerprintWith(t && t.end <= batch.endPos ? t : null);
    }
    const from = Math.max(0, line.length - TAIL_BYTES);
    return this.fingerprintWith({ end: batch.lastLineEnd, len: line.length - from, hash: hashBytes(line, from) });
  }

  private fingerprintWith(tail: { end: number; len: number; hash: string } | null): Fingerprint | null {
    const head = this.head ? { len: this.head.length, hash: this.headHash } : this.savedHead;
    if (!head) return null;
    const t = tail ?? { end: 0, len: 0, hash: "" };
    return { headLen: head.len, head: head.hash, tailEnd: t.end, tailLen: t.len, tail: t.hash };
  }

  /** True when the file holds the fingerprinted bytes (read through its own descriptor). */
  async holds(fp: Fingerprint): Promise<boolean> {
    try {
      await this.ensureOpen();
      return await holdsFingerprint(this.handle as ReadOnlyFile, fp);
    } catch {
      return false;
    }
  }

  /** Takes a saved fingerprint (after a restart) as this file's, until reading replaces it. */
  adoptFingerprint(fp: Fingerprint): void {
    this.savedHead = { len: fp.headLen, hash: fp.head };
    this.tail = fp.tailLen > 0 ? { end: fp.tailEnd, len: fp.tailLen, hash: fp.tail } : null;
    this.lastLine = null;
  }

  /**
   * Reads the fingerprint's parts from the file when they are not in memory (a file taken up
   * at its end, or restored without one). The tail is then the bytes just before pos.
   */
  async loadFingerprint(): Promise<Fingerprint | null> {
    if (this.pos === 0) return null;
    try {
      if (!this.head || this.head.length < Math.min(HEAD_BYTES, this.pos)) {
        const head = await this.readAt(0, Math.min(HEAD_BYTES, Math.max(this.pos, this.size)));
        if (head.length === 0) return null;
        // A saved head must still be what the file starts with (else the restore found a rewrite).
        if (!this.savedHead || (head.length >= this.savedHead.len && hashBytes(head, 0, this.savedHead.len) === this.savedHead.hash)) {
          this.head = head.slice();
          this.headHash = hashBytes(this.head);
          this.savedHead = null;
        }
      }
      const known = this.tailInfo();
      if (!known || known.end > this.pos) {
        const n = Math.min(TAIL_BYTES, this.pos);
        const t = await this.readAt(this.pos - n, n);
        if (t.length === n) this.tail = { end: this.pos, len: n, hash: hashBytes(t) };
      }
    } catch {
      return this.fingerprint();
    }
    return this.fingerprint();
  }

  /** False when the bytes before the committed position changed (truncated and rewritten). */
  async tailStillMatches(): Promise<boolean> {
    const t = this.tailInfo();
    if (!t || t.len === 0 || t.end > this.pos) return true;
    try {
      const now = await this.readAt(t.end - t.len, t.len);
      return now.length === t.len && hashBytes(now) === t.hash;
    } catch {
      return true;
    }
  }

  /** Reads `length` bytes at `offset` (short at the end of the file). */
  async readAt(offset: number, length: number): Promise<Uint8Array> {
    if (length === 0) return EMPTY;
    await this.ensureOpen();
    return readRange(this.handle as ReadOnlyFile, offset, length);
  }
}
