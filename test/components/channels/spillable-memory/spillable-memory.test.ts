// SPILLABLEMEMORY beyond the conformance suite: where events go (memory, then the overflow),
// overflowTimeout's wait before spilling, what a crash and a clean stop keep, and its config.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { componentContext } from "../../../../src/components/component.ts";
import { definition } from "../../../../src/components/channels/spillable-memory/index.ts";
import type { SpillableMemoryChannel } from "../../../../src/components/channels/spillable-memory/spillable-memory-channel.ts";
import * as registry from "../../../../src/components/registry.ts";
import { validateConfigText } from "../../../../src/config/validate.ts";
import { ChannelFullException } from "../../../../src/core/errors.ts";
import { bodyText, createEvent } from "../../../../src/core/event.ts";
import { MemoryLogger } from "../../../../src/core/logger.ts";
import { VirtualClock } from "../../../../src/core/virtual-clock.ts";
import { takeOpen } from "../../../support/core.ts";
import { cleanupsAfterEach, runCli, tempDir } from "../../../support/helpers.ts";

const cleanups = cleanupsAfterEach();
const durability = {
  crash: (ch: SpillableMemoryChannel) => definition.durability?.crash(ch),
  lostOnCrash: (ch: SpillableMemoryChannel) => definition.durability?.lostOnCrash?.(ch) ?? [],
  lostOnStop: (ch: SpillableMemoryChannel) => definition.durability?.lostOnStop?.(ch) ?? [],
};

interface Opened {
  ch: SpillableMemoryChannel;
  clock: VirtualClock;
  logger: MemoryLogger;
  dir: string;
  reopen(): Promise<Opened>;
}

/** A channel on a scratch directory, on a virtual clock that also waits for its disk writes. */
async function open(props: Record<string, string>, dir?: string): Promise<Opened> {
  if (!dir) {
    const t = tempDir("flume-spill-");
    cleanups.push(t.cleanup);
    dir = t.dir;
  }
  const where = dir;
  const { options, errors } = definition.parse({ checkpointDir: path.join(where, "checkpoint"), dataDirs: path.join(where, "data"), ...props });
  expect(errors).toEqual([]);
  let ch: SpillableMemoryChannel | null = null;
  const clock = new VirtualClock(1_000_000, async () => {
    for (let i = 0; i < 10_000; i++) {
      await new Promise<void>((r) => setImmediate(r));
      if (!ch?.ioBusy()) return;
    }
  });
  const logger = new MemoryLogger();
  ch = definition.create(options, componentContext("c1", { clock, logger }));
  await ch.start();
  const opened: Opened = { ch, clock, logger, dir: where, reopen: () => open(props, where) };
  return opened;
}

async function put(ch: SpillableMemoryChannel, bodies: string[]): Promise<void> {
  const tx = ch.getTransaction();
  tx.begin();
  for (const b of bodies) tx.put(createEvent(b));
  await tx.commit();
  tx.close();
}

/** Takes up to n events in one transaction and commits (or rolls back) it. */
async function take(ch: SpillableMemoryChannel, n: number, commit = true): Promise<string[]> {
  const { tx, events } = takeOpen(ch, n);
  if (commit) await tx.commit();
  else await tx.rollback();
  tx.close();
  return events.map(bodyText);
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => String(from + i));

