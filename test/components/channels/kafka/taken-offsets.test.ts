import { describe, expect, test } from "bun:test";
import { TakenOffsets } from "../../../../src/components/channels/kafka/taken-offsets.ts";

const rec = (offset: number, partition = 0) => ({ topic: "t", partition, offset });
type Rec = ReturnType<typeof rec>;

/** A take's commit whose offset commit succeeds, as the channel makes it: what the offsets move past. */
function commit<E>(t: TakenOffsets<Rec, E>, records: Rec[], events: (E | null)[]): Rec[] {
  const upTo = t.committed(records, events);
  t.settled(upTo);
  return upTo;
}

describe("TakenOffsets: how far the Kafka channel commits its group's offset", () => {
  test("takes committed in order move the offset past the last one", () => {
    const t = new TakenOffsets<ReturnType<typeof rec>, string>();
    const [a, b] = [rec(0), rec(1)];
    t.taken(a);
    t.taken(b);
    expect(commit(t, [a, b], ["a", "b"])).toEqual([b]);
    expect(t.repeatable()).toEqual([]);
  });

  test("a later take committed first does not move the offset past an open one; it is declared repeatable until the open one commits", () => {
    const t = new TakenOffsets<ReturnType<typeof rec>, string>();
    const [a, b, c] = [rec(5), rec(6), rec(7)];
    for (const r of [a, b, c]) t.taken(r);
    expect(commit(t, [b], ["b"])).toEqual([]);
    expect(t.repeatable()).toEqual(["b"]);
    expect(commit(t, [a], ["a"])).toEqual([b]);
    expect(t.repeatable()).toEqual([]);
    expect(commit(t, [c], ["c"])).toEqual([c]);
  });

  test("a rolled-back take stays held (it is taken again later); partitions move on their own; skipped records are no events", () => {
    const t = new TakenOffsets<ReturnType<typeof rec>, string>();
    const [a, b, x] = [rec(0), rec(1), rec(0, 1)];
    for (const r of [a, b, x]) t.taken(r);
    // a rolled back (not committed), b and x committed: partition 1 moves, partition 0 waits for a.
    expect(commit(t, [b, x], ["b", null])).toEqual([x]);
    expect(t.repeatable()).toEqual(["b"]);
    t.taken(a);
    expect(commit(t, [a], ["a"])).toEqual([b]);
    t.clear();
    expect(t.repeatable()).toEqual([]);
  });

  test("a take whose offset commit failed is held again: no other take commits past it, taking it again is no first take, and what the commit would have covered stays repeatable", () => {
    const t = new TakenOffsets<Rec, string>();
    const [a, b, c, d] = [rec(0), rec(1), rec(2), rec(3)];
    for (const r of [a, b, c]) t.taken(r);
    expect(commit(t, [c], ["c"])).toEqual([]);
    // a and b commit, up to c; the broker refuses the offset commit.
    expect(t.committed([a, b], ["a", "b"])).toEqual([c]);
    t.failed([a, b]);
    expect(t.repeatable()).toEqual(["c"]);
    // Before the rollback gives a and b back, another take commits: the offset stays below a.
    t.taken(d);
    expect(commit(t, [d], ["d"])).toEqual([]);
    expect(t.repeatable().sort()).toEqual(["c", "d"]);
    // Taken again (its fetch response is not counted twice), and committed this time.
    expect([t.taken(a), t.taken(b)]).toEqual([false, false]);
    expect(commit(t, [a, b], ["a", "b"])).toEqual([d]);
    expect(t.repeatable()).toEqual([]);
  });

  test("rolled-back takes the consumer dropped (a rebalance) are held no more: the partition, back from another member that committed past them, commits its takes again", () => {
    const t = new TakenOffsets<ReturnType<typeof rec>, string>();
    const [a, b, open] = [rec(0), rec(1), rec(0, 1)];
    for (const r of [a, b, open]) t.taken(r);
    // a and b rolled back, waiting in the buffer with a record never taken; the rebalance drops them.
    expect(t.dropped([a, b, rec(2)])).toEqual([a, b]);
    // Another member committed partition 0 up to offset 5; it comes back from there.
    const [c, d] = [rec(5), rec(6)];
    for (const r of [c, d]) expect(t.taken(r)).toBe(true);
    expect(commit(t, [c, d], ["c", "d"])).toEqual([d]);
    expect(t.repeatable()).toEqual([]);
    // A take still open in partition 1 was not in the buffer: still held, committed as before.
    expect(commit(t, [open], ["open"])).toEqual([open]);
  });
});

