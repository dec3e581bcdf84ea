import { describe, expect, test } from "bun:test";
import { componentLogger, createAgentLogger, levelFromFlumeRootLogger } from "../../src/agent/logging.ts";

function capture(options: Parameters<typeof createAgentLogger>[0] = {}) {
  const lines: string[] = [];
  let t = Date.parse("2026-12-01T10:00:00.000Z");
  const log = createAgentLogger({ write: (l) => lines.push(l), color: false, now: () => new Date(t), ...options });
  return { log, lines, advance: (ms: number) => (t += ms) };
}

describe("agent log lines", () => {
  test("every line has a timestamp, level and component, and no blank lines around warnings", () => {
    const { log, lines } = capture();
    log.info("agent a1 starting");
    componentLogger(log, "r1").warn("channel c1 is full");
    log.success("agent a1 started");
    componentLogger(log, "k1").error("cannot connect\nto 127.0.0.1:4141");
    expect(lines).toEqual([
      "2026-12-01T10:00:00.000Z INFO  agent a1 starting\n",
      "2026-12-01T10:00:00.000Z WARN  [r1] channel c1 is full\n",
      "2026-12-01T10:00:00.000Z INFO  agent a1 started\n",
      "2026-12-01T10:00:00.000Z ERROR [k1] cannot connect | to 127.0.0.1:4141\n",
    ]);
  });

  test("--log-format json writes one object a line", () => {
    const { log, lines } = capture({ format: "json", agent: "a1" });
    componentLogger(log, "c1").warn('say "hi"');
    expect(lines.map((l) => JSON.parse(l))).toEqual([{ time: "2026-12-01T10:00:00.000Z", level: "warn", agent: "a1", component: "c1", message: 'say "hi"' }]);
    expect(lines[0].endsWith("}\n")).toBe(true);
  });

  test("the level filters: warn drops info, debug keeps debug", () => {
    const warn = capture({ level: "warn" });
    warn.log.info("no");
    warn.log.debug("no");
    warn.log.warn("yes");
    expect(warn.lines).toHaveLength(1);
    const debug = capture({ level: "debug" });
    debug.log.debug("yes");
    expect(debug.lines[0]).toContain("DEBUG yes");
  });

  test("a message a component repeats is written once, then counted right after the lines it folds, or after a minute", () => {
    const { log, lines, advance } = capture();
    const r = componentLogger(log, "reload");
    for (let i = 0; i < 5; i++) r.error("cannot read flume.conf: ENOENT");
    advance(30_000);
    r.error("cannot read flume.conf: ENOENT");
    advance(31_000);
    r.error("cannot read flume.conf: ENOENT");
    r.info("reloaded flume.conf");
    expect(lines.map((l) => l.slice(25))).toEqual([
      "ERROR [reload] cannot read flume.conf: ENOENT\n",
      "ERROR [reload] (the last message repeated 6 more times)\n",
      "INFO  [reload] reloaded flume.conf\n",
    ]);
  });

  test("the count of repeats comes before any other line, whichever component writes it, and folds only the lines above it", () => {
    const { log, lines } = capture();
    const stats = componentLogger(log, "stats");
    const k1 = componentLogger(log, "k1");
    for (let i = 0; i < 3; i++) stats.info("c1 holds 0 events");
    k1.info("connected to 127.0.0.1:4141");
    stats.info("c1 holds 0 events");
    stats.info("c1 holds 0 events");
    log.info("agent a1 stopping");
    expect(lines.map((l) => l.slice(25))).toEqual([
      "INFO  [stats] c1 holds 0 events\n",
      "INFO  [stats] (the last message repeated 2 more times)\n",
      "INFO  [k1] connected to 127.0.0.1:4141\n",
      "INFO  [stats] c1 holds 0 events\n",
      "INFO  [stats] (the last message repeated 1 more time)\n",
      "INFO  agent a1 stopping\n",
    ]);
  });

  test("a component's output (the logger sink's events) is written every time, never folded, and ends a fold before it", () => {
    const { log, lines } = capture();
    const k1 = componentLogger(log, "k1");
    const r1 = componentLogger(log, "r1");
    r1.warn("channel c1 is full");
    r1.warn("channel c1 is full");
    for (let i = 0; i < 3; i++) k1.output?.("Event: { headers:{} body: 73 61 6D 65 same }");
    expect(lines.map((l) => l.slice(25))).toEqual([
      "WARN  [r1] channel c1 is full\n",
      "WARN  [r1] (the last message repeated 1 more time)\n",
      "INFO  [k1] Event: { headers:{} body: 73 61 6D 65 same }\n",
      "INFO  [k1] Event: { headers:{} body: 73 61 6D 65 same }\n",
      "INFO  [k1] Event: { headers:{} body: 73 61 6D 65 same }\n",
    ]);
    const quiet = capture({ level: "warn" });
    componentLogger(quiet.log, "k1").output?.("Event: { headers:{} body: }");
    expect(quiet.lines).toEqual([]);
  });

  test("colour only when asked (a TTY without NO_COLOR): no escape codes otherwise", () => {
    const plain = capture({ color: false });
    plain.log.warn("x");
    expect(plain.lines[0]).not.toContain("\x1b[");
    const coloured = capture({ color: true });
    coloured.log.warn("x");
    expect(coloured.lines[0]).toContain("\x1b[33mWARN");
  });

  test("-Dflume.root.logger=LEVEL,console maps log4j's level names", () => {
    expect(levelFromFlumeRootLogger("DEBUG,console")).toBe("debug");
    expect(levelFromFlumeRootLogger("INFO,LOGFILE")).toBe("info");
    expect(levelFromFlumeRootLogger("warn")).toBe("warn");
    expect(levelFromFlumeRootLogger("ALL,console")).toBe("trace");
    expect(levelFromFlumeRootLogger("LOUD,console")).toBeUndefined();
  });
});
