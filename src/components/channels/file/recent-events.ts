import { bodyLength, type Event } from "../../../core/event.ts";

/**
 * The file channel's newest committed events, kept as the objects that were put (bounded in
 * count and body bytes), so that a sink keeping up takes them without reading or decoding them
 * back from the log: in a steady pipeline every take is of an event committed a moment ago.
 * The log stays the only copy that matters: what is not kept here (or no longer) is read from
 * disk as before.
 */
export class RecentEvents {
  /** A ring of maxEvents slots: [head, head + count) hold events in sequence order. */
  private readonly seqs: Float64Array;
  private readonly events: (Event | undefined)[];
  private head = 0;
  private count = 0;
  private bytes = 0;

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes: number,
  ) {
    this.seqs = new Float64Array(maxEvents);
    this.events = new Array<Event | undefined>(maxEvents).fill(undefined);
  }

  /** Keeps an event just committed (sequence numbers come in increasing order), if there is room. */
  add(seq: number, event: Event): void {
    const size = bodyLength(event);
    if (this.count >= this.maxEvents || this.bytes + size > this.maxBytes) return;
    let i = this.head + this.count;
    if (i >= this.maxEvents) i -= this.maxEvents;
    this.seqs[i] = seq;
    this.events[i] = event;
    this.count++;
    this.bytes += size;
  }

  /**
   * The event with sequence number `seq`, when it is the oldest one kept (takes come in queue
   * order); else undefined. Events older than `seq` are dropped.
   */
  take(seq: number): Event | undefined {
    while (this.count > 0 && this.seqs[this.head] < seq) this.drop();
    if (this.count === 0 || this.seqs[this.head] !== seq) return undefined;
    const e = this.events[this.head];
    this.drop();
    return e;
  }

  clear(): void {
    this.events.fill(undefined);
    this.head = 0;
    this.count = 0;
    this.bytes = 0;
  }

  private drop(): void {
    const h = this.head;
    this.bytes -= bodyLength(this.events[h] as Event);
    this.events[h] = undefined;
    this.head = h + 1 === this.maxEvents ? 0 : h + 1;
    this.count--;
  }
}
