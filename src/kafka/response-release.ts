/**
 * Frees a Fetch response's memory as soon as the Kafka source is done with it, instead of at the
 * runtime's next garbage collection. A response is one 256 kB buffer whose records' keys and
 * values are views of it (record-batch-reader.ts); the garbage collector frees such buffers
 * only in its cycles, so dozens of used ones were resident at the source agent's peak.
 *
 * How: the source makes its events of copies of the records' values (CopiedValues), so no event
 * holds a view of a response; once the batch's offsets are committed, every response before
 * the one its last record came from is done (records are taken in arrival order, a batch
 * given back is taken again first), and its buffer is detached (ArrayBuffer.transfer), which
 * frees it at once. Only buffers that fetch-api.ts saw the response take alone are released:
 * never a socket read shared with another response, a pooled buffer, nor an inflated batch.
 */

const owned = new WeakSet<ArrayBufferLike>();

/** Bytes below which a response is left to the collector (small buffers may be pooled and shared). */
const SMALLEST = 16 * 1024;
/** The frame before a response body in its socket read: size, correlation id, header tags. */
const MOST_HEADER = 16;

/** Marks `body`'s buffer as releasable when the response body is all it holds (past its frame header). */
export function noteResponseBody(body: Uint8Array): void {
  const buffer = body.buffer;
  if (body.length >= SMALLEST && body.byteOffset <= MOST_HEADER && body.byteOffset + body.length === buffer.byteLength) owned.add(buffer);
}

/**
 * Copies of the values of a batch's records, out of their fetch responses: each run of records
 * from one response is copied at once (its bytes between the first value and the last, the
 * records' framing too: one copy a run, not one a record). Record i's value is
 * buffers[i][starts[i] ... starts[i] + its valueLength): no view is made of it (an event
 * keeps the range, see SourceRecordEvent) unless value(i) asks.
 */
export class CopiedValues {
  /** The copy each record's value is in (one a run, shared by its records). */
  readonly buffers: Buffer[];
  /** Where each record's value starts in its copy. */
  readonly starts: Int32Array;
  /** The buffers the values were in, in order (one a run). */
  readonly sources: ArrayBufferLike[] = [];

  constructor(private readonly records: readonly { bytes: Buffer; valueAt: number; valueLength: number }[]) {
    const n = records.length;
    const buffers = new Array<Buffer>(n);
    const starts = new Int32Array(n);
    let i = 0;
    while (i < n) {
      const bytes = records[i].bytes;
      const from = records[i].valueAt;
      let to = from + records[i].valueLength;
      let j = i + 1;
      for (; j < n; j++) {
        const r = records[j];
        if (r.bytes !== bytes || r.valueAt < to) break;
        to = r.valueAt + r.valueLength;
      }
      const copy = Buffer.allocUnsafe(to - from);
      bytes.copy(copy, 0, from, to);
      for (let k = i; k < j; k++) {
        buffers[k] = copy;
        starts[k] = records[k].valueAt - from;
      }
      this.sources.push(bytes.buffer);
      i = j;
    }
    this.buffers = buffers;
    this.starts = starts;
  }

  /** Record i's copied value, as a view. */
  value(i: number): Buffer {
    return this.buffers[i].subarray(this.starts[i], this.starts[i] + this.records[i].valueLength);
  }
}

type Detachable = ArrayBufferLike & { transfer?(length: number): ArrayBuffer };

/** The responses a source's committed batches came from, oldest first; all but the newest are released. */
export class ResponseRelease {
  private readonly held: ArrayBufferLike[] = [];

  /** A batch was committed whose events hold only copies of its records (CopiedValues.sources: the buffers they came from, in order). */
  committed(sources: readonly ArrayBufferLike[]): void {
    const held = this.held;
    for (const buffer of sources) {
      if (buffer !== held[held.length - 1] && owned.has(buffer)) held.push(buffer);
    }
    // The newest may hold records not taken yet.
    while (held.length > 1) detach(held.shift()!);
  }
}

/** Frees a buffer at once when it is all of its memory and not a small (maybe pooled) one; a no-op otherwise. */
export function freeIfWhole(bytes: Buffer): void {
  const buffer = bytes.buffer;
  if (bytes.length >= SMALLEST && bytes.byteOffset === 0 && bytes.length === buffer.byteLength) (buffer as Detachable).transfer?.(0);
}

