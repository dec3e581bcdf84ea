// `flume top` against a running agent: in a real terminal (tmux) and as plain output.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { renderTop } from "../../src/cli/top.ts";
import { CLI, cleanupsAfterEach, freePort, runCli, sleep, startAgentCli, tempDir, waitUntil } from "../support/helpers.ts";
import { commandRuns, precondition } from "../support/requires.ts";

const cleanups = cleanupsAfterEach();
const needsTmux = precondition(() => commandRuns("tmux", "-V"), "needs tmux");

/**
 * An agent whose seq source keeps producing into a memory channel drained by a file_roll sink,
 * plus a source that cannot start, feeding a second channel drained by a logger sink (which has
 * no Flume counters).
 */
async function agent() {
  const t = tempDir("flume-top-");
  cleanups.push(t.cleanup);
  const mport = await freePort();
  const conf = path.join(t.dir, "agent.conf");
  writeFileSync(
    conf,
    `a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 100000000
a1.sources.r1.batchSize = 10
a1.sources.r1.channels = c1
a1.sources.r2.type = netcat
a1.sources.r2.bind = 203.0.113.1
a1.sources.r2.port = 1
a1.sources.r2.channels = c2
a1.channels.c1.type = memory
a1.channels.c1.capacity = 1000
a1.channels.c2.type = memory
a1.sinks.k2.type = logger
a1.sinks.k2.channel = c2
a1.sinks.k1.type = file_roll
a1.sinks.k1.sink.directory = ${t.dir}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.batchSize = 100
a1.sinks.k1.channel = c1
`,
  );
  const a = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet", "--metrics-port", String(mport), "--metrics-bind", "127.0.0.1"], /metrics on/);
  return { url: `http://127.0.0.1:${mport}`, agent: a };
}

describe("flume top", () => {
  test("without a terminal it prints plain blocks: every component with rates and totals, the channel's fill, what did not start", async () => {
    const { url } = await agent();
    const r = runCli(["top", "--url", url, "--interval", "0.3", "--iterations", "3"], { timeout: 10_000 });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("\x1b[");
    const blocks = r.stdout.trim().split(/\n\n(?=flume top )/);
    expect(blocks).toHaveLength(3);
    const last = blocks[2];
    expect(last).toMatch(/^KIND +NAME +IN +OUT +IN TOTAL +OUT TOTAL +FAIL +FILL$/m);
    expect(last).toMatch(/^source +r1 +\S+\/s +[\d.]+[kM]?\/s /m);
    expect(last).toMatch(/^channel +c1 +.*\[[#.]{20}\] \d+\.\d% [\d,]+\/1,000$/m);
    expect(last).toMatch(/^sink +k1 +\S+\/s +[\d.]+[kM]?\/s +[\d,]+ +[\d,]+ +0$/m);
    // Every configured component has a row, also one without counters.
    expect(last).toMatch(/^sink +k2 +- +- +- +- +- +\(logger: no counters\)$/m);
    expect(last).toMatch(/^channel +c2 +/m);
    expect(last).toMatch(/not started:\n {2}source r2: .*(EADDRNOTAVAIL|address|assign)/i);
    // The seq source keeps going, so its total grows between refreshes.
    const total = (b: string) => Number(/^source +r1 +\S+ +\S+ +[\d,]+ +([\d,]+)/m.exec(b)?.[1].replace(/,/g, "") ?? -1);
    expect(total(blocks[2])).toBeGreaterThan(total(blocks[0]));
  });

  test("a started sink whose sends fail, or a source whose reads fail, is listed under failing, with since when and why, apart from what did not start (a start under way as STARTING)", () => {
    const sample = {
      at: Date.parse("2026-01-02T03:04:05.000Z"),
      metrics: {},
      notStarted: [
        { kind: "source", name: "r1", state: "IDLE", error: "listen EADDRINUSE" },
        { kind: "sink runner", name: "k2", state: "STARTING" },
      ],
      failing: [
        { kind: "sink", name: "k1", error: "Kafka at 127.0.0.1:9092 did not acknowledge 500 records", since: "2026-01-02T03:00:00.000Z" },
        { kind: "source", name: "r3", error: "kafka source r3: topic in does not exist", since: "2026-01-02T03:01:00.000Z" },
      ],
      components: [],
    };
    const text = renderTop("http://127.0.0.1:41414", [], sample, null);
    // A first start under way, with no error yet, is shown with its state.
    expect(text).toContain("\nnot started:\n  source r1: listen EADDRINUSE\n  sink runner k2 (STARTING)\n");
    expect(text).toContain("\nfailing:\n  sink k1 since 2026-01-02T03:00:00.000Z: Kafka at 127.0.0.1:9092 did not acknowledge 500 records\n  source r3 since 2026-01-02T03:01:00.000Z: kafka source r3: topic in does not exist\n");
    expect(renderTop("http://127.0.0.1:41414", [], { ...sample, failing: [] }, null)).not.toContain("failing:");
  });

  test("an agent that cannot be reached: it says so in its own words, with how to start an agent it can read, and exits 1", async () => {
    const port = await freePort();
    const r = runCli(["top", "--url", `http://127.0.0.1:${port}`, "--iterations", "1"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`cannot reach the agent: nothing listens on 127.0.0.1:${port}`);
    expect(r.stdout).toContain("--metrics-port PORT");
    expect(r.stdout).toContain("-Dflume.monitoring.type=http");
    // Not the runtime's words.
    expect(r.stdout).not.toMatch(/fetch\(\)|Is the computer able|ECONNREFUSED|fetch failed/);
  });

  test("usage errors exit 2 naming the option", () => {
    expect(runCli(["top", "--url", "ftp://x"]).code).toBe(2);
    const r = runCli(["top", "--interval", "0"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--interval");
  });

  needsTmux.test("in a terminal (tmux) it redraws in place and q quits", async () => {
    const { url } = await agent();
    const session = `flume-top-${process.pid}`;
    const tmux = (...args: string[]) => spawnSync("tmux", args, { encoding: "utf8" });
    const started = tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "40", `"${process.execPath}" "${CLI}" top --url ${url} --interval 0.2; echo TOP-EXITED $?; sleep 30`);
    expect(started.status).toBe(0);
    cleanups.push(() => void tmux("kill-session", "-t", session));
    const screen = () => tmux("capture-pane", "-p", "-t", session).stdout;
    await waitUntil(() => /^channel +c1 /m.test(screen()), "flume top to draw the table", 10_000);
    await sleep(600);
    const shown = screen();
    expect(shown).toMatch(/^flume top +http:\/\/127\.0\.0\.1:\d+ /m);
    expect(shown).toMatch(/^source +r1 +\S+\/s/m);
    expect(shown).toMatch(/^sink +k2 +.*\(logger: no counters\)$/m);
    expect(shown).toMatch(/\[[#.]{20}\] \d+\.\d%/);
    // Redrawn in place: one header on the screen, not a scroll of them.
    expect(shown.match(/^flume top /gm)).toHaveLength(1);
    tmux("send-keys", "-t", session, "q");
    await waitUntil(() => screen().includes("TOP-EXITED 0"), "flume top to quit on q", 5000);
  });
});
