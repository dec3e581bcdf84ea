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
  /** Offsets taken and not committed: by open transactions, or rolled back to be taken again. */
  held: Set<number>;
  /** Records whose take committed, above the group's committed offset, with what they carried. */
  done: Map<number, { record: R; event: unknown }>;
}

export class TakenOffsets<R extends TakenRecord, E = unknown> {
  /** By topic, then partition (no key string built per record). */
  private readonly partitions = new Map<string, Map<number, PartitionState<R>>>();

  private state(r: TakenRecord): PartitionState<R> {
    let topic = this.partitions.get(r.topic);
    if (!topic) this.partitions.set(r.topic, (topic = new Map()));
    let s = topic.get(r.partition);
    if (!s) topic.set(r.partition, (s = { held: new Set(), done: new Map() }));
    return s;
  }

  /** A record handed to a transaction. */
  taken(r: R): void {
    const s = this.state(r);
    s.held.add(r.offset);
    // Committed once already, if an offset commit failed and the take was rolled back: pending again.
    s.done.delete(r.offset);
  }

  /**
   * The takes of a transaction committed: returns, per partition, the record to commit the
   * group's offset after (the highest committed record below every held one), when it moved.
   */
  committed(records: readonly R[], events: readonly (E | null)[]): R[] {
    // A transaction's records are mostly of one partition: its state is looked up once a run.
    const touched: PartitionState<R>[] = [];
    const stateOf: PartitionState<R>[] = new Array(records.length);
    let last: PartitionState<R> | null = null;
    let lastTopic = "";
    let lastPartition = -1;
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      if (last === null || r.partition !== lastPartition || r.topic !== lastTopic) {
        last = this.state(r);
        lastTopic = r.topic;
        lastPartition = r.partition;
        if (!touched.includes(last)) touched.push(last);
      }
      last.held.delete(r.offset);
      stateOf[i] = last;
    }
    const lowest = new Map<PartitionState<R>, number>();
    for (const s of touched) {
      let lowestHeld = Number.POSITIVE_INFINITY;
      for (const o of s.held) if (o < lowestHeld) lowestHeld = o;
      lowest.set(s, lowestHeld);
    }
    // Below every held record: the offset may move past it (no need to keep it). Above one: kept, repeatable.
    const upTo = new Map<PartitionState<R>, R>();
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      const s = stateOf[i];
      if (r.offset < lowest.get(s)!) {
        const u = upTo.get(s);
        if (u === undefined || r.offset > u.offset) upTo.set(s, r);
      } else s.done.set(r.offset, { record: r, event: events[i] });
    }
    const out: R[] = [];
    for (const s of touched) {
      const lowestHeld = lowest.get(s)!;
      let u = upTo.get(s) ?? null;
      for (const [o, d] of s.done) if (o < lowestHeld && (u === null || o > u.offset)) u = d.record;
      if (u === null) continue;
      for (const o of s.done.keys()) if (o <= u.offset) s.done.delete(o);
      out.push(u);
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
  }
}
