import { describe, expect, test } from "bun:test";
import { Agent } from "../../src/agent/agent.ts";
import fc from "fast-check";
import { StatsReporter, thousands } from "../../src/agent/stats.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { cleanupsAfterEach, sleep, startAgentCli, tempConf, waitUntil } from "../support/helpers.ts";
import { parseAgentConfig, seqConf } from "../support/agent.ts";

const cleanups = cleanupsAfterEach();

function conf(total: number) {
  return parseAgentConfig(seqConf(total, { channel: `a1.channels.c1.type = memory
a1.channels.c1.capacity = 10000` }), "stats.conf");
}

async function delivered(agent: Agent, n: number) {
  const channel = agent.components.channels.get("c1")!.channel;
  await waitUntil(() => channel.counter.values.EventTakeSuccessCount >= n, `${n} events taken`, 2000);
  expect(channel.counter.values.EventTakeSuccessCount).toBe(n);
}

describe("stats reporter", () => {
  test("after a reload replaces a source, its rate counts the new source's events (its counter starts over)", async () => {
    const agent = new Agent("a1", { drainTimeout: 1000 });
    await agent.start(conf(5000));
    await delivered(agent, 5000);
    const clock = new VirtualClock();
    const lines: string[] = [];
    const stats = new StatsReporter(agent, clock, (l) => lines.push(l), 10000);
    stats.start();
    // A new r1 (another totalEvents) feeds the kept channel and sink.
    await agent.reload(conf(3000));
    await delivered(agent, 8000);
    await clock.advance(10000);
    stats.stop();
    await agent.stop();
    expect(lines).toEqual(["stats: r1 in 300.0/s (3,000 total) | c1 out 300.0/s (8,000 total) fill 0.0% (0/10000)"]);
  });

  test("the first line reports only what happened since the reporter started, not the agent's whole history", async () => {
    const agent = new Agent("a1", { drainTimeout: 1000 });
    await agent.start(conf(5000));
    await delivered(agent, 5000);

    // The reporter starts after the traffic (as `flume run` starts it after the metrics server).
    const clock = new VirtualClock();
    const lines: string[] = [];
    const stats = new StatsReporter(agent, clock, (l) => lines.push(l), 10000);
    stats.start();
    await clock.advance(10000);
    stats.stop();
    await agent.stop();
    expect(lines).toEqual(["stats: r1 in 0.0/s (5,000 total) | c1 out 0.0/s (5,000 total) fill 0.0% (0/10000)"]);
  });
});

describe("flume run's stats line", () => {
  test("a one-line report per interval with events in/out per second and channel fill; --quiet turns it off", async () => {
    const { conf } = tempConf(cleanups, "a1.sources = r1\na1.channels = c1\na1.sources.r1.type = seq\na1.sources.r1.totalEvents = 500\na1.sources.r1.batchSize = 100\na1.sources.r1.channels = c1\na1.channels.c1.type = memory\na1.channels.c1.capacity = 1000\n", "stats.conf");
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--stats-interval", "0.3"], /stats: r1 in \d+\.\d\/s \(500 total\) \| c1 out 0\.0\/s \(0 total\) fill 50\.0% \(500\/1000\)/);
    agent.child.kill("SIGTERM");
    // No sink: the 500 events are lost with the memory channel.
    expect(await agent.exited()).toBe(3);
    const quiet = await startAgentCli(cleanups, ["run", "-f", conf, "--stats-interval", "0.3", "--quiet"]);
    await sleep(700);
    expect(quiet.stderr).not.toContain("stats:");
    quiet.child.kill("SIGTERM");
    expect(await quiet.exited()).toBe(3);
  });
});

describe("totals in the stats line", () => {
  test("are grouped by thousands as en-US writes them, for any count", () => {
    expect(thousands(0)).toBe("0");
    expect(thousands(999)).toBe("999");
    expect(thousands(1000)).toBe("1,000");
    expect(thousands(-1234567)).toBe("-1,234,567");
    fc.assert(fc.property(fc.maxSafeNat(), (n) => expect(thousands(n)).toBe(n.toLocaleString("en-US"))));
  });
});
