/**
 * The at-least-once ledger: per event id and channel, how often the event was committed into
 * the channel, whether it is still there, and how often it was delivered from it. Simulations,
 * trace recording and replay all count with this one class, so their figures agree.
 */

export interface LedgerChannel {
  name: string;
  /** Keeps committed events across a crash (the file channel). */
  durable: boolean;
}

export interface LedgerSummary {
  /** Distinct events committed into at least one channel. */
  accepted: number;
  /** Distinct events delivered at least once. */
  deliveredUnique: number;
  /** Deliveries beyond the first of an event from the same channel. */
  duplicates: number;
  /** Distinct events committed into a channel and neither delivered from it nor still in it. */
  lost: number;
  /** Distinct events still waiting in a channel when the run ended. */
  remaining: number;
  /** Transactions rolled back (by a source or a sink). */
  rolledBack: number;
  /** Events a crash took out of non-durable channels. */
  crashLost: number;
}

export const SUMMARY_KEYS = ["accepted", "deliveredUnique", "duplicates", "lost", "remaining", "rolledBack", "crashLost"] as const;

class Counts {
  puts: Uint32Array;
  inChannel: Int32Array;
  delivered: Uint32Array;
  constructor(size: number) {
    this.puts = new Uint32Array(size);
    this.inChannel = new Int32Array(size);
    this.delivered = new Uint32Array(size);
  }
  grow(size: number): void {
    const p = new Uint32Array(size);
    p.set(this.puts);
    this.puts = p;
    const c = new Int32Array(size);
    c.set(this.inChannel);
    this.inChannel = c;
    const d = new Uint32Array(size);
    d.set(this.delivered);
    this.delivered = d;
  }
}

export class Ledger {
  private size: number;
  private readonly counts: Counts[];
  /** Highest index used + 1. */
  private used = 0;
  private rolledBackTx = 0;
  /** Events in all channels (committed in, not committed out), kept as a running total. */
  heldTotal = 0;
  /** The same per channel. */
  readonly heldIn: number[] = [];
  private crashLostCount = 0;
  /** String ids (events of a live agent) get dense indexes here. */
  private readonly interned = new Map<string, number>();
  private readonly names: string[] = [];

  readonly channels: LedgerChannel[];

  constructor(channels: readonly LedgerChannel[], sizeHint = 1024) {
    this.channels = [...channels];
    this.size = Math.max(16, sizeHint);
    this.counts = channels.map(() => new Counts(this.size));
    this.heldIn = channels.map(() => 0);
  }

  addChannel(channel: LedgerChannel): number {
    this.channels.push(channel);
    this.counts.push(new Counts(this.size));
    this.heldIn.push(0);
    return this.channels.length - 1;
  }

  /** Dense index of an id: numbers are used as they are, strings are interned. */
  index(id: number | string): number {
    if (typeof id === "number") {
      this.ensure(id);
      return id;
    }
    let i = this.interned.get(id);
    if (i === undefined) {
      i = this.interned.size;
      this.interned.set(id, i);
      this.names.push(id);
      this.ensure(i);
    }
    return i;
  }

  /** The id an index stands for (the string for interned ids). */
  idAt(index: number): number | string {
    return this.interned.size > 0 ? (this.names[index] ?? index) : index;
  }

  private ensure(i: number): void {
    if (i >= this.size) {
      let n = this.size;
      while (n <= i) n *= 2;
      for (const c of this.counts) c.grow(n);
      this.size = n;
    }
    if (i >= this.used) this.used = i + 1;
  }

  /** A committed transaction on channel ch: its puts entered the channel, its takes left it. */
  committed(ch: number, puts: ArrayLike<number>, takes: ArrayLike<number>): void {
    const c = this.counts[ch];
    for (let k = 0; k < puts.length; k++) {
      const i = puts[k];
      this.ensure(i);
      c.puts[i]++;
      c.inChannel[i]++;
    }
    this.heldTotal += puts.length - takes.length;
    this.heldIn[ch] += puts.length - takes.length;
    for (let k = 0; k < takes.length; k++) {
      const i = takes[k];
      this.ensure(i);
      c.inChannel[i]--;
    }
  }

