import { describe, expect, test } from "bun:test";
import { bodyEvent, type Event } from "../../../../src/core/event.ts";
import { RecentEvents } from "../../../../src/components/channels/file/recent-events.ts";

const ev = (s: string): Event => bodyEvent(new TextEncoder().encode(s));
const text = (e: Event | undefined): string | undefined => (e ? new TextDecoder().decode(e.body) : undefined);

describe("the file channel's recent events", () => {
  test("takes in sequence order get the events as put, across many wraps of the ring", () => {
    const r = new RecentEvents(3, 1 << 20);
    let next = 0;
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 2; i++) r.add(next + i, ev(`e${next + i}`));
      expect(text(r.take(next))).toBe(`e${next}`);
      expect(text(r.take(next + 1))).toBe(`e${next + 1}`);
      next += 2;
    }
    expect(r.take(next)).toBeUndefined();
  });

  test("past maxEvents or maxBytes nothing more is kept: those takes read the log (undefined)", () => {
    const byCount = new RecentEvents(2, 1 << 20);
    for (let i = 0; i < 3; i++) byCount.add(i, ev(`e${i}`));
    expect(text(byCount.take(0))).toBe("e0");
    expect(text(byCount.take(1))).toBe("e1");
    expect(byCount.take(2)).toBeUndefined();

    const byBytes = new RecentEvents(10, 5);
    byBytes.add(0, ev("abc"));
    byBytes.add(1, ev("def")); // 6 bytes: over
    expect(text(byBytes.take(0))).toBe("abc");
    expect(byBytes.take(1)).toBeUndefined();
    byBytes.add(2, ev("ghi")); // room again once taken
    expect(text(byBytes.take(2))).toBe("ghi");
  });

  test("a take further on drops the older events; a take of an older one (after a rollback) is not served", () => {
    const r = new RecentEvents(8, 1 << 20);
    for (let i = 0; i < 5; i++) r.add(i, ev(`e${i}`));
    expect(text(r.take(3))).toBe("e3");
    expect(r.take(1)).toBeUndefined();
    expect(text(r.take(4))).toBe("e4");
    r.add(5, ev("e5"));
    r.clear();
    expect(r.take(5)).toBeUndefined();
  });
});
