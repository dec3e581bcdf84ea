/**
 * The at-least-once ledger: per event id and channel, how often the event was committed into
 * the channel, whether it is still there, and how it left: delivered to a destination, or
 * forwarded to the next agent of a tier (the downstream channel committed it). Simulations,
 * trace recording and replay all count with this one class, so their figures agree.
 *
 * Two views: summary() is the tier's (deliveries are what reached a destination; a forward is
 * a hop, not a delivery), summaryOf(channels) one agent's (what left its channels, delivered
 * or forwarded). For one agent without forwards both are the same.
 */
import { grown } from "./grown.ts";

export interface LedgerChannel {
  name: string;
  /** Keeps committed events across a crash (the file channel). */
  durable: boolean;
  /** The agent that owns the channel (tiers). */
  agent?: string;
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

/** What Ledger.lostByCrash() files the events a Kafka leader failover lost under. */
export const LOST_IN_BROKER = 0xffff;

export const SUMMARY_KEYS = ["accepted", "deliveredUnique", "duplicates", "lost", "remaining", "rolledBack", "crashLost"] as const;

/** Told when a copy beyond the first appears (the simulator finds each duplicate's cause here). */
export interface LedgerHooks {
  /** A commit put event i into channel ch, which had received it before. */
  extraPut?(ch: number, i: number): void;
  /** A destination got event i from channel ch again; extraCopy: ch had received it more often than delivered before. */
  extraDelivery?(ch: number, i: number, extraCopy: boolean): void;
}

class Counts {
  puts: Uint32Array;
  inChannel: Int32Array;
  delivered: Uint32Array;
  forwarded: Uint32Array;
  /** 1 once a committed take took the event out of the channel. */
  left: Uint8Array;
  /** The crash (1, 2, ...) that last dropped the event from this channel (LOST_IN_BROKER: a Kafka leader failover). */
  droppedBy: Uint16Array;
  /** 1 once the Kafka broker lost a copy that had left the channel. */
  brokerLost: Uint8Array;
  rolledBack = 0;
  crashLost = 0;
  constructor(size: number) {
    this.puts = new Uint32Array(size);
    this.inChannel = new Int32Array(size);
    this.delivered = new Uint32Array(size);
    this.forwarded = new Uint32Array(size);
    this.left = new Uint8Array(size);
    this.droppedBy = new Uint16Array(size);
    this.brokerLost = new Uint8Array(size);
  }
  grow(size: number): void {
    this.puts = grown(this.puts, size);
    this.inChannel = grown(this.inChannel, size);
    this.delivered = grown(this.delivered, size);
    this.forwarded = grown(this.forwarded, size);
    this.left = grown(this.left, size);
    this.droppedBy = grown(this.droppedBy, size);
    this.brokerLost = grown(this.brokerLost, size);
  }
}

/** How one event fared in one channel (for --explain). */
export interface EventInChannel {
  channel: string;
  puts: number;
  delivered: number;
  forwarded: number;
  held: number;
  lost: boolean;
}

export class Ledger {
  private size: number;
  private readonly counts: Counts[];
  /** Highest index used + 1. */
  private used = 0;
  /** Events in all channels (committed in, not committed out), kept as a running total. */
  heldTotal = 0;
  /** The same per channel. */
  readonly heldIn: number[] = [];
  /** String ids (events of a live agent) get dense indexes here. */
  private readonly interned = new Map<string, number>();
  private readonly names: string[] = [];

  readonly channels: LedgerChannel[];