describe("SPILLABLEMEMORY: where events go", () => {
  test("memory first, the rest to the overflow on disk; takes return them in put order across both", async () => {
    const { ch } = await open({ memoryCapacity: "3", overflowCapacity: "20", overflowTimeout: "0", transactionCapacity: "5" });
    try {
      await put(ch, range(0, 2));
      await put(ch, range(2, 6)); // 1 fits in memory, 3 spill
      expect([ch.memorySize, ch.overflowSize]).toEqual([3, 3]);
      await take(ch, 2); // memory has room for 2 again: the next puts go there, after the overflowed ones
      await put(ch, range(6, 8));
      expect([ch.memorySize, ch.overflowSize]).toEqual([3, 3]);
      expect(ch.counter.values.ChannelCapacity).toBe(23);
      expect(ch.counter.values.ChannelSize).toBe(6);
      expect(await take(ch, 5)).toEqual(range(2, 7));
      expect(await take(ch, 5)).toEqual(["7"]);
    } finally {
      await ch.stop();
    }
  });

  test("one transaction takes across the memory/overflow boundary and puts: a rollback restores the order, a commit keeps it", async () => {
    const { ch } = await open({ memoryCapacity: "2", overflowCapacity: "20", overflowTimeout: "0", transactionCapacity: "10" });
    try {
      await put(ch, range(0, 5)); // 0 1 in memory, 2 3 4 in the overflow
      await take(ch, 1); // memory: 1; the next put goes to memory after the overflowed ones
      await put(ch, ["5"]);
      const tx = ch.getTransaction();
      tx.begin();
      const got = [1, 2, 3, 4, 5].map(() => bodyText(tx.take() as never));
      expect(got).toEqual(["1", "2", "3", "4", "5"]); // memory, overflow x3, memory
      tx.put(createEvent("6"));
      await tx.rollback();
      tx.close();
      expect(await take(ch, 10, false)).toEqual(range(1, 6));
      const mixed = ch.getTransaction();
      mixed.begin();
      expect([bodyText(mixed.take() as never), bodyText(mixed.take() as never)]).toEqual(["1", "2"]);
      mixed.put(createEvent("6"));
      mixed.put(createEvent("7"));
      await mixed.commit();
      mixed.close();
      expect(await take(ch, 10)).toEqual(range(3, 8));
      expect(ch.size).toBe(0);
    } finally {
      await ch.stop();
    }
  });

  test("byteCapacity full spills too (bodies counted in avgEventSize units)", async () => {
    const { ch } = await open({ memoryCapacity: "100", byteCapacity: "1000", byteCapacityBufferPercentage: "0", avgEventSize: "100", overflowTimeout: "0" });
    try {
      await put(ch, ["x".repeat(450), "y".repeat(450), "z".repeat(150)]); // 5 + 5 + 2 slots of 10
      expect([ch.memorySize, ch.overflowSize]).toEqual([2, 1]);
      expect((await take(ch, 3)).map((b) => b[0])).toEqual(["x", "y", "z"]);
    } finally {
      await ch.stop();
    }
  });

  test("overflowCapacity 0 is a memory channel (no directories made); memoryCapacity 0 keeps everything on disk", async () => {
    const mem = await open({ memoryCapacity: "2", overflowCapacity: "0", "keep-alive": "1" });
    try {
      await put(mem.ch, ["a", "b"]);
      const tx = mem.ch.getTransaction();
      tx.begin();
      tx.put(createEvent("c"));
      let error: unknown;
      const pending = tx.commit().catch((e) => (error = e));
      await mem.clock.advance(1000);
      await pending;
      expect(error).toBeInstanceOf(ChannelFullException);
      await tx.rollback();
      tx.close();
      expect(existsSync(path.join(mem.dir, "data"))).toBe(false);
    } finally {
      await mem.ch.stop();
    }
    const disk = await open({ memoryCapacity: "0", overflowCapacity: "10" });
    try {
      await put(disk.ch, ["a", "b"]);
      expect([disk.ch.memorySize, disk.ch.overflowSize]).toEqual([0, 2]);
      expect(readdirSync(path.join(disk.dir, "data")).length).toBeGreaterThan(0);
    } finally {
      await disk.ch.stop();
    }
  });
});

