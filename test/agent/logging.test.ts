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

  test("a message a component repeats is written once, then counted when it changes or after a minute", () => {
    const { log, lines, advance } = capture();
    const r = componentLogger(log, "reload");
    for (let i = 0; i < 5; i++) r.error("cannot read flume.conf: ENOENT");
    componentLogger(log, "r1").info("another component is not folded into it");
    advance(61_000);
    r.error("cannot read flume.conf: ENOENT");
    r.info("reloaded flume.conf");
    expect(lines.map((l) => l.slice(25))).toEqual([
      "ERROR [reload] cannot read flume.conf: ENOENT\n",
      "INFO  [r1] another component is not folded into it\n",
      "ERROR [reload] (the last message repeated 5 more times)\n",
      "INFO  [reload] reloaded flume.conf\n",
    ]);
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
