import { describe, expect, test } from "bun:test";
import { IdleMemoryRelease } from "../../src/agent/idle-release.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";

const MB = 1024 * 1024;

/** An agent stand-in: events moved so far and resident bytes, both set by the test; releases bring RSS to `releasedTo`. */
function harness(o: { quietMs?: number; releasedTo?: number; atStart?: boolean } = {}) {
  const clock = new VirtualClock();
  const state = { events: 0, rss: 40 * MB, releases: [] as number[], after: [] as string[] };
  const releasedTo = o.releasedTo ?? 15 * MB;
  const idle = new IdleMemoryRelease(
    clock,
    () => state.events,
    () => state.rss,
    async (after) => {
      state.releases.push(clock.now());
      state.after.push(after);
      state.rss = releasedTo;
    },
    { quietMs: o.quietMs ?? 3000, atStart: o.atStart },
  );
  /** Advances the clock second by second, with `eventsPerSecond` moved in each. */
  const run = async (seconds: number, eventsPerSecond = 0, rssGrowthPerSecond = 0) => {
    for (let i = 0; i < seconds; i++) {
      state.events += eventsPerSecond;
      state.rss += rssGrowthPerSecond;
      await clock.advance(1000);
    }
  };
  return { clock, state, idle, run };
}

describe("memory released when the agent is quiet", () => {
  test("once after the start, when no event has moved for the quiet time", async () => {
    const { state, idle, run } = harness();
    idle.start();
    await run(2);
    expect(state.releases).toEqual([]);
    await run(1);
    expect(state.releases).toEqual([3000]);
    await run(60);
    expect(state.releases).toEqual([3000]);
    idle.stop();
  });

  test("not while events keep moving; after a burst that took memory, once it has been quiet for the quiet time", async () => {
    const { state, idle, run } = harness();
    idle.start();
    await run(5);
    expect(state.releases).toHaveLength(1);
    // A 30 s burst that grows RSS by 50 MB.
    await run(30, 100_000, (50 * MB) / 30);
    expect(state.releases).toHaveLength(1);
    await run(2);
    expect(state.releases).toHaveLength(1);
    await run(2);
    expect(state.releases).toHaveLength(2);
    expect(state.rss).toBe(15 * MB);
    idle.stop();
  });

  test("a trickle of events with long gaps, which takes little memory, releases nothing more", async () => {
    const { state, idle, run } = harness();
    idle.start();
    await run(5);
    for (let i = 0; i < 20; i++) {
      await run(1, 1, 100 * 1024);
      await run(9);
    }
    expect(state.releases).toHaveLength(1);
    idle.stop();
  });

  test("what an idle agent pages back in after a release does not count as growth", async () => {
    const { state, idle, run } = harness();
    idle.start();
    await run(4);
    expect(state.releases).toHaveLength(1);
    // 12 MB paged back in over a minute of idling, more than the 8 MB a release needs; then
    // one event and a quiet spell.
    await run(60, 0, (12 * MB) / 60);
    await run(1, 1, 100 * 1024);
    await run(5);
    expect(state.releases).toHaveLength(1);
    idle.stop();
  });

  test("a release that fails leaves the agent running and the next quiet spell after a burst tries again", async () => {
    const clock = new VirtualClock();
    let events = 0;
    let rss = 40 * MB;
    const calls: number[] = [];
    const idle = new IdleMemoryRelease(
      clock,
      () => events,
      () => rss,
      async () => {
        calls.push(clock.now());
        if (calls.length === 1) throw new Error("madvise: EPERM");
        rss = 15 * MB;
      },
      { quietMs: 3000 },
    );
    idle.start();
    for (let i = 0; i < 5; i++) await clock.advance(1000);
    expect(calls).toEqual([3000]);
    for (let i = 0; i < 10; i++) {
      events += 1000;
      rss += 5 * MB;
      await clock.advance(1000);
    }
    for (let i = 0; i < 5; i++) await clock.advance(1000);
    expect(calls).toHaveLength(2);
    expect(rss).toBe(15 * MB);
    idle.stop();
  });

  test("with atStart, once right after the start and once after the first quiet spell, as without it", async () => {
    const { state, idle, run, clock } = harness({ atStart: true });
    idle.start();
    await clock.advance(0);
    expect(state.releases).toEqual([0]);
    expect(state.rss).toBe(15 * MB);
    // The rest of the start pages 6 MB back in; the first quiet spell gives them back.
    await run(3, 0, 2 * MB);
    expect(state.releases).toEqual([0, 3000]);
    await run(60, 0, (6 * MB) / 60);
    expect(state.releases).toEqual([0, 3000]);
    expect(state.after).toEqual(["start", "quiet"]);
    idle.stop();
  });

  test("with atStart, a load that begins at once is released once it ends", async () => {
    const { state, idle, run, clock } = harness({ atStart: true });
    idle.start();
    await clock.advance(0);
    await run(20, 50_000, 3 * MB);
    expect(state.releases).toEqual([0]);
    await run(3);
    expect(state.releases).toEqual([0, 23000]);
    idle.stop();
  });

  test("stopped before the release at the start: none", async () => {
    const { state, idle, run } = harness({ atStart: true });
    idle.start();
    idle.stop();
    await run(10);
    expect(state.releases).toEqual([]);
  });

  test("stop ends it: no release afterwards", async () => {
    const { state, idle, run } = harness();
    idle.start();
    await run(1);
    idle.stop();
    await run(10);
    expect(state.releases).toEqual([]);
  });
});