/** The rule stated plainly (a set of held offsets a partition), to check the channel's bookkeeping against. */
class Reference {
  private held = new Map<number, Set<number>>();
  private done = new Map<number, Map<number, ReturnType<typeof rec>>>();
  private of<T>(m: Map<number, T>, p: number, make: () => T): T {
    let v = m.get(p);
    if (!v) m.set(p, (v = make()));
    return v;
  }
  taken(r: ReturnType<typeof rec>): boolean {
    const held = this.of(this.held, r.partition, () => new Set<number>());
    const done = this.of(this.done, r.partition, () => new Map());
    const fresh = !held.has(r.offset);
    held.add(r.offset);
    return fresh && !done.delete(r.offset);
  }
  /** The offsets to commit after a take; once `succeeded`, every committed take below them is no longer kept; if not, the take's records are held again. */
  committed(records: ReturnType<typeof rec>[], succeeded: boolean): string[] {
    const out: string[] = [];
    const partitions = [...new Set(records.map((r) => r.partition))];
    for (const r of records) this.held.get(r.partition)!.delete(r.offset);
    for (const p of partitions) {
      const held = this.held.get(p)!;
      const done = this.of(this.done, p, () => new Map());
      for (const r of records) if (r.partition === p) done.set(r.offset, r);
      const lowest = Math.min(...held);
      const below = [...done.keys()].filter((o) => o < lowest);
      if (below.length === 0) continue;
      const upTo = Math.max(...below);
      if (succeeded) for (const o of below) done.delete(o);
      out.push(`${p}:${upTo}`);
    }
    if (!succeeded) {
      for (const r of records) {
        this.held.get(r.partition)!.add(r.offset);
        this.done.get(r.partition)!.delete(r.offset);
      }
    }
    return out.sort();
  }
}

test("random takes, rollbacks and commits of several transactions in any order: the same offsets as a set of held offsets gives", () => {
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let round = 0; round < 20; round++) {
    const t = new TakenOffsets<ReturnType<typeof rec>, string>();
    const ref = new Reference();
    // The consumer's buffer: records of two partitions in arrival order; rolled-back takes go back to its head.
    let buffer = Array.from({ length: 6000 }, (_, i) => rec(Math.floor(i / 2), i % 2));
    const open: ReturnType<typeof rec>[][] = [[], [], []];
    for (let step = 0; step < 1500 && (buffer.length > 0 || open.some((x) => x.length > 0)); step++) {
      const tx = random(open.length);
      const op = random(10);
      if (op < 6 && buffer.length > 0) {
        const n = 1 + random(40);
        for (const r of buffer.splice(0, n)) {
          expect(t.taken(r)).toBe(ref.taken(r));
          open[tx].push(r);
        }
      } else if (op < 8 && open[tx].length > 0) {
        const got = commit(t, open[tx], open[tx].map((r) => `${r.partition}:${r.offset}`)).map((r) => `${r.partition}:${r.offset}`).sort();
        expect(got).toEqual(ref.committed(open[tx], true));
        open[tx] = [];
      } else if (op < 9 && open[tx].length > 0) {
        // Rolled back; or its offset commit failed (held again, then rolled back): taken again later, not as a first take.
        if (random(2) === 0) {
          expect(t.committed(open[tx], open[tx].map(() => null)).map((r) => `${r.partition}:${r.offset}`).sort()).toEqual(ref.committed(open[tx], false));
          t.failed(open[tx]);
        }
        buffer = [...open[tx], ...buffer];
        open[tx] = [];
      }
    }
  }
});

test("a long run of batches committed in order while the next one is open: each commit moves the offset to its last record", () => {
  const t = new TakenOffsets<ReturnType<typeof rec>, string>();
  const batch = (n: number) => Array.from({ length: 1000 }, (_, i) => rec(n * 1000 + i));
  let open = batch(0);
  for (const r of open) expect(t.taken(r)).toBe(true);
  for (let n = 1; n < 10; n++) {
    const next = batch(n);
    for (const r of next) expect(t.taken(r)).toBe(true);
    expect(commit(t, open, open.map(() => "e"))).toEqual([open[999]]);
    open = next;
  }
  expect(commit(t, open, open.map(() => "e"))).toEqual([open[999]]);
  expect(t.repeatable()).toEqual([]);
});
