/**
 * How far the Kafka channel may commit its group's offsets. A group keeps one offset per
 * partition, so committing after a record commits every record before it too. Transactions take
 * and commit in any order, and a rolled-back take goes back to be taken again: the offset of a
 * partition may move only past records whose take committed, never past one still held (taken
 * by an open transaction, or rolled back and waiting). Records committed above a held one stay
 * uncommitted in the group: a crash or restart delivers them again (at least once), and
 * `repeatable()` names them.
 */
export interface TakenRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

interface PartitionState<R> {
  /**
   * Offsets taken and not committed (by open transactions, or rolled back to be taken again),
   * ascending from `head` on: takes come in offset order, so a take is mostly a push and a
   * commit moves `head` past its run (no hash set, nothing a record).
   */
  held: number[];
  head: number;
  /** Records whose take committed, above the group's committed offset, with what they carried. */
  done: Map<number, { record: R; event: unknown }>;
}

/** The first index from `from` on whose offset is not below o. */
function lowerBound(held: readonly number[], from: number, o: number): number {
  let lo = from;
  let hi = held.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (held[mid] < o) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Holds o; false when it was held already (a rolled-back take taken again). */
function hold(s: PartitionState<unknown>, o: number): boolean {
  const held = s.held;
  const n = held.length;
  if (n === s.head || o > held[n - 1]) {
    held.push(o);
    return true;
  }
  const i = lowerBound(held, s.head, o);
  if (i < n && held[i] === o) return false;
  held.splice(i, 0, o);
  return true;
}

/** Lets go of the offsets of a committed transaction's takes of one partition (each held). */
function release(s: PartitionState<unknown>, offsets: readonly number[]): void {
  const held = s.held;
  const k = offsets.length;
  const i = lowerBound(held, s.head, offsets[0]);
  let run = i + k <= held.length;
  for (let t = 0; run && t < k; t++) run = held[i + t] === offsets[t];
  if (run && i === s.head) s.head += k;
  else if (run) held.splice(i, k);
  else {
    // Not one run in order (takes of several transactions interleaved): filtered once.
    const drop = new Set(offsets);
    s.held = held.slice(s.head).filter((o) => !drop.has(o));
    s.head = 0;
    return;
  }
  if (s.head === held.length) {
    held.length = 0;
    s.head = 0;
  } else if (s.head > 1024 && s.head * 2 > held.length) {
    s.held = held.slice(s.head);
    s.head = 0;
  }
}

export class TakenOffsets<R extends TakenRecord, E = unknown> {
  /** By topic, then partition (no key string built per record). */
  private readonly partitions = new Map<string, Map<number, PartitionState<R>>>();

  /** The partition of the last record looked up: records come in runs of one partition. */
  private last: { topic: string; partition: number; state: PartitionState<R> } | null = null;

  /** committed()'s working lists, kept from commit to commit (a commit's are a batch long). */
  private which = new Int32Array(0);
  private readonly offsets: number[][] = [];

  private state(r: TakenRecord): PartitionState<R> {
    const last = this.last;
    if (last !== null && last.partition === r.partition && last.topic === r.topic) return last.state;
    let topic = this.partitions.get(r.topic);
    if (!topic) this.partitions.set(r.topic, (topic = new Map()));
    let s = topic.get(r.partition);
    if (!s) topic.set(r.partition, (s = { held: [], head: 0, done: new Map() }));
    this.last = { topic: r.topic, partition: r.partition, state: s };
    return s;
  }

  /** A record handed to a transaction; false when it was taken before (rolled back, or its offset commit failed). */
  taken(r: R): boolean {
    const s = this.state(r);
    const held = hold(s, r.offset);
    // Committed once already, if an offset commit failed and the take was rolled back: pending again.
    const again = s.done.size > 0 && s.done.delete(r.offset);
    return held && !again;
  }

  /**
   * The takes of a transaction committed: returns, per partition, the record to commit the
   * group's offset after (the highest committed record below every held one), when it moved.
   * Then `settled` once that offset commit succeeded, or `failed` when it did not.
   */
  committed(records: readonly R[], events: readonly (E | null)[]): R[] {
    // The partitions touched, and each record's index among them (no lookup a record: runs of one partition).
    const touched: PartitionState<R>[] = [];
    const offsets = this.offsets;
    if (this.which.length < records.length) this.which = new Int32Array(Math.max(records.length, this.which.length * 2));
    const which = this.which;
    let current: PartitionState<R> | null = null;
    let k = -1;
    for (let i = 0; i < records.length; i++) {
      const s = this.state(records[i]);
      if (s !== current) {
        current = s;
        k = touched.indexOf(s);
        if (k < 0) {
          k = touched.push(s) - 1;
          if (offsets.length <= k) offsets.push([]);
          else offsets[k].length = 0;
        }
      }
      offsets[k].push(records[i].offset);
      which[i] = k;
    }
    for (let j = 0; j < touched.length; j++) release(touched[j], offsets[j]);
    const lowest = touched.map((s) => (s.head < s.held.length ? s.held[s.head] : Number.POSITIVE_INFINITY));
    // Below every held record: the offset may move past it (no need to keep it). Above one: kept, repeatable.
    const upTo = new Array<R | null>(touched.length).fill(null);
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      const j = which[i];
      if (r.offset < lowest[j]) {
        const u = upTo[j];
        if (u === null || r.offset > u.offset) upTo[j] = r;
      } else touched[j].done.set(r.offset, { record: r, event: events[i] });
    }
    const out: R[] = [];
    for (let j = 0; j < touched.length; j++) {
      const s = touched[j];
      const lowestHeld = lowest[j];
      let u = upTo[j];
      if (s.done.size > 0) for (const [o, d] of s.done) if (o < lowestHeld && (u === null || o > u.offset)) u = d.record;
      if (u === null) continue;
      out.push(u);
    }
    return out;
  }

  /** The group's offsets were committed after these records: the committed takes up to them are no longer repeatable. */
  settled(upTo: readonly R[]): void {
    for (let i = 0; i < upTo.length; i++) {
      const u = upTo[i];
      const s = this.state(u);
      if (s.done.size > 0) for (const o of s.done.keys()) if (o <= u.offset) s.done.delete(o);
    }
  }

  /**
   * The offset commit of a transaction's takes failed (committed() had let go of them): they
   * are held again, as before it, until the rollback that follows gives them back or a
   * rebalance drops them. Else another take could commit past them meanwhile, and taking them
   * again would count as a first take (the fetch responses they hold counted twice, never
   * released).
   */
  failed(records: readonly R[]): void {
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      const s = this.state(r);
      hold(s, r.offset);
      if (s.done.size > 0) s.done.delete(r.offset);
    }
  }

  /**
   * Records the consumer dropped unread from its buffer (a rebalance, the consumer lost): it
   * fetches again from the group's committed offsets, so the rolled-back takes among them no
   * longer wait here to be taken again. Their holds go (a hold left would keep every later
   * take of the partition from committing); returns the records that were held.
   */
  dropped(records: readonly R[]): R[] {
    const out: R[] = [];
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      const s = this.state(r);
      const held = s.held;
      const at = lowerBound(held, s.head, r.offset);
      if (at === held.length || held[at] !== r.offset) continue;
      held.splice(at, 1);
      out.push(r);
    }
    return out;
  }

  /** The events of committed takes a crash or restart now would deliver again. */
  repeatable(): E[] {
    const out: E[] = [];
    for (const topic of this.partitions.values()) for (const s of topic.values()) for (const d of s.done.values()) if (d.event !== null) out.push(d.event as E);
    return out;
  }

  /** A new consumer reads from the group's committed offsets: nothing is held any more. */
  clear(): void {
    this.partitions.clear();
    this.last = null;
  }
}
