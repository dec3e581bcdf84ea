import { close, fstat, open, read, type Stats } from "node:fs";

/** What reading a range of a file needs: fs/promises' FileHandle has it too. */
export interface PositionalReader {
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
}

/**
 * A file open for reading, held as its bare descriptor. TAILDIR keeps every tailed file open,
 * and under Bun an fs/promises FileHandle costs about 7 KB per open file (1,000 handles: 7.3 MB
 * RSS; 1,000 descriptors: 0.13 MB). close() waits for reads in flight, so a descriptor number
 * is never closed (and reused by another open) under a read that was already issued.
 */
export class ReadOnlyFile implements PositionalReader {
  private inFlight = 0;
  private drained: (() => void) | null = null;
  private closing: Promise<void> | null = null;

  private constructor(private descriptor: number) {}

  static open(path: string): Promise<ReadOnlyFile> {
    return new Promise((resolve, reject) => open(path, "r", (err, fd) => (err ? reject(err) : resolve(new ReadOnlyFile(fd)))));
  }

  /** The descriptor, or -1 once closing began. */
  get fd(): number {
    return this.closing ? -1 : this.descriptor;
  }

  /** Reads up to `length` bytes at file offset `position` into buffer[offset...]. */
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    return this.readInto(buffer, offset, length, position).then((bytesRead) => ({ bytesRead }));
  }

  /** As read(), resolving to the byte count alone (no result object per read on the hot path). */
  readInto(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    if (this.closing) return Promise.reject(closedError());
    this.inFlight++;
    return new Promise((resolve, reject) =>
      read(this.descriptor, buffer, offset, length, position, (err, n) => {
        this.settled();
        if (err) reject(err);
        else resolve(n);
      }),
    );
  }

  stat(): Promise<Stats> {
    if (this.closing) return Promise.reject(closedError());
    this.inFlight++;
    return new Promise((resolve, reject) =>
      fstat(this.descriptor, (err, s) => {
        this.settled();
        if (err) reject(err);
        else resolve(s);
      }),
    );
  }

  /** Closes once the reads in flight are done; calling it again returns the same promise. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
      await new Promise<void>((resolve, reject) => close(this.descriptor, (err) => (err ? reject(err) : resolve())));
    })();
    return this.closing;
  }

  private settled(): void {
    if (--this.inFlight === 0 && this.drained) {
      const done = this.drained;
      this.drained = null;
      done();
    }
  }
}

function closedError(): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error("EBADF: file already closed");
  err.code = "EBADF";
  return err;
}