function detach(buffer: ArrayBufferLike): void {
  owned.delete(buffer);
  (buffer as Detachable).transfer?.(0);
}

/** Bytes ValueCopies copies at once; a value over a quarter of it gets a buffer of its own. */
const SLAB = 64 * 1024;

/**
 * Copies of record values taken one at a time (the Kafka channel's takes): a value's bytes are
 * copied with the ones after it in its response, up to a slab (the run of records a take goes
 * on with), so the next values are found in that copy: one copy call a slab, not one a value.
 */
export class ValueCopies {
  /** The copy the last placed value is in (place()), at `at`. */
  window = Buffer.allocUnsafe(0);
  at = 0;
  /** The response bytes `window` copies, from `from` to `to`. */
  private source: Buffer | null = null;
  private from = 0;
  private to = 0;

  /** Puts r's value in a copy out of its response: window, at `at`, r.valueLength bytes. */
  place(r: { bytes: Buffer; valueAt: number; valueLength: number }): void {
    const n = r.valueLength;
    const start = r.valueAt;
    if (r.bytes === this.source && start >= this.from && start + n <= this.to) {
      this.at = start - this.from;
      return;
    }
    if (n > SLAB / 4) {
      this.window = Buffer.from(r.bytes.subarray(start, start + n));
      this.source = null;
      this.at = 0;
      return;
    }
    // Responses are not written to: a copy of the bytes after the value serves the values that follow it.
    const end = Math.min(r.bytes.length, start + SLAB);
    const copy = Buffer.allocUnsafe(end - start);
    r.bytes.copy(copy, 0, start, end);
    this.window = copy;
    this.source = r.bytes;
    this.from = start;
    this.to = end;
    this.at = 0;
  }

  /** A copy of r's value (a view of the slab it was copied in). */
  copy(r: { bytes: Buffer; valueAt: number; valueLength: number }): Buffer {
    this.place(r);
    return this.window.subarray(this.at, this.at + r.valueLength);
  }

  /** A new consumer fetches again: what was copied is not looked up any more. */
  clear(): void {
    this.source = null;
    this.window = Buffer.allocUnsafe(0);
  }
}

/**
 * The responses of records taken by transactions that are open at once and commit in any order
 * (the Kafka channel's sink runners). Each releasable response counts its records taken and not
 * committed (a rolled-back take stays counted: it waits in the consumer's buffer to be taken
 * again, unless the consumer drops it); once none is left and a newer response was taken from
 * (records are taken in arrival order, so every record of an older one was), it is released.
 */
export class TakenResponses {
  private readonly open = new Map<ArrayBufferLike, number>();
  /** The response the last record taken the first time came from: it may hold records not taken yet. */
  private newest: ArrayBufferLike | null = null;
  private newestOwned = false;

  /** A record taken for the first time (not again after a rollback); its event holds a copy of its value. */
  taken(bytes: Buffer): void {
    const buffer = bytes.buffer;
    if (buffer !== this.newest) {
      this.newest = buffer;
      this.newestOwned = owned.has(buffer);
    }
    if (this.newestOwned) this.open.set(buffer, (this.open.get(buffer) ?? 0) + 1);
  }

  /** The offsets of these taken records were committed: responses none of whose records is left are released. */
  committed(records: readonly { bytes: Buffer }[]): void {
    let buffer: ArrayBufferLike | null = null;
    let n = 0;
    for (const r of records) {
      if (r.bytes.buffer !== buffer) {
        this.settle(buffer, n);
        buffer = r.bytes.buffer;
        n = 0;
      }
      n++;
    }
    this.settle(buffer, n);
    for (const [b, left] of this.open) {
      if (left <= 0 && b !== this.newest) {
        this.open.delete(b);
        detach(b);
      }
    }
  }

  /** Records taken before (rolled back) that the consumer dropped from its buffer: done with as if committed (fetched again, they come in new responses). */
  dropped(records: readonly { bytes: Buffer }[]): void {
    this.committed(records);
  }

  private settle(buffer: ArrayBufferLike | null, n: number): void {
    const left = buffer === null ? undefined : this.open.get(buffer);
    if (left !== undefined) this.open.set(buffer!, left - n);
  }

  /** A new consumer fetches again: the records taken are gone, their responses left to the collector. */
  clear(): void {
    this.open.clear();
    this.newest = null;
    this.newestOwned = false;
  }
}
