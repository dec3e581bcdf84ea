/**
 * The channel's queue of pending events: per event its sequence number and location (segment
 * id, file offset), 16 bytes each, in fixed-size chunks of typed arrays. A million pending
 * events cost 16 MB, and growing never copies (a doubling array would briefly hold both).
 * Event bodies stay on disk; take() reads them back in large windows.
 */
const CHUNK = 65536;

class Chunk {
  readonly seqs = new Float64Array(CHUNK);
  readonly segs = new Uint32Array(CHUNK);
  readonly offs = new Uint32Array(CHUNK);
}

export class EventQueue {
  private chunks: Chunk[] = [new Chunk()];
  /** Index of the first entry in chunks[0]. */
  private head = 0;
  /** Index after the last entry in the last chunk. */
  private tail = 0;
  private _length = 0;
  /** One emptied chunk kept for reuse, so a queue hovering at a chunk boundary does not churn. */
  private spare: Chunk | null = null;

  get length(): number {
    return this._length;
  }

  private newChunk(): Chunk {
    const c = this.spare ?? new Chunk();
    this.spare = null;
    return c;
  }

  pushBack(seq: number, seg: number, off: number): void {
    if (this.tail === CHUNK) {
      this.chunks.push(this.newChunk());
      this.tail = 0;
    }
    const c = this.chunks[this.chunks.length - 1];
    c.seqs[this.tail] = seq;
    c.segs[this.tail] = seg;
    c.offs[this.tail] = off;
    this.tail++;
    this._length++;
  }

  pushFront(seq: number, seg: number, off: number): void {
    if (this.head === 0) {
      this.chunks.unshift(this.newChunk());
      this.head = CHUNK;
    }
    this.head--;
    const c = this.chunks[0];
    c.seqs[this.head] = seq;
    c.segs[this.head] = seg;
    c.offs[this.head] = off;
    this._length++;
  }

  /** The head entry, for take: read these, then call dropFront(). */
  frontSeq(): number {
    return this.chunks[0].seqs[this.head];
  }
  frontSeg(): number {
    return this.chunks[0].segs[this.head];
  }
  frontOff(): number {
    return this.chunks[0].offs[this.head];
  }

  dropFront(): void {
    this.head++;
    this._length--;
    if (this._length === 0) {
      // Empty: rewind instead of walking through chunks.
      this.chunks.length = 1;
      this.head = this.tail = 0;
    } else if (this.head === CHUNK) {
      this.spare = this.chunks.shift() ?? null;
      this.head = 0;
    }
  }

  /** Calls fn for every entry from head to tail. */
  forEach(fn: (seq: number, seg: number, off: number) => void): void {
    for (let ci = 0; ci < this.chunks.length; ci++) {
      const c = this.chunks[ci];
      const from = ci === 0 ? this.head : 0;
      const to = ci === this.chunks.length - 1 ? this.tail : CHUNK;
      for (let i = from; i < to; i++) fn(c.seqs[i], c.segs[i], c.offs[i]);
    }
  }
}