describe("SPILLABLEMEMORY: overflowTimeout and keep-alive", () => {
  test("a commit that does not fit in memory waits overflowTimeout for room there; room in time keeps it in memory", async () => {
    const { ch, clock } = await open({ memoryCapacity: "2", overflowCapacity: "10", overflowTimeout: "2" });
    try {
      await put(ch, ["a", "b"]);
      let done = false;
      const pending = put(ch, ["c"]).then(() => (done = true));
      await clock.advance(1999);
      expect(done).toBe(false);
      await take(ch, 1);
      await clock.flush();
      await pending;
      expect([ch.memorySize, ch.overflowSize]).toEqual([2, 0]);
    } finally {
      await ch.stop();
    }
  });

  test("after overflowTimeout it spills; while memory stays full later commits spill at once, until overflowDeactivationThreshold percent is free", async () => {
    const { ch, clock, logger } = await open({ memoryCapacity: "10", overflowCapacity: "100", overflowTimeout: "2", overflowDeactivationThreshold: "50" });
    try {
      await put(ch, range(0, 10));
      let done = false;
      const pending = put(ch, ["10"]).then(() => (done = true));
      await clock.advance(1999);
      expect(done).toBe(false);
      await clock.advance(1);
      await pending;
      expect(ch.overflowSize).toBe(1);
      await take(ch, 4); // 40% free: below the threshold
      await put(ch, range(11, 15)); // memory has room for these (overflowTimeout only delays spilling)
      await put(ch, ["15"]); // memory full again: spills at once, no wait
      expect([ch.memorySize, ch.overflowSize]).toEqual([10, 2]);
      expect(await take(ch, 5)).toEqual(range(4, 9)); // 50% free: back to waiting before a spill
      await put(ch, range(16, 21));
      done = false;
      const waits = put(ch, ["21"]).then(() => (done = true));
      await clock.advance(1999);
      expect(done).toBe(false);
      await clock.advance(1);
      await waits;
      expect(await take(ch, 100)).toEqual(["9", ...range(10, 22)]);
      expect(logger.lines.map((l) => l.message)).toEqual(
        expect.arrayContaining([expect.stringContaining("memory is full (10 events); spilling"), expect.stringContaining("memory has room again")]),
      );
    } finally {
      await ch.stop();
    }
  });

  test("memory and overflow full: the commit waits overflowTimeout, then keep-alive, then fails and stays open", async () => {
    const { ch, clock } = await open({ memoryCapacity: "1", overflowCapacity: "1", overflowTimeout: "1", "keep-alive": "2" });
    try {
      await put(ch, ["a"]);
      await clock.advance(0);
      const spill = put(ch, ["b"]);
      await clock.advance(1000);
      await spill;
      const tx = ch.getTransaction();
      tx.begin();
      tx.put(createEvent("c"));
      let error: unknown = null;
      const pending = tx.commit().catch((e) => (error = e ?? "rejected"));
      await clock.advance(1999); // overflow active: no memory wait, keep-alive only
      expect(error).toBeNull();
      await clock.advance(1);
      await pending;
      expect(error).toBeInstanceOf(ChannelFullException);
      expect(tx.state).toBe("OPEN");
      await tx.rollback();
      tx.close();
    } finally {
      await ch.stop();
    }
  });
});

describe("SPILLABLEMEMORY: what survives", () => {
  test("a crash loses exactly the memory part; the overflowed events come back in order, once; the start says how many", async () => {
    const first = await open({ memoryCapacity: "4", overflowCapacity: "100", overflowTimeout: "0", transactionCapacity: "3" });
    for (let i = 0; i < 12; i += 3) await put(first.ch, range(i, i + 3));
    expect(durability.lostOnCrash(first.ch).map(bodyText)).toEqual(range(0, 4));
    durability.crash(first.ch);
    const again = await first.reopen();
    try {
      expect(again.logger.lines.map((l) => l.message)).toContainEqual(expect.stringContaining("the overflow holds 8 events from before"));
      expect([...(await take(again.ch, 3)), ...(await take(again.ch, 3)), ...(await take(again.ch, 3))]).toEqual(range(4, 12));
    } finally {
      await again.ch.stop();
    }
  });

  test("a clean stop writes the memory queue to the overflow when it is the tail; otherwise says what it loses", async () => {
    const a = await open({ memoryCapacity: "4", overflowCapacity: "100", overflowTimeout: "0" });
    await put(a.ch, range(0, 6)); // 0-3 memory, 4 5 overflow: memory before overflow
    await take(a.ch, 4);
    await put(a.ch, ["6", "7"]); // memory after the overflowed 4 5: the tail
    expect(durability.lostOnStop(a.ch)).toEqual([]);
    await a.ch.stop();
    const b = await a.reopen();
    expect(await take(b.ch, 10, false)).toEqual(["4", "5", "6", "7"]);
    await take(b.ch, 10);
    await put(b.ch, range(10, 16)); // 10-13 memory, 14 15 overflow
    expect(durability.lostOnStop(b.ch).map(bodyText)).toEqual(range(10, 14));
    await b.ch.stop();
    expect(b.logger.lines).toContainEqual({ level: "warn", message: expect.stringContaining("stopping with 4 events in memory that are lost") });
    const c = await b.reopen();
    try {
      expect(await take(c.ch, 10)).toEqual(["14", "15"]);
    } finally {
      await c.ch.stop();
    }
  });
});