  constructor(
    channels: readonly LedgerChannel[],
    sizeHint = 1024,
    private readonly hooks: LedgerHooks = {},
  ) {
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

  /** Indexes in use: 0 .. extent-1. */
  get extent(): number {
    return this.used;
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
    const hooks = this.hooks;
    for (let k = 0; k < puts.length; k++) {
      const i = puts[k];
      this.ensure(i);
      if (c.puts[i]++ > 0 && hooks.extraPut) hooks.extraPut(ch, i);
      c.inChannel[i]++;
    }
    this.heldTotal += puts.length - takes.length;
    this.heldIn[ch] += puts.length - takes.length;
    for (let k = 0; k < takes.length; k++) {
      const i = takes[k];
      this.ensure(i);
      c.inChannel[i]--;
      c.left[i] = 1;
    }
  }

  /** Events that reached the destination of a sink reading channel ch (one call per delivery). */
  delivered(ch: number, ids: ArrayLike<number>): void {
    const c = this.counts[ch];
    const hooks = this.hooks;
    for (let k = 0; k < ids.length; k++) {
      const i = ids[k];
      this.ensure(i);
      const before = c.delivered[i]++;
      if (before > 0 && hooks.extraDelivery) hooks.extraDelivery(ch, i, c.puts[i] > before);
    }
  }

  /** Events of channel ch that the next agent's channels committed (a hop of a tier). */
  forwarded(ch: number, ids: ArrayLike<number>): void {
    const f = this.counts[ch].forwarded;
    for (let k = 0; k < ids.length; k++) {
      this.ensure(ids[k]);
      f[ids[k]]++;
    }
  }

  /**
   * The Kafka broker lost copies of events of channel ch after they counted: as deliveries or
   * forwards of its sink, or (held) as events committed into the channel itself.
   */
  lostInBroker(ch: number, ids: ArrayLike<number>, counted: "delivered" | "forwarded" | "held"): void {
    const c = this.counts[ch];
    for (let k = 0; k < ids.length; k++) {
      const i = ids[k];
      this.ensure(i);
      if (counted === "held") {
        if (c.inChannel[i] <= 0) continue;
        c.inChannel[i]--;
        this.heldTotal--;
        this.heldIn[ch]--;
      } else {
        const n = counted === "delivered" ? c.delivered : c.forwarded;
        if (n[i] === 0) continue;
        n[i]--;
        c.brokerLost[i] = 1;
      }
      c.droppedBy[i] = LOST_IN_BROKER;
    }
  }

  /** Deliveries of event index i from channel ch. */
  deliveredOf(ch: number, i: number): number {
    return i < this.used ? this.counts[ch].delivered[i] : 0;
  }

  rolledBack(ch: number): void {
    this.counts[ch].rolledBack++;
  }

  /**
   * A process crash: the non-durable channels among `channels` (all when absent) lose what they
   * hold; a channel in `partial` (one that keeps only part of its events, such as
   * SPILLABLEMEMORY) loses exactly the events listed for it. `crash` numbers the crash, so lost
   * events can be traced to it. Returns events lost per channel.
   */
  crash(channels?: readonly number[], crash = 1, partial?: ReadonlyMap<number, ArrayLike<number>>): { channel: string; lost: number }[] {
    const out: { channel: string; lost: number }[] = [];
    for (const k of channels ?? this.channels.map((_, k) => k)) {
      const ch = this.channels[k];
      const only = partial?.get(k);
      if (ch.durable && !only) continue;
      const c = this.counts[k];
      const held = c.inChannel;
      let lost = 0;
      if (only) {
        for (let j = 0; j < only.length; j++) {
          const i = only[j];
          if (i < this.used && held[i] > 0) {
            lost++;
            held[i]--;
            c.droppedBy[i] = crash;
          }
        }
      } else {
        for (let i = 0; i < this.used; i++) {
          if (held[i] > 0) {
            lost += held[i];
            held[i] = 0;
            c.droppedBy[i] = crash;
          }
        }
      }
      c.crashLost += lost;
      this.heldTotal -= lost;
      this.heldIn[k] -= lost;
      out.push({ channel: ch.name, lost });
    }
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

  private lostIn(c: Counts, i: number): boolean {
    return c.puts[i] > 0 && c.delivered[i] === 0 && c.forwarded[i] === 0 && (c.left[i] === 0 || c.brokerLost[i] === 1) && c.inChannel[i] <= 0;
  }

  /** The first channel (among `channels`) that lost event index i, or -1. */
  isLost(i: number, channels?: readonly number[]): number {
    if (i >= this.used) return -1;
    for (const k of channels ?? this.counts.keys()) if (this.lostIn(this.counts[k], i)) return k;
    return -1;
  }

  /** The tier's figures: deliveries are what reached a destination. */
  summary(): LedgerSummary {
    return this.summarize(
      this.counts.map((_, k) => k),
      false,
    );
  }

  /** One agent's figures over its channels: what left them, delivered or forwarded. */
  summaryOf(channels: readonly number[]): LedgerSummary {
    return this.summarize(channels, true);
  }

  /** The figures over some channels, as the tier counts them or as their agent does. */
  summaryOver(channels: readonly number[], view: "tier" | "agent"): LedgerSummary {
    return this.summarize(channels, view === "agent");
  }

  private summarize(channels: readonly number[], forwardsDeliver: boolean): LedgerSummary {
    let accepted = 0;
    let deliveredUnique = 0;
    let duplicates = 0;
    let lost = 0;
    let remaining = 0;
    let rolledBack = 0;
    let crashLost = 0;
    const cs = channels.map((k) => this.counts[k]);
    for (const c of cs) {
      rolledBack += c.rolledBack;
      crashLost += c.crashLost;
    }
    for (let i = 0; i < this.used; i++) {
      let put = false;
      let del = false;
      let isLost = false;
      let left = false;
      for (let k = 0; k < cs.length; k++) {
        const c = cs[k];
        const p = c.puts[i];
        if (p === 0) continue;
        put = true;
        const d = forwardsDeliver ? c.delivered[i] + c.forwarded[i] : c.delivered[i];
        if (d > 0) {
          del = true;
          duplicates += d - 1;
        }
        if (c.inChannel[i] > 0) left = true;
        else if (this.lostIn(c, i)) isLost = true;
      }
      if (put) accepted++;
      if (del) deliveredUnique++;
      if (isLost) lost++;
      if (left) remaining++;
    }
    return { accepted, deliveredUnique, duplicates, lost, remaining, rolledBack, crashLost };
  }

  /** The lowest id that was lost (among `channels`), with the channel it was lost from. */
  firstLost(channels?: readonly number[]): { id: number | string; index: number; channel: string } | undefined {
    for (let i = 0; i < this.used; i++) {
      const k = this.isLost(i, channels);
      if (k >= 0) return { id: this.idAt(i), index: i, channel: this.channels[k].name };
    }
    return undefined;
  }

  /**
   * Lost events per crash that dropped them (the crash number; 0: lost otherwise). Each lost
   * event counts once, for the first channel that lost it, so the counts add up to `lost`.
   */
  lostByCrash(): Map<number, number> {
    const out = new Map<number, number>();
    for (let i = 0; i < this.used; i++) {
      const k = this.isLost(i);
      if (k < 0) continue;
      const by = this.counts[k].droppedBy[i];
      out.set(by, (out.get(by) ?? 0) + 1);
    }
    return out;
  }

  /** Event index i in every channel that saw it. */
  eventState(i: number): EventInChannel[] {
    const out: EventInChannel[] = [];
    if (i < 0 || i >= this.used) return out;
    this.counts.forEach((c, k) => {
      if (c.puts[i] === 0) return;
      out.push({ channel: this.channels[k].name, puts: c.puts[i], delivered: c.delivered[i], forwarded: c.forwarded[i], held: Math.max(0, c.inChannel[i]), lost: this.lostIn(c, i) });
    });
    return out;
  }
}

/** The verdict line: HELD when nothing accepted was lost. */
export function verdict(s: LedgerSummary, label = "at-least-once"): { held: boolean; line: string } {
  const fmt = (n: number) => n.toLocaleString("en-US");
  if (s.lost === 0) return { held: true, line: `${label}: HELD (0 lost, ${fmt(s.duplicates)} duplicates)` };
  return { held: false, line: `${label}: VIOLATED (${fmt(s.lost)} lost)` };
}
