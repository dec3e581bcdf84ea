import { describe, expect, test } from "bun:test";
import { runSimulation } from "../../src/simulate/engine.ts";
import { DuplicateCauses } from "../../src/simulate/causes.ts";
import { Ledger, verdict } from "../../src/simulate/ledger.ts";
import { DEFAULTS, parseDuration, parseDurations, parseFailSpec, SimulationUsageError, type SimulationOptions } from "../../src/simulate/options.ts";
import { seededRandom } from "../../src/simulate/rng.ts";

describe("ledger arithmetic", () => {
  test("puts, takes, deliveries and duplicates per event", () => {
    const l = new Ledger([{ name: "c1", durable: false }]);
    l.committed(0, [0, 1, 2, 3], []);
    // A failing batch delivered 0 and 1, then rolled back; the retry delivers all three.
    l.delivered(0, [0, 1]);
    l.rolledBack(0);
    l.delivered(0, [0, 1, 2]);
    l.committed(0, [], [0, 1, 2]);
    const s = l.summary();
    expect(s).toEqual({ accepted: 4, deliveredUnique: 3, duplicates: 2, lost: 0, remaining: 1, rolledBack: 1, crashLost: 0 });
    expect(l.heldTotal).toBe(1);
    expect(verdict(s).line).toBe("at-least-once: HELD (0 lost, 2 duplicates)");
  });

  test("a crash empties a memory channel: what it held is lost, a file channel keeps it", () => {
    const l = new Ledger([
      { name: "mem", durable: false },
      { name: "file", durable: true },
    ]);
    l.committed(0, [10, 11, 12], []);
    l.committed(1, [10, 11, 12], []);
    l.delivered(0, [10]);
    l.committed(0, [], [10]);
    expect(l.crash()).toEqual([{ channel: "mem", lost: 2 }]);
    expect(l.held(0)).toBe(0);
    expect(l.held(1)).toBe(3);
    const s = l.summary();
    expect(s.lost).toBe(2);
    expect(s.crashLost).toBe(2);
    expect(s.remaining).toBe(3);
    expect(l.firstLost()).toEqual({ id: 11, index: 11, channel: "mem" });
    expect(verdict(s)).toEqual({ held: false, line: "at-least-once: VIOLATED (2 lost)" });
  });

  test("events a channel never accepted are not lost", () => {
    const l = new Ledger([{ name: "c1", durable: false }]);
    l.committed(0, [5], []);
    l.delivered(0, [5]);
    l.committed(0, [], [5]);
    // ids 0..4 were produced but refused (never committed): not in the ledger's books.
    expect(l.summary()).toMatchObject({ accepted: 1, deliveredUnique: 1, lost: 0 });
  });

  test("string ids (live traces) are interned", () => {
    const l = new Ledger([{ name: "c1", durable: false }]);
    const a = l.index("aaaa");
    const b = l.index("bbbb");
    expect(l.index("aaaa")).toBe(a);
    l.committed(0, [a, b], []);
    l.committed(0, [], [a]);
    l.delivered(0, [a]);
    expect(l.firstLost()).toBeUndefined();
    l.crash();
    expect(l.firstLost()?.id).toBe("bbbb");
  });
});

describe("ledger across the hops of a tier", () => {
  const tier = () =>
    new Ledger([
      { name: "edge.c1", durable: false, agent: "edge" },
      { name: "collector.c1", durable: true, agent: "collector" },
    ]);

  test("a forward is a hop, not a delivery: the tier counts what reached a destination, each agent what left it", () => {
    const l = tier();
    l.committed(0, [1, 2, 3], []);
    // The collector committed 1..3 from the edge's batch; the answer was lost, the edge sent them again.
    l.committed(1, [1, 2, 3], []);
    l.forwarded(0, [1, 2, 3]);
    l.committed(1, [1, 2, 3], []);
    l.forwarded(0, [1, 2, 3]);
    l.committed(0, [], [1, 2, 3]);
    l.delivered(1, [1, 2, 3, 1, 2, 3]);
    l.committed(1, [], [1, 2, 3, 1, 2, 3]);
    expect(l.summary()).toMatchObject({ accepted: 3, deliveredUnique: 3, duplicates: 3, lost: 0, remaining: 0 });
    expect(l.summaryOf([0])).toMatchObject({ accepted: 3, deliveredUnique: 3, duplicates: 3, lost: 0 });
    expect(l.summaryOf([1])).toMatchObject({ accepted: 3, deliveredUnique: 3, duplicates: 3, lost: 0 });
    expect(l.eventState(2)).toEqual([
      { channel: "edge.c1", puts: 1, delivered: 0, forwarded: 2, held: 0, lost: false },
      { channel: "collector.c1", puts: 2, delivered: 2, forwarded: 0, held: 0, lost: false },
    ]);
  });

  test("a crash of one agent empties only its memory channels; an event the next agent had committed before the crash is not lost", () => {
    const l = tier();
    l.committed(0, [1, 2, 3, 4], []);
    // 1 and 2 were in the edge's open take and the collector committed them: forwarded, though the take never committed.
    l.committed(1, [1, 2], []);
    l.forwarded(0, [1, 2]);
    expect(l.crash([1], 1)).toEqual([]);
    expect(l.crash([0], 2)).toEqual([{ channel: "edge.c1", lost: 4 }]);
    expect(l.summary()).toMatchObject({ accepted: 4, lost: 2, remaining: 2, crashLost: 4 });
    expect(l.summaryOf([0])).toMatchObject({ lost: 2, crashLost: 4 });
    expect(l.summaryOf([1])).toMatchObject({ lost: 0, crashLost: 0 });
    expect([...l.lostByCrash()]).toEqual([[2, 2]]);
    expect(l.firstLost()).toEqual({ id: 3, index: 3, channel: "edge.c1" });
  });

  test("every extra copy and extra delivery is told, with whether the channel had the copy", () => {
    const seen: string[] = [];
    const l = new Ledger([{ name: "c1", durable: false }], 16, { extraPut: (ch, i) => seen.push(`put ${ch}:${i}`), extraDelivery: (ch, i, copy) => seen.push(`delivery ${ch}:${i} ${copy ? "copy" : "again"}`) });
    l.committed(0, [7], []);
    l.delivered(0, [7]);
    l.delivered(0, [7]);
    l.committed(0, [7], []);
    l.delivered(0, [7]);
    expect(seen).toEqual(["delivery 0:7 again", "put 0:7", "delivery 0:7 again"]);
  });
});