describe("SPILLABLEMEMORY: configuration", () => {
  const conf = (...lines: string[]) =>
    ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = seq", "a1.sources.r1.channels = c1", "a1.sinks.k1.type = null", "a1.sinks.k1.channel = c1", "a1.channels.c1.type = SPILLABLEMEMORY", ...lines].join("\n") + "\n";
  const problems = (text: string) => validateConfigText(text, "s.conf", { agentName: "a1" }, registry).problems.map((p) => `${p.line} ${p.severity} ${p.key}: ${p.message}${p.hint ? ` (${p.hint})` : ""}`);

  test("the class name works as a type; the defaults are Flume's", () => {
    expect(registry.lookupComponent("channel", "org.apache.flume.channel.SpillableMemoryChannel")).toBe(definition as never);
    const { options } = definition.parse({});
    expect([options.memoryCapacity, options.overflowCapacity, options.overflowTimeout, options.overflowDeactivationThreshold, options.byteCapacityBufferPercentage, options.avgEventSize, options.transactionCapacity]).toEqual([
      10000, 100000000, 3, 5, 20, 500, 10000,
    ]);
  });

  test("validate: transactionCapacity against the sum of both capacities, both 0, the file channel's own checks, misspellings", () => {
    expect(problems(conf("a1.channels.c1.memoryCapacity = 100", "a1.channels.c1.overflowCapacity = 0"))).toEqual([
      "9 error transactionCapacity: transactionCapacity 10000 (the default) is larger than the capacity 100 (memoryCapacity 100 + overflowCapacity 0) (lower transactionCapacity to at most 100 or raise memoryCapacity or overflowCapacity)",
    ]);
    expect(problems(conf("a1.channels.c1.memoryCapacity = 100", "a1.channels.c1.overflowCapacity = 9900"))).toEqual([]);
    expect(problems(conf("a1.channels.c1.memoryCapacity = 0", "a1.channels.c1.overflowCapacity = 0", "a1.channels.c1.transactionCapacity = 1"))).toContainEqual(
      expect.stringContaining("10 error overflowCapacity: cannot be 0 when memoryCapacity is 0 too"),
    );
    expect(problems(conf("a1.channels.c1.useDualCheckpoints = true", "a1.channels.c1.overflowTimout = 1"))).toEqual([
      "8 error backupCheckpointDir: is required when useDualCheckpoints is true",
      "10 warning overflowTimout: is not a property of channel type SPILLABLEMEMORY, so it is ignored (did you mean overflowTimeout?)",
    ]);
  });

  test("flume describe SPILLABLEMEMORY lists its own and the file channel's properties", () => {
    const r = runCli(["describe", "SPILLABLEMEMORY"]);
    expect(r.code).toBe(0);
    for (const key of ["memoryCapacity", "overflowCapacity", "overflowTimeout", "avgEventSize", "keep-alive", "checkpointDir", "dataDirs", "transactionCapacity"]) expect(r.stdout).toContain(key);
  });
});
