import { describe, expect, test } from "bun:test";
import { TakenOffsets } from "../../../../src/components/channels/kafka/taken-offsets.ts";

const rec = (offset: number, partition = 0) => ({ topic: "t", partition, offset });

describe("TakenOffsets: how far the Kafka channel commits its group's offset", () => {
  test("takes committed in order move the offset past the last one", () => {
    const t = new TakenOffsets<ReturnType<typeof rec>, string>();
    const [a, b] = [rec(0), rec(1)];
    t.taken(a);
    t.taken(b);
    expect(t.committed([a, b], ["a", "b"])).toEqual([b]);
    expect(t.repeatable()).toEqual([]);
  });

  test("a later take committed first does not move the offset past an open one; it is declared repeatable until the open one commits", () => {
    const t = new TakenOffsets<ReturnType<typeof rec>, string>();
    const [a, b, c] = [rec(5), rec(6), rec(7)];
    for (const r of [a, b, c]) t.taken(r);
    expect(t.committed([b], ["b"])).toEqual([]);
    expect(t.repeatable()).toEqual(["b"]);
    expect(t.committed([a], ["a"])).toEqual([b]);
    expect(t.repeatable()).toEqual([]);
    expect(t.committed([c], ["c"])).toEqual([c]);
  });

  test("a rolled-back take stays held (it is taken again later); partitions move on their own; skipped records are no events", () => {
    const t = new TakenOffsets<ReturnType<typeof rec>, string>();
    const [a, b, x] = [rec(0), rec(1), rec(0, 1)];
    for (const r of [a, b, x]) t.taken(r);
    // a rolled back (not committed), b and x committed: partition 1 moves, partition 0 waits for a.
    expect(t.committed([b, x], ["b", null])).toEqual([x]);
    expect(t.repeatable()).toEqual(["b"]);
    t.taken(a);
    expect(t.committed([a], ["a"])).toEqual([b]);
    t.clear();
    expect(t.repeatable()).toEqual([]);
  });
});