describe("duplicate causes", () => {
  test("a resend takes the cause of what got through; a redelivery the cause noted in its channel; copies keep their cause downstream", () => {
    const c = new DuplicateCauses(3, 16);
    // Event 1 got through to the next agent, its answer was lost: the second copy there is a lost-answer one.
    c.gotThrough(1, "lost-answer");
    c.extraPut(1, 1);
    c.extraDelivery(1, 1, true);
    // The copy travels on: the third hop receives it twice, still because of the lost answer.
    c.extraPut(2, 1);
    c.extraDelivery(2, 1, true);
    // Event 2 reached a destination in a batch that then failed: it is delivered again.
    c.delivered(0, 2, "partial-batch");
    c.extraDelivery(0, 2, false);
    // An extra put nobody explained is a client's retry.
    c.extraPut(0, 3);
    c.extraDelivery(0, 3, true);
    expect([c.count("lost-answer"), c.count("partial-batch"), c.count("client-retry"), c.count("crash-replay"), c.unexplained]).toEqual([2, 1, 1, 0, 0]);
    expect(Object.fromEntries(c.examples)).toEqual({ "lost-answer": 1, "partial-batch": 2, "client-retry": 3 });
    c.extraDelivery(0, 4, false);
    expect(c.unexplained).toBe(1);
  });
});

describe("options", () => {
  test("durations, fault specs and seeds", () => {
    expect(parseDuration("500ms", "x")).toBe(500);
    expect(parseDuration("2s", "x")).toBe(2000);
    expect(parseDuration("1.5m", "x")).toBe(90_000);
    expect(parseDurations("2s,500ms", "x")).toEqual([500, 2000]);
    expect(() => parseDuration("soon", "--crash-at")).toThrow(SimulationUsageError);
    expect(parseFailSpec("0.2", "x")).toEqual({ kind: "rate", rate: 0.2 });
    const b = parseFailSpec("3,7-9", "x");
    expect(b.kind === "batches" && [...b.batches]).toEqual([3, 7, 8, 9]);
    expect(() => parseFailSpec("7-3", "x")).toThrow(SimulationUsageError);
    const r1 = seededRandom(42);
    const r2 = seededRandom(42);
    const a = Array.from({ length: 5 }, r1);
    expect(Array.from({ length: 5 }, r2)).toEqual(a);
    expect(a.every((v) => v >= 0 && v < 1)).toBe(true);
  });
});

describe("simulation results add up", () => {
  const base = (over: Partial<SimulationOptions>): SimulationOptions => ({ ...DEFAULTS, crashAt: [], crashes: [], links: [], events: 3000, ...over });

  test("no faults: every event delivered once", async () => {
    const r = await runSimulation(base({}));
    expect(r.completed).toBe(true);
    expect(r.produced).toBe(3000);
    expect(r.summary).toEqual({ accepted: 3000, deliveredUnique: 3000, duplicates: 0, lost: 0, remaining: 0, rolledBack: 0, crashLost: 0 });
    expect(r.deliveries).toBe(3000);
  });

  test("sink and put failures: deliveries = unique + duplicates, accepted = unique + lost", async () => {
    const r = await runSimulation(base({ failSink: parseFailSpec("0.3", "x"), failPut: 0.2, seed: 7 }));
    const s = r.summary;
    expect(r.completed).toBe(true);
    expect(r.sinkFailures).toBeGreaterThan(0);
    expect(r.putFailures).toBeGreaterThan(0);
    expect(r.retries).toBe(r.putFailures);
    expect(r.deliveries).toBe(s.deliveredUnique + s.duplicates);
    expect(s.accepted).toBe(s.deliveredUnique + s.lost);
    expect(s.lost).toBe(0);
    expect(s.duplicates).toBeGreaterThan(0);
    // Each failed sink batch and each failed put rolled back one transaction.
    expect(s.rolledBack).toBe(r.sinkFailures + r.putFailures);
  });

  test("listed sink batches fail, and nothing else", async () => {
    const r = await runSimulation(base({ failSink: parseFailSpec("2,5-6", "x") }));
    expect(r.sinkFailures).toBe(3);
    expect(r.summary.rolledBack).toBe(3);
    expect(r.summary.lost).toBe(0);
  });

  test("a memory channel crash: lost = what the crash took minus what had already got through", async () => {
    const r = await runSimulation(base({ crashAt: [150] }));
    const s = r.summary;
    expect(r.crashes).toHaveLength(1);
    expect(r.crashes[0].at).toBe(150);
    expect(s.crashLost).toBe(r.crashes[0].dropped[0].events);
    expect(s.lost).toBeGreaterThan(0);
    expect(s.lost).toBeLessThanOrEqual(s.crashLost);
    // The crash's own count of what it lost is the verdict's (what it dropped had partly got through).
    expect(r.crashes[0].lost).toBe(s.lost);
    expect(s.accepted).toBe(s.deliveredUnique + s.lost);
    expect(r.verdict.held).toBe(false);
  });
});
