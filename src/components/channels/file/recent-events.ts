import type { Event } from "../../../core/event.ts";

/**
 * The file channel's newest committed events, kept as the objects that were put (bounded in
 * count and body bytes), so that a sink keeping up takes them without reading or decoding them
 * back from the log: in a steady pipeline every take is of an event committed a moment ago.
 * The log stays the only copy that matters: what is not kept here (or no longer) is read from
 * disk as before.
 */
export class RecentEvents {
  private seqs: number[] = [];
  private events: (Event | undefined)[] = [];
  private head = 0;
  private bytes = 0;

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes: number,
  ) {}

  /** Keeps an event just committed (sequence numbers come in increasing order), if there is room. */
  add(seq: number, event: Event): void {
    const size = event.body.length;
    if (this.seqs.length - this.head >= this.maxEvents || this.bytes + size > this.maxBytes) return;
    this.seqs.push(seq);
    this.events.push(event);
    this.bytes += size;
  }

  /**
   * The event with sequence number `seq`, when it is the oldest one kept (takes come in queue
   * order); else undefined. Events older than `seq` are dropped.
   */
  take(seq: number): Event | undefined {
    const seqs = this.seqs;
    while (this.head < seqs.length && seqs[this.head] < seq) this.drop();
    if (this.head === seqs.length || seqs[this.head] !== seq) return undefined;
    const e = this.events[this.head];
    this.drop();
    return e;
  }

  clear(): void {
    this.seqs = [];
    this.events = [];
    this.head = 0;
    this.bytes = 0;
  }

  private drop(): void {
    this.bytes -= (this.events[this.head] as Event).body.length;
    this.events[this.head] = undefined;
    this.head++;
    if (this.head === this.seqs.length) {
      this.seqs.length = 0;
      this.events.length = 0;
      this.head = 0;
    } else if (this.head >= 4096 && this.head * 2 >= this.seqs.length) {
      this.seqs = this.seqs.slice(this.head);
      this.events = this.events.slice(this.head);
      this.head = 0;
    }
  }
}
