import type { Event } from "../../../core/event.ts";

/**
 * The channel's queue of pending events as a growable ring of typed arrays: per event its
 * sequence number and location (segment id, file offset), plus an optional in-memory copy of
 * the event so a sink that keeps up never reads the disk. 16 bytes and one slot per event, so a
 * million pending events cost about 24 MB.
 */
export class EventQueue {
  private seqs: Float64Array;
  private segs: Uint32Array;
  private offs: Uint32Array;
  private events: (Event | undefined)[];
  private head = 0;
  private _length = 0;

  constructor(initial = 1024) {
    this.seqs = new Float64Array(initial);
    this.segs = new Uint32Array(initial);
    this.offs = new Uint32Array(initial);
    this.events = new Array(initial);
  }

  get length(): number {
    return this._length;
  }

  private grow(): void {
    const cap = this.seqs.length * 2;
    const seqs = new Float64Array(cap);
    const segs = new Uint32Array(cap);
    const offs = new Uint32Array(cap);
    const events: (Event | undefined)[] = new Array(cap);
    for (let i = 0; i < this._length; i++) {
      const j = (this.head + i) % this.seqs.length;
      seqs[i] = this.seqs[j];
      segs[i] = this.segs[j];
      offs[i] = this.offs[j];
      events[i] = this.events[j];
    }
    this.seqs = seqs;
    this.segs = segs;
    this.offs = offs;
    this.events = events;
    this.head = 0;
  }

  pushBack(seq: number, seg: number, off: number, event: Event | undefined): void {
    if (this._length === this.seqs.length) this.grow();
    const j = (this.head + this._length) % this.seqs.length;
    this.seqs[j] = seq;
    this.segs[j] = seg;
    this.offs[j] = off;
    this.events[j] = event;
    this._length++;
  }

  pushFront(seq: number, seg: number, off: number, event: Event | undefined): void {
    if (this._length === this.seqs.length) this.grow();
    this.head = (this.head - 1 + this.seqs.length) % this.seqs.length;
    this.seqs[this.head] = seq;
    this.segs[this.head] = seg;
    this.offs[this.head] = off;
    this.events[this.head] = event;
    this._length++;
  }

  /** Index-based access to the head, for take: read these, then call dropFront(). */
  frontSeq(): number {
    return this.seqs[this.head];
  }
  frontSeg(): number {
    return this.segs[this.head];
  }
  frontOff(): number {
    return this.offs[this.head];
  }
  frontEvent(): Event | undefined {
    return this.events[this.head];
  }

  dropFront(): void {
    this.events[this.head] = undefined;
    this.head = (this.head + 1) % this.seqs.length;
    this._length--;
  }

  /** Calls fn for every entry from head to tail. */
  forEach(fn: (seq: number, seg: number, off: number) => void): void {
    const cap = this.seqs.length;
    for (let i = 0; i < this._length; i++) {
      const j = (this.head + i) % cap;
      fn(this.seqs[j], this.segs[j], this.offs[j]);
    }
  }

  /** Location of the i-th entry from the head, for read-ahead. */
  segAt(i: number): number {
    return this.segs[(this.head + i) % this.seqs.length];
  }
  offAt(i: number): number {
    return this.offs[(this.head + i) % this.seqs.length];
  }
}
