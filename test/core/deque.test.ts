// The ring-buffer deque behind MemoryChannel's queue: O(1) at both ends, grows, never loses order.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Deque } from "../../src/core/deque.ts";

describe("Deque", () => {
  test("pushBack/popFront is FIFO; pushFront puts an item ahead of the rest", () => {
    const d = new Deque<number>();
    for (let i = 0; i < 5; i++) d.pushBack(i);
    d.pushFront(-1);
    expect(d.length).toBe(6);
    expect(d.peekFront()).toBe(-1);
    expect(d.at(1)).toBe(0);
    expect(d.toArray()).toEqual([-1, 0, 1, 2, 3, 4]);
    expect(d.popFront()).toBe(-1);
    expect(d.popBack()).toBe(4);
    expect([...d]).toEqual([0, 1, 2, 3]);
  });

  test("an empty deque answers undefined and length 0", () => {
    const d = new Deque<string>();
    expect(d.popFront()).toBeUndefined();
    expect(d.popBack()).toBeUndefined();
    expect(d.peekFront()).toBeUndefined();
    expect(d.at(0)).toBeUndefined();
    expect(d.length).toBe(0);
  });

  test("it grows past its initial size while wrapped around, keeping order", () => {
    const d = new Deque<number>(16);
    for (let i = 0; i < 10; i++) d.pushBack(i);
    for (let i = 0; i < 8; i++) d.popFront(); // head is now mid-buffer
    for (let i = 10; i < 200; i++) d.pushBack(i);
    for (let i = 1; i <= 5; i++) d.pushFront(8 - i - 5);
    expect(d.toArray()).toEqual([...Array.from({ length: 5 }, (_, i) => i - 2), ...Array.from({ length: 192 }, (_, i) => i + 8)]);
    d.clear();
    expect(d.length).toBe(0);
    d.pushBack(1);
    expect(d.toArray()).toEqual([1]);
  });

  test("a batch pushed at once may be several times the room; taken back in pieces, in order", () => {
    const d = new Deque<number>(16);
    d.pushBack(-1);
    d.popFront(); // wrapped from here on
    d.pushBackAll(Array.from({ length: 100 }, (_, i) => i));
    const out: number[] = [];
    expect(d.popFrontInto(out, 30)).toBe(30);
    expect(d.popFrontInto(out, 100)).toBe(70);
    expect(d.popFrontInto(out, 5)).toBe(0);
    expect(out).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  test("a 1,000,000-deep queue drains in order", () => {
    const d = new Deque<number>();
    const n = 1_000_000;
    for (let i = 0; i < n; i++) d.pushBack(i);
    let ok = true;
    for (let i = 0; i < n; i++) if (d.popFront() !== i) ok = false;
    expect(ok).toBe(true);
    expect(d.length).toBe(0);
  });

  test("matches an array under any sequence of operations", () => {
    type Op =
      | { op: "pushBack" | "pushFront"; v: number }
      | { op: "popFront" | "popBack" }
      | { op: "pushBackAll"; vs: number[] }
      | { op: "popFrontInto"; max: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ op: fc.constantFrom("pushBack" as const, "pushFront" as const), v: fc.integer() }),
      fc.record({ op: fc.constantFrom("popFront" as const, "popBack" as const) }),
      // Batches bigger than the initial 16 slots: pushBackAll grows the ring while it is wrapped.
      fc.record({ op: fc.constant("pushBackAll" as const), vs: fc.array(fc.integer(), { maxLength: 40 }) }),
      fc.record({ op: fc.constant("popFrontInto" as const), max: fc.integer({ min: 0, max: 40 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const d = new Deque<number>(16);
        const a: number[] = [];
        for (const o of ops) {
          if (o.op === "pushBack") {
            d.pushBack(o.v);
            a.push(o.v);
          } else if (o.op === "pushFront") {
            d.pushFront(o.v);
            a.unshift(o.v);
          } else if (o.op === "pushBackAll") {
            d.pushBackAll(o.vs);
            a.push(...o.vs);
          } else if (o.op === "popFrontInto") {
            const out = [-1];
            expect(d.popFrontInto(out, o.max)).toBe(Math.min(o.max, a.length));
            expect(out).toEqual([-1, ...a.splice(0, o.max)]);
          } else if (o.op === "popFront") {
            expect(d.popFront()).toBe(a.shift() as number);
          } else {
            expect(d.popBack()).toBe(a.pop() as number);
          }
          expect(d.length).toBe(a.length);
        }
        expect(d.toArray()).toEqual(a);
      }),
      { numRuns: 300, seed: Number(process.env.FC_SEED ?? 7) },
    );
  });
});