  /** Events that reached the destination of a sink reading channel ch (one call per delivery). */
  delivered(ch: number, ids: ArrayLike<number>): void {
    const d = this.counts[ch];
    for (let k = 0; k < ids.length; k++) {
      this.ensure(ids[k]);
      d.delivered[ids[k]]++;
    }
  }

  rolledBack(): void {
    this.rolledBackTx++;
  }

  /**
   * A process crash: non-durable channels lose what they hold; a channel in `partial` (one that
   * keeps only part of its events, such as SPILLABLEMEMORY) loses exactly the events listed
   * for it. Returns events lost per channel.
   */
  crash(partial?: ReadonlyMap<number, ArrayLike<number>>): { channel: string; lost: number }[] {
    const out: { channel: string; lost: number }[] = [];
    this.channels.forEach((ch, k) => {
      const only = partial?.get(k);
      if (ch.durable && !only) return;
      const held = this.counts[k].inChannel;
      let lost = 0;
      if (only) {
        for (let j = 0; j < only.length; j++) {
          const i = only[j];
          if (i < this.used && held[i] > 0) {
            lost++;
            held[i]--;
          }
        }
      } else {
        for (let i = 0; i < this.used; i++) {
          if (held[i] > 0) {
            lost += held[i];
            held[i] = 0;
          }
        }
      }
      this.crashLostCount += lost;
      this.heldTotal -= lost;
      this.heldIn[k] -= lost;
      out.push({ channel: ch.name, lost });
    });
    return out;
  }

  /** Events of channel ch still in the channel (committed in, not committed out). */
  held(ch: number): number {
    const held = this.counts[ch].inChannel;
    let n = 0;
    for (let i = 0; i < this.used; i++) if (held[i] > 0) n += held[i];
    return n;
  }

  /** How many copies of event index i channel ch holds. */
  heldOf(ch: number, i: number): number {
    return i < this.used ? Math.max(0, this.counts[ch].inChannel[i]) : 0;
  }

  isLost(i: number): number {
    for (let k = 0; k < this.counts.length; k++) {
      const c = this.counts[k];
      if (c.puts[i] > 0 && c.delivered[i] === 0 && c.inChannel[i] <= 0) return k;
    }
    return -1;
  }

  summary(): LedgerSummary {
    let accepted = 0;
    let deliveredUnique = 0;
    let duplicates = 0;
    let lost = 0;
    let remaining = 0;
    const K = this.counts.length;
    for (let i = 0; i < this.used; i++) {
      let put = false;
      let del = false;
      let isLost = false;
      let left = false;
      for (let k = 0; k < K; k++) {
        const c = this.counts[k];
        const p = c.puts[i];
        const d = c.delivered[i];
        if (p > 0) put = true;
        if (d > 0) {
          del = true;
          duplicates += d - 1;
        }
        if (c.inChannel[i] > 0) left = true;
        else if (p > 0 && d === 0) isLost = true;
      }
      if (put) accepted++;
      if (del) deliveredUnique++;
      if (isLost) lost++;
      if (left) remaining++;
    }
    return { accepted, deliveredUnique, duplicates, lost, remaining, rolledBack: this.rolledBackTx, crashLost: this.crashLostCount };
  }

  /** The lowest id that was lost, with the channel it was lost from. */
  firstLost(): { id: number | string; index: number; channel: string } | undefined {
    for (let i = 0; i < this.used; i++) {
      const k = this.isLost(i);
      if (k >= 0) return { id: this.idAt(i), index: i, channel: this.channels[k].name };
    }
    return undefined;
  }
}

/** The verdict line: HELD when nothing accepted was lost. */
export function verdict(s: LedgerSummary): { held: boolean; line: string } {
  const fmt = (n: number) => n.toLocaleString("en-US");
  if (s.lost === 0) return { held: true, line: `at-least-once: HELD (0 lost, ${fmt(s.duplicates)} duplicates)` };
  return { held: false, line: `at-least-once: VIOLATED (${fmt(s.lost)} lost)` };
}
